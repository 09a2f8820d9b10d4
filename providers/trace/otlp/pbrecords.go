package otlp

import (
	"errors"
	"math"
	"unicode/utf8"

	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// The records in OTLP/protobuf (trace.proto, resource.proto, common.proto), decoded as
// proto.Unmarshal decodes the OpenTelemetry project's generated types with unknown fields
// discarded: a field of a known number but another wire type is unknown, and skipped; a
// repeated field appends, a message field read twice merges, the last value of a scalar
// wins; strings must be UTF-8; messages nest at most pbMaxDepth deep; a group (no OTLP
// field is one) is skipped whole, and a cut value, an end of group, a reserved wire type
// or a field number outside 1 to 2^29-1 is malformed.

// errPB is malformed protobuf in a record; the caller words it.
var errPB = errors.New("malformed protobuf")

// pbMaxDepth is how deep proto.Unmarshal lets messages nest, the record read counting 1.
const pbMaxDepth = protowire.DefaultRecursionLimit

// is reports whether f is field num of wire type typ.
func is(f protowalk.Field, num uint64, typ protowire.Type) bool {
	return f.Num == num && f.Type == typ
}

// pbNext reads the field at the start of b and returns it with the rest of b.
func pbNext(b []byte) (f protowalk.Field, rest []byte, err error) {
	f, rest, ok := protowalk.Next(b)
	if !ok {
		// A group is skipped whole; whatever else Next refuses is malformed.
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.StartGroupType {
			return f, nil, errPB
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return f, nil, errPB
		}
		f, rest = protowalk.Field{Num: uint64(num), Type: typ}, b[n+m:]
	}
	if f.Num < uint64(protowire.MinValidNumber) || f.Num > uint64(protowire.MaxValidNumber) {
		return f, nil, errPB
	}
	return f, rest, nil
}

// pbDecoder decodes records. A light one leaves a span's own attributes out (they are in
// no row of the operations, and decoding them tripled the read time of a span with three
// attributes: docs/performance.md) and lets byte fields point into the message, for a
// record that is used before the message's buffer is.
type pbDecoder struct{ light bool }

// message calls field with each field of the message b, which is depth messages deep.
func (p pbDecoder) message(b []byte, depth int, field func(f protowalk.Field) error) error {
	if depth > pbMaxDepth {
		return errPB
	}
	for len(b) > 0 {
		f, rest, err := pbNext(b)
		if err != nil {
			return err
		}
		if err := field(f); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// pbString is the string value of f, which must be UTF-8.
func pbString(f protowalk.Field) (string, error) {
	if !utf8.Valid(f.Bytes) {
		return "", errPB
	}
	return string(f.Bytes), nil
}

// bytes is the bytes value of f: a copy, or for a light decoder f's own.
func (p pbDecoder) bytes(f protowalk.Field) []byte {
	if p.light {
		return f.Bytes
	}
	return append([]byte{}, f.Bytes...)
}

// span decodes the Span b into s, which holds what it held (a repeated field appends).
func (p pbDecoder) span(b []byte, s *SpanRecord, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 1, protowire.BytesType):
			s.TraceID = p.bytes(f)
		case is(f, 2, protowire.BytesType):
			s.SpanID = p.bytes(f)
		case is(f, 3, protowire.BytesType):
			s.TraceState, err = pbString(f)
		case is(f, 4, protowire.BytesType):
			s.ParentSpanID = p.bytes(f)
		case is(f, 5, protowire.BytesType):
			s.Name, err = pbString(f)
		case is(f, 6, protowire.VarintType):
			s.Kind = int32(f.Value)
		case is(f, 7, protowire.Fixed64Type):
			s.StartTimeUnixNano = f.Value
		case is(f, 8, protowire.Fixed64Type):
			s.EndTimeUnixNano = f.Value
		case is(f, 9, protowire.BytesType) && !p.light:
			s.Attributes, err = p.appendKeyValue(s.Attributes, f.Bytes, depth+1)
		case is(f, 10, protowire.VarintType):
			s.DroppedAttributesCount = uint32(f.Value)
		case is(f, 11, protowire.BytesType):
			s.Events = append(s.Events, SpanEvent{})
			err = p.event(f.Bytes, &s.Events[len(s.Events)-1], depth+1)
		case is(f, 12, protowire.VarintType):
			s.DroppedEventsCount = uint32(f.Value)
		case is(f, 13, protowire.BytesType):
			s.Links = append(s.Links, SpanLink{})
			err = p.link(f.Bytes, &s.Links[len(s.Links)-1], depth+1)
		case is(f, 14, protowire.VarintType):
			s.DroppedLinksCount = uint32(f.Value)
		case is(f, 15, protowire.BytesType):
			err = p.status(f.Bytes, &s.Status, depth+1)
		case is(f, 16, protowire.Fixed32Type):
			s.Flags = uint32(f.Value)
		}
		return err
	})
}

func (p pbDecoder) event(b []byte, e *SpanEvent, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 1, protowire.Fixed64Type):
			e.TimeUnixNano = f.Value
		case is(f, 2, protowire.BytesType):
			e.Name, err = pbString(f)
		case is(f, 3, protowire.BytesType):
			e.Attributes, err = p.appendKeyValue(e.Attributes, f.Bytes, depth+1)
		case is(f, 4, protowire.VarintType):
			e.DroppedAttributesCount = uint32(f.Value)
		}
		return err
	})
}

