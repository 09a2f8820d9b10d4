package runtime

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

func TestNewRefusesAnIncompleteRegistry(t *testing.T) {
	_, err := New(providers.NewRegistry(), nil)
	if err == nil {
		t.Fatal("a runtime started without analyzers")
	}
	for _, w := range []string{"released operation preview_artifact has no analyzer", "released capture provider perf has no collector"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("startup error %q does not name %q", err, w)
		}
	}
}

// TestEveryToolInputSchemaCompiles: input validators compile lazily, on a tool's first
// call, so every published schema is compiled here once.
func TestEveryToolInputSchemaCompiles(t *testing.T) {
	rt := newRuntime(t)
	for _, tool := range rt.Tools() {
		if _, f := tool.validator(); f != nil {
			t.Errorf("%s: %v", tool.Name, f)
		}
	}
}

// TestAnalysisDeadlineIsTimeoutNotCancellation: running past limits.timeout_seconds is a
// LIMIT_EXCEEDED at that limit; the caller's cancellation stays CANCELLED.
func TestAnalysisDeadlineIsTimeoutNotCancellation(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	f := providerFailure(expired, expired.Err(), nil)
	if f.Code != gen.FailureCodeLimitExceeded || fmt.Sprint(f.FieldPath) != "[limits timeout_seconds]" {
		t.Errorf("deadline = %+v", f)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if f := providerFailure(cancelled, cancelled.Err(), nil); f.Code != gen.FailureCodeCancelled {
		t.Errorf("cancellation = %+v", f)
	}
}

// TestProfileDecompressionIsBounded: a small gzip of collapsed stacks that expands past
// limits.max_input_bytes fails typed instead of being read whole.
func TestProfileDecompressionIsBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stacks.folded.gz")
	f, _ := os.Create(p)
	zw := gzip.NewWriter(f)
	line := []byte("main;work;leaf 1\n")
	for i := 0; i < (4<<20)/len(line); i++ {
		zw.Write(line)
	}
	zw.Close()
	f.Close()
	rt := newRuntime(t)
	_, fl := call(t, rt, "rank_cpu_hotspots", map[string]any{"sources": []any{pathSource(p)},
		"limits": map[string]any{"max_input_bytes": 1 << 20}})
	if fl == nil || fl.Code != gen.FailureCodeLimitExceeded || fl.Details["limit"] != int64(1<<20) {
		t.Fatalf("failure = %+v", fl)
	}
}

// TestContinuationBindsImplementation: a continuation issued by another implementation
// version (rows may have changed shape since) is refused by a new runtime, as a later
// process of a newer build would, naming the continuation; under the same version it
// pages on.
func TestContinuationBindsImplementation(t *testing.T) {
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "speedscope__chrome116-devtools-trace.json")}}, "page_size": 2}
	issue := func(version string) string {
		implementation = version
		defer func() { implementation = Version }()
		_, res, f := analyzeJSON(t, newRuntime(t), "summarize_trace", args)
		if f != nil || res.Token == "" {
			t.Fatalf("first page under %s: %v, token %q", version, f, res.Token)
		}
		return res.Token
	}
	for _, c := range []struct {
		version string
		ok      bool
	}{{Version, true}, {"0.2.0-go.2", false}} {
		args["continuation"] = issue(c.version)
		_, _, f := analyzeJSON(t, newRuntime(t), "summarize_trace", args)
		delete(args, "continuation")
		if c.ok != (f == nil) {
			t.Errorf("a continuation issued under %s, read under %s: %v", c.version, Version, f)
			continue
		}
		if f != nil && (f.Code != gen.FailureCodeInvalidInput || fmt.Sprint(f.FieldPath) != "[continuation]") {
			t.Errorf("under %s: %s at %v, want INVALID_INPUT at continuation", c.version, f.Code, f.FieldPath)
		}
	}
}

