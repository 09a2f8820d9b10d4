package otlp

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The record decoders against the OpenTelemetry project's generated types: every
// input is decoded both ways, and the two must refuse it alike or give the same record
// (the generated one converted by the functions below).

// recordOpts compare records: an absent and an empty list or id are alike, as are NaNs.
var recordOpts = cmp.Options{cmpopts.EquateEmpty(), cmpopts.EquateNaNs()}

func keyValuesFromPB(kvs []*commonpb.KeyValue) []KeyValue {
	var out []KeyValue
	for _, kv := range kvs {
		out = append(out, KeyValue{Key: kv.GetKey(), Value: anyValueFromPB(kv.GetValue()), KeyStrindex: kv.GetKeyStrindex()})
	}
	return out
}

func anyValueFromPB(v *commonpb.AnyValue) AnyValue {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return AnyValue{Kind: ValueString, String: x.StringValue}
	case *commonpb.AnyValue_BoolValue:
		return AnyValue{Kind: ValueBool, Bool: x.BoolValue}
	case *commonpb.AnyValue_IntValue:
		return AnyValue{Kind: ValueInt, Int: x.IntValue}
	case *commonpb.AnyValue_DoubleValue:
		return AnyValue{Kind: ValueDouble, Double: x.DoubleValue}
	case *commonpb.AnyValue_BytesValue:
		return AnyValue{Kind: ValueBytes, Bytes: x.BytesValue}
	case *commonpb.AnyValue_StringValueStrindex:
		return AnyValue{Kind: ValueStrindex, Int: int64(x.StringValueStrindex)}
	case *commonpb.AnyValue_ArrayValue:
		out := AnyValue{Kind: ValueArray}
		for _, e := range x.ArrayValue.GetValues() {
			out.Array = append(out.Array, anyValueFromPB(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return AnyValue{Kind: ValueKvlist, Kvlist: keyValuesFromPB(x.KvlistValue.GetValues())}
	}
	return AnyValue{}
}

func resourceFromPB(r *resourcepb.Resource) Resource {
	out := Resource{Attributes: keyValuesFromPB(r.GetAttributes()), DroppedAttributesCount: r.GetDroppedAttributesCount()}
	for _, e := range r.GetEntityRefs() {
		out.EntityRefs = append(out.EntityRefs, EntityRef{SchemaURL: e.GetSchemaUrl(), Type: e.GetType(), IDKeys: e.GetIdKeys(), DescriptionKeys: e.GetDescriptionKeys()})
	}
	return out
}

func scopeFromPB(s *commonpb.InstrumentationScope) Scope {
	return Scope{Name: s.GetName(), Version: s.GetVersion(), Attributes: keyValuesFromPB(s.GetAttributes()), DroppedAttributesCount: s.GetDroppedAttributesCount()}
}

func spanFromPB(s *tracepb.Span) SpanRecord {
	out := SpanRecord{TraceID: s.GetTraceId(), SpanID: s.GetSpanId(), TraceState: s.GetTraceState(), ParentSpanID: s.GetParentSpanId(),
		Flags: s.GetFlags(), Name: s.GetName(), Kind: int32(s.GetKind()), StartTimeUnixNano: s.GetStartTimeUnixNano(), EndTimeUnixNano: s.GetEndTimeUnixNano(),
		Attributes: keyValuesFromPB(s.GetAttributes()), DroppedAttributesCount: s.GetDroppedAttributesCount(), DroppedEventsCount: s.GetDroppedEventsCount(),
		DroppedLinksCount: s.GetDroppedLinksCount(), Status: Status{Message: s.GetStatus().GetMessage(), Code: int32(s.GetStatus().GetCode())}}
	for _, e := range s.GetEvents() {
		out.Events = append(out.Events, SpanEvent{TimeUnixNano: e.GetTimeUnixNano(), Name: e.GetName(), Attributes: keyValuesFromPB(e.GetAttributes()),
			DroppedAttributesCount: e.GetDroppedAttributesCount()})
	}
	for _, l := range s.GetLinks() {
		out.Links = append(out.Links, SpanLink{TraceID: l.GetTraceId(), SpanID: l.GetSpanId(), TraceState: l.GetTraceState(),
			Attributes: keyValuesFromPB(l.GetAttributes()), DroppedAttributesCount: l.GetDroppedAttributesCount(), Flags: l.GetFlags()})
	}
	return out
}

// withoutField is the oracle of a light decode: the fields of message b other than num,
// malformed data copied as it is from there on (for Unmarshal to refuse).
func withoutField(b []byte, num protowire.Number) []byte {
	var dst []byte
	for len(b) > 0 {
		n, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return append(dst, b...)
		}
		m := protowire.ConsumeFieldValue(n, typ, b[k:])
		if m < 0 {
			return append(dst, b...)
		}
		if n != num {
			dst = append(dst, b[:k+m]...)
		}
		b = b[k+m:]
	}
	return dst
}

var pbOracle = proto.UnmarshalOptions{DiscardUnknown: true}

// checkPBRecords decodes b as each record, both ways, and fails the test where they differ.
func checkPBRecords(t *testing.T, b []byte) {
	t.Helper()
	{
		var want tracepb.Span
		werr := pbOracle.Unmarshal(b, &want)
		var got SpanRecord
		gerr := pbDecoder{}.span(b, &got, 1)
		compareRecords(t, "span", b, werr, gerr, func() any { return spanFromPB(&want) }, got)
	}
	{
		var want tracepb.Span
		werr := pbOracle.Unmarshal(withoutField(b, 9), &want)
		var got SpanRecord
		gerr := pbDecoder{light: true}.span(b, &got, 1)
		compareRecords(t, "light span", b, werr, gerr, func() any { return spanFromPB(&want) }, got)
	}
	{
		var want resourcepb.Resource
		werr := pbOracle.Unmarshal(b, &want)
		var got Resource
		gerr := pbDecoder{}.resource(b, &got, 1)
		compareRecords(t, "resource", b, werr, gerr, func() any { return resourceFromPB(&want) }, got)
	}
	{
		var want commonpb.InstrumentationScope
		werr := pbOracle.Unmarshal(b, &want)
		var got Scope
		gerr := pbDecoder{}.scope(b, &got, 1)
		compareRecords(t, "scope", b, werr, gerr, func() any { return scopeFromPB(&want) }, got)
	}
}

func compareRecords(t *testing.T, what string, in []byte, werr, gerr error, want func() any, got any) {
	t.Helper()
	show := in
	if len(show) > 200 {
		show = show[:200]
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s % x: oracle error %v, ours %v", what, show, werr, gerr)
	}
	if werr != nil {
		return
	}
	// fmt prints a deep record in linear time (cmp's diff of nested slices is exponential
	// in their depth), an absent and an empty list alike, and every NaN alike.
	w := want()
	if fmt.Sprintf("%+v", w) == fmt.Sprintf("%+v", got) {
		return
	}
	if d := cmp.Diff(w, got, recordOpts); d != "" {
		t.Fatalf("%s % x (-oracle +ours):\n%s", what, show, d)
	}
}

// A schema of the generator: for each field number its kind, a message's schema.
type pbKind struct {
	typ protowire.Type
	// str says a length-delimited field is a string; id that it is an id (8 or 16 bytes).
	str, id bool
	msg     *pbSchema
}

type pbSchema map[protowire.Number]pbKind

var (
	sAnyValue, sArray, sKvlist, sKeyValue = &pbSchema{}, &pbSchema{}, &pbSchema{}, &pbSchema{}
	sStatus                               = &pbSchema{2: {typ: protowire.BytesType, str: true}, 3: {typ: protowire.VarintType}}
	sEvent, sLink, sSpan                  = &pbSchema{}, &pbSchema{}, &pbSchema{}
	sEntityRef                            = &pbSchema{1: {typ: protowire.BytesType, str: true}, 2: {typ: protowire.BytesType, str: true},
		3: {typ: protowire.BytesType, str: true}, 4: {typ: protowire.BytesType, str: true}}
	sResource, sScope = &pbSchema{}, &pbSchema{}
)

func init() {
	str := pbKind{typ: protowire.BytesType, str: true}
	vi := pbKind{typ: protowire.VarintType}
	msg := func(s *pbSchema) pbKind { return pbKind{typ: protowire.BytesType, msg: s} }
	*sAnyValue = pbSchema{1: str, 2: vi, 3: vi, 4: {typ: protowire.Fixed64Type}, 5: msg(sArray), 6: msg(sKvlist),
		7: {typ: protowire.BytesType}, 8: vi}
	*sArray = pbSchema{1: msg(sAnyValue)}
	*sKvlist = pbSchema{1: msg(sKeyValue)}
	*sKeyValue = pbSchema{1: str, 2: msg(sAnyValue), 3: vi}
	*sEvent = pbSchema{1: {typ: protowire.Fixed64Type}, 2: str, 3: msg(sKeyValue), 4: vi}
	id := pbKind{typ: protowire.BytesType, id: true}
	*sLink = pbSchema{1: id, 2: id, 3: str, 4: msg(sKeyValue), 5: vi, 6: {typ: protowire.Fixed32Type}}
	*sSpan = pbSchema{1: id, 2: id, 3: str, 4: id, 5: str, 6: vi, 7: {typ: protowire.Fixed64Type}, 8: {typ: protowire.Fixed64Type},
		9: msg(sKeyValue), 10: vi, 11: msg(sEvent), 12: vi, 13: msg(sLink), 14: vi, 15: msg(sStatus), 16: {typ: protowire.Fixed32Type}}
	*sResource = pbSchema{1: msg(sKeyValue), 2: vi, 3: msg(sEntityRef)}
	*sScope = pbSchema{1: str, 2: str, 3: msg(sKeyValue), 4: vi}
}

// pbGen writes random messages of a schema: mostly well formed, with repeated and
// unknown fields, fields of the wrong wire type, groups, invalid UTF-8, and now and then
// a malformed byte.
type pbGen struct {
	r *rand.Rand
	// bad is the chance in 1000 of each kind of damage.
	bad int
}

func (g *pbGen) chance(permille int) bool { return g.r.IntN(1000) < permille }

func (g *pbGen) varint() uint64 {
	switch g.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return uint64(g.r.IntN(10))
	case 2:
		return math.MaxUint64 - uint64(g.r.IntN(3))
	case 3:
		return 1<<32 + uint64(g.r.IntN(3)) - 1
	case 4:
		return uint64(int64(-g.r.IntN(5)))
	}
	return g.r.Uint64() >> g.r.IntN(64)
}

