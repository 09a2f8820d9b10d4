package otlp

// TableSink receives an OTLP file's records whole, every field of the export (attributes
// included) read alike from either encoding: each when read (a resource or scope its
// resource_spans or scope_spans lacks, empty, when that ends). The records are reused
// after the call. An error a method returns ends the read, and Decode returns it as it is
// (a sink that has what it wants ends the read with an error of its own).
type TableSink interface {
	// Resource receives the resource of the index-th resource_spans.
	Resource(index int64, r *Resource) error
	// Scope receives the scope of the index-th scope_spans, of the resource-th resource_spans.
	Scope(resource, index int64, s *Scope) error
	// Wants says whether the next span, with this many events and links, gives a row the
	// sink collects: Span then receives it whole, else Skip counts it.
	Wants(events, links int) bool
	// Span receives the index-th span, of the scope-th scope_spans and the resource-th
	// resource_spans.
	Span(resource, scope, index int64, s *SpanRecord) error
	Skip(events, links int)
}

// Resource is an OTLP Resource (resource.proto).
type Resource struct {
	Attributes             []KeyValue
	DroppedAttributesCount uint32
	EntityRefs             []EntityRef
}

// EntityRef is one entity reference of a Resource (common.proto).
type EntityRef struct {
	SchemaURL       string
	Type            string
	IDKeys          []string
	DescriptionKeys []string
}

// Scope is an OTLP InstrumentationScope (common.proto).
type Scope struct {
	Name                   string
	Version                string
	Attributes             []KeyValue
	DroppedAttributesCount uint32
}

// KeyValue is one attribute. An absent value is the empty AnyValue.
type KeyValue struct {
	Key         string
	Value       AnyValue
	KeyStrindex int32
}

// ValueKind says which member of an AnyValue is set.
type ValueKind uint8

// The members of an AnyValue; ValueEmpty is none.
const (
	ValueEmpty ValueKind = iota
	ValueString
	ValueBool
	ValueInt
	ValueDouble
	ValueArray
	ValueKvlist
	ValueBytes
	ValueStrindex // string_value_strindex, a profiles dictionary index
)

// AnyValue is an attribute's value (common.proto's oneof): Kind says which field holds it.
type AnyValue struct {
	Kind   ValueKind
	String string
	Bool   bool
	// Int is the integer of ValueInt and the index of ValueStrindex.
	Int    int64
	Double float64
	Bytes  []byte
	Array  []AnyValue
	Kvlist []KeyValue
}

// SpanRecord is an OTLP Span whole (trace.proto), as the table sink receives it. Absent
// ids are empty.
type SpanRecord struct {
	TraceID                []byte
	SpanID                 []byte
	TraceState             string
	ParentSpanID           []byte
	Flags                  uint32
	Name                   string
	Kind                   int32
	StartTimeUnixNano      uint64
	EndTimeUnixNano        uint64
	Attributes             []KeyValue
	DroppedAttributesCount uint32
	Events                 []SpanEvent
	DroppedEventsCount     uint32
	Links                  []SpanLink
	DroppedLinksCount      uint32
	Status                 Status
}

// SpanEvent is one event of a SpanRecord.
type SpanEvent struct {
	TimeUnixNano           uint64
	Name                   string
	Attributes             []KeyValue
	DroppedAttributesCount uint32
}

// SpanLink is one link of a SpanRecord.
type SpanLink struct {
	TraceID                []byte
	SpanID                 []byte
	TraceState             string
	Attributes             []KeyValue
	DroppedAttributesCount uint32
	Flags                  uint32
}

// Status is a span's status; an absent one is the zero Status.
type Status struct {
	Message string
	Code    int32
}

// wantsSpan reports whether the table sink collects a row of the span just decoded (in
// d.span): only then is it decoded whole.
func (d *decoder) wantsSpan() bool {
	return d.tables != nil && d.tables.Wants(len(d.span.Events), d.span.Links)
}