// TestEmptyPageHasEmptyRows: a page without rows (a trace whose only slice has no
// duration) carries "rows": [], the contract's list, never null, in process and from the
// analysis worker.
func TestEmptyPageHasEmptyRows(t *testing.T) {
	p := filepath.Join(t.TempDir(), "zero.json")
	if err := os.WriteFile(p, []byte(`[{"ph":"X","name":"a","ts":1,"dur":0,"pid":1,"tid":1}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, rt := range map[string]*Runtime{"in process": newRuntime(t), "worker": workerRuntime(t)} {
		b, res, f := analyzeJSON(t, rt, "summarize_trace", map[string]any{"sources": []any{pathSource(p)}})
		if f != nil {
			t.Fatalf("%s: %v", name, f)
		}
		if res.Coverage.RowsReturned != 0 || !strings.Contains(string(b), `{"type":"table","rows":[]}`) {
			t.Errorf("%s: %d rows returned, result %s", name, res.Coverage.RowsReturned, b)
		}
	}
}

// TestIntegralText: integral JSON numbers become their exact integer text, whatever
// their size or notation; others stay as written.
func TestIntegralText(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"2", "2", true}, {"2.0", "2", true}, {"-3.00", "-3", true}, {"1e3", "1000", true},
		{"2.50e1", "25", true}, {"0.0", "0", true}, {"-0.0", "0", true}, {"0e7", "0", true},
		{"1700000000000000123.0", "1700000000000000123", true},
		{"9007199254740993.000", "9007199254740993", true},
		{"1.7e18", "1700000000000000000", true}, {"1234.5e-1", "", false},
		{"12345e-2", "", false}, {"0.5", "", false}, {"1e-2", "", false},
		{"9223372036854775807.0", "9223372036854775807", true},
		{"18446744073709551616", "18446744073709551616", true}, // 20 digits
		{"123456789012345678901", "", false}, {"1e21", "", false}, {"1e99999", "", false},
	} {
		got, ok := integralText(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("integralText(%s) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestWideWindowBoundsReplayAsStrings: trace-window bounds beyond 2^53-1 (epoch
// nanoseconds), given as JSON numbers (one written 1700000000000000500.0), read exactly,
// come back in next_page's arguments as exact decimal strings, and those arguments page
// on.
func TestWideWindowBoundsReplayAsStrings(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 5; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		// ts 1700000000000000.1 + i µs: 1700000000000000100 + 1000i ns, 0.5 µs long.
		fmt.Fprintf(&b, `{"ph":"X","name":"s%d","ts":170000000000000%d.1,"dur":0.5,"pid":1,"tid":1}`, i, i)
	}
	b.WriteString("]")
	p := filepath.Join(t.TempDir(), "epoch.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t)
	raw := `{"sources":[{"kind":"path","path":` + fmt.Sprintf("%q", p) + `}],"page_size":1,` +
		`"start_ns":1700000000000000500.0,"end_ns":1700000000000003700}`
	res, f := rt.Analyze(context.Background(), "inspect_trace_window", json.RawMessage(raw))
	var names []string
	for page := 0; ; page++ {
		if f != nil {
			t.Fatalf("page %d: %v", page, f)
		}
		for _, r := range res.Blocks[len(res.Blocks)-1].(TableBlock).Rows {
			var row struct{ Name string }
			json.Unmarshal(r, &row)
			names = append(names, row.Name)
		}
		if res.NextPage == nil {
			break
		}
		args := res.NextPage.Arguments
		if args["start_ns"] != "1700000000000000500" || args["end_ns"] != "1700000000000003700" {
			t.Fatalf("next_page bounds %#v, %#v; want exact decimal strings", args["start_ns"], args["end_ns"])
		}
		next, _ := json.Marshal(args)
		res, f = rt.Analyze(context.Background(), res.NextPage.Tool, next)
	}
	// Slices s0..s3 overlap [..000500, ..003700): s0 ends at ..000600, s3 starts at ..003100.
	if want := []string{"s0", "s1", "s2", "s3"}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("paged %v, want %v", names, want)
	}
}

// TestPreservedWindowBoundsAreExact: a preserved window's bounds beyond 2^53 are recorded
// exactly as the analysis used them, not as the nearest float64.
func TestPreservedWindowBoundsAreExact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "epoch.json")
	if err := os.WriteFile(p, []byte(`[{"ph":"X","name":"s","ts":1700000000000000.001,"dur":5,"pid":1,"tid":1}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t)
	raw := `{"sources":[{"kind":"path","path":` + fmt.Sprintf("%q", p) + `}],"start_ns":1700000000000000001,"end_ns":"1700000000000000003"}`
	res, f := rt.Analyze(context.Background(), "inspect_trace_window", json.RawMessage(raw))
	if f != nil {
		t.Fatal(f)
	}
	pr, f := rt.Preserve(res.AnalysisID)
	if f != nil {
		t.Fatal(f)
	}
	m, f := rt.Manifest(pr.EvidenceID)
	if f != nil {
		t.Fatal(f)
	}
	for _, want := range []string{"1700000000000000001", "1700000000000000003"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("the preserved manifest lacks %s:\n%s", want, m)
		}
	}
}

// TestCorruptGzipFromItsFirstByte: a gzip trace whose deflate data is corrupt from the
// start is a corrupt gzip stream (DECODE_FAILURE, reason corrupt_gzip), not an empty
// input.
func TestCorruptGzipFromItsFirstByte(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.json.gz")
	// A gzip header, then a final block of the reserved type 3 (invalid).
	if err := os.WriteFile(p, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x07, 0, 0, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, f := analyzeJSON(t, newRuntime(t), "summarize_trace", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": p, "format": "chrome-trace"}}})
	if f == nil || f.Code != gen.FailureCodeDecodeFailure || f.Details["reason"] != "corrupt_gzip" {
		t.Fatalf("failure = %+v", f)
	}
}

// TestGzipSQLiteIsNamed: a gzip-compressed SQLite database is refused as what it is
// (read only uncompressed), not detected as a pprof profile and sent to the CPU tools.
func TestGzipSQLiteIsNamed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "report.sqlite.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write(append([]byte("SQLite format 3\x00"), make([]byte, 4080)...))
	zw.Close()
	f.Close()
	_, _, fl := analyzeJSON(t, newRuntime(t), "summarize_trace", map[string]any{"sources": []any{pathSource(p)}})
	if fl == nil || fl.Code != gen.FailureCodeUnsupportedFormat || !strings.Contains(fl.Message, "gzip-compressed SQLite") ||
		fl.Details["received_format"] == "pprof" || fl.Details["content"] != "gzip-compressed SQLite" {
		t.Fatalf("failure = %+v", fl)
	}
}