func (p pbDecoder) link(b []byte, l *SpanLink, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 1, protowire.BytesType):
			l.TraceID = p.bytes(f)
		case is(f, 2, protowire.BytesType):
			l.SpanID = p.bytes(f)
		case is(f, 3, protowire.BytesType):
			l.TraceState, err = pbString(f)
		case is(f, 4, protowire.BytesType):
			l.Attributes, err = p.appendKeyValue(l.Attributes, f.Bytes, depth+1)
		case is(f, 5, protowire.VarintType):
			l.DroppedAttributesCount = uint32(f.Value)
		case is(f, 6, protowire.Fixed32Type):
			l.Flags = uint32(f.Value)
		}
		return err
	})
}

func (p pbDecoder) status(b []byte, s *Status, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 2, protowire.BytesType):
			s.Message, err = pbString(f)
		case is(f, 3, protowire.VarintType):
			s.Code = int32(f.Value)
		}
		return err
	})
}

// resource decodes the Resource b into r.
func (p pbDecoder) resource(b []byte, r *Resource, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 1, protowire.BytesType):
			r.Attributes, err = p.appendKeyValue(r.Attributes, f.Bytes, depth+1)
		case is(f, 2, protowire.VarintType):
			r.DroppedAttributesCount = uint32(f.Value)
		case is(f, 3, protowire.BytesType):
			r.EntityRefs = append(r.EntityRefs, EntityRef{})
			err = p.entityRef(f.Bytes, &r.EntityRefs[len(r.EntityRefs)-1], depth+1)
		}
		return err
	})
}

func (p pbDecoder) entityRef(b []byte, e *EntityRef, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		var s string
		switch {
		case is(f, 1, protowire.BytesType):
			e.SchemaURL, err = pbString(f)
		case is(f, 2, protowire.BytesType):
			e.Type, err = pbString(f)
		case is(f, 3, protowire.BytesType):
			s, err = pbString(f)
			e.IDKeys = append(e.IDKeys, s)
		case is(f, 4, protowire.BytesType):
			s, err = pbString(f)
			e.DescriptionKeys = append(e.DescriptionKeys, s)
		}
		return err
	})
}

// scope decodes the InstrumentationScope b into s.
func (p pbDecoder) scope(b []byte, s *Scope, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 1, protowire.BytesType):
			s.Name, err = pbString(f)
		case is(f, 2, protowire.BytesType):
			s.Version, err = pbString(f)
		case is(f, 3, protowire.BytesType):
			s.Attributes, err = p.appendKeyValue(s.Attributes, f.Bytes, depth+1)
		case is(f, 4, protowire.VarintType):
			s.DroppedAttributesCount = uint32(f.Value)
		}
		return err
	})
}

// appendKeyValue decodes the KeyValue b onto kvs.
func (p pbDecoder) appendKeyValue(kvs []KeyValue, b []byte, depth int) ([]KeyValue, error) {
	kvs = append(kvs, KeyValue{})
	kv := &kvs[len(kvs)-1]
	return kvs, p.message(b, depth, func(f protowalk.Field) (err error) {
		switch {
		case is(f, 1, protowire.BytesType):
			kv.Key, err = pbString(f)
		case is(f, 2, protowire.BytesType):
			err = p.anyValue(f.Bytes, &kv.Value, depth+1)
		case is(f, 3, protowire.VarintType):
			kv.KeyStrindex = int32(f.Value)
		}
		return err
	})
}

// anyValue decodes the AnyValue b into v. Its last member wins; a member that is a
// message (an array or a key-value list) read again while it is the one set merges.
func (p pbDecoder) anyValue(b []byte, v *AnyValue, depth int) error {
	return p.message(b, depth, func(f protowalk.Field) error {
		switch {
		case is(f, 1, protowire.BytesType):
			s, err := pbString(f)
			if err != nil {
				return err
			}
			*v = AnyValue{Kind: ValueString, String: s}
		case is(f, 2, protowire.VarintType):
			*v = AnyValue{Kind: ValueBool, Bool: f.Value != 0}
		case is(f, 3, protowire.VarintType):
			*v = AnyValue{Kind: ValueInt, Int: int64(f.Value)}
		case is(f, 4, protowire.Fixed64Type):
			*v = AnyValue{Kind: ValueDouble, Double: math.Float64frombits(f.Value)}
		case is(f, 5, protowire.BytesType):
			if v.Kind != ValueArray {
				*v = AnyValue{Kind: ValueArray}
			}
			return p.message(f.Bytes, depth+1, func(g protowalk.Field) error {
				if !is(g, 1, protowire.BytesType) {
					return nil
				}
				v.Array = append(v.Array, AnyValue{})
				return p.anyValue(g.Bytes, &v.Array[len(v.Array)-1], depth+2)
			})
		case is(f, 6, protowire.BytesType):
			if v.Kind != ValueKvlist {
				*v = AnyValue{Kind: ValueKvlist}
			}
			return p.message(f.Bytes, depth+1, func(g protowalk.Field) (err error) {
				if is(g, 1, protowire.BytesType) {
					v.Kvlist, err = p.appendKeyValue(v.Kvlist, g.Bytes, depth+2)
				}
				return err
			})
		case is(f, 7, protowire.BytesType):
			*v = AnyValue{Kind: ValueBytes, Bytes: p.bytes(f)}
		case is(f, 8, protowire.VarintType):
			*v = AnyValue{Kind: ValueStrindex, Int: int64(int32(f.Value))}
		}
		return nil
	})
}
