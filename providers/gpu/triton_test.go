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
)

// tritonTruth reads cache entries (one JSON document a line, or one document) with
// Python's json and picks each entry's config as Triton's autotuner does:
// min(timings, key=timings.get), lists compared as Python compares them.
const tritonTruth = `
import json, sys
text = open(sys.argv[1]).read()
docs = [json.loads(l) for l in text.splitlines() if l.strip()] if sys.argv[2] == "lines" else [json.loads(text)]
rows = []
for n, e in enumerate(docs):
    cands = [{"config": c, "timings_ms": t if isinstance(t, list) else [t]} for c, t in e["configs_timings"]]
    best = min(range(len(cands)), key=lambda i: cands[i]["timings_ms"]) if cands else None
    rows.append({"index": n, "key": e["key"], "candidate_count": len(cands), "chosen_index": best,
        "chosen_config": cands[best]["config"] if best is not None else None,
        "chosen_timing_ms": cands[best]["timings_ms"][0] if best is not None else None,
        "candidates": cands, "cache_hit": None})
json.dump(rows, sys.stdout)
`

func tritonInput(t *testing.T, path string) providers.Input {
	in := inputOf(t, path)
	in.Format = gen.FormatTritonCache
	return in
}

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
	a, err := inspectTriton(context.Background(), &providers.Request[gen.NoFields]{Inputs: []providers.Input{tritonInput(t, path)}})
	if err != nil {
		t.Fatal(err)
	}
	got := pageAll(t, a)
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
	rows, err := readTriton(context.Background(), tritonInput(t, path))
	if err != nil {
		t.Fatal(err)
	}
	c := rows[0].ChosenConfig
	if b, _ := json.Marshal([]any{c["kwargs"], c["num_warps"]}); string(b) != `[{"BLOCK":1024},4]` {
		t.Errorf("chosen kwargs and num_warps %s; the corpus README says BLOCK 1024, num_warps 4", b)
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
		{"second entry broken", `{"key": [1], "configs_timings": []}` + "\n" + `{"key": 2}`, "decode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.autotune.json")
			if err := os.WriteFile(p, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readTriton(context.Background(), tritonInput(t, p))
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
	a, err := inspectTriton(context.Background(), &providers.Request[gen.NoFields]{Inputs: []providers.Input{tritonInput(t, p)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pageAll(t, a)) != 0 || len(a.Limitations) != 1 || !strings.HasPrefix(a.Limitations[0], "no_autotune_entries") {
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
