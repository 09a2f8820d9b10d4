package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/repository"
)

// opener returns a function that opens a new runtime (a new session, or a one-shot CLI
// call) over the evidence store store.
func opener(t *testing.T, store string) func() *Runtime {
	return func() *Runtime {
		rt, err := New(all.Registry(), nil, WithStore(repository.Location{Dir: store, Source: repository.SourceExplicit}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		return rt
	}
}

func TestPrepareThenCapturePySpy(t *testing.T) {
	testtool.NoPySpyMachine(t)
	store := filepath.Join(t.TempDir(), "store")
	open := opener(t, store)
	rt := open()
	dir := t.TempDir()
	const tool = "capture_and_rank_cpu_hotspots"

	// Without py-spy the capture is retryable after prepare_providers, not an error.
	_, f := captureCPU(t, rt, tool, "py-spy", dir, "sh", "-c", "exit 0")
	wantRetryable(t, f, tool)

	res, f := rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["py-spy","perf","torch","py-spy"]}`))
	if f != nil {
		t.Fatal(f)
	}
	got := res.(*gen.PrepareProvidersResult)
	want := &gen.PrepareProvidersResult{Status: "complete",
		RequestedProviders:       []gen.PreparableProvider{"perf", "py-spy", "torch"},
		PreparedManagedProviders: []gen.PreparableProvider{"py-spy"},
		Preparation:              gen.Preparation{Status: "prepared", Installed: []gen.PreparableProvider{"py-spy"}},
		Launcher:                 gen.Launcher{Command: "flameox", Args: []string{"mcp", "serve"}},
		ActivationStatus:         "ready"}
	if d := cmp.Diff(want, got, ignoreRequirementTexts); d != "" {
		t.Errorf("prepare_providers (-want +got):\n%s", d)
	}
	if len(got.ExternalRequirements) != 1 || got.ExternalRequirements[0].ProviderID != "perf" || got.ExternalRequirements[0].Status != "missing" ||
		len(got.WorkloadRequirements) != 1 || got.WorkloadRequirements[0].ProviderID != "torch" || got.WorkloadRequirements[0].Status != "unverified" {
		t.Errorf("requirements: %+v / %+v", got.ExternalRequirements, got.WorkloadRequirements)
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), store) || strings.Contains(string(b), os.Getenv("PIP_FIND_LINKS")) {
		t.Errorf("the result names a host path: %s", b)
	}

	// The same session captures with the prepared collector.
	cap1, f := captureCPU(t, rt, tool, "py-spy", dir, "sh", "-c", "exit 0")
	if f != nil {
		t.Fatal(f)
	}
	rows := tableRows(t, &cap1.Result)
	// The fake collector's document: hot holds three of the four samples.
	if len(rows) != 3 || rows[0]["function"] != "hot" || rows[0]["self_samples"] != 3.0 {
		t.Errorf("rows = %v", rows)
	}

	// Preparing again reuses the verified installation.
	res, f = rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["py-spy"]}`))
	if f != nil || len(res.(*gen.PrepareProvidersResult).Preparation.Installed) != 0 {
		t.Fatalf("second preparation: %+v %v", res, f)
	}

	// A new session (a one-shot CLI capture) finds the verified installation.
	if _, f := captureCPU(t, open(), tool, "py-spy", dir, "sh", "-c", "exit 0"); f != nil {
		t.Fatalf("a new session: %v", f)
	}

	// A prepared collector that changed is retryable again, and preparation replaces it.
	exe := filepath.Join(ToolsDir(store), "py-spy-0.4.2", "bin", "py-spy")
	if err := os.WriteFile(exe, []byte(testtool.FakePySpy+"# changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, f = captureCPU(t, rt, tool, "py-spy", dir, "sh", "-c", "exit 0")
	wantRetryable(t, f, tool)
	if f.Details["reason"] != "binding_changed" {
		t.Errorf("details = %v", f.Details)
	}
	res, f = rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["py-spy"]}`))
	if f != nil || len(res.(*gen.PrepareProvidersResult).Preparation.Installed) != 1 {
		t.Fatalf("preparation after a change: %+v %v", res, f)
	}
	if _, f := captureCPU(t, rt, tool, "py-spy", dir, "sh", "-c", "exit 0"); f != nil {
		t.Fatal(f)
	}
}

// TestPrepareThenReadMemray: memray's reader is a managed provider. On a machine whose
// python3 has no memray, reading a memray capture is retryable after prepare_providers
// {provider_ids: ["memray"]}; preparation installs a wheel named as memray (the FAKE memray
// package of providers/memory/testdata, reporting the pinned version) from a local index
// into a virtual environment in the tools directory, and the retried analysis reads the
// file with that environment's python, in this session and in a new one. An operator's
// FLAMEOX_MEMRAY_PYTHON still wins.
func TestPrepareThenReadMemray(t *testing.T) {
	capture := testtool.NoMemrayMachine(t, prepare.MemrayVersion)
	store := filepath.Join(t.TempDir(), "store")
	open := opener(t, store)
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": capture}}}
	const tool = "rank_retained_memory"

	rt := open()
	_, f := call(t, rt, tool, args)
	wantRetryableFor(t, f, tool, "memray")

	res, f := rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["memray"],"timeout_seconds":600}`))
	if f != nil {
		t.Fatal(f)
	}
	got := res.(*gen.PrepareProvidersResult)
	if d := cmp.Diff([]gen.PreparableProvider{"memray"}, got.PreparedManagedProviders); d != "" || got.ActivationStatus != "ready" ||
		len(got.Preparation.Installed) != 1 || len(got.WorkloadRequirements) != 1 || got.WorkloadRequirements[0].ProviderID != "memray" {
		t.Fatalf("prepare_providers = %+v", got)
	}
	if _, err := os.Stat(filepath.Join(ToolsDir(store), "memray-"+prepare.MemrayVersion, "venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}

	read := func(rt *Runtime) *Result {
		t.Helper()
		res, f := call(t, rt, tool, args)
		if f != nil {
			t.Fatal(f)
		}
		r := res.(*Result)
		// The fake in the prepared environment reports the pinned version.
		if r.Provider.Version != prepare.MemrayVersion || len(tableRows(t, r)) != 2 || tableRows(t, r)[0]["function"] != "grow" {
			t.Fatalf("retried analysis: provider %+v, rows %v", r.Provider, tableRows(t, r))
		}
		return r
	}
	read(rt)
	read(open()) // a one-shot CLI analysis after `flameox prepare memray`

	// The operator's interpreter wins over the prepared one, and is theirs to fix.
	t.Setenv("FLAMEOX_MEMRAY_PYTHON", testtool.RequirePip(t))
	_, f = call(t, rt, tool, args)
	if r, ok := f.Recoverable(); f == nil || !ok || r.Status != "unavailable" || r.NextAction == nil || r.NextAction.OperatorAction == nil {
		t.Fatalf("with FLAMEOX_MEMRAY_PYTHON naming a Python without memray: %+v", f)
	}
}

func TestPrepareFailureLeavesBindingsUnchanged(t *testing.T) {
	testtool.NoPySpyMachine(t)
	t.Setenv("PIP_FIND_LINKS", t.TempDir()) // an empty index
	rt := newRuntime(t)
	_, f := rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["py-spy"],"timeout_seconds":60}`))
	if f == nil || f.Code != gen.FailureCodeSetupFailure || f.Details["provider_id"] != "py-spy" {
		t.Fatalf("failure = %v", f)
	}
	if rt.bindings.get("py-spy") != nil {
		t.Error("a failed preparation bound py-spy")
	}
	// Host-only requests need no installer and no data directory.
	res, f := rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["otlp","nsight-systems"]}`))
	if f != nil {
		t.Fatal(f)
	}
	r := res.(*gen.PrepareProvidersResult)
	if r.ActivationStatus != "not_applicable" || r.Preparation.Status != "not_applicable" || r.NextAction != nil || len(r.ExternalRequirements) != 2 {
		t.Errorf("host-only = %+v", r)
	}
	// An id outside the preparable set is invalid input naming the accepted ids.
	_, f = rt.Call(context.Background(), "prepare_providers", []byte(`{"provider_ids":["valgrind"]}`))
	if f == nil || f.Code != gen.FailureCodeInvalidInput || len(f.AcceptedValues) != 13 {
		t.Fatalf("unknown provider: %+v", f)
	}
}

func wantRetryable(t *testing.T, f *failure.Failure, tool string) {
	t.Helper()
	wantRetryableFor(t, f, tool, "py-spy")
}

// wantRetryableFor checks f is catalog §3.2's retryable state: prepare provider, then
// retry tool.
func wantRetryableFor(t *testing.T, f *failure.Failure, tool, provider string) {
	t.Helper()
	if f == nil || f.Code != gen.FailureCodeUnavailableCapability {
		t.Fatalf("want the retryable unavailable state, got %v", f)
	}
	r, ok := f.Recoverable()
	if !ok || r.Status != "retryable" || r.NextAction == nil || r.NextAction.CallTool == nil {
		t.Fatalf("recoverable = %+v", r)
	}
	ct := r.NextAction.CallTool
	if ct.Tool != "prepare_providers" || ct.ThenRetry == nil || *ct.ThenRetry != tool ||
		!cmp.Equal(ct.Arguments, map[string]any{"provider_ids": []string{provider}}) {
		t.Errorf("next_action = %+v", ct)
	}
}

var ignoreRequirementTexts = cmp.FilterPath(func(p cmp.Path) bool {
	s := p.String()
	return s == "ExternalRequirements" || s == "WorkloadRequirements"
}, cmp.Ignore())
