package otlp

import (
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// pbReader reads the framing of an OTLP protobuf export from a stream, its errors worded
// for OTLP.
type pbReader struct {
	in *protowalk.Reader
	d  *decoder
	// light holds the span just read, less its attributes (pbDecoder.light).
	light SpanRecord
}

func (p *pbReader) varint() (uint64, error) {
	v, err := p.in.Varint()
	if err != nil {
		return 0, p.varintErr(err)
	}
	return v, nil
}

// varintErr words a failed read of a varint.
func (p *pbReader) varintErr(err error) error {
	if err == protowalk.ErrOverflow {
		return p.d.bad("a varint is longer than 10 bytes")
	}
	return p.d.bad("the data ends inside a varint")
}

// bytes reads the n bytes of a message, valid until the next read (nothing keeps them).
func (p *pbReader) bytes(n uint64) ([]byte, error) {
	if n > maxMessageBytes {
		return nil, &providers.LimitError{Source: p.d.source, Limit: maxMessageBytes, Unit: "bytes",
			Message: fmt.Sprintf("source %d holds an OTLP message of %d bytes, more than the %d bytes one span, resource or scope may take", p.d.source, n, maxMessageBytes)}
	}
	b, err := p.in.Bytes(n)
	if err != nil {
		return nil, p.d.bad("the data ends inside a message")
	}
	return b, nil
}

func (p *pbReader) skip(typ protowire.Type) error {
	n, err := p.in.ValueSize(typ)
	if err == protowalk.ErrWireType {
		return p.d.bad("unsupported protobuf wire type %d", typ)
	}
	if err != nil {
		return p.varintErr(err)
	}
	m, err := p.in.Discard(n)
	if err != nil || uint64(m) != n {
		return p.d.bad("the data ends inside a field")
	}
	return nil
}

// message reads fields until end (or EOF when end < 0), calling field for each tag;
// field consumes the value or returns skip=true.
func (p *pbReader) message(end int64, field func(num protowire.Number, typ protowire.Type) (bool, error)) error {
	for end < 0 || p.in.Offset() < end {
		if end < 0 && p.in.AtEnd() {
			return nil
		}
		tag, err := p.varint()
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		if num <= 0 {
			return p.d.bad("invalid field number")
		}
		skip, err := field(num, typ)
		if err != nil {
			return err
		}
		if skip {
			if err := p.skip(typ); err != nil {
				return err
			}
		}
	}
	if p.in.Offset() != end {
		return p.d.bad("a message overruns its length")
	}
	return nil
}

// sub reads a length-delimited submessage header and returns its end offset.
func (p *pbReader) sub(typ protowire.Type) (int64, error) {
	if typ != protowire.BytesType {
		return 0, p.d.bad("a message field has wire type %d", typ)
	}
	l, err := p.varint()
	if err != nil {
		return 0, err
	}
	if l > 1<<62 {
		return 0, p.d.bad("a message length is out of range")
	}
	return p.in.Offset() + int64(l), nil
}

// protobuf streams the framing with protowalk (ExportTraceServiceRequest/TracesData:
// resource_spans = 1; ResourceSpans: resource = 1, scope_spans = 2; ScopeSpans:
// scope = 1, spans = 2; other fields skipped) and decodes each Resource,
// InstrumentationScope and Span, one at a time, whole (pbrecords.go).
func (d *decoder) protobuf(r io.Reader) error {
	p := &pbReader{in: protowalk.NewReader(r, 64<<10), d: d}
	return p.message(-1, func(num protowire.Number, typ protowire.Type) (bool, error) {
		if num != 1 {
			return true, nil
		}
		end, err := p.sub(typ)
		if err != nil {
			return false, err
		}
		d.beginResource()
		err = p.message(end, func(num protowire.Number, typ protowire.Type) (bool, error) {
			switch num {
			case 1:
				b, err := p.blob(typ, "resource")
				if err != nil {
					return false, err
				}
				d.res = Resource{}
				if err := (pbDecoder{}).resource(b, &d.res, 1); err != nil {
					return false, d.bad("a resource is malformed protobuf")
				}
				d.resourceSeen = true
				d.service = serviceName(&d.res)
				return false, d.sendResource()
			case 2:
				end, err := p.sub(typ)
				if err != nil {
					return false, err
				}
				d.beginScope()
				err = p.message(end, func(num protowire.Number, typ protowire.Type) (bool, error) {
					switch num {
					case 1:
						// Decoding the scope checks it is well formed; only view "tables" shows it.
						b, err := p.blob(typ, "scope")
						if err != nil {
							return false, err
						}
						d.scope = Scope{}
						if err := (pbDecoder{}).scope(b, &d.scope, 1); err != nil {
							return false, d.bad("a scope is malformed protobuf")
						}
						return false, d.sendScope()
					case 2:
						b, err := p.blob(typ, "span")
						if err != nil {
							return false, err
						}
						p.light = SpanRecord{Events: p.light.Events[:0], Links: p.light.Links[:0]}
						if err := (pbDecoder{light: true}).span(b, &p.light, 1); err != nil {
							return false, d.bad("a span is malformed protobuf")
						}
						if err := d.pbSpan(&p.light); err != nil {
							return false, err
						}
						// View "tables" shows every field of a span whose rows it collects:
						// that span is decoded again, whole.
						if d.wantsSpan() {
							d.full = SpanRecord{}
							if err := (pbDecoder{}).span(b, &d.full, 1); err != nil {
								return false, d.bad("a span is malformed protobuf")
							}
							d.whole = true
						}
						return false, d.emit()
					}
					return true, nil
				})
				return false, d.endScope(err)
			}
			return true, nil
		})
		return false, d.endResource(err)
	})
}

// blob reads one length-delimited message, valid until the next read.
func (p *pbReader) blob(typ protowire.Type, what string) ([]byte, error) {
	if typ != protowire.BytesType {
		return nil, p.d.bad("a %s field has wire type %d", what, typ)
	}
	l, err := p.varint()
	if err != nil {
		return nil, err
	}
	return p.bytes(l)
}

// serviceName is the last string-valued service.name among a Resource's attributes.
func serviceName(res *Resource) *string {
	var out *string
	for _, kv := range res.Attributes {
		if kv.Value.Kind == ValueString && kv.Key == "service.name" {
			v := kv.Value.String
			out = &v
		}
	}
	return out
}

// pbSpan maps a span record onto d.span. Ids are empty (absent) or of their
// fixed length; an all-zero parent is none.
func (d *decoder) pbSpan(sp *SpanRecord) error {
	s := &d.span
	events := s.Events[:0]
	*s = Span{Name: sp.Name, Kind: sp.Kind, Start: sp.StartTimeUnixNano,
		End: sp.EndTimeUnixNano, StatusCode: sp.Status.Code, Links: len(sp.Links)}
	for _, id := range []struct {
		dst  []byte
		src  []byte
		name string
	}{{s.TraceID[:], sp.TraceID, "trace_id"}, {s.SpanID[:], sp.SpanID, "span_id"}, {s.ParentSpanID[:], sp.ParentSpanID, "parent_span_id"}} {
		if len(id.src) != 0 && len(id.src) != len(id.dst) {
			return d.bad("span %s is an id of %d bytes, not %d", id.name, len(id.src), len(id.dst))
		}
		copy(id.dst, id.src)
	}
	s.HasParent = s.ParentSpanID != [8]byte{}
	for _, e := range sp.Events {
		events = append(events, Event{Time: e.TimeUnixNano, Name: e.Name})
	}
	s.Events = events
	return nil
}
