package runtime

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flameox/flameox/providers/all"

	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
)

// largeFile writes (once per process) a file of about size bytes made of numbered lines.
var largeFiles sync.Map

func largeFile(b *testing.B, kind string, size int64) string {
	if p, ok := largeFiles.Load(kind); ok {
		return p.(string)
	}
	dir := os.Getenv("FLAMEOX_BENCH_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	p := filepath.Join(dir, fmt.Sprintf("flameox-bench-%s-%d", kind, size))
	if st, err := os.Stat(p); err != nil || st.Size() < size-4096 {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		var n int64
		if kind == "chrome-trace" {
			n = writeChromeTrace(w, size)
		}
		for i := 0; kind != "chrome-trace" && n < size-200; i++ {
			var k int
			if kind == "jsonl" {
				k, _ = fmt.Fprintf(w, `{"seq":%d,"name":"request-%d","latency_ns":%d,"ok":true,"tags":["a","b"]}`+"\n", i, i, 1000+i%977)
			} else {
				k, _ = fmt.Fprintf(w, "2026-11-29T20:00:00Z INFO request %d served in %d us by worker %d\n", i, 1000+i%977, i%16)
			}
			n += int64(k)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	largeFiles.Store(kind, p)
	return p
}

// writeChromeTrace writes a Trace Event array of about size bytes: on each of 64 threads,
// a B/E step holding complete events written as Chrome writes them, children before
// their parents (at the end of each), with Kineto-style arguments.
func writeChromeTrace(w *bufio.Writer, size int64) int64 {
	n, _ := w.WriteString("[\n")
	total := int64(n)
	ts := int64(1_700_000_000_000_000)
	for step := 0; total < size-400; step++ {
		tid := step % 64
		k, _ := fmt.Fprintf(w, `{"ph":"B","name":"ProfilerStep#%d","pid":1,"tid":%d,"ts":%d.000},`+"\n", step, tid, ts)
		total += int64(k)
		for c := 0; c < 8 && total < size-400; c++ {
			start := ts + int64(c)*10 + 1
			k, _ = fmt.Fprintf(w, `{"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":%d,"ts":%d.250,"dur":2.5,"args":{"External id":%d}},`+"\n", tid, start+1, step*8+c)
			total += int64(k)
			k, _ = fmt.Fprintf(w, `{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":%d,"ts":%d.125,"dur":8.5,"args":{"External id":%d,"Input Dims":[[8,16],[32,16]]}},`+"\n", tid, start, step*8+c)
			total += int64(k)
		}
		k, _ = fmt.Fprintf(w, `{"ph":"E","pid":1,"tid":%d,"ts":%d},`+"\n", tid, ts+100)
		total += int64(k)
		ts += 7
	}
	k, _ := w.WriteString(`{"ph":"M","name":"thread_name","pid":1,"tid":0,"args":{"name":"main"}}]` + "\n")
	return total + int64(k)
}

const benchSize = 1 << 30

func benchPage(b *testing.B, kind string, offset int64) {
	path := largeFile(b, kind, benchSize)
	rt, err := New(all.Registry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	args := fmt.Sprintf(`{"sources":[{"kind":"path","path":%q,"format":%q}],"page_size":100,"offset":%d}`, path, kind, offset)
	var peak uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := testtool.PeakHeapInuse(func() {
			if _, f := rt.Call(context.Background(), "preview_artifact", []byte(args)); f != nil {
				b.Fatal(f)
			}
		})
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	st, _ := os.Stat(path)
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
}

// benchTrace runs op over a generated 1 GiB Chrome trace: hashing, decoding, nesting and
// the first page.
func benchTrace(b *testing.B, op, fields string) {
	path := largeFile(b, "chrome-trace", benchSize)
	rt, err := New(all.Registry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	args := fmt.Sprintf(`{"sources":[{"kind":"path","path":%q,"format":"chrome-trace"}],"page_size":100%s}`, path, fields)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	var peak uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := testtool.PeakHeapInuse(func() {
			if _, f := rt.Call(context.Background(), op, []byte(args)); f != nil {
				b.Fatal(f)
			}
		})
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

func BenchmarkSummarizeTrace1GiBChrome(b *testing.B) { benchTrace(b, "summarize_trace", "") }
func BenchmarkTraceWindow1GiBChrome(b *testing.B) {
	benchTrace(b, "inspect_trace_window", `,"start_ns":"1700000000100000000","end_ns":"1700000000100100000"`)
}

// BenchmarkPreviewFirstPage1GiBText includes hashing the whole file before and after.
func BenchmarkPreviewFirstPage1GiBText(b *testing.B)  { benchPage(b, "text", 0) }
func BenchmarkPreviewDeepPage1GiBText(b *testing.B)   { benchPage(b, "text", 10_000_000) }
func BenchmarkPreviewFirstPage1GiBJSONL(b *testing.B) { benchPage(b, "jsonl", 0) }
func BenchmarkPreviewDeepPage1GiBJSONL(b *testing.B)  { benchPage(b, "jsonl", 10_000_000) }

// BenchmarkHashFile compares file hashing with crypto/sha256 over the same bytes in memory.
func BenchmarkHashFile(b *testing.B) {
	path := largeFile(b, "text", benchSize)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for i := 0; i < b.N; i++ {
		if _, _, err := sourcefile.Hash(path); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSHA256InMemory(b *testing.B) {
	buf := make([]byte, 256<<20)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		sha256.Sum256(buf)
	}
}

// BenchmarkCaptureTrue is the end-to-end latency of capture_and_preview_artifact on
// `true`: admission (executable binding and hashing), scratch, the broker, the preview of
// the two console files (hashed twice each) and the result.
func BenchmarkCaptureTrue(b *testing.B) {
	rt, err := New(all.Registry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	raw := []byte(`{"target":{"argv":["true"],"cwd":"` + b.TempDir() + `"},"provider":{"kind":"direct"}}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, f := rt.Call(context.Background(), "capture_and_preview_artifact", raw); f != nil {
			b.Fatal(f)
		}
	}
}

// pyperfSuites writes (once) 32 pyperf suites (JSON version 1.0) of one benchmark with
// 20 runs of 50 values, 1,000 values each.
func pyperfSuites(b *testing.B) []any {
	dir := filepath.Join(os.TempDir(), "flameox-bench-pyperf32")
	os.MkdirAll(dir, 0o755)
	var sources []any
	for i := 0; i < 32; i++ {
		p := filepath.Join(dir, fmt.Sprintf("suite-%02d.json", i))
		if _, err := os.Stat(p); err != nil {
			var runs []string
			for r := 0; r < 20; r++ {
				vals := make([]string, 50)
				for v := range vals {
					vals[v] = fmt.Sprintf("%.9f", 0.01+float64((i*7+r*13+v)%97)*1e-5)
				}
				runs = append(runs, `{"metadata":{"date":"2026-11-29"},"warmups":[[8,0.0101]],"values":[`+strings.Join(vals, ",")+`]}`)
			}
			doc := `{"version":"1.0","metadata":{"name":"bench","loops":8,"unit":"second"},"benchmarks":[{"runs":[` + strings.Join(runs, ",") + `]}]}`
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		sources = append(sources, map[string]any{"kind": "path", "path": p, "format": "pyperf"})
	}
	return sources
}

func benchTool(b *testing.B, tool string, args map[string]any) {
	rt, err := New(all.Registry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	b.ResetTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		peak = max(peak, testtool.PeakHeapInuse(func() {
			if _, f := rt.Call(context.Background(), tool, raw); f != nil {
				b.Fatal(f)
			}
		}))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkSummarize32Pyperf summarizes 32 pyperf suites of 1,000 values each (32,000
// values plus warmups), first page of 100 rows (the series statistics are computed for
// series_count).
func BenchmarkSummarize32Pyperf(b *testing.B) {
	benchTool(b, "summarize_benchmarks", map[string]any{"sources": pyperfSuites(b)})
}

// BenchmarkCompare32Pyperf compares the same 32 suites against the first.
func BenchmarkCompare32Pyperf(b *testing.B) {
	benchTool(b, "compare_benchmarks", map[string]any{"sources": pyperfSuites(b)})
}
