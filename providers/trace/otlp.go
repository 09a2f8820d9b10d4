package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/protowalk"
)

// OTLP trace decoding (opentelemetry-proto trace.proto and its JSON mapping), streaming:
// ExportTraceServiceRequest / TracesData -> resource_spans -> scope_spans -> spans.
// Only one span (and the resource and scope it belongs to) is held at a time.

// maxOTLPMessageBytes bounds one span, resource or scope message (either encoding).
const maxOTLPMessageBytes = 16 << 20

// OTLPEvent is one span event.
type OTLPEvent struct {
	Time uint64
	Name string
}

// OTLPSpan is one span as read. Decoders reuse the value (and its Events) after the
// visitor returns; a visitor that keeps one copies what it keeps.
type OTLPSpan struct {
	// Ordinal is the zero-based position of the span in the file, stable across reads.
	Ordinal      int64
	TraceID      [16]byte
	SpanID       [8]byte
	ParentSpanID [8]byte
	HasParent    bool
	Name         string
	Kind         int32
	// Start and End are Unix nanoseconds; 0 is absent.
	Start, End uint64
	StatusCode int32
	// Service is the resource's service.name; nil when the resource names none (or
	// arrived after the span).
	Service *string
	Events  []OTLPEvent
	Links   int
}

// OTLPStats count the file's tables.
type OTLPStats struct {
	Resources, Scopes, Spans, Events, Links int64
	// SpansBeforeResource counts spans written before their resource, whose service is
	// therefore unknown to a streaming read.
	SpansBeforeResource int64
}

// DecodeOTLP reads an OTLP trace export (protobuf when proto, else the JSON encoding,
// one or more concatenated top-level objects) and calls visit for every span in file order.
func DecodeOTLP(ctx context.Context, r io.Reader, source int, proto bool, visit func(*OTLPSpan) error) (*OTLPStats, error) {
	return decodeOTLP(ctx, r, source, proto, visit, nil)
}

// decodeOTLP is DecodeOTLP, also passing every record whole to tables when it is set.
func decodeOTLP(ctx context.Context, r io.Reader, source int, proto bool, visit func(*OTLPSpan) error, tables otlpTableSink) (*OTLPStats, error) {
	d := &otlpDec{ctx: ctx, source: source, visit: visit, st: &OTLPStats{}, tables: tables}
	var err error
	if proto {
		err = d.protobuf(r)
	} else {
		br := bufio.NewReaderSize(r, 64<<10)
		// A UTF-8 byte order mark (which some tools write before JSON) is not JSON.
		if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
			br.Discard(3)
		}
		err = d.json(br)
	}
	if err != nil {
		return nil, err
	}
	return d.st, nil
}

type otlpDec struct {
	ctx     context.Context
	source  int
	visit   func(*OTLPSpan) error
	st      *OTLPStats
	span    OTLPSpan
	service *string
	// resourceSeen says the current resource_spans' resource has been read.
	resourceSeen bool
	// tables, when set, receives every resource, scope and span as a complete message
	// (view "tables"); res, scope and full hold the current ones, and resSent and
	// scopeSent say the current resource and scope went to the sink.
	tables             otlpTableSink
	res                resourcepb.Resource
	scope              commonpb.InstrumentationScope
	full               tracepb.Span
	resSent, scopeSent bool
	// whole says full holds the current span, decoded whole for the sink.
	whole bool
}

// wantsSpan reports whether the table sink collects a row of the span just decoded (in
// d.span): only then is it decoded whole.
func (d *otlpDec) wantsSpan() bool {
	return d.tables != nil && d.tables.wants(len(d.span.Events), d.span.Links)
}

func (d *otlpDec) bad(format string, a ...any) error {
	return &providers.DecodeError{Source: d.source, Message: fmt.Sprintf("source %d is not a valid OTLP trace: ", d.source) + fmt.Sprintf(format, a...)}
}

func (d *otlpDec) emit() error {
	if d.st.Spans&1023 == 0 {
		if err := d.ctx.Err(); err != nil {
			return err
		}
	}
	s := &d.span
	s.Ordinal = d.st.Spans
	s.Service = d.service
	if !d.resourceSeen {
		d.st.SpansBeforeResource++
	}
	d.st.Spans++
	d.st.Events += int64(len(s.Events))
	d.st.Links += int64(s.Links)
	if d.whole {
		d.whole = false
		if err := d.tables.span(d.st.Resources-1, d.st.Scopes-1, s.Ordinal, &d.full); err != nil {
			return err
		}
	} else if d.tables != nil {
		d.tables.skip(len(s.Events), s.Links)
	}
	return d.visit(s)
}

