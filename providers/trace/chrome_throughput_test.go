package trace

import (
	"bufio"
	"context"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
)

// BenchmarkSummarizeTraceKineto256M is summarize_trace's first page over a generated
// 256 MiB torch.profiler trace as torch writes it (chrometest.WriteKinetoTrace), read
// from disk: the analysis of a CLI call over the file, without its two hashing passes
// (issue 37 item 6; docs/performance.md compares the whole CLI with them).
func BenchmarkSummarizeTraceKineto256M(b *testing.B) {
	in := benchFile(b, "flameox-bench-kineto-256m.json", gen.FormatPytorch, func(p string) error {
		return buffered(p, func(w *bufio.Writer) error { return chrometest.WriteKinetoTrace(w, 256<<20, 1) })
	})
	req := operationsReq(in, gen.TraceSliceFields{})
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarize(ctx, req) }, 0, 100)
}

// BenchmarkSummarizeTraceKineto1G is BenchmarkSummarizeTraceKineto256M at the size issue
// 37's item 6 names: a generated torch.profiler trace of 1 GiB less 1 MiB, which the
// generator ends a little past and the default limits.max_input_bytes (1 GiB) admits.
func BenchmarkSummarizeTraceKineto1G(b *testing.B) {
	in := benchFile(b, "flameox-bench-kineto-1g.json", gen.FormatPytorch, func(p string) error {
		return buffered(p, func(w *bufio.Writer) error { return chrometest.WriteKinetoTrace(w, 1<<30-1<<20, 1) })
	})
	req := operationsReq(in, gen.TraceSliceFields{})
	benchAnalysis(b, func(ctx context.Context) (*providers.Analysis, error) { return summarize(ctx, req) }, 0, 100)
}
