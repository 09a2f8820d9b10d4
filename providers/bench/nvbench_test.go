package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
)

// nvbenchTruth reads an NVBench --json document with Python's json module: every value
// of every summary of every state that ran, durations in integer nanoseconds as the
// reader normalizes them (half away from zero), and the state count.
const nvbenchTruth = `
import json, math, sys
d = json.load(open(sys.argv[1]))
out, states, skipped = [], 0, 0
for b in d["benchmarks"]:
    for s in b["states"]:
        states += 1
        if s.get("is_skipped"):
            skipped += 1
            continue
        dims = {a["name"]: a["value"] for a in (s.get("axis_values") or [])}
        for m in s.get("summaries") or []:
            for x in m["data"]:
                if x["name"] != "value":
                    continue
                v = float(x["value"])
                if m.get("hint") == "duration":
                    v = math.floor(v * 1e9 + 0.5)
                out.append([b["name"] + ":" + m["tag"], v, len(dims)])
json.dump({"states": states, "skipped": skipped, "values": out}, sys.stdout)
`

// TestNVBenchRealOutput reads NVIDIA/nvbench's own test_ref.json (nvbench.example.axes on
// two GPUs: 5 benchmarks, 126 states, 38 of them skipped) against Python's reading.
func TestNVBenchRealOutput(t *testing.T) {
	path := testtool.Corpus(t, "nvbench__test_ref.json")
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", nvbenchTruth, path).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want struct {
		States, Skipped int
		Values          [][3]any
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if want.States != 126 {
		t.Fatalf("python reads %d states, the corpus README says 126", want.States)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := DecodeNVBench(f, 0)
	if err != nil {
		t.Fatalf("DecodeNVBench: %v", err)
	}
	got := make([][3]any, len(ms))
	for i, m := range ms {
		got[i] = [3]any{m.Benchmark, m.Value, float64(len(m.Dimensions))}
	}
	if diff := cmp.Diff(want.Values, got); diff != "" {
		t.Errorf("measurements (-python +flameox):\n%s", diff)
	}
	if len(Summaries(ms)) == 0 {
		t.Error("no series")
	}
}