func (g *pbGen) text() []byte {
	words := []string{"", "a", "GET /", "service.name", "é", "日本", "\x00", "k=v"}
	b := []byte(words[g.r.IntN(len(words))])
	if g.chance(g.bad) {
		b = append(b, 0xff) // not UTF-8
	}
	if g.chance(g.bad) {
		b = append(b, 0xe6, 0x97) // a cut rune
	}
	return b
}

func (g *pbGen) message(s *pbSchema, depth int) []byte {
	var b []byte
	n := g.r.IntN(5)
	if depth > 4 {
		n = g.r.IntN(2)
	}
	for range n {
		num := protowire.Number(1 + g.r.IntN(17))
		if g.chance(50) {
			num = protowire.Number(17 + g.r.IntN(100))
		}
		k, known := (*s)[num]
		typ := k.typ
		if !known || g.chance(g.bad) {
			typ = []protowire.Type{protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type, protowire.BytesType, protowire.StartGroupType}[g.r.IntN(5)]
		}
		b = protowire.AppendTag(b, num, typ)
		switch typ {
		case protowire.VarintType:
			b = protowire.AppendVarint(b, g.varint())
		case protowire.Fixed32Type:
			b = protowire.AppendFixed32(b, uint32(g.varint()))
		case protowire.Fixed64Type:
			v := g.varint()
			if g.chance(100) {
				v = math.Float64bits([]float64{math.NaN(), math.Inf(1), -0.0, 0.25}[g.r.IntN(4)])
			}
			b = protowire.AppendFixed64(b, v)
		case protowire.BytesType:
			var body []byte
			switch {
			case known && k.msg != nil && depth < 8:
				body = g.message(k.msg, depth+1)
			case known && k.id:
				body = bytes.Repeat([]byte{byte(g.r.IntN(3))}, []int{0, 8, 16, 5}[g.r.IntN(4)])
			default:
				body = g.text()
			}
			b = protowire.AppendBytes(b, body)
		case protowire.StartGroupType:
			b = append(b, g.message(&pbSchema{}, depth+1)...)
			end := num
			if g.chance(g.bad) {
				end++
			}
			b = protowire.AppendTag(b, end, protowire.EndGroupType)
		}
	}
	if len(b) > 0 && g.chance(g.bad) {
		switch g.r.IntN(5) {
		case 0:
			b = b[:g.r.IntN(len(b))]
		case 1:
			b[g.r.IntN(len(b))] ^= byte(1 << g.r.IntN(8))
		case 2:
			b = append(b, []byte{0x00, 0x0c, 0x0e, 0x0f, 0x80}[g.r.IntN(5)]) // field 0, end group, reserved types, a cut varint
		case 3:
			b = protowire.AppendTag(b, protowire.MaxValidNumber+1, protowire.VarintType)
			b = append(b, 1)
		case 4:
			b = append(b, bytes.Repeat([]byte{0xff}, 10)...)
		}
	}
	return b
}

