package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// No Triton is installable here: the listener runs against the FAKE triton package in
// testdata/faketriton, whose Autotuner keeps the attributes and the order of events of
// Triton's python/triton/runtime/autotuner.py (run, _bench, check_disk_cache, cache,
// configs_timings, bench_time) and, with FAKE_TRITON_LISTENER_KNOB=1, calls
// knobs.autotuning.listener as Triton 3.8 does. testdata/tritonlistener/workload.py
// autotunes the kernels of spec.json; truth.py computes the rows from spec.json alone.

// runListener runs the workload under the listener and returns the listener file.
func runListener(t *testing.T, py string, knob, importAfter bool) string {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "triton-listener.jsonl")
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	work, spec := abs("testdata/tritonlistener/workload.py"), abs("testdata/tritonlistener/spec.json")
	argv := []string{"-m", "flameox_triton_listener", work, spec}
	if importAfter {
		argv = []string{work, spec, "--import-listener"}
	}
	cmd := exec.Command(py, argv...)
	cmd.Dir = dir
	k := "0"
	if knob {
		k = "1"
	}
	cmd.Env = append(os.Environ(), "PYTHONPATH="+abs("testdata/faketriton")+string(os.PathListSeparator)+abs("python"),
		"FLAMEOX_TRITON_LISTENER_PATH="+out, "TRITON_CACHE_DIR="+filepath.Join(dir, "cache"), "FAKE_TRITON_LISTENER_KNOB="+k,
		"PYTHONDONTWRITEBYTECODE=1")
	if b, err := cmd.CombinedOutput(); err != nil || bytes.Contains(b, []byte("flameox_triton_listener")) {
		t.Fatalf("workload under the listener: %v\n%s", err, b)
	}
	return out
}

func TestTritonListenerAgainstSpec(t *testing.T) {
	py := testtool.Require(t, "python3")
	b, err := exec.Command(py, "testdata/tritonlistener/truth.py", "testdata/tritonlistener/spec.json").Output()
	if err != nil {
		t.Fatalf("truth.py: %v", err)
	}
	var truth []any
	if err := json.Unmarshal(b, &truth); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, r := range truth {
		if r.(map[string]any)["cache_hit"] == true {
			hits++
		}
	}
	if len(truth) != 5 || hits != 1 {
		t.Fatalf("truth has %d rows, %d cache hits; the spec makes 5 and 1", len(truth), hits)
	}
	for _, v := range []struct {
		name              string
		knob, importAfter bool
		hook              string
	}{
		{"triton 3.8 knob, python -m", true, false, "knobs.autotuning.listener"},
		{"older triton, python -m", false, false, "Autotuner.run"},
		{"older triton, imported after triton", false, true, "Autotuner.run"},
		{"triton 3.8 knob, imported after triton", true, true, "knobs.autotuning.listener"},
	} {
		t.Run(v.name, func(t *testing.T) {
			path := runListener(t, py, v.knob, v.importAfter)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("record %d is not strict JSON: %v", i, err)
				}
				if rec["hook"] != v.hook || rec["triton_version"] != "3.8.0+fake" {
					t.Errorf("record %d: hook %v, triton_version %v; want %s", i, rec["hook"], rec["triton_version"], v.hook)
				}
			}
			r := providers.NewRegistry()
			Register(r)
			if got := r.Detect(filepath.Base(path), raw[:min(len(raw), 512)]); len(got) == 0 || got[0] != gen.FormatTriton {
				t.Errorf("Detect = %v; want triton first", got)
			}
			a, err := providerstest.Analyze(t, inspectTriton, nil, providerstest.Input(t, path, gen.FormatTriton))
			if err != nil {
				t.Fatal(err)
			}
			got := providerstest.Decode[any](t, providerstest.Rows(t, a.Rows, 100))
			for _, row := range got {
				m := row.(map[string]any)
				if s, ok := m["tuning_seconds"].(float64); ok && s > 0 {
					m["tuning_seconds"] = "positive"
				}
			}
			if diff := gocmp.Diff(truth, got); diff != "" {
				t.Errorf("rows differ from truth.py (-truth +flameox):\n%s", diff)
			}
			if a.Provider.ID != "triton-autotune" || a.Provider.Version != "listener-v1" {
				t.Errorf("provider %+v", a.Provider)
			}
			if a.Metrics["selection_count"] != len(truth) || a.Metrics["cache_hit_count"] != hits || a.Metrics["candidate_count"] != int64(17) {
				t.Errorf("metrics %v; want %d selections, %d cache hits, 17 candidates", a.Metrics, len(truth), hits)
			}
			if s, _ := a.Metrics["tuning_seconds"].(float64); s <= 0 {
				t.Errorf("tuning_seconds %v; want the benchmarked selections' positive sum", a.Metrics["tuning_seconds"])
			}
		})
	}
}

