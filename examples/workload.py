"""A small CPU-bound workload for `flameox capture` examples: it ranks words by how
often a naive and a counting implementation see them, so the profile has a clear hotspot
(naive_count) beside cheap helpers."""

import collections
import sys


def words(n):
    base = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [base[(i * 7 + i // 3) % len(base)] for i in range(n)]


def naive_count(items):
    # Quadratic on purpose: the hotspot a profile should find.
    return {w: sum(1 for x in items if x == w) for w in set(items)}


def counter_count(items):
    return dict(collections.Counter(items))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    items = words(n)
    assert naive_count(items) == counter_count(items)
    top = sorted(counter_count(items).items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    print(" ".join(f"{w}={c}" for w, c in top))


if __name__ == "__main__":
    main()