// nestedArrays is an AnyValue holding an array holding ... levels deep.
func nestedArrays(levels int) []byte {
	v := protowire.AppendTag(nil, 1, protowire.BytesType) // the innermost: a string
	v = protowire.AppendBytes(v, []byte("x"))
	for range levels {
		arr := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v)
		v = protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), arr)
	}
	return v
}

// TestPBRecordsMatchGenerated compares the record decoders with proto.Unmarshal on
// generated messages of each record's schema, damaged now and then.
func TestPBRecordsMatchGenerated(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 3000
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range n {
		g := &pbGen{r: r, bad: []int{0, 30, 150}[i%3]}
		for _, s := range []*pbSchema{sSpan, sResource, sScope} {
			checkPBRecords(t, g.message(s, 1))
		}
	}
}

// TestPBRecordsEdges compares the record decoders with proto.Unmarshal on the edges of
// the wire format: nesting at proto.Unmarshal's limit, merges, groups.
func TestPBRecordsEdges(t *testing.T) {
	attr := func(value []byte) []byte { // a span (or resource) of one attribute
		kv := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), value)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), kv)
	}
	spanAttr := func(value []byte) []byte {
		kv := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), value)
		return protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), kv)
	}
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(tag(num, protowire.BytesType), v)
	}
	varintField := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(num, protowire.VarintType), v)
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	cases := map[string][]byte{
		"empty": nil,
		// Resource(1) > KeyValue(2) > AnyValue(3) > (ArrayValue, AnyValue) x levels.
		"nesting at the limit":   attr(nestedArrays((pbMaxDepth - 3) / 2)),
		"nesting past the limit": attr(nestedArrays((pbMaxDepth-3)/2 + 1)),
		"span nesting at limit":  spanAttr(nestedArrays((pbMaxDepth - 3) / 2)),
		"span nesting past":      spanAttr(nestedArrays((pbMaxDepth-3)/2 + 1)),
		"two arrays merge":       attr(cat(bytesField(5, bytesField(1, varintField(3, 1))), bytesField(5, bytesField(1, varintField(3, 2))))),
		"array then string":      attr(cat(bytesField(5, bytesField(1, varintField(3, 1))), bytesField(1, []byte("s")))),
		"string then array":      attr(cat(bytesField(1, []byte("s")), bytesField(5, nil))),
		"array, int, array":      attr(cat(bytesField(5, bytesField(1, nil)), varintField(3, 7), bytesField(5, nil))),
		"kvlists merge":          attr(cat(bytesField(6, bytesField(1, bytesField(1, []byte("a")))), bytesField(6, bytesField(1, bytesField(1, []byte("b")))))),
		"string of wrong type":   attr(cat(bytesField(1, []byte("s")), varintField(1, 3))),
		"array of wrong type":    attr(cat(bytesField(5, nil), varintField(5, 3))),
		"status twice merges":    cat(bytesField(15, cat(varintField(3, 2))), bytesField(15, bytesField(2, []byte("m")))),
		"value twice merges":     bytesField(1, cat(bytesField(2, varintField(3, 1)), bytesField(2, bytesField(1, []byte("s"))))),
		"group skipped":          cat(tag(30, protowire.StartGroupType), varintField(1, 1), tag(30, protowire.EndGroupType), bytesField(5, []byte("n"))),
		"group of known number":  cat(tag(5, protowire.StartGroupType), tag(5, protowire.EndGroupType)),
		"group mismatched":       cat(tag(30, protowire.StartGroupType), tag(31, protowire.EndGroupType)),
		"end group alone":        tag(5, protowire.EndGroupType),
		"field number 2^29":      varintField(protowire.MaxValidNumber+1, 1),
		"field number 2^29-1":    varintField(protowire.MaxValidNumber, 1),
		"attribute malformed":    cat(bytesField(9, []byte{0x0a, 0x05}), bytesField(5, []byte("n"))),
		"attribute not UTF-8":    cat(bytesField(9, bytesField(1, []byte{0xff})), bytesField(5, []byte("n"))),
		"attribute as varint":    varintField(9, 1),
		"tenth byte 1":           append([]byte{0x30}, append(bytes.Repeat([]byte{0xff}, 9), 0x01)...),
		"tenth byte 2":           append([]byte{0x30}, append(bytes.Repeat([]byte{0xff}, 9), 0x02)...),
		"kind past int32":        varintField(6, 1<<40|5),
		"bool of 2":              attr(varintField(2, 2)),
		"strindex past int32":    attr(varintField(8, 1<<33|9)),
		"deep group":             cat(bytes.Repeat(tag(30, protowire.StartGroupType), protowire.DefaultRecursionLimit+2), bytes.Repeat(tag(30, protowire.EndGroupType), protowire.DefaultRecursionLimit+2)),
	}
	for name, b := range cases {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) { checkPBRecords(t, b) })
	}
}

// FuzzPBRecords: go test ./providers/trace/otlp -run '^$' -fuzz FuzzPBRecords -fuzztime 45s
func FuzzPBRecords(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 60 {
		g := &pbGen{r: r, bad: []int{0, 30, 150}[i%3]}
		f.Add(g.message([]*pbSchema{sSpan, sResource, sScope}[i%3], 1))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkPBRecords(t, b) })
}