func (d *otlpDec) beginResource() {
	d.st.Resources++
	d.service, d.resourceSeen, d.resSent = nil, false, false
	d.res.Reset()
}

// sendResource passes the current resource to the table sink, once: when it is read, or
// when its resource_spans ends without one.
func (d *otlpDec) sendResource() error {
	if d.tables == nil || d.resSent {
		return nil
	}
	d.resSent = true
	return d.tables.resource(d.st.Resources-1, &d.res)
}

// endResource ends a resource_spans.
func (d *otlpDec) endResource(err error) error {
	if err != nil {
		return err
	}
	return d.sendResource()
}

func (d *otlpDec) beginScope() {
	d.st.Scopes++
	d.scopeSent = false
	d.scope.Reset()
}

// sendScope passes the current scope to the table sink, once: when it is read, or when
// its scope_spans ends without one.
func (d *otlpDec) sendScope() error {
	if d.tables == nil || d.scopeSent {
		return nil
	}
	d.scopeSent = true
	return d.tables.scope(d.st.Resources-1, d.st.Scopes-1, &d.scope)
}

// endScope ends a scope_spans.
func (d *otlpDec) endScope(err error) error {
	if err != nil {
		return err
	}
	return d.sendScope()
}

// ---- protobuf ----

// pbReader reads the framing of an OTLP protobuf export from a stream, its errors worded
// for OTLP.
type pbReader struct {
	in *protowalk.Reader
	d  *otlpDec
	// kept holds a span's fields less its attributes.
	kept []byte
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
	if n > maxOTLPMessageBytes {
		return nil, &providers.LimitError{Source: p.d.source, Limit: maxOTLPMessageBytes, Unit: "bytes",
			Message: fmt.Sprintf("source %d holds an OTLP message of %d bytes, more than the %d bytes one span, resource or scope may take", p.d.source, n, maxOTLPMessageBytes)}
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

// protobuf streams the framing with protowire (ExportTraceServiceRequest/TracesData:
// resource_spans = 1; ResourceSpans: resource = 1, scope_spans = 2; ScopeSpans:
// scope = 1, spans = 2; other fields skipped) and decodes each Resource,
// InstrumentationScope and Span, one at a time, with proto.Unmarshal into the
// OpenTelemetry project's generated types.
func (d *otlpDec) protobuf(r io.Reader) error {
	p := &pbReader{in: protowalk.NewReader(r, 64<<10), d: d}
	var span tracepb.Span
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
				if err := p.unmarshal(typ, &d.res, "resource"); err != nil {
					return false, err
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
						if err := p.unmarshal(typ, &d.scope, "scope"); err != nil {
							return false, err
						}
						return false, d.sendScope()
					case 2:
						b, err := p.blob(typ, "span")
						if err != nil {
							return false, err
						}
						if err := p.unmarshalSpan(b, &span); err != nil {
							return false, err
						}
						if err := d.pbSpan(&span); err != nil {
							return false, err
						}
						// View "tables" shows every field of a span whose rows it collects:
						// that span is decoded again, whole.
						if d.wantsSpan() {
							if err := pbUnmarshal.Unmarshal(b, &d.full); err != nil {
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

// pbUnmarshal ignores unknown fields (receivers must) rather than keeping them.
var pbUnmarshal = proto.UnmarshalOptions{DiscardUnknown: true}

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

// unmarshal reads one length-delimited message (bounded by maxOTLPMessageBytes) into m.
// The generated code copies what it keeps, so the read buffer is reused.
func (p *pbReader) unmarshal(typ protowire.Type, m proto.Message, what string) error {
	b, err := p.blob(typ, what)
	if err != nil {
		return err
	}
	if err := pbUnmarshal.Unmarshal(b, m); err != nil {
		return p.d.bad("a %s is malformed protobuf", what)
	}
	return nil
}

// unmarshalSpan reads the Span b into sp. Its attributes (field 9) are in no row of the
// operations, so they are dropped from the wire bytes first: decoding them would allocate
// five objects per attribute (KeyValue, AnyValue, its oneof wrapper, key and value) and
// tripled the read time of a span with three attributes (docs/performance.md).
func (p *pbReader) unmarshalSpan(b []byte, sp *tracepb.Span) error {
	p.kept = withoutField(p.kept[:0], b, 9)
	if err := pbUnmarshal.Unmarshal(p.kept, sp); err != nil {
		return p.d.bad("a span is malformed protobuf")
	}
	return nil
}

// withoutField appends to dst the fields of message b other than num. Malformed data is
// copied as it is from there on, for Unmarshal to reject.
func withoutField(dst, b []byte, num protowire.Number) []byte {
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

// serviceName is the last string-valued service.name among a Resource's attributes.
func serviceName(res *resourcepb.Resource) *string {
	var out *string
	for _, kv := range res.GetAttributes() {
		if sv, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_StringValue); ok && kv.GetKey() == "service.name" {
			v := sv.StringValue
			out = &v
		}
	}
	return out
}

// pbSpan maps a generated Span onto d.span. Ids are empty (absent) or of their
// fixed length; an all-zero parent is none.
func (d *otlpDec) pbSpan(sp *tracepb.Span) error {
	s := &d.span
	events := s.Events[:0]
	*s = OTLPSpan{Name: sp.GetName(), Kind: int32(sp.GetKind()), Start: sp.GetStartTimeUnixNano(),
		End: sp.GetEndTimeUnixNano(), StatusCode: int32(sp.GetStatus().GetCode()), Links: len(sp.GetLinks())}
	for _, id := range []struct {
		dst  []byte
		src  []byte
		name string
	}{{s.TraceID[:], sp.GetTraceId(), "trace_id"}, {s.SpanID[:], sp.GetSpanId(), "span_id"}, {s.ParentSpanID[:], sp.GetParentSpanId(), "parent_span_id"}} {
		if len(id.src) != 0 && len(id.src) != len(id.dst) {
			return d.bad("span %s is an id of %d bytes, not %d", id.name, len(id.src), len(id.dst))
		}
		copy(id.dst, id.src)
	}
	s.HasParent = s.ParentSpanID != [8]byte{}
	for _, e := range sp.GetEvents() {
		events = append(events, OTLPEvent{Time: e.GetTimeUnixNano(), Name: e.GetName()})
	}
	s.Events = events
	return nil
}

// ---- JSON ----

type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string `json:"stringValue"`
	} `json:"value"`
}

type jsonResource struct {
	Attributes []jsonKV `json:"attributes"`
}

type jsonSpan struct {
	TraceID           string         `json:"traceId"`
	SpanID            string         `json:"spanId"`
	ParentSpanID      string         `json:"parentSpanId"`
	Name              string         `json:"name"`
	Kind              jsontext.Value `json:"kind"`
	StartTimeUnixNano jsontext.Value `json:"startTimeUnixNano"`
	EndTimeUnixNano   jsontext.Value `json:"endTimeUnixNano"`
	Events            []struct {
		TimeUnixNano jsontext.Value `json:"timeUnixNano"`
		Name         string         `json:"name"`
	} `json:"events"`
	Links  []jsontext.Value `json:"links"`
	Status *struct {
		Code jsontext.Value `json:"code"`
	} `json:"status"`
}

var spanKinds = []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}
var statusCodes = []string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}

// enumName names an enum value; an unknown one is its prefix and number (SPAN_KIND_7).
func enumName(names []string, prefix string, v int32) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return prefix + strconv.Itoa(int(v))
}

func (d *otlpDec) jsonNode(v jsontext.Value, what string) (uint64, error) {
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	s := string(v)
	if s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, d.bad("%s is not an unsigned 64-bit integer (a decimal string or number)", what)
	}
	return n, nil
}

