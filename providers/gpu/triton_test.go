package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// tritonTruth reads cache entries (one JSON document a line, or one document) with
// Python's json and picks each entry's config as Triton's autotuner does:
// min(timings, key=timings.get), lists compared as Python compares them. Triton's
// Autotuner._bench caches do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8)), so a list of
// three is the median, 20th and 80th percentile, in that order, and [inf, inf, inf] a
// config that failed; the ratio is the first timing over the chosen one's, round(r, 4).
const tritonTruth = `
import json, math, sys
text = open(sys.argv[1]).read()
docs = [json.loads(l) for l in text.splitlines() if l.strip()] if sys.argv[2] == "lines" else [json.loads(text)]
fin = lambda x: x if math.isfinite(x) else None
def ratio(t, c):
    try:
        r = t / c
    except ZeroDivisionError:
        return None
    return round(r, 4) if math.isfinite(r) else None
rows = []
for n, e in enumerate(docs):
    times = [t if isinstance(t, list) else [t] for c, t in e["configs_timings"]]
    best = min(range(len(times)), key=lambda i: times[i]) if times else None
    cands = []
    for (c, _), ts in zip(e["configs_timings"], times):
        cand = {"config": c}
        if ts and ts[0] == math.inf:
            cand["failed"] = True
        if len(ts) == 3:
            cand.update(median_ms=fin(ts[0]), p20_ms=fin(ts[1]), p80_ms=fin(ts[2]))
        else:
            cand.update(median_ms=None, p20_ms=None, p80_ms=None, timings_ms=[fin(x) for x in ts])
        cand["ratio_to_chosen"] = ratio(ts[0], times[best][0]) if ts else None
        cands.append(cand)
    rows.append({"index": n, "key": e["key"], "candidate_count": len(cands), "chosen_index": best,
        "chosen_config": e["configs_timings"][best][0] if best is not None else None,
        "chosen_timing_ms": fin(times[best][0]) if best is not None else None,
        "candidates": cands, "cache_hit": None, "kernel": None, "tuning_seconds": None})
json.dump(rows, sys.stdout)
`

func checkTritonTruth(t *testing.T, path, mode string, want int) {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", tritonTruth, path, mode).Output()
	if err != nil {
		t.Fatalf("python json: %v", err)
	}
	var truth []any
	if err := json.Unmarshal(out, &truth); err != nil {
		t.Fatal(err)
	}
	a, err := providerstest.Analyze(t, inspectTriton, nil, providerstest.Input(t, path, gen.FormatTritonCache))
	if err != nil {
		t.Fatal(err)
	}
	got := providerstest.Decode[any](t, providerstest.Rows(t, a.Rows, 100))
	if diff := gocmp.Diff(truth, got); diff != "" {
		t.Errorf("rows differ from python json (-python +flameox):\n%s", diff)
	}
	if len(got) != want {
		t.Errorf("%d rows; want %d", len(got), want)
	}
	if n := a.Metrics["selection_count"]; n != len(truth) {
		t.Errorf("selection_count %v; python read %d entries", n, len(truth))
	}
}

func TestTritonCorpusAgainstPythonJSON(t *testing.T) {
	path := testtool.Corpus(t, "h200__triton-add.autotune.json")
	checkTritonTruth(t, path, "doc", 1)
	// The corpus README: best BLOCK 1024, num_warps 4.
	rows, err := readTriton(context.Background(), providerstest.Input(t, path, gen.FormatTritonCache))
	if err != nil {
		t.Fatal(err)
	}
	c := rows[0].ChosenConfig
	if b, _ := json.Marshal([]any{c["kwargs"], c["num_warps"]}); string(b) != `[{"BLOCK":1024},4]` {
		t.Errorf("chosen kwargs and num_warps %s; the corpus README says BLOCK 1024, num_warps 4", b)
	}
	// The chosen config's own candidate: its median is chosen_timing_ms, its ratio 1, and
	// its 20th percentile is at most the median and the 80th at least (quantiles as
	// Triton asks for them, in that order).
	chosen := testtool.JSONValue(t, rows[0].Candidates[*rows[0].ChosenIndex]).(map[string]any)
	if chosen["median_ms"] != *rows[0].ChosenTimingMS || chosen["ratio_to_chosen"] != 1.0 {
		t.Errorf("the chosen candidate %v; want median %v and ratio 1", chosen, *rows[0].ChosenTimingMS)
	}
	if p20, p50, p80 := chosen["p20_ms"].(float64), chosen["median_ms"].(float64), chosen["p80_ms"].(float64); p20 > p50 || p50 > p80 {
		t.Errorf("quantiles out of order: p20 %v, median %v, p80 %v", p20, p50, p80)
	}
}

