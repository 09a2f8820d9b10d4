package trace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// ftraceOnlyTrace is a Perfetto Trace of ftrace packets only: atrace markers written
// through ftrace print events (B|pid|name, E|pid) and one sched_switch, the data the
// native decoder does not read.
func ftraceOnlyTrace() []byte {
	print := func(ts uint64, pid uint32, buf string) []byte {
		var p []byte
		p = protowire.AppendTag(p, 2, protowire.BytesType)
		p = protowire.AppendString(p, buf)
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.VarintType)
		e = protowire.AppendVarint(e, ts)
		e = protowire.AppendTag(e, 2, protowire.VarintType)
		e = protowire.AppendVarint(e, uint64(pid))
		e = protowire.AppendTag(e, 3, protowire.BytesType)
		e = protowire.AppendBytes(e, p)
		return e
	}
	var bundle []byte
	bundle = protowire.AppendTag(bundle, 1, protowire.VarintType)
	bundle = protowire.AppendVarint(bundle, 0)
	for _, e := range [][]byte{print(1000, 100, "B|100|outer"), print(1100, 101, "B|100|a,\"b"), print(1150, 101, "E|100"),
		print(1200, 100, "B|100|inner"), print(1500, 100, "E|100"), print(2000, 100, "E|100")} {
		bundle = protowire.AppendTag(bundle, 2, protowire.BytesType)
		bundle = protowire.AppendBytes(bundle, e)
	}
	var packet []byte
	packet = protowire.AppendTag(packet, 1, protowire.BytesType)
	packet = protowire.AppendBytes(packet, bundle)
	packet = protowire.AppendTag(packet, 10, protowire.VarintType)
	packet = protowire.AppendVarint(packet, 1)
	var trace []byte
	for range 2 {
		trace = protowire.AppendTag(trace, 1, protowire.BytesType)
		trace = protowire.AppendBytes(trace, packet)
	}
	return trace
}

// fakeOutput is what the fake trace_processor_shell prints: the slice query's result in
// trace_processor's format (quoted header, plain integers, quoted strings, "[NULL]"),
// strings hex-encoded by the query (SQLite's upper-case hex) behind an "x".
const fakeOutput = `"id","parent_id","depth","ts","dur","track_id","name","category","utid","upid","thread_name","process_name","parent_name"
0,"[NULL]",0,1000,1000,0,"x6F75746572","[NULL]",1,1,"x776F726B6572","x617070","[NULL]"
2,"[NULL]",0,1100,50,1,"x612C2262","[NULL]",2,"[NULL]","[NULL]","[NULL]","[NULL]"
1,0,1,1200,300,0,"x696E6E6572","x6366",1,1,"x776F726B6572","x617070","x6F75746572"
`

// malformedOutput holds a string the query would have hex-encoded.
const malformedOutput = `"id","parent_id","depth","ts","dur","track_id","name","category","utid","upid","thread_name","process_name","parent_name"
0,"[NULL]",0,1000,1000,0,"outer","[NULL]",1,1,"x776F726B6572","x617070","[NULL]"
`

