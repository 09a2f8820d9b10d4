package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/testtool"
)

// recordedReturncodes preserves the analysis id and returns the workload return codes its
// evidence recorded, in execution order.
func recordedReturncodes(t *testing.T, rt *Runtime, id string) (string, []any) {
	t.Helper()
	p, f := rt.Preserve(id)
	if f != nil {
		t.Fatal(f)
	}
	ev, f := rt.Inspect(p.EvidenceID)
	if f != nil {
		t.Fatal(f)
	}
	var codes []any
	for _, e := range ev.Body.CaptureRequest["executions"].([]any) {
		codes = append(codes, e.(map[string]any)["workload_returncode"])
	}
	return p.EvidenceID, codes
}

// TestCapturesWithIdenticalOutputKeepTheirOwnIdentity: two workloads printing the same
// text, one exiting 0 and one 7, are two analyses; preserving either records its own exit.
func TestCapturesWithIdenticalOutputKeepTheirOwnIdentity(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	ok, f := capture(t, rt, map[string]any{"target": target(dir, "sh", "-c", "echo same"), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	bad, f := capture(t, rt, map[string]any{"target": target(dir, "sh", "-c", "echo same; exit 7"), "provider": direct()})
	if f != nil {
		t.Fatal(f)
	}
	if ok.AnalysisID == bad.AnalysisID {
		t.Fatal("two captures share one analysis_id")
	}
	if ok.Inputs[0].SHA256 != bad.Inputs[0].SHA256 {
		t.Fatal("the workloads were meant to print identical bytes")
	}
	// A plain analysis of the same bytes is a third, separate analysis.
	res, f := call(t, rt, "preview_artifact", map[string]any{"sources": []any{pathSource(*ok.Inputs[0].Path)}})
	if f != nil {
		t.Fatal(f)
	}
	if id := res.(*Result).AnalysisID; id == ok.AnalysisID || id == bad.AnalysisID {
		t.Fatal("a plain analysis shares a capture's analysis_id")
	}
	for _, c := range []struct {
		id   string
		want float64
	}{{ok.AnalysisID, 0}, {bad.AnalysisID, 7}} {
		if _, codes := recordedReturncodes(t, rt, c.id); len(codes) != 1 || codes[0] != c.want {
			t.Errorf("analysis %s recorded return codes %v, want [%v]", c.id, codes, c.want)
		}
	}
}

// TestAnalysisFailureKeepsTheCapture: a capture whose artifacts fail analysis (here an
// input over max_input_bytes) is partial with a typed analysis_failure and a handle, and
// requested preservation publishes its native files and its executions.
func TestAnalysisFailureKeepsTheCapture(t *testing.T) {
	for _, preserve := range []bool{false, true} {
		rt := newRuntime(t)
		res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"),
			"provider": direct(), "limits": map[string]any{"max_input_bytes": 1024}, "preserve": preserve})
		if f != nil {
			t.Fatalf("preserve=%v: %v", preserve, f)
		}
		af := res.AnalysisFailure
		if res.Status != "partial" || af == nil || af.Code != "LIMIT_EXCEEDED" || af.Details["analysis_source_count"] != 2 || res.AnalysisID == "" {
			t.Fatalf("preserve=%v: status %s failure %+v id %q", preserve, res.Status, af, res.AnalysisID)
		}
		if !preserve {
			if a := res.NextAction.PreserveThenAnalyze; a == nil || a.PreserveArguments["analysis_id"] != res.AnalysisID {
				t.Errorf("next_action = %+v", res.NextAction)
			}
			continue
		}
		if res.Preserved == nil || res.Preserved.ArtifactCount != 2 || res.NextAction.CallTool == nil ||
			res.NextAction.CallTool.Tool != "inspect_evidence" || res.NextAction.CallTool.ThenRetry == nil {
			t.Fatalf("preserved %+v next_action %+v", res.Preserved, res.NextAction)
		}
		ev, f := rt.Inspect(res.Preserved.EvidenceID)
		if f != nil {
			t.Fatal(f)
		}
		execs := ev.Body.CaptureRequest["executions"].([]any)
		if len(ev.AnalysisSources) != 2 || execs[0].(map[string]any)["workload_returncode"] != 0.0 ||
			fmt.Sprint(ev.Body.AnalysisRequest.Failure["code"]) != "LIMIT_EXCEEDED" {
			t.Errorf("evidence = %+v", ev.Body)
		}
	}
}

