package trace

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sqlitefile"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// benchSpans is the size of the generated OTLP exports, and benchLaunches that of the
// generated Nsight Systems export (issue 15: at least 1,000,000 spans; the corpus
// export's 3,778 kernels and copies times about 265).
const (
	benchSpans    = 1_000_000
	benchLaunches = 1_000_000
)

// benchFile returns the input at name in the bench directory, writing it with write
// (to a temporary name, then renamed) when it is not there yet.
func benchFile(b *testing.B, name string, format gen.Format, write func(path string) error) providers.Input {
	p := filepath.Join(testtool.BenchDir(), name)
	if _, err := os.Stat(p); err != nil {
		tmp := p + ".tmp"
		os.Remove(tmp)
		if err := write(tmp); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			b.Fatal(err)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	return providers.Input{Path: p, Size: st.Size(), Format: format}
}

// buffered creates path and calls write with a buffered writer on it.
func buffered(path string, write func(w *bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// benchSpan is one generated span: traces of 10 spans (a SERVER root, CLIENT and
// INTERNAL children), 40 operation names, three attributes, an event on every tenth
// span and an ERROR status on every fiftieth.
type benchSpan struct {
	trace          [16]byte
	span, parent   [8]byte
	root           bool
	name           string
	kind, status   int
	start, end     uint64
	event          bool
	method, target string
}

func makeBenchSpan(r *rand.Rand, i int) benchSpan {
	var s benchSpan
	t := i / 10
	binary.BigEndian.PutUint64(s.trace[:8], uint64(t)*0x9e3779b97f4a7c15|1)
	binary.BigEndian.PutUint64(s.trace[8:], uint64(t)+1)
	binary.BigEndian.PutUint64(s.span[:], uint64(i)+1)
	binary.BigEndian.PutUint64(s.parent[:], uint64(t*10)+1)
	s.root = i%10 == 0
	op := r.IntN(40)
	s.name = fmt.Sprintf("operation-%02d", op)
	s.kind = 1 + op%3
	if s.root {
		s.kind = 2
	}
	if i%50 == 0 {
		s.status = 2
	}
	s.start = 1_700_000_000_000_000_000 + uint64(t)*1_000_000 + uint64(i%10)*1_000
	s.end = s.start + uint64(r.IntN(900_000)) + 1
	s.event = i%10 == 3
	s.method = [...]string{"GET", "POST", "PUT"}[op%3]
	s.target = fmt.Sprintf("/api/v1/items/%d", op)
	return s
}

// writeOTLPJSON writes one ExportTraceServiceRequest of 100 resources (service-N) with
// one scope of n/100 spans each, in the OTLP JSON mapping (hex ids, decimal-string
// nanoseconds, integer kinds).
func writeOTLPJSON(path string, n int) error {
	return buffered(path, func(w *bufio.Writer) error {
		r := rand.New(rand.NewPCG(15, uint64(n)))
		per := n / 100
		w.WriteString(`{"resourceSpans":[`)
		for res := range 100 {
			if res > 0 {
				w.WriteString(",")
			}
			fmt.Fprintf(w, `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"service-%d"}}]},"scopeSpans":[{"scope":{"name":"bench","version":"1.0"},"spans":[`, res)
			for j := range per {
				s := makeBenchSpan(r, res*per+j)
				if j > 0 {
					w.WriteString(",")
				}
				fmt.Fprintf(w, `{"traceId":"%s","spanId":"%s",`, hex.EncodeToString(s.trace[:]), hex.EncodeToString(s.span[:]))
				if !s.root {
					fmt.Fprintf(w, `"parentSpanId":"%s",`, hex.EncodeToString(s.parent[:]))
				}
				fmt.Fprintf(w, `"name":%q,"kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"http.method","value":{"stringValue":%q}},{"key":"http.target","value":{"stringValue":%q}},{"key":"http.status_code","value":{"intValue":"200"}}],`,
					s.name, s.kind, s.start, s.end, s.method, s.target)
				if s.event {
					fmt.Fprintf(w, `"events":[{"timeUnixNano":"%d","name":"cache.miss","attributes":[{"key":"key","value":{"stringValue":"k"}}]}],`, s.start+1)
				}
				fmt.Fprintf(w, `"status":{"code":%d}}`, s.status)
			}
			w.WriteString("]}]}")
		}
		_, err := w.WriteString("]}\n")
		return err
	})
}

// writeOTLPProto writes the same spans as writeOTLPJSON as OTLP/protobuf with protowire
// (trace.proto's field numbers): one ResourceSpans message per resource.
func writeOTLPProto(path string, n int) error {
	return buffered(path, func(w *bufio.Writer) error {
		r := rand.New(rand.NewPCG(15, uint64(n)))
		per := n / 100
		msg := func(b []byte, num protowire.Number, body []byte) []byte {
			return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), body)
		}
		str := func(b []byte, num protowire.Number, s string) []byte { return msg(b, num, []byte(s)) }
		attr := func(b []byte, key string, value []byte) []byte {
			return msg(b, 9, msg(str(nil, 1, key), 2, value))
		}
		var ss, sp, ev []byte
		for res := range 100 {
			ss = msg(ss[:0], 1, str(str(nil, 1, "bench"), 2, "1.0"))
			for j := range per {
				s := makeBenchSpan(r, res*per+j)
				sp = msg(sp[:0], 1, s.trace[:])
				sp = msg(sp, 2, s.span[:])
				if !s.root {
					sp = msg(sp, 4, s.parent[:])
				}
				sp = str(sp, 5, s.name)
				sp = protowire.AppendVarint(protowire.AppendTag(sp, 6, protowire.VarintType), uint64(s.kind))
				sp = protowire.AppendFixed64(protowire.AppendTag(sp, 7, protowire.Fixed64Type), s.start)
				sp = protowire.AppendFixed64(protowire.AppendTag(sp, 8, protowire.Fixed64Type), s.end)
				sp = attr(sp, "http.method", str(nil, 1, s.method))
				sp = attr(sp, "http.target", str(nil, 1, s.target))
				sp = attr(sp, "http.status_code", protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 200))
				if s.event {
					ev = protowire.AppendFixed64(protowire.AppendTag(ev[:0], 1, protowire.Fixed64Type), s.start+1)
					ev = str(ev, 2, "cache.miss")
					ev = msg(ev, 3, msg(str(nil, 1, "key"), 2, str(nil, 1, "k")))
					sp = msg(sp, 11, ev)
				}
				sp = msg(sp, 15, protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), uint64(s.status)))
				ss = msg(ss, 2, sp)
			}
			resource := msg(nil, 1, attrKV("service.name", fmt.Sprintf("service-%d", res)))
			rs := msg(msg(nil, 1, resource), 2, ss)
			if _, err := w.Write(msg(nil, 1, rs)); err != nil {
				return err
			}
		}
		return nil
	})
}