func (d *otlpDec) jsonEnum(v jsontext.Value, names []string, what string) (int32, error) {
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	if v[0] == '"' {
		s := string(v[1 : len(v)-1])
		for i, n := range names {
			if n == s {
				return int32(i), nil
			}
		}
		return 0, d.bad("%s %q is not one of %s", what, s, strings.Join(names, ", "))
	}
	n, err := strconv.ParseInt(string(v), 10, 32)
	if err != nil {
		return 0, d.bad("%s is not an enum integer or name", what)
	}
	return int32(n), nil
}

func (d *otlpDec) jsonID(dst []byte, s, what string) (bool, error) {
	if s == "" {
		return false, nil
	}
	if len(s) != 2*len(dst) {
		return false, d.bad("%s %q is not %d hex digits", what, s, 2*len(dst))
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return false, d.bad("%s %q is not hex", what, s)
	}
	return true, nil
}

func (d *otlpDec) jsonSpan(v jsontext.Value) error {
	var j jsonSpan
	if err := json.Unmarshal(v, &j); err != nil {
		return d.bad("a span does not follow the OTLP JSON mapping")
	}
	s := &d.span
	events := s.Events[:0]
	*s = OTLPSpan{Name: j.Name, Links: len(j.Links)}
	var err error
	if _, err = d.jsonID(s.TraceID[:], j.TraceID, "traceId"); err != nil {
		return err
	}
	if _, err = d.jsonID(s.SpanID[:], j.SpanID, "spanId"); err != nil {
		return err
	}
	if s.HasParent, err = d.jsonID(s.ParentSpanID[:], j.ParentSpanID, "parentSpanId"); err != nil {
		return err
	}
	s.HasParent = s.HasParent && s.ParentSpanID != [8]byte{}
	if s.Kind, err = d.jsonEnum(j.Kind, spanKinds, "kind"); err != nil {
		return err
	}
	if s.Start, err = d.jsonNode(j.StartTimeUnixNano, "startTimeUnixNano"); err != nil {
		return err
	}
	if s.End, err = d.jsonNode(j.EndTimeUnixNano, "endTimeUnixNano"); err != nil {
		return err
	}
	if j.Status != nil {
		if s.StatusCode, err = d.jsonEnum(j.Status.Code, statusCodes, "status.code"); err != nil {
			return err
		}
	}
	for _, e := range j.Events {
		t, err := d.jsonNode(e.TimeUnixNano, "timeUnixNano")
		if err != nil {
			return err
		}
		events = append(events, OTLPEvent{Time: t, Name: e.Name})
	}
	s.Events = events
	return nil
}