// TestTritonListenerWithoutPath checks that the listener installs nothing and the
// workload runs unchanged without FLAMEOX_TRITON_LISTENER_PATH, and that -m refuses.
func TestTritonListenerWithoutPath(t *testing.T) {
	py := testtool.Require(t, "python3")
	abs, _ := filepath.Abs("testdata/faketriton")
	lib, _ := filepath.Abs("python")
	const probe = `import triton, flameox_triton_listener, triton.runtime.autotuner as a
assert not getattr(a, "_flameox_triton_listener", False)
assert a.Autotuner.run.__name__ == "run"`
	cmd := exec.Command(py, "-c", probe)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+abs+string(os.PathListSeparator)+lib, "FLAMEOX_TRITON_LISTENER_PATH=", "PYTHONDONTWRITEBYTECODE=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("import without a path: %v\n%s", err, b)
	}
	cmd = exec.Command(py, "-m", "flameox_triton_listener", "x.py")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+lib, "FLAMEOX_TRITON_LISTENER_PATH=", "PYTHONDONTWRITEBYTECODE=1")
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !bytes.Contains(b, []byte("FLAMEOX_TRITON_LISTENER_PATH")) {
		t.Errorf("-m without a path: %v %s; want exit 2 naming the variable", err, b)
	}
}

