package providers_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// TestUnavailableFromRecord: the unavailable state of a record keeps the fields the
// runtime reports (provider id, the first executable, preparable for a managed
// provider) and the record's words; LocateAndBind answers it when the tool is not there
// and binds it when it is.
func TestUnavailableFromRecord(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake tool is a shell script")
	}
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	t.Setenv("FLAMEOX_FAKE_TOOL", "")
	tool := prepare.Tool{ID: "nsight-compute", Class: prepare.HostTool, Executables: []string{"fake-ncu"}, Variable: "FLAMEOX_FAKE_TOOL",
		Install: map[string]string{"": "Install fake-ncu so that it is on PATH, or set FLAMEOX_FAKE_TOOL to it."}}
	need := prepare.Need{Purpose: "to read fakes", Alternative: "export a fake"}
	_, err := providers.LocateAndBind(tool, need)
	e, ok := err.(*providers.UnavailableError)
	if !ok {
		t.Fatalf("LocateAndBind without the tool = %v", err)
	}
	if e.Provider != "nsight-compute" || e.Executable != "fake-ncu" || e.Module != "" || e.Preparable {
		t.Errorf("unavailable = %+v", e)
	}
	if e.Message != "fake-ncu is not installed or not on PATH; it is needed to read fakes" ||
		!strings.HasSuffix(e.Remediation, "or set FLAMEOX_FAKE_TOOL to it. Then retry the same call, or export a fake.") {
		t.Errorf("words = %q, %q", e.Message, e.Remediation)
	}
	managed := prepare.Tool{ID: "py-spy", Class: prepare.Managed, Executables: []string{"py-spy"}, Variable: "FLAMEOX_PY_SPY"}
	if m := providers.Unavailable(managed, need); !m.Preparable || m.Executable != "py-spy" || !strings.HasPrefix(m.Remediation, "Call prepare_providers") {
		t.Errorf("managed unavailable = %+v", m)
	}

	p := testtool.FakeExecutable(t, dir, "fake-ncu", 0o755)
	exe, err := providers.LocateAndBind(tool, need)
	if err != nil || exe.Path != p || exe.SHA256 == "" {
		t.Errorf("LocateAndBind = %+v, %v; want %s bound", exe, err, p)
	}
	t.Setenv("FLAMEOX_FAKE_TOOL", filepath.Join(dir, "missing"))
	_, err = providers.LocateAndBind(tool, need)
	if e, ok := err.(*providers.UnavailableError); !ok || !strings.HasPrefix(e.Message, "FLAMEOX_FAKE_TOOL is set but does not name an executable file") ||
		strings.Contains(e.Message, dir) {
		t.Errorf("LocateAndBind with the variable naming nothing = %v", err)
	}
}
