package trace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/perfetto/perfettotest"
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
// query over the slice table that keeps NULL names NULL, the trace path last) and prints
// out.
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
grep -q 'IS NULL THEN NULL' "$2" || { echo "fake trace_processor_shell: the query would print a NULL name as \"x\"" >&2; exit 3; }
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
	_, info, _, err := perfettotest.Decode(t, ftraceOnlyTrace(), perfetto.Limits{})
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

	a, err := summarize(ctx, &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}, Limits: limits})
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
	a, err = summarize(ctx, &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	var de *providers.DecodeError
	if _, err := a.Rows.Page(ctx, 0, 10, nil); !errors.As(err, &de) {
		t.Errorf("malformed output: %v", err)
	}

	// Without trace_processor_shell: the typed unavailable state.
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", filepath.Join(t.TempDir(), "missing"))
	a, err = summarize(ctx, &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}, Limits: limits})
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
	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}})
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

// TestTraceProcessorExecutable: $FLAMEOX_TRACE_PROCESSOR when set (an executable file,
// else none), else trace_processor_shell on PATH, else trace_processor on PATH (the
// catalog's order, §1.3).
func TestTraceProcessorExecutable(t *testing.T) {
	dir := t.TempDir()
	shell := testtool.FakeExecutable(t, filepath.Join(dir, "a"), "trace_processor_shell", 0o755)
	plain := testtool.FakeExecutable(t, filepath.Join(dir, "b"), "trace_processor", 0o755)
	notExec := testtool.FakeExecutable(t, filepath.Join(dir, "c"), "trace_processor_shell", 0o644)
	a, b, c := filepath.Dir(shell), filepath.Dir(plain), filepath.Dir(notExec)
	for _, tc := range []struct {
		env, path, want string
	}{
		{"", b, plain},
		{"", b + ":" + a, shell},
		{"", c, ""},
		{shell, b, shell},
		{notExec, b, ""},
		{a, b, ""}, // a directory
	} {
		t.Setenv("FLAMEOX_TRACE_PROCESSOR", tc.env)
		t.Setenv("PATH", tc.path)
		got, ok := traceProcessorExecutable()
		if ok != (tc.want != "") || (ok && got != tc.want) {
			t.Errorf("FLAMEOX_TRACE_PROCESSOR=%q PATH=%q: %q %v, want %q", tc.env, tc.path, got, ok, tc.want)
		}
	}
}

// TestTraceProcessorUnusable: FLAMEOX_TRACE_PROCESSOR naming a file that is not
// executable, or an executable that cannot be started, is the unavailable state with
// guidance, never a decode failure; a limit is said in whole bytes.
func TestTraceProcessorUnusable(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "ftrace.pftrace")
	if err := os.WriteFile(trace, ftraceOnlyTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: trace, Format: gen.FormatPerfetto}
	page := func(limits gen.EffectiveLimits) error {
		a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}, Limits: limits})
		if err != nil {
			return err
		}
		_, err = a.Rows.Page(context.Background(), 0, 10, nil)
		return err
	}
	limits := gen.EffectiveLimits{TimeoutSeconds: 30, MaxOutputBytes: 1 << 20, MaxMemoryBytes: 1 << 30}
	for name, file := range map[string]struct {
		body []byte
		mode os.FileMode
	}{
		"not executable": {[]byte("#!/bin/sh\nexit 0\n"), 0o644},
		"not a program":  {[]byte{0x7f, 'E', 'L', 'F', 0, 0, 0, 0}, 0o755},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(p, file.body, file.mode); err != nil {
			t.Fatal(err)
		}
		t.Setenv("FLAMEOX_TRACE_PROCESSOR", p)
		err := page(limits)
		var ue *providers.UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(ue.Message+ue.Remediation, "FLAMEOX_TRACE_PROCESSOR") || strings.Contains(ue.Message, dir) {
			t.Errorf("%s: %T %v", name, err, err)
		}
	}

	// 10,000,000 bytes of output allowed, 11,000,000 printed.
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", writeFake(t, trace, ""))
	script := filepath.Join(filepath.Dir(os.Getenv("FLAMEOX_TRACE_PROCESSOR")), "out.csv")
	if err := os.WriteFile(script, bytes.Repeat([]byte("0"), 11_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
	limits.MaxOutputBytes = 10_000_000
	err := page(limits)
	var le *providers.LimitError
	if !errors.As(err, &le) || !strings.Contains(le.Message, "(10000000 bytes)") {
		t.Errorf("output limit: %v", err)
	}
}

// TestTraceProcessorQueryNulls runs the slice query through SQLite (the engine
// trace_processor runs it on) over tables holding NULL and empty names, prints the result
// as trace_processor does (PrintQueryResultAsCsv), and reads it back: a NULL name stays
// null, an empty one is empty.
func TestTraceProcessorQueryNulls(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE slice (id INT, parent_id INT, depth INT, ts INT, dur INT, track_id INT, name TEXT, category TEXT)`,
		`CREATE TABLE thread_track (id INT, utid INT)`,
		`CREATE TABLE thread (utid INT, upid INT, name TEXT)`,
		`CREATE TABLE process (upid INT, name TEXT)`,
		`INSERT INTO slice VALUES (0, NULL, 0, 1000, 1000, 0, 'outer', NULL), (1, 0, 1, 1200, 300, 0, '', 'c,"d'), (2, NULL, 0, 1100, 50, 1, NULL, '')`,
		`INSERT INTO thread_track VALUES (0, 1)`,
		`INSERT INTO thread VALUES (1, 1, NULL)`,
		`INSERT INTO process VALUES (1, 'app')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(tpQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.WriteString(`"` + strings.Join(cols, `","`) + `"` + "\n")
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		f := make([]string, len(vals))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				f[i] = `"[NULL]"`
			case int64:
				f[i] = strconv.FormatInt(v, 10)
			case string:
				f[i] = `"` + v + `"`
			default:
				t.Fatalf("column %s: %T", cols[i], v)
			}
		}
		out.WriteString(strings.Join(f, ",") + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	trace := filepath.Join(t.TempDir(), "ftrace.pftrace")
	if err := os.WriteFile(trace, ftraceOnlyTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", writeFake(t, trace, out.String()))
	in := providers.Input{Path: trace, Format: gen.FormatPerfetto}
	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in},
		Limits: gen.EffectiveLimits{TimeoutSeconds: 30, MaxOutputBytes: 1 << 20, MaxMemoryBytes: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID          int64   `json:"id"`
		Name        string  `json:"name"`
		Category    *string `json:"category"`
		ThreadName  *string `json:"thread_name"`
		ProcessName *string `json:"process_name"`
	}
	s := func(v string) *string { return &v }
	want := []row{
		{ID: 0, Name: "outer", ProcessName: s("app")},
		{ID: 2, Name: "<unnamed>"},
		{ID: 1, Name: "<unnamed>", Category: s(`c,"d`), ProcessName: s("app")},
	}
	got, _ := pageAll[row](t, a.Rows, 10)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