// attrKV is a KeyValue with a string value.
func attrKV(key, value string) []byte {
	b := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(key))
	v := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(value))
	return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), v)
}

func otlpBenchInput(b *testing.B, proto bool) providers.Input {
	if proto {
		return benchFile(b, fmt.Sprintf("flameox-bench-otlp-%d.binpb", benchSpans), gen.FormatOtlp,
			func(p string) error { return writeOTLPProto(p, benchSpans) })
	}
	return benchFile(b, fmt.Sprintf("flameox-bench-otlp-%d.json", benchSpans), gen.FormatOtlp,
		func(p string) error { return writeOTLPJSON(p, benchSpans) })
}

// benchAnalysis runs an analyzer and reads the page [offset, offset+100) of its rows,
// (want rows, unless want < 0), reporting the peak heap above the start (testtool.PeakHeap samples every 2 ms). The
// runtime's two hashing passes over the file come on top (runtime/bench_test.go).
func benchAnalysis(b *testing.B, analyze func(context.Context) (*providers.Analysis, error), offset int64, want int) {
	b.ReportAllocs()
	for b.Loop() {
		peak := testtool.PeakHeap(func() {
			a, err := analyze(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			p, err := a.Rows.Page(context.Background(), offset, 100, nil)
			if err != nil {
				b.Fatal(err)
			}
			if want >= 0 && len(p.Rows) != want {
				b.Fatalf("%d rows, want %d", len(p.Rows), want)
			}
		})
		b.ReportMetric(testtool.MiB(peak), "peak-heap-MB")
	}
	testtool.ReportLoad(b)
}

func noFields(in providers.Input) *providers.Request[gen.TableViewFields] {
	return &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}}
}

func benchOTLPSummary(b *testing.B, proto bool) {
	req := noFields(otlpBenchInput(b, proto))
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarize(ctx, sliceReq(req)) }, 0, 100)
}

func benchOTLPOperations(b *testing.B, proto bool) {
	req := noFields(otlpBenchInput(b, proto))
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarizeOperations(ctx, sliceReq(req)) }, 0, -1)
}

