package trace

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
)

func fuzzOTLP(t *testing.T, b []byte, proto bool) {
	var spans, events int64
	last := int64(-1)
	st, err := DecodeOTLP(context.Background(), bytes.NewReader(b), 0, proto, func(s *OTLPSpan) error {
		if s.Ordinal <= last {
			t.Fatalf("span ordinal %d after %d", s.Ordinal, last)
		}
		if s.Links < 0 {
			t.Fatalf("span %d has %d links", s.Ordinal, s.Links)
		}
		last = s.Ordinal
		spans++
		events += int64(len(s.Events))
		return nil
	})
	fuzztool.CheckError(t, err)
	if err != nil {
		return
	}
	for what, n := range map[string]int64{"Resources": st.Resources, "Scopes": st.Scopes, "Spans": st.Spans,
		"Events": st.Events, "Links": st.Links, "SpansBeforeResource": st.SpansBeforeResource} {
		fuzztool.NonNegative(t, what, n)
	}
	if st.Spans != spans {
		t.Fatalf("Stats.Spans = %d, visited %d", st.Spans, spans)
	}
	if st.SpansBeforeResource > st.Spans {
		t.Fatalf("SpansBeforeResource %d > Spans %d", st.SpansBeforeResource, st.Spans)
	}
	// View "tables" decodes every record whole (stricter: attributes are read): when it
	// succeeds, each table has one valid JSON row per record it counted.
	rg := &otlpRange{need: -1}
	for i := range rg.last {
		rg.last[i] = math.MaxInt64
	}
	st, err = decodeOTLP(context.Background(), bytes.NewReader(b), 0, proto, func(*OTLPSpan) error { return nil }, rg)
	fuzztool.CheckError(t, err)
	if err != nil {
		return
	}
	for i, n := range [...]int64{st.Resources, st.Scopes, st.Spans, st.Events, st.Links} {
		if int64(len(rg.rows[i])) != n {
			t.Fatalf("%d %s rows, counted %d", len(rg.rows[i]), otlpTableNames[i], n)
		}
		for _, r := range rg.rows[i] {
			if !json.Valid(r) {
				t.Fatalf("invalid %s row %s", otlpTableNames[i], r)
			}
		}
	}
}

// FuzzDecodeOTLPJSON: go test ./providers/trace -run '^$' -fuzz FuzzDecodeOTLPJSON -fuzztime 1m
func FuzzDecodeOTLPJSON(f *testing.F) {
	fuzztool.Corpus(f, "local__otel_js_otlp_http_json_trace.json", "otlp__trace.json")
	for _, s := range []string{
		`{}`, `{"resourceSpans":[]}`,
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"a","kind":2,"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000","events":[{"timeUnixNano":"1544712660500000000","name":"e"}],"links":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b172"}],"status":{"code":2}}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"b","startTimeUnixNano":2,"endTimeUnixNano":1}]}]}]}{"resourceSpans":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzztool.Bounded(t, func() { fuzzOTLP(t, b, false) }) })
}

// FuzzDecodeOTLPProto: go test ./providers/trace -run '^$' -fuzz FuzzDecodeOTLPProto -fuzztime 1m
func FuzzDecodeOTLPProto(f *testing.F) {
	fuzztool.Corpus(f, "local__otel_js_otlp_protobuf_trace.binpb")
	for _, h := range []string{
		"",
		// ResourceSpans{ScopeSpans{Span{trace_id, span_id, name:"a", start:1, end:2}}}
		"0a2a" + "1228" + "1226" + "0a1000112233445566778899aabbccddeeff" + "12080011223344556677" + "2a0161" + "3901000000000000004102000000000000" + "00",
		"0a00", "0a021200", "0aff01",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzztool.Bounded(t, func() { fuzzOTLP(t, b, true) }) })
}
