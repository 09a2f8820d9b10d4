package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TableSink receives an OTLP file's records as complete generated messages, every field
// of the export (attributes included) read alike from either encoding: each when read (a
// resource or scope its resource_spans or scope_spans lacks when that ends). The messages
// are reused after the call. An error a method returns ends the read, and Decode returns
// it as it is (a sink that has what it wants ends the read with an error of its own).
type TableSink interface {
	// Resource receives the resource of the index-th resource_spans.
	Resource(index int64, r *resourcepb.Resource) error
	// Scope receives the scope of the index-th scope_spans, of the resource-th resource_spans.
	Scope(resource, index int64, s *commonpb.InstrumentationScope) error
	// Wants says whether the next span, with this many events and links, gives a row the
	// sink collects: Span then receives it whole, else Skip counts it.
	Wants(events, links int) bool
	// Span receives the index-th span, of the scope-th scope_spans and the resource-th
	// resource_spans.
	Span(resource, scope, index int64, s *tracepb.Span) error
	Skip(events, links int)
}

// wantsSpan reports whether the table sink collects a row of the span just decoded (in
// d.span): only then is it decoded whole.
func (d *decoder) wantsSpan() bool {
	return d.tables != nil && d.tables.Wants(len(d.span.Events), d.span.Links)
}

// jsonMessage reads one OTLP/JSON message into m with protojson: the OTLP JSON mapping
// is proto3's JSON mapping but for hex trace and span ids, which only spans and links hold.
func (d *decoder) jsonMessage(v jsontext.Value, m proto.Message, what string) error {
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(v, m); err != nil {
		return d.bad("a %s does not follow the OTLP JSON mapping", what)
	}
	return nil
}

// jsonFullSpan reads the span v into d.full, its hex ids rewritten as the base64 that
// proto3's JSON mapping expects.
func (d *decoder) jsonFullSpan(v jsontext.Value) error {
	var span map[string]json.RawMessage
	if err := json.Unmarshal(v, &span); err != nil {
		return d.bad("a span does not follow the OTLP JSON mapping")
	}
	if err := d.base64IDs(span); err != nil {
		return err
	}
	if raw, ok := span["links"]; ok {
		var links []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &links); err != nil {
			return d.bad("a span's links do not follow the OTLP JSON mapping")
		}
		for _, l := range links {
			if err := d.base64IDs(l); err != nil {
				return err
			}
		}
		b, err := json.Marshal(links)
		if err != nil {
			return d.bad("a span's links do not follow the OTLP JSON mapping")
		}
		span["links"] = b
	}
	b, err := json.Marshal(span)
	if err != nil {
		return d.bad("a span does not follow the OTLP JSON mapping")
	}
	return d.jsonMessage(b, &d.full, "span")
}

// base64IDs rewrites the hex id members of one span or link object as base64.
func (d *decoder) base64IDs(m map[string]json.RawMessage) error {
	for _, key := range []string{"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"} {
		raw, ok := m[key]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return d.bad("%s is not a string", key)
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return d.bad("%s %q is not hex", key, s)
		}
		m[key], _ = json.Marshal(base64.StdEncoding.EncodeToString(b))
	}
	return nil
}
