package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// fuzzRead reads b as one source of format: the whole of it as one page, then the page
// of one row at offset 1. Every row is valid JSON, a complete first page holds every row
// it observed, and the offset page holds the whole page's second row, found by skip
// rather than next.
func fuzzRead(t *testing.T, b []byte, format contracts.Format, name string) {
	path := fuzztool.WriteInput(t, name, b)
	src := []Source{{Path: path, Format: format, SHA256: "0123"}}
	ctx := context.Background()
	page, err := Read(ctx, src, Options{MaxRows: 4096, MaxSourceBytes: 1 << 20})
	fuzztool.CheckError(t, err, path)
	if err != nil {
		return
	}
	n := int64(len(page.Rows))
	for i, r := range page.Rows {
		if !json.Valid(r) {
			t.Fatalf("row %d is not valid JSON: %q", i, r)
		}
	}
	if page.Observed < n || page.Observed > n+1 {
		t.Fatalf("observed %d for a page of %d rows", page.Observed, n)
	}
	if page.Complete != (page.Observed == n) || page.Complete && page.Population != n {
		t.Fatalf("complete %v, population %d, observed %d, %d rows", page.Complete, page.Population, page.Observed, n)
	}
	if !page.Complete || n < 2 {
		return
	}
	next, err := Read(ctx, src, Options{Offset: 1, MaxRows: 1, MaxSourceBytes: 1 << 20})
	if err != nil {
		t.Fatalf("the page at offset 1 of %d rows: %v", n, err)
	}
	if len(next.Rows) != 1 || !bytes.Equal(next.Rows[0], page.Rows[1]) {
		t.Fatalf("row 1 read at offset 1 is %q, read from the start %q", next.Rows, page.Rows[1])
	}
	if next.Complete != (n == 2) {
		t.Fatalf("the page at offset 1 of %d rows has complete %v", n, next.Complete)
	}
}

// FuzzReadJSON: go test ./providers/preview -run '^$' -fuzz FuzzReadJSON -fuzztime 1m
func FuzzReadJSON(f *testing.F) {
	fuzztool.Corpus(f, "h200__triton-add.autotune.json", "otlp__trace.json", "aiperf__profile_export_aiperf.json")
	for _, s := range []string{
		``, `1`, `"s"`, `null`, `[]`, `{}`, `[1,2`, `{"a":1}{"b":2}`,
		`[{"a":1},2,"x",[3],null,9007199254740993,1e400]`,
		`{"meta":{"v":1},"rows":[{"a":1},{"a":2}],"n":3,"s":"\u00e9\ud800","empty":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() { fuzzRead(t, b, contracts.FormatJSON, "input.json") })
	})
}

// FuzzReadJSONL: go test ./providers/preview -run '^$' -fuzz FuzzReadJSONL -fuzztime 1m
func FuzzReadJSONL(f *testing.F) {
	fuzztool.Corpus(f, "h200-benchmarks__sglang_bench_serving_llama70b_offline.jsonl", "Mooncake__synthetic_trace_head500.jsonl")
	for _, s := range []string{
		``, "\n", `{"a":1}`, "{\"a\":1}\n\n[2]\r\n\"x\"\n", "{\"a\":\n", "{\"request_rate\": Infinity}\n", "1\n2 3\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() { fuzzRead(t, b, contracts.FormatJsonl, "input.jsonl") })
	})
}

// FuzzReadCSV: go test ./providers/preview -run '^$' -fuzz FuzzReadCSV -fuzztime 1m
func FuzzReadCSV(f *testing.F) {
	fuzztool.Corpus(f, "aiperf__profile_export_aiperf.csv", "nsightful__ncu-copy_blocked.csv")
	for _, s := range []string{
		``, "a,b\n", "a,b\n1,2\n3,4\n", "a,a,\n1\n1,2,3,4\n", "\"a\nb\",c\n\"1,2\",\"x\"\"y\"\n", "a\n\"unterminated\n",
		"x,y\r\n1,2\r\n\r\nMetric,Value\r\nrate,3\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() { fuzzRead(t, b, contracts.FormatCSV, "input.csv") })
	})
}

// FuzzReadHeader reads b as a header view of each binary format a walker reads (pstats,
// pprof, Perfetto, perf.data): every input pages bounded rows or fails typed.
// go test ./providers/preview -run '^$' -fuzz FuzzReadHeader -fuzztime 1m
func FuzzReadHeader(f *testing.F) {
	fuzztool.Corpus(f, "gprof2dot__print1.pstats", "speedscope__simple.pprof.gz", "perfetto-mcp-rs__basic.perfetto-trace")
	for _, s := range []string{``, "{", "\xfb)\x03", "PERFILE2", "\x0a\x02\x08\x01", "\x1f\x8b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			path := fuzztool.WriteInput(t, "input.bin", b)
			for _, format := range []contracts.Format{contracts.FormatPstats, contracts.FormatPprof, contracts.FormatPerfetto, contracts.FormatPerfData} {
				src := []Source{{Path: path, Format: format, SHA256: "0123", Size: int64(len(b))}}
				page, err := Read(context.Background(), src, Options{MaxRows: 4096, MaxSourceBytes: 1 << 20})
				fuzztool.CheckError(t, err, path)
				if err == nil && (!page.Complete || len(page.Rows) > maxHeaderRows) {
					t.Fatalf("%s: %d rows, complete %v", format, len(page.Rows), page.Complete)
				}
			}
		})
	})
}
