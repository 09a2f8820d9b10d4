"""The rows inspect_triton_autotune must give for the listener file of workload.py,
computed from spec.json (argv[1]) alone, as Triton's autotuner decides: a call whose
key its autotuner already holds selects nothing; one config, or one left after
pruning, selects without timings (no listener call); a kernel with cache_results
that met the key before in an earlier autotuner state reads the timings back from
the disk cache (cache_hit); otherwise it benchmarks. The chosen config is
min(timings, key=timings.get); Triton's do_bench quantiles (0.5, 0.2, 0.8) label
median, p20 and p80; a config out of resources times [inf, inf, inf]; a scalar
do_bench gives a list of one. tuning_seconds is "positive" where the run
benchmarked (the test checks only that), null for a disk cache hit."""

import json
import math
import sys

spec = json.load(open(sys.argv[1]))
inf = math.inf
fin = lambda x: x if math.isfinite(x) else None


def ratio(t, c):
    try:
        r = t / c
    except ZeroDivisionError:
        return None
    return round(r, 4) if math.isfinite(r) else None


memory = {name: set() for name in spec["kernels"]}
disk = set()
rows = []
for call in spec["calls"]:
    name, n = call["kernel"], call["n"]
    k = spec["kernels"][name]
    if call.get("clear_memory_cache"):
        memory[name].clear()
    key = (n, "torch.float16")
    if len(k["configs"]) == 1 or key in memory[name]:
        continue
    memory[name].add(key)
    if k.get("prune_to_first"):
        continue
    hit = k.get("cache_results", False) and (name, key) in disk
    if k.get("cache_results"):
        disk.add((name, key))
    configs = [{"kwargs": c["kwargs"], "num_warps": c.get("num_warps", 4), "num_ctas": 1, "num_stages": 3,
                "maxnreg": None, "pre_hook": None, "ir_override": None} for c in k["configs"]]
    times = []
    for t in spec["timings"][name][str(n)]:
        if t is None:
            t = [inf, inf, inf]
        times.append([t[0]] if k.get("scalar_bench") else list(t))
    best = min(range(len(times)), key=lambda i: times[i])
    cands = []
    for c, ts in zip(configs, times):
        cand = {"config": c}
        if ts[0] == inf:
            cand["failed"] = True
        if len(ts) == 3:
            cand.update(median_ms=fin(ts[0]), p20_ms=fin(ts[1]), p80_ms=fin(ts[2]))
        else:
            cand.update(median_ms=None, p20_ms=None, p80_ms=None, timings_ms=[fin(x) for x in ts])
        cand["ratio_to_chosen"] = ratio(ts[0], times[best][0])
        cands.append(cand)
    rows.append({"index": len(rows), "kernel": name, "key": list(key), "candidate_count": len(cands),
                 "chosen_index": best, "chosen_config": configs[best], "chosen_timing_ms": fin(times[best][0]),
                 "candidates": cands, "cache_hit": hit, "tuning_seconds": None if hit else "positive"})
json.dump(rows, sys.stdout)
