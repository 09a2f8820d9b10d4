#!/usr/bin/env bash
# Runs every native fuzz target of the module for FUZZTIME each (default 20s), one at a
# time with one worker (-parallel 1), so that it fits beside other work on a small
# machine. `go test -fuzz` takes one target of one package per invocation, so the targets
# are listed per package with `go test -list '^Fuzz'`. Their seeds already run as
# ordinary tests in `go test ./...`; this is the longer, on-demand run:
#
#   make fuzz                     # 20s per target
#   make fuzz FUZZTIME=5m         # longer
#   tools/fuzz.sh ./providers/cpu # one package (any go package patterns)
#   FUZZ_DRYRUN=1 tools/fuzz.sh   # list the commands only
#
# A crasher is written under the package's testdata/fuzz/<Target>/ by the fuzzing engine
# and fails the run; the script goes on with the other targets and exits non-zero at the
# end, listing the failed ones.
#
# The SQLite targets (names ending in SQLite) mutate whole database files: nearly every
# mutation reaches new code in SQLite, and minimizing each such input for
# FUZZMINIMIZETIME would leave no time to fuzz (7 executions in 30s, against about 200 a
# second). They minimize by count instead: FUZZMINIMIZESQLITE attempts (default 20x).
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}
FUZZMINIMIZESQLITE=${FUZZMINIMIZESQLITE:-20x}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(./...)

# Packages whose tests declare a Fuzz function (so that only they are compiled); `go test
# -list` then names their targets.
pkgs=$($GO list -f '{{$d := .Dir}}{{.ImportPath}}{{range .TestGoFiles}} {{$d}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$d}}/{{.}}{{end}}' "${patterns[@]}" |
  while read -r pkg files; do
    if [ -n "$files" ] && grep -qs '^func Fuzz' $files; then echo "$pkg"; fi
  done)
if [ -z "$pkgs" ]; then
  echo "fuzz: no fuzz targets under ${patterns[*]}" >&2
  exit 1
fi

failed=()
ran=0
for pkg in $pkgs; do
  targets=$($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
  for target in $targets; do
    echo "=== $pkg $target ($FUZZTIME)"
    ran=$((ran + 1))
    minimize=$FUZZMINIMIZETIME
    case "$target" in *SQLite) minimize=$FUZZMINIMIZESQLITE ;; esac
    if [ -n "${FUZZ_DRYRUN:-}" ]; then
      echo "$GO test $pkg -run '^\$' -fuzz '^${target}\$' -fuzztime $FUZZTIME -fuzzminimizetime $minimize -parallel 1"
      continue
    fi
    if ! $GO test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" \
      -fuzzminimizetime "$minimize" -parallel 1; then
      failed+=("$pkg $target")
    fi
  done
done

echo "fuzz: $ran targets, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
