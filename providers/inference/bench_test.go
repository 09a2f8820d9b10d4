package inference

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

const benchRequests = 1_000_000

// generate writes (once, kept in the bench directory) a file of n lines made by line.
func generate(b *testing.B, name string, n int, line func(r *rand.Rand, i int, buf []byte) []byte) providers.Input {
	p := filepath.Join(testtool.BenchDir(), name)
	if _, err := os.Stat(p); err != nil {
		tmp := p + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		r := rand.New(rand.NewPCG(7, uint64(n)))
		var buf []byte
		for i := range n {
			buf = line(r, i, buf[:0])
			w.Write(buf)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Rename(tmp, p); err != nil {
			b.Fatal(err)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	return providers.Input{Path: p, Size: st.Size()}
}

// aiperfRequests is a per-request export shaped as AIPerf's (the corpus record's keys,
// milliseconds, 10% cancelled requests), with four inter-chunk gaps per request.
func aiperfRequests(b *testing.B) providers.Input {
	in := generate(b, "flameox-bench-aiperf-1000000.jsonl", benchRequests, func(r *rand.Rand, i int, buf []byte) []byte {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), i)
		start := 1759522419154568925 + int64(i)*1000
		buf = fmt.Appendf(buf, `{"metadata":{"x_request_id":"%s","x_correlation_id":"%s","conversation_id":"%s","turn_index":0,"timestamp_ns":%d,"worker_id":"worker_1d62deaa","record_processor_id":"record_processor_ef1716ef","credit_phase":"profiling"},`,
			id, id, id, start)
		if i%10 == 0 {
			return append(buf, `"metrics":{"error_request_count":{"value":1,"unit":"requests"}},"error":{"code":499,"type":"RequestCancellationError","message":"Request was cancelled after 0.000 seconds"}}`+"\n"...)
		}
		ttft, itl := 200+r.Float64()*3000, 20+r.Float64()*15
		out := 100 + r.IntN(400)
		lat := ttft + itl*float64(out-1)
		return fmt.Appendf(buf, `"metrics":{"input_sequence_length":{"value":%d,"unit":"tokens"},"ttft":{"value":%v,"unit":"ms"},"request_count":{"value":1,"unit":"requests"},"request_latency":{"value":%v,"unit":"ms"},"inter_chunk_latency":{"value":[%v,%v,%v,%v],"unit":"ms"},"output_sequence_length":{"value":%d,"unit":"tokens"},"inter_token_latency":{"value":%v,"unit":"ms"}},"error":null}`+"\n",
			100+r.IntN(2000), ttft, lat, itl*1.1, itl*0.9, itl, itl*1.05, out, itl)
	})
	in.Format = gen.FormatAiperf
	return in
}

// mooncakeTrace is a Mooncake trace shaped as the corpus conversation trace: arrivals in
// ms, inputs up to 16k tokens, and 512-token prefix blocks of which the first few are
// shared by many requests.
func mooncakeTrace(b *testing.B) providers.Input {
	next := int64(1000)
	in := generate(b, "flameox-bench-mooncake-1000000.jsonl", benchRequests, func(r *rand.Rand, i int, buf []byte) []byte {
		input := 64 + r.IntN(16_000)
		buf = fmt.Appendf(buf, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, i*3, input, 1+r.IntN(800))
		blocks := (input + 511) / 512
		shared := min(blocks, r.IntN(4))
		for j := range blocks {
			if j > 0 {
				buf = append(buf, ", "...)
			}
			if j < shared {
				buf = strconv.AppendInt(buf, int64(j*97+r.IntN(8)), 10)
				continue
			}
			buf = strconv.AppendInt(buf, next, 10)
			next++
		}
		return append(buf, "]}\n"...)
	})
	in.Format = gen.FormatMooncakeTrace
	return in
}

// benchSummary runs summarize_inference's analyzer and its first page of 100 rows; the
// runtime adds hashing the file before and after (runtime/bench_test.go measures that).
func benchSummary(b *testing.B, in providers.Input) {
	b.ReportAllocs()
	for b.Loop() {
		peak := testtool.PeakHeap(func() {
			a, err := providerstest.Analyze(b, summarize, &gen.NoFields{}, in)
			if err != nil {
				b.Fatal(err)
			}
			if p, err := a.Rows.Page(context.Background(), 0, 100, nil); err != nil || len(p.Rows) != 100 {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	}
}

// benchCompare compares the export with itself: two sources of a million requests.
func benchCompare(b *testing.B, in providers.Input) {
	b.ReportAllocs()
	b.SetBytes(2 * in.Size)
	for b.Loop() {
		peak := testtool.PeakHeap(func() {
			a, err := providerstest.Analyze(b, compare, &gen.InferenceCompareFields{}, in, in)
			if err != nil {
				b.Fatal(err)
			}
			if p, err := a.Rows.Page(context.Background(), 0, 100, nil); err != nil || len(p.Rows) != 1 {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	}
}

func BenchmarkSummarizeAIPerf1M(b *testing.B)   { benchSummary(b, aiperfRequests(b)) }
func BenchmarkCompareAIPerf1M(b *testing.B)     { benchCompare(b, aiperfRequests(b)) }
func BenchmarkSummarizeMooncake1M(b *testing.B) { benchSummary(b, mooncakeTrace(b)) }
func BenchmarkCompareMooncake1M(b *testing.B)   { benchCompare(b, mooncakeTrace(b)) }
