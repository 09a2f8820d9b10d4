package otlp_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/trace/otlp"
	"github.com/flameox/flameox/providers/trace/otlp/otlptest"
)

// counter is a TableSink that wants every record and counts them by table.
type counter struct{ resources, scopes, spans, events, links, skipped int64 }

func (c *counter) Resource(int64, *otlp.Resource) error  { c.resources++; return nil }
func (c *counter) Scope(_, _ int64, _ *otlp.Scope) error { c.scopes++; return nil }
func (c *counter) Wants(int, int) bool                   { return true }
func (c *counter) Span(_, _, _ int64, s *otlp.SpanRecord) error {
	c.spans++
	c.events += int64(len(s.Events))
	c.links += int64(len(s.Links))
	return nil
}
func (c *counter) Skip(int, int) { c.skipped++ }

func fuzzDecode(t *testing.T, b []byte, proto bool) {
	var spans, events int64
	last := int64(-1)
	st, err := otlp.Decode(context.Background(), bytes.NewReader(b), 0, proto, func(s *otlp.Span) error {
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
	}, nil)
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
	// A table sink gets every record decoded whole (stricter: attributes are read): when
	// that succeeds, it received each record the read counted, once.
	c := &counter{}
	st, err = otlp.Decode(context.Background(), bytes.NewReader(b), 0, proto, func(*otlp.Span) error { return nil }, c)
	fuzztool.CheckError(t, err)
	if err != nil {
		return
	}
	if got, want := [...]int64{c.resources, c.scopes, c.spans, c.events, c.links, c.skipped},
		[...]int64{st.Resources, st.Scopes, st.Spans, st.Events, st.Links, 0}; got != want {
		t.Fatalf("the sink received %v records (resources, scopes, spans, events, links, skipped), counted %v", got, want)
	}
}

// FuzzDecodeJSON: go test ./providers/trace/otlp -run '^$' -fuzz FuzzDecodeJSON -fuzztime 1m
func FuzzDecodeJSON(f *testing.F) {
	for _, b := range otlptest.FuzzSeeds(false) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzztool.Bounded(t, func() { fuzzDecode(t, b, false) }) })
}

// FuzzDecodeProto: go test ./providers/trace/otlp -run '^$' -fuzz FuzzDecodeProto -fuzztime 1m
func FuzzDecodeProto(f *testing.F) {
	for _, b := range otlptest.FuzzSeeds(true) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzztool.Bounded(t, func() { fuzzDecode(t, b, true) }) })
}