func BenchmarkOTLPSummarize1MJSON(b *testing.B)   { benchOTLPSummary(b, false) }
func BenchmarkOTLPSummarize1MProto(b *testing.B)  { benchOTLPSummary(b, true) }
func BenchmarkOTLPOperations1MJSON(b *testing.B)  { benchOTLPOperations(b, false) }
func BenchmarkOTLPOperations1MProto(b *testing.B) { benchOTLPOperations(b, true) }

// writeNsysExport writes an nsys-style SQLite export: the corpus export's own CREATE
// TABLE statements for StringIds, ENUM_CUDA_MEMCPY_OPER (with its rows),
// CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and _RUNTIME, then n activity records (nine
// kernels to one memcpy, over 4 streams of one device) each launched by a runtime call
// with its correlation id on one of 8 threads of one process. A generated file, not
// nsys output.
func writeNsysExport(corpus, path string, n int) (err error) {
	src, err := sql.Open("sqlite", "file:"+sqlitefile.URIPath(corpus)+"?mode=ro&immutable=1")
	if err != nil {
		return err
	}
	defer src.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, t := range []string{"StringIds", "ENUM_CUDA_MEMCPY_OPER", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME"} {
		var ddl string
		if err := src.QueryRow(`SELECT sql FROM sqlite_master WHERE name = ?`, t).Scan(&ddl); err != nil {
			return err
		}
		if _, err := db.Exec(ddl); err != nil {
			return err
		}
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	rows, err := src.Query(`SELECT id, name, label FROM ENUM_CUDA_MEMCPY_OPER`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var name, label sql.NullString
		if err := rows.Scan(&id, &name, &label); err != nil {
			rows.Close()
			return err
		}
		if _, err := tx.Exec(`INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?, ?, ?)`, id, name, label); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	const kernelNames = 200
	for i := range kernelNames {
		if _, err := tx.Exec(`INSERT INTO StringIds VALUES (?, ?)`, i+1, fmt.Sprintf("kernel_%03d", i)); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO StringIds VALUES (?, ?)`, kernelNames+i+1, fmt.Sprintf("void ns::kernel_%03d<float, %d>(float *, int)", i, i%4)); err != nil {
			return err
		}
	}
	launch, memcpyCall := 2*kernelNames+1, 2*kernelNames+2
	if _, err := tx.Exec(`INSERT INTO StringIds VALUES (?, 'cudaLaunchKernel_v7000'), (?, 'cudaMemcpyAsync_v3020')`, launch, memcpyCall); err != nil {
		return err
	}
	kernel, err := tx.Prepare(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId, correlationId, globalPid,
		demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
		dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, 32, 128, 1, 1, 256, 1, 1, 0, 4096, 0, 0, ?)`)
	if err != nil {
		return err
	}
	cp, err := tx.Prepare(`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId, contextId, streamId, correlationId, globalPid,
		bytes, copyKind) VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	call, err := tx.Prepare(`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, "end", eventClass, globalTid, correlationId, nameId, returnValue)
		VALUES (?, ?, 0, ?, ?, ?, 0)`)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(15, uint64(n)))
	const pid = int64(4242) << 24
	for i := range n {
		api := int64(i) * 2_000
		stream := 7 + i%4
		tid := pid | int64(4242+i%8)
		start := api + 5_000 + int64(r.IntN(3_000))
		name := launch
		if i%10 == 9 {
			name = memcpyCall
			_, err = cp.Exec(start, start+500+int64(r.IntN(5_000)), stream, i+1, pid, 4096<<(i%8), 1+i%2)
		} else {
			k := 1 + r.IntN(kernelNames)
			_, err = kernel.Exec(start, start+1_000+int64(r.IntN(50_000)), stream, i+1, pid, kernelNames+k, k, i)
		}
		if err != nil {
			return err
		}
		if _, err = call.Exec(api, api+3_000, tid, i+1, name); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func nsysBenchInput(b *testing.B) providers.Input {
	corpus := testtool.Corpus(b, nsysCorpus)
	return benchFile(b, fmt.Sprintf("flameox-bench-nsys-%d.sqlite", benchLaunches), gen.FormatNsysSqlite,
		func(p string) error { return writeNsysExport(corpus, p, benchLaunches) })
}

func benchLaunchPage(b *testing.B, in providers.Input, offset int64) {
	req := noFields(in)
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return inspectLaunches(ctx, req) }, offset, 100)
}

// BenchmarkGPULaunchesCorpus is the first page of the corpus export's 3,778 launches.
func BenchmarkGPULaunchesCorpus(b *testing.B) {
	p := testtool.Corpus(b, nsysCorpus)
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	benchLaunchPage(b, providers.Input{Path: p, Size: st.Size(), Format: gen.FormatNsysSqlite}, 0)
}

func BenchmarkGPULaunches1MFirstPage(b *testing.B) { benchLaunchPage(b, nsysBenchInput(b), 0) }

// BenchmarkGPULaunches1MDeepPage reads the deepest page a continuation reaches (rows
// past providers.MaxProjectionRows are counted, not paged).
func BenchmarkGPULaunches1MDeepPage(b *testing.B) {
	benchLaunchPage(b, nsysBenchInput(b), providers.MaxProjectionRows-100)
}

// benchTablesPage is a page of view "tables" of summarize_trace (every table).
func benchTablesPage(b *testing.B, in providers.Input, offset int64) {
	req := tablesReq(in)
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarize(ctx, sliceReq(req)) }, offset, 100)
}

// BenchmarkNsysTables1MFirstPage and ...DeepPage page the generated export's own tables
// (StringIds, the enum table, 1,000,000 activity records and their runtime calls).
func BenchmarkNsysTables1MFirstPage(b *testing.B) { benchTablesPage(b, nsysBenchInput(b), 0) }
func BenchmarkNsysTables1MDeepPage(b *testing.B) {
	benchTablesPage(b, nsysBenchInput(b), providers.MaxProjectionRows-100)
}

// BenchmarkOTLPTables1MJSON and ...Proto: the first page of view "tables" (one resource,
// one scope, 98 spans) of the 1,000,000-span export: a counting read, then a read that
// stops once the page's rows are in.
func BenchmarkOTLPTables1MJSON(b *testing.B)  { benchTablesPage(b, otlpBenchInput(b, false), 0) }
func BenchmarkOTLPTables1MProto(b *testing.B) { benchTablesPage(b, otlpBenchInput(b, true), 0) }

// BenchmarkOTLPTables1MSpanPage is the page after the resources and scopes: spans 0-99,
// decoded whole, early in the file.
func BenchmarkOTLPTables1MSpanPage(b *testing.B) { benchTablesPage(b, otlpBenchInput(b, true), 200) }

// BenchmarkReadStepsFile reads (decodes, nests and visits) a generated 256 MiB file of
// BenchmarkDecodeChromeSteps's trace shape from disk, plain and gzip compressed: the
// decoding half of a trace operation, file reading and decompression included, without
// the hashing passes.
func BenchmarkReadStepsFile(b *testing.B) {
	const size = 256 << 20
	for _, gz := range []bool{false, true} {
		name, file := "plain", fmt.Sprintf("flameox-bench-steps-%d.json", size)
		if gz {
			name, file = "gzip", file+".gz"
		}
		b.Run(name, func(b *testing.B) {
			in := benchFile(b, file, gen.FormatChromeTrace, func(path string) error {
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				defer f.Close()
				var w io.Writer = f
				var zw *gzip.Writer
				if gz {
					zw, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
					w = zw
				}
				bw := bufio.NewWriterSize(w, 1<<20)
				if err := chrometest.WriteStepTrace(bw, size); err != nil {
					return err
				}
				if err := bw.Flush(); err != nil {
					return err
				}
				if zw != nil {
					return zw.Close()
				}
				return nil
			})
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := read(context.Background(), in, nil, func(*tracemodel.Nested) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// chromeBenchInput is a generated Chrome trace of 1,000,000 events on 8 threads.
func chromeBenchInput(b *testing.B) providers.Input {
	return benchFile(b, "chrome-1m.json", gen.FormatChromeTrace, func(p string) error {
		return buffered(p, func(w *bufio.Writer) error { return chrometest.WriteTrace(w, 1_000_000, 8, 1) })
	})
}

// BenchmarkSummarizeTrace1MChrome is summarize_trace's first page over it, and
// BenchmarkTraceOperations1MChrome summarize_trace_operations's ranking (self time and
// launch links included): both read the whole trace once.
func BenchmarkSummarizeTrace1MChrome(b *testing.B) {
	req := operationsReq(chromeBenchInput(b), gen.TraceSliceFields{})
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarize(ctx, req) }, 0, 100)
}

func BenchmarkTraceOperations1MChrome(b *testing.B) {
	req := operationsReq(chromeBenchInput(b), gen.TraceSliceFields{})
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarizeOperations(ctx, req) }, 0, -1)
}