// jsonErr turns a jsontext error into a typed one without its text.
func (d *otlpDec) jsonErr(err error) error {
	var de *providers.DecodeError
	var le *providers.LimitError
	if errors.As(err, &de) || errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &providers.DecodeError{Source: d.source, Message: fmt.Sprintf("source %d is not valid JSON at byte %d", d.source, se.ByteOffset),
			Details: map[string]any{"byte_offset": se.ByteOffset}}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return d.bad("the JSON ends early")
	}
	return d.bad("unreadable JSON")
}

// members walks the members of the object whose '{' comes next, calling f with each name
// (f reads or skips the value).
func members(dec *jsontext.Decoder, f func(name string) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return errNotObject
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := f(name.String()); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// elements walks the array whose '[' comes next (null is an empty array).
func elements(dec *jsontext.Decoder, f func() error) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '[' {
		return errNotArray
	}
	for dec.PeekKind() != ']' {
		if err := f(); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

var (
	errNotObject = errors.New("not an object")
	errNotArray  = errors.New("not an array")
)

func (d *otlpDec) value(dec *jsontext.Decoder) (jsontext.Value, error) {
	if dec.PeekKind() == 0 {
		_, err := dec.ReadToken()
		return nil, err
	}
	// ReadValue buffers one value; bound it by the offsets around it.
	start := dec.InputOffset()
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if dec.InputOffset()-start > maxOTLPMessageBytes {
		return nil, &providers.LimitError{Source: d.source, Limit: maxOTLPMessageBytes, Unit: "bytes",
			Message: fmt.Sprintf("source %d holds an OTLP span, resource or scope of more than %d bytes", d.source, maxOTLPMessageBytes)}
	}
	return v, nil
}

func (d *otlpDec) json(r io.Reader) error {
	dec := jsontext.NewDecoder(r)
	top := 0
	for {
		if dec.PeekKind() == 0 {
			if _, err := dec.ReadToken(); err == io.EOF {
				if top == 0 {
					return d.bad("the file holds no JSON object")
				}
				return nil
			} else if err != nil {
				return d.fixErr(err)
			}
		}
		top++
		err := members(dec, func(name string) error {
			if name != "resourceSpans" {
				return dec.SkipValue()
			}
			return elements(dec, func() error {
				d.beginResource()
				return d.endResource(members(dec, func(name string) error {
					switch name {
					case "resource":
						v, err := d.value(dec)
						if err != nil {
							return err
						}
						var res jsonResource
						if err := json.Unmarshal(v, &res); err != nil {
							return d.bad("a resource does not follow the OTLP JSON mapping")
						}
						d.resourceSeen = true
						for _, kv := range res.Attributes {
							if kv.Key == "service.name" && kv.Value.StringValue != nil {
								d.service = kv.Value.StringValue
							}
						}
						if d.tables != nil {
							if err := d.jsonMessage(v, &d.res, "resource"); err != nil {
								return err
							}
						}
						return d.sendResource()
					case "scopeSpans":
						return elements(dec, func() error {
							d.beginScope()
							return d.endScope(members(dec, func(name string) error {
								if name == "scope" && d.tables != nil {
									v, err := d.value(dec)
									if err != nil {
										return err
									}
									if err := d.jsonMessage(v, &d.scope, "scope"); err != nil {
										return err
									}
									return d.sendScope()
								}
								if name != "spans" {
									return dec.SkipValue()
								}
								return elements(dec, func() error {
									v, err := d.value(dec)
									if err != nil {
										return err
									}
									if err := d.jsonSpan(v); err != nil {
										return err
									}
									if d.wantsSpan() {
										if err := d.jsonFullSpan(v); err != nil {
											return err
										}
										d.whole = true
									}
									return d.emit()
								})
							}))
						})
					}
					return dec.SkipValue()
				}))
			})
		})
		if err != nil {
			return d.fixErr(err)
		}
	}
}

func (d *otlpDec) fixErr(err error) error {
	switch {
	case errors.Is(err, errPageRead):
		return err
	case errors.Is(err, errNotObject):
		return d.bad("expected a JSON object (ExportTraceServiceRequest, resource_spans element, scope_spans element)")
	case errors.Is(err, errNotArray):
		return d.bad("resourceSpans, scopeSpans and spans must be arrays")
	}
	return d.jsonErr(err)
}

// IsOTLPProto sniffs the first bytes of a file for an OTLP protobuf
// ExportTraceServiceRequest (or TracesData): a first record resource_spans = 1 (tag 0x0A)
// whose fields within head are all resource = 1, scope_spans = 2 or schema_url = 3
// (length delimited), a resource (when whole in head) of attributes = 1 (messages),
// dropped_attributes_count = 2 (varint) and entity_refs = 3, and a first scope_spans whose
// first span starts with a 16-byte trace_id = 1. A Perfetto trace (timestamps and
// sequence ids are varints), an XSpace (XPlane id = 1 is a varint) and JSON fail it;
// head must reach the first span's trace_id.
func IsOTLPProto(head []byte) bool {
	num, typ, n := protowire.ConsumeTag(head)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return false
	}
	l, m := protowire.ConsumeVarint(head[n:])
	if m < 0 {
		return false
	}
	rs := head[n+m:]
	if uint64(len(rs)) > l {
		rs = rs[:l]
	}
	for len(rs) > 0 {
		num, typ, n := protowire.ConsumeTag(rs)
		if n < 0 || num < 1 || num > 3 || typ != protowire.BytesType {
			return false
		}
		l, m := protowire.ConsumeVarint(rs[n:])
		if m < 0 {
			return false
		}
		body := rs[n+m:]
		whole := uint64(len(body)) >= l
		if whole {
			body = body[:l]
		}
		switch num {
		case 1:
			if whole && !protowalk.Each(body, func(f protowalk.Field) bool {
				return protowalk.ValidNumber(f.Num) && (f.Num == 2) == (f.Type == protowire.VarintType) &&
					(f.Type == protowire.VarintType || f.Type == protowire.BytesType)
			}) {
				return false
			}
		case 2:
			return firstSpanLooksRight(body)
		}
		if !whole {
			return false
		}
		rs = rs[n+m+int(l):]
	}
	return false
}

// firstSpanLooksRight checks the start of a ScopeSpans: scope = 1 and schema_url = 3
// records, then a spans = 2 record whose first field is a 16-byte trace_id.
func firstSpanLooksRight(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 1 || num > 3 || typ != protowire.BytesType {
			return false
		}
		l, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return false
		}
		body := b[n+m:]
		if num == 2 {
			fn, ft, k := protowire.ConsumeTag(body)
			if k < 0 || fn != 1 || ft != protowire.BytesType {
				return false
			}
			id, _ := protowire.ConsumeVarint(body[k:])
			return id == 16 && l >= 16
		}
		if uint64(len(body)) < l {
			return false
		}
		b = body[l:]
	}
	return false
}
