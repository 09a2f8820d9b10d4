package trace

import (
	"context"
	"io"
	"slices"
	"testing"

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
