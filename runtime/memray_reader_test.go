package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
)

// TestCaptureRecordsItsReader: a memray capture's pages, the first and the continued
// ones of the same session, are read by the workload's interpreter the runtime recorded
// (a virtual environment holding a FAKE memray package, named as such), although the
// server's setting names a Python without memray; the same file outside the capture's
// record is read by the server's setting and is unavailable.
func TestCaptureRecordsItsReader(t *testing.T) {
	py := testtool.Require(t, "/usr/bin/python3")
	if exec.Command(py, "-c", "import memray").Run() == nil {
		t.Skip("/usr/bin/python3 has memray; the test needs a server-side Python without it")
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("no venv: %v %s", err, out)
	}
	site, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(site) != 1 {
		t.Fatal("no site-packages in the venv")
	}
	if out, err := exec.Command("cp", "-r", "../providers/memory/testdata/fakememray/memray", site[0]).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Setenv("FLAMEOX_MEMRAY_PYTHON", py)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "app.py"), []byte("kept = [bytearray(1024) for _ in range(4)]\n"), 0o644)
	rt := newRuntime(t)
	res, f := call(t, rt, "capture_and_rank_allocation_hotspots", map[string]any{
		"target":    map[string]any{"argv": []string{filepath.Join(venv, "bin", "python3"), "app.py"}, "cwd": dir},
		"provider":  map[string]any{"kind": "memray"},
		"page_size": 2})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	if cr.Status != "complete" || cr.AnalysisFailure != nil || cr.NextPage == nil {
		t.Fatalf("capture = %+v", cr)
	}
	next, f := call(t, rt, cr.NextPage.Tool, cr.NextPage.Arguments)
	if f != nil {
		t.Fatalf("the continued page: %v", f)
	}
	if next.(*Result).Coverage.RowsReturned == 0 {
		t.Errorf("continued page = %+v", next)
	}

	// The same bytes elsewhere are not the capture's: the server's Python reads them.
	captured := cr.Inputs[0].Path
	copyPath := filepath.Join(t.TempDir(), "memory.bin")
	b, _ := os.ReadFile(*captured)
	os.WriteFile(copyPath, b, 0o600)
	_, f = call(t, rt, "rank_allocation_hotspots", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": copyPath}}})
	if f == nil || f.Code != gen.FailureCodeUnavailableCapability {
		t.Fatalf("a copy outside the record: %v", f)
	}
}