// writeFake writes a fake trace_processor_shell that asserts its argv (--query-file, a
// query over the slice table, the trace path last) and prints out.
func writeFake(t *testing.T, trace, out string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.csv"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
here=$(dirname "$0")
[ $# -eq 3 ] && [ "$1" = --query-file ] && [ "$3" = '` + trace + `' ] || { echo "fake trace_processor_shell: argv $*" >&2; exit 2; }
grep -q 'FROM slice' "$2" || { echo "fake trace_processor_shell: no slice query" >&2; exit 3; }
cat "$here/out.csv"
`
	p := filepath.Join(dir, "trace_processor_shell")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTraceProcessorFallback(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "ftrace.pftrace")
	if err := os.WriteFile(trace, ftraceOnlyTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, info, _, err := decodeBytes(t, ftraceOnlyTrace(), PerfettoLimits{})
	if err != nil || !info.NothingNative() || info.UnreadByKind()["ftrace_events"] != 2 {
		t.Fatalf("the generated trace is not ftrace-only unread data: %+v %v", info, err)
	}
	in := providers.Input{Path: trace, Format: gen.FormatPerfetto}
	limits := gen.EffectiveLimits{TimeoutSeconds: 30, MaxOutputBytes: 1 << 20, MaxMemoryBytes: 1 << 30}
	ctx := context.Background()

	// The fake's rows, parsed by hand: hex names decoded, sorted by (ts, depth, id).
	fake := writeFake(t, trace, fakeOutput)
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", fake)
	sum, err := os.ReadFile(fake)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(sum)
	wantImpl := map[string]string{"trace_processor_shell": hex.EncodeToString(digest[:])}

	type row struct {
		ID          int64   `json:"id"`
		ParentID    *int64  `json:"parent_id"`
		Name        string  `json:"name"`
		Ts          int64   `json:"ts"`
		Dur         int64   `json:"dur"`
		TrackID     int64   `json:"track_id"`
		Category    *string `json:"category"`
		ThreadName  *string `json:"thread_name"`
		ProcessName *string `json:"process_name"`
		Phase       string  `json:"phase"`
	}
	p := func(v int64) *int64 { return &v }
	s := func(v string) *string { return &v }
	want := []row{
		{ID: 0, Name: "outer", Ts: 1000, Dur: 1000, TrackID: 0, ThreadName: s("worker"), ProcessName: s("app"), Phase: "X"},
		{ID: 2, Name: `a,"b`, Ts: 1100, Dur: 50, TrackID: 1, Phase: "X"},
		{ID: 1, ParentID: p(0), Name: "inner", Ts: 1200, Dur: 300, TrackID: 0, Category: s("cf"), ThreadName: s("worker"), ProcessName: s("app"), Phase: "X"},
	}

	a, err := summarize(ctx, &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantImpl, a.Implementation); diff != "" {
		t.Errorf("implementation (-want +got):\n%s", diff)
	}
	if a.Provider.ID != "perfetto-trace-processor" || a.Provider.Version != "sha256:"+wantImpl["trace_processor_shell"] {
		t.Errorf("provider %+v", a.Provider)
	}
	got, metrics := pageAll[row](t, a.Rows, 2)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summarize_trace rows (-want +got):\n%s", diff)
	}
	if metrics["slice_count"] != int64(3) || metrics["track_count"] != 2 {
		t.Errorf("metrics %v", metrics)
	}

	w, err := window(ctx, &providers.Request[gen.WindowFields]{Fields: &gen.WindowFields{StartNS: json.Number("1150"), EndNS: json.Number("1250")}, Inputs: []providers.Input{in}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	gotW, _ := pageAll[idRow](t, w.Rows, 10)
	if len(gotW) != 2 || gotW[0].ID != 0 || gotW[1].ID != 1 || w.Implementation == nil {
		t.Errorf("window rows %+v", gotW)
	}

	g, err := callGraph(ctx, &providers.Request[gen.NoFields]{Fields: &gen.NoFields{}, Inputs: []providers.Input{in}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	edges, _ := pageAll[gen.TraceCallEdgeRow](t, g.Rows, 10)
	if len(edges) != 1 || edges[0].Parent != "outer" || edges[0].Child != "inner" || edges[0].SampleCount != 1 || edges[0].InclusiveDurationNS != json.Number("300") {
		t.Errorf("call graph %+v", edges)
	}

	// Output trace_processor did not print for this query is refused typed.
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", writeFake(t, trace, malformedOutput))
	a, err = summarize(ctx, &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	var de *providers.DecodeError
	if _, err := a.Rows.Page(ctx, 0, 10, nil); !errors.As(err, &de) {
		t.Errorf("malformed output: %v", err)
	}

	// Without trace_processor_shell: the typed unavailable state.
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", filepath.Join(t.TempDir(), "missing"))
	a, err = summarize(ctx, &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	var ue *providers.UnavailableError
	if _, err := a.Rows.Page(ctx, 0, 10, nil); !errors.As(err, &ue) || a.Implementation != nil {
		t.Errorf("without trace_processor_shell: %v", err)
	}
}

// TestTraceProcessorNotForNativeTraces: a trace with track events is read natively even
// where trace_processor_shell exists (the fake would fail on any call).
func TestTraceProcessorNotForNativeTraces(t *testing.T) {
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", writeFake(t, "/nowhere", ""))
	in := providers.Input{Path: corpusFile(t, "perfetto-mcp-rs__basic.perfetto-trace"), Format: gen.FormatPerfetto}
	a, err := summarize(context.Background(), &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Implementation != nil || a.Provider.ID != "flameox-trace" {
		t.Errorf("native trace bound to trace_processor: %+v %v", a.Provider, a.Implementation)
	}
	if rows, _ := pageAll[idRow](t, a.Rows, 10); len(rows) != 3 {
		t.Errorf("rows %+v", rows)
	}
}
