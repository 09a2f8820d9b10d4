package trace

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
)

// TestDecodeOTLPAnyChunking requires DecodeOTLP to read the corpus OTLP traces (JSON
// and protobuf) and their malformed copies the same however the reader splits them.
func TestDecodeOTLPAnyChunking(t *testing.T) {
	for _, c := range []struct {
		proto bool
		files []string
	}{
		{false, []string{"otlp__trace.json", "local__otel_js_otlp_http_json_trace.json"}},
		{true, []string{"local__otel_js_otlp_protobuf_trace.binpb"}},
	} {
		testtool.CheckAnyChunking(t, testtool.CorpusInputs(t, c.files...), func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
			var spans []OTLPSpan
			st, err := DecodeOTLP(context.Background(), r, 5, c.proto, func(s *OTLPSpan) error {
				k := *s // the decoder reuses the span and its events
				k.Events = slices.Clone(s.Events)
				spans = append(spans, k)
				return nil
			})
			return testtool.Result(struct {
				Spans []OTLPSpan
				Stats *OTLPStats
			}{spans, st}, err)
		})
	}
}

// TestDecodePerfettoAnyChunking requires DecodePerfetto to read the corpus Perfetto
// traces and their malformed copies the same however the reader splits them.
func TestDecodePerfettoAnyChunking(t *testing.T) {
	inputs := testtool.CorpusInputs(t, "perfetto-mcp-rs__basic.perfetto-trace", "local__chromium156_trace_startup_proto.pftrace")
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		rec := newRecorder()
		st, info, err := DecodePerfetto(context.Background(), r, 5, PerfettoLimits{}, rec)
		return testtool.Result(struct {
			Sink  *recorder
			Stats *Stats
			Info  *PerfettoInfo
		}{rec, st, info}, err)
	}, cmp.AllowUnexported(recorder{}))
}
