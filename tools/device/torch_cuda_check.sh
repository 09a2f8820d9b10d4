#!/bin/sh
# torch_cuda_check.sh: the GPU check of issue 14, prepared for a session lent a device
# machine (nothing in CI runs it). It captures a small CUDA workload with the
# torch-profiler provider (activities cpu and cuda), analyses the captured Kineto trace
# with summarize_pytorch_trace and summarize_trace, and counts the trace's kernel,
# memcpy and runtime events with python3's json as the independent figure. Everything it
# learns goes to $OUT (the device tool's output folder, else ./device-out).
#
# Build the binary here first and carry it (the device machine may have no Go):
#   CGO_ENABLED=0 go build -o bin/flameox ./cmd/flameox
# then, with the device tool: run command="sh tools/device/torch_cuda_check.sh"
#   carry=["bin/flameox"] timeout_s=300
set -u
OUT=${OUT:-./device-out}
mkdir -p "$OUT"
FX=${FLAMEOX:-./bin/flameox}
PY=${PYTHON:-python3}
# A dry run of the plumbing on a machine without a GPU:
#   DEVICE=cpu ACTIVITIES='["cpu"]' PYTHON=/usr/bin/python3 sh tools/device/torch_cuda_check.sh
DEVICE=${DEVICE:-cuda}
ACTIVITIES=${ACTIVITIES:-'["cpu","cuda"]'}
log() { echo "$*" | tee -a "$OUT/summary.txt"; }

log "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$OUT/summary.txt"
"$PY" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tee -a "$OUT/summary.txt"
"$FX" --version 2>&1 | tee -a "$OUT/summary.txt"

WORK=$(mktemp -d)
cat > "$WORK/workload.py" <<'PYEOF'
import torch
import flameox_torch_profiler

device = "@DEVICE@"  # the capture passes the workload a minimal environment
x = torch.randn(2048, 2048, device=device)
w = torch.randn(2048, 2048, device=device)
with flameox_torch_profiler.profiler() as prof:
    for _ in range(3):
        y = torch.relu(x @ w)
        z = y.sum().item()          # a device-to-host copy and a synchronization
        prof.step()
PYEOF
sed -i "s/@DEVICE@/$DEVICE/" "$WORK/workload.py"

log "== capture (torch-profiler, $ACTIVITIES on $DEVICE) -> summarize_pytorch_trace"
export FLAMEOX_DATA_DIR="$WORK/store"
"$FX" capture --provider torch-profiler --capture-arguments "{\"activities\":$ACTIVITIES,\"warmup\":1,\"active\":1}" \
  --operation summarize_pytorch_trace --preserve --limits '{"max_rows":50}' --cwd "$WORK" -- "$PY" workload.py \
  > "$OUT/capture.json" 2> "$OUT/capture.stderr"
log "capture exit $?"
"$PY" - "$OUT/capture.json" <<'PYEOF' 2>&1 | tee -a "$OUT/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
print("status", d.get("status"), "code", d.get("code"))
for b in d.get("blocks", []):
    if b.get("type") == "metrics":
        print("metrics", json.dumps(b["values"], sort_keys=True))
rows = d.get("blocks", [{}])[-1].get("rows", [])
kinds = {}
for r in rows:
    kinds[r.get("event_kind")] = kinds.get(r.get("event_kind"), 0) + 1
print("first page event kinds", kinds)
print("evidence", (d.get("preserved") or {}).get("evidence_id"))
PYEOF

# The captured trace, read again from the evidence store by summarize_trace, and counted
# by python3's json from the preserved payload.
ID=$("$PY" -c 'import json, sys; print((json.load(open(sys.argv[1])).get("preserved") or {}).get("evidence_id", ""))' "$OUT/capture.json")
SHA=$("$PY" -c 'import json, sys; print(([i["sha256"] for i in json.load(open(sys.argv[1])).get("inputs", [])] or [""])[0])' "$OUT/capture.json")
TRACE="$FLAMEOX_DATA_DIR/artifacts/sha256/$(echo "$SHA" | cut -c1-2)/$SHA/payload"
log "== evidence $ID, trace payload $SHA"
if [ -n "$ID" ] && [ -f "$TRACE" ]; then
  cp "$TRACE" "$OUT/trace.payload"
  "$FX" analyze summarize_trace --evidence "$ID" --limits '{"max_rows":20}' > "$OUT/summarize_trace.json" 2>&1
  log "summarize_trace exit $?"
  "$PY" - "$TRACE" "$OUT/summarize_trace.json" <<'PYEOF' 2>&1 | tee -a "$OUT/summary.txt"
import gzip, json, sys
raw = open(sys.argv[1], "rb").read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
t = json.loads(raw)
ev = t["traceEvents"] if isinstance(t, dict) else t
cats = {}
for e in ev:
    if e.get("ph") == "X" and e.get("dur", 0) > 0:
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
print("python: complete events with dur > 0 by category", json.dumps(cats, sort_keys=True))
print("python: slice_count (X, dur > 0)", sum(cats.values()))
r = json.load(open(sys.argv[2]))
for b in r.get("blocks", []):
    if b.get("type") == "metrics":
        print("flameox summarize_trace metrics", json.dumps(b["values"], sort_keys=True))
PYEOF
fi
rm -rf "$WORK"
log "== done"
