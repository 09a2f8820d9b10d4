package otlp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
)

// OTLP trace decoding (opentelemetry-proto trace.proto and its JSON mapping), streaming:
// ExportTraceServiceRequest / TracesData -> resource_spans -> scope_spans -> spans.
// Only one span (and the resource and scope it belongs to) is held at a time.

// maxMessageBytes bounds one span, resource or scope message (either encoding).
const maxMessageBytes = 16 << 20

// Event is one span event.
type Event struct {
	Time uint64
	Name string
}

// Span is one span as read. Decoders reuse the value (and its Events) after the
// visitor returns; a visitor that keeps one copies what it keeps.
type Span struct {
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
	Events  []Event
	Links   int
}

// Stats count the file's tables.
type Stats struct {
	Resources, Scopes, Spans, Events, Links int64
	// SpansBeforeResource counts spans written before their resource, whose service is
	// therefore unknown to a streaming read.
	SpansBeforeResource int64
}

// Decode reads an OTLP trace export (protobuf when proto, else the JSON encoding, one or
// more concatenated top-level objects) and calls visit for every span in file order.
// When tables is not nil it also receives every record whole (records.go). An error
// visit or tables returns ends the read and is returned as it is; the decoder's own
// errors are a providers.DecodeError or LimitError naming source, or the context's.
func Decode(ctx context.Context, r io.Reader, source int, proto bool, visit func(*Span) error, tables TableSink) (*Stats, error) {
	d := &decoder{ctx: ctx, source: source, visit: visit, st: &Stats{}, tables: tables}
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
		var c *callerError
		if errors.As(err, &c) {
			return nil, c.err
		}
		return nil, err
	}
	return d.st, nil
}

// callerError carries an error visit or the table sink returned through the decoder,
// which passes it on untouched (the JSON reader words every other error of its own).
type callerError struct{ err error }

func (e *callerError) Error() string { return e.err.Error() }

// pass wraps an error of the caller's (nil stays nil).
func pass(err error) error {
	if err == nil {
		return nil
	}
	return &callerError{err}
}

type decoder struct {
	ctx     context.Context
	source  int
	visit   func(*Span) error
	st      *Stats
	span    Span
	service *string
	// resourceSeen says the current resource_spans' resource has been read.
	resourceSeen bool
	// tables, when set, receives every resource, scope and span as a complete record
	// (view "tables"); res, scope and full hold the current ones, and resSent and
	// scopeSent say the current resource and scope went to the sink.
	tables             TableSink
	res                Resource
	scope              Scope
	full               SpanRecord
	resSent, scopeSent bool
	// whole says full holds the current span, decoded whole for the sink.
	whole bool
	// records reads OTLP/JSON records whole.
	records jsonRecords
}

func (d *decoder) bad(format string, a ...any) error {
	return &providers.DecodeError{Source: d.source, Message: fmt.Sprintf("source %d is not a valid OTLP trace: ", d.source) + fmt.Sprintf(format, a...)}
}

func (d *decoder) emit() error {
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
		if err := d.tables.Span(d.st.Resources-1, d.st.Scopes-1, s.Ordinal, &d.full); err != nil {
			return pass(err)
		}
	} else if d.tables != nil {
		d.tables.Skip(len(s.Events), s.Links)
	}
	return pass(d.visit(s))
}

func (d *decoder) beginResource() {
	d.st.Resources++
	d.service, d.resourceSeen, d.resSent = nil, false, false
	d.res = Resource{}
}

// sendResource passes the current resource to the table sink, once: when it is read, or
// when its resource_spans ends without one.
func (d *decoder) sendResource() error {
	if d.tables == nil || d.resSent {
		return nil
	}
	d.resSent = true
	return pass(d.tables.Resource(d.st.Resources-1, &d.res))
}

// endResource ends a resource_spans.
func (d *decoder) endResource(err error) error {
	if err != nil {
		return err
	}
	return d.sendResource()
}

func (d *decoder) beginScope() {
	d.st.Scopes++
	d.scopeSent = false
	d.scope = Scope{}
}

// sendScope passes the current scope to the table sink, once: when it is read, or when
// its scope_spans ends without one.
func (d *decoder) sendScope() error {
	if d.tables == nil || d.scopeSent {
		return nil
	}
	d.scopeSent = true
	return pass(d.tables.Scope(d.st.Resources-1, d.st.Scopes-1, &d.scope))
}

// endScope ends a scope_spans.
func (d *decoder) endScope(err error) error {
	if err != nil {
		return err
	}
	return d.sendScope()
}
