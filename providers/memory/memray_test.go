package memory

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// No real memray is installable here: these tests use the FAKE memray package in
// testdata/fakememray (memray's real header magic, then JSON its FileReader reads back),
// installed into a virtual environment of /usr/bin/python3 so that probing and reading
// find it exactly as they would find a real memray.

// fakeVenv makes a virtual environment, with the fake memray in its site-packages when
// withMemray, and returns its python as the workload would name it (a symlink).
func fakeVenv(t *testing.T, withMemray bool) string {
	t.Helper()
	base := testtool.Require(t, "/usr/bin/python3")
	dir := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(base, "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v: %s", err, out)
	}
	if withMemray {
		sites, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages"))
		if len(sites) != 1 {
			t.Fatalf("site-packages: %v", sites)
		}
		dst := filepath.Join(sites[0], "memray")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"__init__.py", "__main__.py"} {
			b, err := os.ReadFile(filepath.Join("testdata", "fakememray", "memray", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return filepath.Join(dir, "bin", "python3")
}

// fakeRecords has recursion (a frame twice on one stack), a frame that is only a caller,
// frames sharing a function name in different files, and a record without a stack.
var fakeRecords = map[string]any{
	"peak_memory": 1 << 20, "total_allocations": 41,
	"high_watermark": []map[string]any{
		{"size": 700000, "n_allocations": 7, "stack": [][]any{{"build", "app.py", 12}, {"main", "app.py", 30}}},
		{"size": 200000, "n_allocations": 2, "stack": [][]any{{"walk", "tree.py", 5}, {"walk", "tree.py", 5}, {"walk", "tree.py", 8}, {"main", "app.py", 31}}},
		{"size": 100000, "n_allocations": 20, "stack": [][]any{{"build", "other.py", 3}, {"main", "app.py", 32}}},
		{"size": 48576, "n_allocations": 1, "stack": [][]any{}},
		{"size": 200000, "n_allocations": 4, "stack": [][]any{{"build", "app.py", 12}, {"main", "app.py", 33}}},
	},
	"leaked": []map[string]any{
		{"size": 65536, "n_allocations": 1, "stack": [][]any{{"cache", "lib.py", 40}, {"build", "app.py", 14}, {"main", "app.py", 30}}},
		{"size": 4096, "n_allocations": 3, "stack": [][]any{{"main", "app.py", 34}}},
	},
}

// fakeCapture runs the target under the fake `python -m memray run` and returns the capture.
func fakeCapture(t *testing.T, python string, records any) string {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.json")
	b, _ := json.Marshal(records)
	if err := os.WriteFile(rec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "memory.bin")
	argv := memrayCommand(&gen.MemrayProvider{}, nil, providers.Case{Argv: []string{python, "-c", "x = [0] * 1000"}}, dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "FAKE_MEMRAY_RECORDS="+rec)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v: %s", argv, err, o)
	}
	return out
}

// memrayTruth aggregates the fake's records with python3 alone (testdata/memraytruth.py),
// ranked in order (inclusive or self).
func memrayTruth(t *testing.T, path, which, order string) (rows []map[string]any, metrics map[string]any) {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "testdata/memraytruth.py", path, which, order).Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Rows    []map[string]any `json:"rows"`
		Metrics map[string]any   `json:"metrics"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v.Rows, v.Metrics
}

// rankMemrayFile ranks path with python as the server's $FLAMEOX_MEMRAY_PYTHON.
func rankMemrayFile(t *testing.T, path, python string, retained bool) (*providers.Analysis, error) {
	t.Helper()
	return rankMemrayOrdered(t, path, python, retained, "")
}

// rankMemrayOrdered ranks path in the given order ("" leaves the field unset).
func rankMemrayOrdered(t *testing.T, path, python string, retained bool, order string) (*providers.Analysis, error) {
	t.Helper()
	t.Setenv(memrayPythonVariable, python)
	in := providerstest.Input(t, path, gen.FormatMemray)
	if retained {
		return providerstest.Analyze(t, rankRetained, &gen.RetainedFields{Order: order}, in)
	}
	return providerstest.Analyze(t, rankAllocations, &gen.AllocationFields{Order: order}, in)
}

func TestMemrayMatchesFakeRecords(t *testing.T) {
	py := fakeVenv(t, true)
	capture := fakeCapture(t, py, fakeRecords)
	for _, tc := range []struct {
		name     string
		which    string
		retained bool
		order    string
	}{
		{"high_watermark", memrayHighWatermark, false, ""}, {"leaked", memrayLeaked, true, ""},
		{"high_watermark by self", memrayHighWatermark, false, "self"}, {"leaked by self", memrayLeaked, true, "self"},
		{"high_watermark by inclusive", memrayHighWatermark, false, "inclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := rankMemrayOrdered(t, capture, py, tc.retained, tc.order)
			if err != nil {
				t.Fatal(err)
			}
			order := tc.order
			if order == "" {
				order = "inclusive" // the default
			}
			wantRows, wantMetrics := memrayTruth(t, capture, tc.which, order)
			if d := cmp.Diff(wantRows, providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))); d != "" {
				t.Errorf("rows (-python3 +flameox):\n%s", d)
			}
			got := map[string]any{}
			for k := range wantMetrics {
				b, _ := json.Marshal(a.Metrics[k])
				var v any
				_ = json.Unmarshal(b, &v)
				got[k] = v
			}
			if d := cmp.Diff(wantMetrics, got); d != "" {
				t.Errorf("metrics (-python3 +flameox):\n%s", d)
			}
			if a.Provider.ID != "memray" || a.Provider.Version != "1.17.0+fake" {
				t.Errorf("provider %+v", a.Provider)
			}
			sum, _ := filepath.EvalSymlinks(py)
			exe, _ := providers.Bind(sum, func() error { return nil })
			if a.Implementation["memray-python"] != exe.SHA256 || a.Implementation["memray"] != "1.17.0+fake" {
				t.Errorf("implementation %v", a.Implementation)
			}
		})
	}
}

func TestMemrayUnavailableAndMalformed(t *testing.T) {
	withMemray, without := fakeVenv(t, true), fakeVenv(t, false)
	capture := fakeCapture(t, withMemray, fakeRecords)
	bad := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(bad, append(append([]byte{}, memrayMagic...), "{not json"...), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := "python3"
	for _, tc := range []struct {
		name, path, python string
		want               any
	}{
		{"no memray in the interpreter", capture, without, &providers.UnavailableError{}},
		{"malformed capture", bad, withMemray, &providers.DecodeError{}},
		{"relative interpreter setting", capture, rel, &providers.UnavailableError{}},
		{"interpreter setting naming nothing", capture, "/nonexistent/python3", &providers.UnavailableError{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rankMemrayFile(t, tc.path, tc.python, false)
			switch w := tc.want.(type) {
			case *providers.UnavailableError:
				if !errors.As(err, &w) || w.Module != "memray" || w.Remediation == "" {
					t.Fatalf("got %v, want UnavailableError with remediation", err)
				}
			case *providers.DecodeError:
				if !errors.As(err, &w) {
					t.Fatalf("got %v, want DecodeError", err)
				}
			}
		})
	}
}

func TestMemrayAdmit(t *testing.T) {
	withMemray, without := fakeVenv(t, true), fakeVenv(t, false)
	argvField := []any{"target", "argv"}
	for _, tc := range []struct {
		name      string
		argv      []string
		wantField []any // nil: no FieldError
		wantUnav  bool
	}{
		{"fake memray", []string{withMemray, "-c", "pass"}, nil, false},
		{"interpreter alone", []string{withMemray}, []any{"target", "argv"}, false},
		{"not python", []string{"/bin/sh", "-c", "true"}, []any{"target", "argv", 0}, false},
		{"relative path", []string{"./venv/bin/python3", "x.py"}, []any{"target", "argv", 0}, false},
		{"no memray", []string{without, "-c", "pass"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admitMemray([]providers.Case{{Argv: tc.argv, ArgvField: argvField}})
			var fe *providers.FieldError
			var ue *providers.UnavailableError
			switch {
			case tc.wantField != nil:
				if !errors.As(err, &fe) {
					t.Fatalf("got %v, want FieldError", err)
				}
				if d := cmp.Diff(tc.wantField, fe.Field); d != "" {
					t.Errorf("field path:\n%s", d)
				}
			case tc.wantUnav:
				if !errors.As(err, &ue) || ue.Remediation == "" {
					t.Fatalf("got %v, want UnavailableError", err)
				}
			case err != nil:
				t.Fatal(err)
			}
		})
	}
	got := memrayCommand(&gen.MemrayProvider{Native: true}, nil, providers.Case{Argv: []string{"python3", "-m", "app", "--x"}}, "/d")
	if d := cmp.Diff([]string{"python3", "-m", "memray", "run", "--output", "/d/memory.bin", "--native", "-m", "app", "--x"}, got); d != "" {
		t.Error(d)
	}
}

func TestMemrayVersionOK(t *testing.T) {
	for v, want := range map[string]bool{"1.17.0": true, "1.17": true, "1.19.1": true, "2.0.0": true, "1.17.0+fake": true,
		"1.16.2": false, "1.9.0": false, "0.99": false, "": false, "1": false, "x.y": false, "1.17rc1": true} {
		if got := memrayVersionOK(v); got != want {
			t.Errorf("memrayVersionOK(%q) = %v, want %v", v, got, want)
		}
	}
}