// listenerLine is a valid listener-v1 record with fields replaced by over.
func listenerLine(t *testing.T, over map[string]any) string {
	t.Helper()
	rec := map[string]any{"schema": listenerSchema, "version": listenerVersion, "kernel": "add", "key": []any{1024, "torch.float16"},
		"cache_hit": false, "tuning_seconds": 0.5, "best_index": 1,
		"candidates": []any{
			map[string]any{"config": map[string]any{"kwargs": map[string]any{"BLOCK": 64}, "num_warps": 4}, "timings_ms": []any{0.5, 0.4, 0.6}},
			map[string]any{"config": map[string]any{"kwargs": map[string]any{"BLOCK": 128}, "num_warps": 8}, "timings_ms": []any{0.25, 0.2, 0.3}},
		}}
	for k, v := range over {
		if v == nil {
			delete(rec, k)
			continue
		}
		rec[k] = v
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTritonListenerRefusesMalformedRecords(t *testing.T) {
	good := listenerLine(t, nil)
	many := make([]any, maxTritonCandidates+1)
	for i := range many {
		many[i] = map[string]any{"config": map[string]any{}, "timings_ms": []any{1}}
	}
	for _, tt := range []struct {
		name, text string
		want       string // decode, unsupported, limit
		line       int    // from 0; -1: none
		field      string
	}{
		{"not json", "{\n", "decode", 0, ""},
		{"foreign json first", `{"traceEvents": []}` + "\n", "unsupported", -1, ""},
		{"array first", "[1, 2]\n", "unsupported", -1, ""},
		{"cache entry first", `{"key": [1], "configs_timings": []}` + "\n", "unsupported", -1, ""},
		{"another version first", listenerLine(t, map[string]any{"version": "listener-v2"}) + "\n", "unsupported", -1, ""},
		{"another schema later", good + "\n\n" + listenerLine(t, map[string]any{"schema": "flameox.pytest.v1"}) + "\n", "decode", 2, "/schema"},
		{"kernel not a string", listenerLine(t, map[string]any{"kernel": 7}) + "\n", "decode", 0, "/kernel"},
		{"kernel absent", listenerLine(t, map[string]any{"kernel": nil}) + "\n", "decode", 0, "/kernel"},
		{"key not an array", good + "\n" + listenerLine(t, map[string]any{"key": "1024"}) + "\n", "decode", 1, "/key"},
		{"cache_hit a string", listenerLine(t, map[string]any{"cache_hit": "yes"}) + "\n", "decode", 0, "/cache_hit"},
		{"tuning_seconds a string", listenerLine(t, map[string]any{"tuning_seconds": "0.5"}) + "\n", "decode", 0, "/tuning_seconds"},
		{"tuning_seconds negative", listenerLine(t, map[string]any{"tuning_seconds": -1}) + "\n", "decode", 0, "/tuning_seconds"},
		{"best_index out of range", listenerLine(t, map[string]any{"best_index": 2}) + "\n", "decode", 0, "/best_index"},
		{"best_index fractional", listenerLine(t, map[string]any{"best_index": 0.5}) + "\n", "decode", 0, "/best_index"},
		{"candidates an object", listenerLine(t, map[string]any{"candidates": map[string]any{}}) + "\n", "decode", 0, "/candidates"},
		{"candidate not an object", listenerLine(t, map[string]any{"candidates": []any{1}, "best_index": 0}) + "\n", "decode", 0, "/candidates/0"},
		{"config not an object", listenerLine(t, map[string]any{"candidates": []any{map[string]any{"config": []any{}, "timings_ms": []any{}}}, "best_index": 0}) + "\n", "decode", 0, "/candidates/0/config"},
		{"timing a word", listenerLine(t, map[string]any{"candidates": []any{map[string]any{"config": map[string]any{}, "timings_ms": []any{1, "fast"}}}, "best_index": 0}) + "\n", "decode", 0, "/candidates/0/timings_ms/1"},
		{"timing bare literal", `{"schema":"flameox.triton-autotune","version":"listener-v1","kernel":"k","key":[],"cache_hit":false,"tuning_seconds":null,"best_index":null,"candidates":[{"config":{},"timings_ms":[Infinity]}]}` + "\n", "decode", 0, ""},
		{"two values on a line", good + " {}\n", "decode", 0, ""},
		{"truncated last line", good + "\n" + good[:len(good)/2], "decode", 1, ""},
		{"too many candidates", listenerLine(t, map[string]any{"candidates": many, "best_index": 0}) + "\n", "limit", 0, "/candidates"},
		{"line too long", listenerLine(t, map[string]any{"kernel": strings.Repeat("k", maxListenerLine)}) + "\n", "limit", 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "triton-listener.jsonl")
			if err := os.WriteFile(p, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readTritonListener(context.Background(), providerstest.Input(t, p, gen.FormatTriton))
			var (
				de      *providers.DecodeError
				ue      *providers.UnsupportedError
				le      *providers.LimitError
				details map[string]any
			)
			switch {
			case tt.want == "decode" && errors.As(err, &de):
				details = de.Details
			case tt.want == "unsupported" && errors.As(err, &ue):
			case tt.want == "limit" && errors.As(err, &le):
				details = le.Details
			default:
				t.Fatalf("got %T %v; want %s", err, err, tt.want)
			}
			if tt.line >= 0 {
				if details["line"] != tt.line || !strings.Contains(err.Error(), fmt.Sprintf("line %d", tt.line)) {
					t.Errorf("%q, details %v; want line %d", err, details, tt.line)
				}
			}
			if tt.field != "" && (details["field"] != tt.field || !strings.Contains(err.Error(), tt.field)) {
				t.Errorf("%q, details %v; want field %s", err, details, tt.field)
			}
			if strings.Contains(err.Error(), p) {
				t.Errorf("the message %q names the host path", err)
			}
		})
	}
}

func TestTritonListenerBounds(t *testing.T) {
	testtool.Short(t, "reads inputs past every bound")
	dir := t.TempDir()
	line := listenerLine(t, map[string]any{"candidates": []any{}, "best_index": nil}) + "\n"
	p := filepath.Join(dir, "many.jsonl")
	if err := os.WriteFile(p, []byte(strings.Repeat(line, maxTritonEntries+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var le *providers.LimitError
	if _, err := readTritonListener(context.Background(), providerstest.Input(t, p, gen.FormatTriton)); !errors.As(err, &le) || le.Unit != "records" {
		t.Errorf("%d records: %T %v; want a records limit", maxTritonEntries+1, err, err)
	}
	// An empty file is a complete result without selections.
	p = filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := providerstest.Analyze(t, inspectTriton, nil, providerstest.Input(t, p, gen.FormatTriton))
	if err != nil {
		t.Fatal(err)
	}
	if len(providerstest.Decode[any](t, providerstest.Rows(t, a.Rows, 100))) != 0 || a.Metrics["cache_hit_count"] != 0 || len(a.Limitations) != 1 || !strings.HasPrefix(a.Limitations[0], "no_autotune_entries") {
		t.Errorf("an empty listener file: metrics %v, limitations %q", a.Metrics, a.Limitations)
	}
}

// TestTritonListenerRecordFields checks what a record's optional fields give: a null
// best_index takes Triton's rule (the lowest timings), a named non-finite timing is a
// failed config, a key value is kept as written.
func TestTritonListenerRecordFields(t *testing.T) {
	text := listenerLine(t, map[string]any{"best_index": nil, "tuning_seconds": nil, "cache_hit": true, "key": []any{"Infinity", 3.5, true, nil},
		"candidates": []any{
			map[string]any{"config": map[string]any{"kwargs": map[string]any{"BLOCK": 8192}}, "timings_ms": []any{"Infinity", "Infinity", "Infinity"}},
			map[string]any{"config": map[string]any{"kwargs": map[string]any{"BLOCK": 64}}, "timings_ms": []any{0.3, 0.2, 0.4}},
			map[string]any{"config": map[string]any{"kwargs": map[string]any{"BLOCK": 32}}, "timings_ms": []any{0.6}},
		}, "pid": 7, "hook": "x", "extra": map[string]any{"ignored": true}}) + "\n"
	p := filepath.Join(t.TempDir(), "l.jsonl")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := providerstest.Analyze(t, inspectTriton, nil, providerstest.Input(t, p, gen.FormatTriton))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(providerstest.Decode[any](t, providerstest.Rows(t, a.Rows, 100)))
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"cache_hit":true,"candidate_count":3,"candidates":[` +
		`{"config":{"kwargs":{"BLOCK":8192}},"failed":true,"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":null},` +
		`{"config":{"kwargs":{"BLOCK":64}},"median_ms":0.3,"p20_ms":0.2,"p80_ms":0.4,"ratio_to_chosen":1},` +
		`{"config":{"kwargs":{"BLOCK":32}},"median_ms":null,"p20_ms":null,"p80_ms":null,"ratio_to_chosen":2,"timings_ms":[0.6]}],` +
		`"chosen_config":{"kwargs":{"BLOCK":64}},"chosen_index":1,"chosen_timing_ms":0.3,"index":0,"kernel":"add",` +
		`"key":["Infinity",3.5,true,null],"tuning_seconds":null}]`
	if string(b) != want {
		t.Errorf("rows\n%s\nwant\n%s", b, want)
	}
	if a.Metrics["cache_hit_count"] != 1 || a.Metrics["tuning_seconds"] != 0.0 {
		t.Errorf("metrics %v", a.Metrics)
	}
}

func TestTritonListenerDetection(t *testing.T) {
	r := providers.NewRegistry()
	Register(r)
	rec := `{"schema":"flameox.triton-autotune","version":"listener-v1","kernel":"add","key":[1]}` + "\n"
	for _, tt := range []struct {
		name, head string
		want       gen.Format
	}{
		{"triton-listener.jsonl", rec, gen.FormatTriton},
		{"triton-listener", rec, gen.FormatTriton},
		{"spaced.jsonl", `{"schema": "flameox.triton-autotune", "version": "listener-v1"}` + "\n", gen.FormatTriton},
		{"triton.autotune.jsonl", `{"key": [1], "configs_timings": []}` + "\n", gen.FormatTritonCache},
		{"add.autotune.json", `{"key": [1], "configs_timings": []}`, gen.FormatTritonCache},
		{"events.jsonl", `{"event":"run_started","schema":"flameox.pytest.v1"}` + "\n", ""},
		{"other.jsonl", `{"schema":"flameox.other","note":"flameox.triton-autotune"}` + "\n", ""},
	} {
		got := r.Detect(tt.name, []byte(tt.head))
		if tt.want == "" {
			for _, f := range got {
				if f == gen.FormatTriton {
					t.Errorf("Detect(%s) = %v; listed triton", tt.name, got)
				}
			}
			continue
		}
		if len(got) == 0 || got[0] != tt.want {
			t.Errorf("Detect(%s) = %v; want %s first", tt.name, got, tt.want)
		}
	}
	// A listener file named as the triton provider's bundle is detected as the cache by
	// its suffix; the cache reader then says which format it is.
	p := filepath.Join(t.TempDir(), "x.autotune.jsonl")
	if err := os.WriteFile(p, []byte(listenerLine(t, nil)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ue *providers.UnsupportedError
	if _, err := readTriton(context.Background(), providerstest.Input(t, p, gen.FormatTritonCache)); !errors.As(err, &ue) || !strings.Contains(err.Error(), "give its format as triton") {
		t.Errorf("listener JSONL read as a cache entry: %v", err)
	}
}
