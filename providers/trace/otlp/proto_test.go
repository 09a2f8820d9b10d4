package otlp

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestWithoutAttributes checks the span filter against the generated code itself: a Span
// marshalled by go.opentelemetry.io/proto/otlp with attributes in, then read back after
// withoutField drops field 9, equals the same Span with no attributes, every other field
// (events and links with their own attributes, status, unknown fields) intact.
func TestWithoutAttributes(t *testing.T) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	full := &tracepb.Span{
		TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), ParentSpanId: bytes.Repeat([]byte{3}, 8),
		TraceState: "a=b", Name: "GET /", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1, EndTimeUnixNano: 1 << 63,
		Attributes:             []*commonpb.KeyValue{str("http.method", "GET"), str("http.target", "/")},
		DroppedAttributesCount: 4,
		Events:                 []*tracepb.Span_Event{{TimeUnixNano: 5, Name: "e", Attributes: []*commonpb.KeyValue{str("k", "v")}}},
		Links:                  []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{4}, 16), SpanId: bytes.Repeat([]byte{5}, 8), Attributes: []*commonpb.KeyValue{str("l", "w")}}},
		Status:                 &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
		Flags:                  0x301,
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	// An attribute after the other fields, and a field from the future, kept.
	b = protowire.AppendBytes(protowire.AppendTag(b, 9, protowire.BytesType), []byte{0x0a, 0x01, 'x'})
	b = protowire.AppendVarint(protowire.AppendTag(b, 99, protowire.VarintType), 7)
	var got tracepb.Span
	if err := proto.Unmarshal(withoutField(nil, b, 9), &got); err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(full).(*tracepb.Span)
	want.Attributes = nil
	want.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
		t.Errorf("span less attributes (-want +got):\n%s", diff)
	}
	// Malformed data is passed on for Unmarshal to reject.
	bad := []byte{0x4a, 0x05, 'x'}
	if err := proto.Unmarshal(withoutField(nil, bad, 9), &got); err == nil {
		t.Error("a truncated attribute was accepted")
	}
}