// TestCaptureProvenanceFitsItsLimit: console excerpts shrink so that the preserved
// provenance stays within max_provenance_bytes, and the cut bytes count as omitted.
func TestCaptureProvenanceFitsItsLimit(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	// The console excerpts (diagnostics mode, 4 KiB a stream) exceed the 4,096-byte limit.
	os.WriteFile(filepath.Join(dir, "noisy.py"), []byte("import sys\nfor i in range(300):\n    print('line', i)\n    print('err', i, file=sys.stderr)\n"), 0o644)
	raw, _ := json.Marshal(map[string]any{
		"target":   target(dir, "python3", "noisy.py"),
		"provider": map[string]any{"kind": "cprofile"}, "limits": map[string]any{"max_provenance_bytes": 4096}, "preserve": true,
	})
	out, f := rt.Call(t.Context(), "capture_and_rank_cpu_hotspots", raw)
	if f != nil {
		t.Fatal(f)
	}
	cr := out.(*CaptureResult)
	if cr.Preserved == nil {
		t.Fatalf("not preserved: %+v", cr.PreservationFailure)
	}
	d := cr.Capture.Executions[0].ConsoleDiagnostics
	if d.StdoutComplete && d.StderrComplete || d.StdoutOmittedBytes+d.StderrOmittedBytes == 0 {
		t.Errorf("excerpts were not cut: %+v", d)
	}
	if d.Stderr != "" && !strings.HasSuffix(strings.TrimSpace(d.Stderr), "err 299") {
		t.Errorf("the stderr excerpt keeps its tail: %q", d.Stderr)
	}
	m, f := rt.Manifest(cr.Preserved.EvidenceID)
	if f != nil {
		t.Fatal(f)
	}
	var manifest struct {
		Body struct {
			CaptureRequest json.RawMessage `json:"capture_request"`
		} `json:"body"`
	}
	json.Unmarshal(m, &manifest)
	b, err := canon.Canonical(manifest.Body.CaptureRequest)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4096 {
		t.Errorf("preserved provenance is %d bytes under a 4096-byte limit", len(b))
	}
}

// TestPreservationReleasesCaptureScratch: once preserved, the capture's scratch is gone
// and its next page reads the evidence.
func TestPreservationReleasesCaptureScratch(t *testing.T) {
	rt := newRuntime(t)
	res, f := capture(t, rt, map[string]any{"target": target(t.TempDir(), "seq", "1", "30"), "provider": direct(),
		"page_size": 10, "preserve": true})
	if f != nil {
		t.Fatal(f)
	}
	if res.Preserved == nil || res.NextPage == nil {
		t.Fatalf("preserved %+v next_page %+v", res.Preserved, res.NextPage)
	}
	dir := filepath.Dir(filepath.Dir(*res.Inputs[0].Path))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("capture scratch %s survives preservation: %v", dir, err)
	}
	raw, _ := json.Marshal(res.NextPage.Arguments)
	var args map[string]any
	json.Unmarshal(raw, &args)
	if len(args["sources"].([]any)) != 2 || !strings.Contains(string(raw), `"kind":"evidence"`) || strings.Contains(string(raw), `"kind":"path"`) {
		t.Fatalf("next_page sources = %s", raw)
	}
	page2, f := call(t, rt, res.NextPage.Tool, args)
	if f != nil {
		t.Fatal(f)
	}
	if rows := tableRows(t, page2); len(rows) != 10 || rows[0]["text"] != "11" {
		t.Errorf("page 2 from evidence = %v", rows)
	}
}

// TestBoundCommandNoticesARetargetedLink: a command bound through a symbolic link (what
// a wrapping collector launches) is changed when the link reaches another file after
// admission, even one with the bound file's content elsewhere, and when the file itself
// changes.
func TestBoundCommandNoticesARetargetedLink(t *testing.T) {
	dir := t.TempDir()
	a, b, link := filepath.Join(dir, "a.sh"), filepath.Join(dir, "b.sh"), filepath.Join(dir, "run")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho same\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	c, f := bindCommand([]string{link}, dir, failure.Path("target", "argv"))
	if f != nil {
		t.Fatal(f)
	}
	if c.named != link || !c.unchanged() {
		t.Fatalf("bound %+v: changed right after admission", c)
	}
	os.Remove(link)
	os.Symlink(b, link)
	if c.unchanged() {
		t.Error("a link retargeted to another file (with the same content) is unchanged")
	}
	os.Remove(link)
	os.Symlink(a, link)
	os.WriteFile(a, []byte("#!/bin/sh\necho other\n"), 0o755)
	if c.unchanged() {
		t.Error("a changed file is unchanged")
	}
}