// TestTritonTimingShapes checks the labelled timings against Python's json on entries
// written as Triton writes them (json.dumps of Autotuner.configs_timings): the corpus
// entry with a config that failed (Triton caches [inf, inf, inf], which json.dumps
// writes as bare Infinity), an entry whose every config failed, a do_bench that returned
// one number, one that returned two, and a chosen median of 0.
func TestTritonTimingShapes(t *testing.T) {
	py := testtool.Require(t, "python3")
	corpus := testtool.Corpus(t, "h200__triton-add.autotune.json")
	dir := t.TempDir()
	const write = `
import json, sys
inf = float("inf")
e = json.load(open(sys.argv[1]))
failed = dict(e["configs_timings"][0][0], kwargs={"BLOCK": 8192}, num_warps=1)
e["configs_timings"].append([failed, [inf, inf, inf]])
entries = [e,
    {"key": [7, "torch.float16"], "configs_timings": [[{"kwargs": {"B": 1}}, [inf, inf, inf]], [{"kwargs": {"B": 2}}, [inf, inf, inf]]]},
    {"key": [8], "configs_timings": [[{"kwargs": {"B": 1}}, 0.5], [{"kwargs": {"B": 2}}, 0.25], [{"kwargs": {"B": 3}}, inf]]},
    {"key": [9], "configs_timings": [[{"kwargs": {"B": 1}}, [0.3, 0.1]], [{"kwargs": {"B": 2}}, [0.3, 0.2]]]},
    {"key": [10], "configs_timings": [[{"kwargs": {"B": 1}}, [0.0, 0.0, 0.0]], [{"kwargs": {"B": 2}}, [0.1, 0.05, 0.2]]]}]
with open(sys.argv[2], "w") as f:
    for x in entries:
        f.write(json.dumps(x) + "\n")
`
	path := filepath.Join(dir, tritonBundle)
	if out, err := exec.Command(py, "-c", write, corpus, path).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	checkTritonTruth(t, path, "lines", 5)
	rows, err := readTriton(context.Background(), providerstest.Input(t, path, gen.FormatTritonCache))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		entry, idx int
		want       string
	}{
		{"failed beside working configs", 0, 4, `{"config":{"ir_override":null,"kwargs":{"BLOCK":8192},"maxnreg":null,"num_ctas":1,"num_stages":3,"num_warps":1,"pre_hook":null},"failed":true,"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":null}`},
		{"every config failed", 1, 0, `{"config":{"kwargs":{"B":1}},"failed":true,"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":null}`},
		{"scalar timing", 2, 0, `{"config":{"kwargs":{"B":1}},"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":2,"timings_ms":[0.5]}`},
		{"scalar failed", 2, 2, `{"config":{"kwargs":{"B":3}},"failed":true,"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":null,"timings_ms":[null]}`},
		{"two timings", 3, 1, `{"config":{"kwargs":{"B":2}},"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":1,"timings_ms":[0.3,0.2]}`},
		{"chosen median 0", 4, 1, `{"config":{"kwargs":{"B":2}},"median_ms":0.1,"p20_ms":0.05,"p80_ms":0.2,"ratio_to_chosen":null}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(rows[tt.entry].Candidates[tt.idx])
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("candidate %s;\nwant %s", b, tt.want)
			}
		})
	}
	if rows[1].ChosenIndex == nil || *rows[1].ChosenIndex != 0 || rows[1].ChosenTimingMS != nil {
		t.Errorf("every config failed: chosen %v, timing %v; want Triton's first (min of equal lists) and a null timing", rows[1].ChosenIndex, rows[1].ChosenTimingMS)
	}
}

// TestTritonBundleScript runs the provider's sh wrapper over a workload that leaves two
// cache entries (the corpus entry as Triton writes it, without a final newline, and an
// older Triton's scalar-timing entry with one) and exits 3.
func TestTritonBundleScript(t *testing.T) {
	sh := testtool.Require(t, "sh")
	dir := t.TempDir()
	corpus, err := os.ReadFile(testtool.Corpus(t, "h200__triton-add.autotune.json"))
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work.sh")
	script := "#!/bin/sh\n[ \"$TRITON_CACHE_AUTOTUNING\" = 1 ] || exit 9\nmkdir -p \"$TRITON_CACHE_DIR/AAA\" \"$TRITON_CACHE_DIR/BBB\"\n" +
		"cat > \"$TRITON_CACHE_DIR/BBB/mul.autotune.json\" <<'J'\n" +
		`{"key": [4096, "torch.float16"], "configs_timings": [[{"kwargs": {"BLOCK": 64}, "num_warps": 4}, 0.5], [{"kwargs": {"BLOCK": 128}, "num_warps": 8}, 0.25]]}` + "\nJ\n" +
		"printf '%s' '" + string(corpus) + "' > \"$TRITON_CACHE_DIR/AAA/add.autotune.json\"\nexit 3\n"
	if err := os.WriteFile(work, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := &providers.Executable{Path: sh}
	argv := tritonCommand(&gen.TritonProvider{Kind: "triton"}, exe, providers.Case{Argv: []string{work, "x"}, Executable: providers.Executable{Path: work}}, dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	opts, err := tritonCollector.Options(map[string]any{"kind": "triton"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range opts.Env(dir) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the wrapper exited %v; want the workload's 3", err)
	}
	bundle := filepath.Join(dir, tritonBundle)
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 2 {
		t.Fatalf("the bundle has %d lines; want 2:\n%s", lines, b)
	}
	checkTritonTruth(t, bundle, "lines", 2)
}

func TestTritonRefusesMalformedAndForeignSources(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       string
	}{
		{"not json", "{", "decode"},
		{"foreign json", `{"traceEvents": []}`, "unsupported"},
		{"bad pair", `{"key": [1], "configs_timings": [[{"num_warps": 4}]]}`, "decode"},
		{"bad timing", `{"key": [1], "configs_timings": [[{"num_warps": 4}, ["fast"]]]}`, "decode"},
		{"non-finite as a string", `{"key": [1], "configs_timings": [[{"num_warps": 4}, ["Infinity"]]]}`, "decode"},
		{"bare literal misspelt", `{"key": [1], "configs_timings": [[{"num_warps": 4}, [Inf]]]}`, "decode"},
		{"second entry broken", `{"key": [1], "configs_timings": []}` + "\n" + `{"key": 2}`, "decode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.autotune.json")
			if err := os.WriteFile(p, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readTriton(context.Background(), providerstest.Input(t, p, gen.FormatTritonCache))
			var de *providers.DecodeError
			var ue *providers.UnsupportedError
			switch {
			case tt.want == "decode" && !errors.As(err, &de), tt.want == "unsupported" && !errors.As(err, &ue):
				t.Fatalf("got %T %v; want %s", err, err, tt.want)
			}
			if strings.Contains(err.Error(), p) {
				t.Errorf("the message %q names the host path", err)
			}
		})
	}
}

func TestTritonEmptyBundleIsComplete(t *testing.T) {
	p := filepath.Join(t.TempDir(), tritonBundle)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := providerstest.Analyze(t, inspectTriton, nil, providerstest.Input(t, p, gen.FormatTritonCache))
	if err != nil {
		t.Fatal(err)
	}
	if len(providerstest.Decode[any](t, providerstest.Rows(t, a.Rows, 100))) != 0 || len(a.Limitations) != 1 || !strings.HasPrefix(a.Limitations[0], "no_autotune_entries") {
		t.Errorf("an empty bundle: limitations %q", a.Limitations)
	}
}

func TestTritonDetector(t *testing.T) {
	r := providers.NewRegistry()
	Register(r)
	for _, tt := range []struct {
		name, head string
		want       gen.Format
	}{
		{"add.autotune.json", `{"key": [1], "configs_timings": []}`, gen.FormatTritonCache},
		{"triton.autotune.jsonl", `{"key": [1], "configs_timings": []}`, gen.FormatTritonCache},
		{"renamed.json", `{"key": [1], "configs_timings": []}`, gen.FormatTritonCache},
		{"log.xml", "<?xml version=\"1.0\"?>\n<ComputeSanitizerOutput/>", gen.FormatComputeSanitizer},
	} {
		if got := r.Detect(tt.name, []byte(tt.head)); len(got) == 0 || got[0] != tt.want {
			t.Errorf("Detect(%s) = %v; want %s first", tt.name, got, tt.want)
		}
	}
}
