package tracemodel

// Event is one finished slice as a decoder read it, before nesting. Decoders reuse the
// value after Sink.Slice returns; a sink that keeps it copies it, and the values its
// Args point to, which decoders may reuse as well.
type Event struct {
	// ID is the slice's identity: the zero-based ordinal, in file order, of the event
	// (or packet) that began it. It is unique in a trace and stable across reads.
	ID int64
	// TS is the start in nanoseconds, exactly (Trace Event µs decimals are converted
	// from their text, never through float64).
	TS int64
	// Dur is the duration in nanoseconds, >= 0.
	Dur int64
	// Track is a decoder-assigned track identity (see Track).
	Track int64
	// Name is the slice name as written; the analyzers render "" as "<unnamed>".
	Name string
	// Category is the Trace Event "cat" (Perfetto: the track event categories joined by ",").
	Category string
	// Phase is the Trace Event phase that produced the slice ("X", "B" for a matched B/E
	// pair, "b" for a matched async pair); Perfetto slices use "X".
	Phase string
	// Args are the typed arguments the rows carry.
	Args Args
}

// Args are the slice arguments that become row columns. Absent values are nil.
type Args struct {
	// Filename and Line locate the code (args "File"/"file"/"filename"/"fileName",
	// "Line"/"line"/"lineNumber").
	Filename *string
	Line     *int64
	// InputShapes is the compact JSON of Kineto's "Input Dims".
	InputShapes *string
	// AllocationBytes is Kineto's "Bytes" of a memory event.
	AllocationBytes *int64
	// CorrelationID links a CPU launch to its GPU activity (Kineto "correlation",
	// JAX "correlation_id").
	CorrelationID *int64
	// Device and Stream place GPU activity (Kineto "device"/"stream", JAX "device_id").
	Device *int64
	Stream *int64
	// ExternalID is Kineto's "External id", which ties a kernel to its CPU operator.
	ExternalID *int64
}

// Clone copies a with the values it points to, for a sink that keeps the arguments of a
// slice past the call that passed them.
func (a Args) Clone() Args {
	a.Filename, a.Line, a.InputShapes = clone(a.Filename), clone(a.Line), clone(a.InputShapes)
	a.AllocationBytes, a.CorrelationID = clone(a.AllocationBytes), clone(a.CorrelationID)
	a.Device, a.Stream, a.ExternalID = clone(a.Device), clone(a.Stream), clone(a.ExternalID)
	return a
}

func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Track describes one track: a thread (pid, tid) of a Trace Event file, an async track
// (pid, category, id scope), or a Perfetto track (uuid).
type Track struct {
	ID   int64
	PID  int64
	TID  int64
	Name string
	// Async is set for tracks of async (b/e/n) events.
	Async bool
}

// Sink receives what a decoder reads, in file order: slices, and tracks and names.
type Sink interface {
	// Slice receives one finished slice (Dur >= 0); an error stops the decoder.
	Slice(e *Event) error
	MetaSink
}

// MetaSink receives what a decoder reads besides slices: tracks and names (what a
// Nester passes on without reordering).
type MetaSink interface {
	// Track announces a track before its first slice.
	Track(t Track)
	// ThreadName and ProcessName receive metadata names; they may arrive after the slices
	// they name (Kineto writes process names last), so sinks resolve names at the end.
	ThreadName(pid, tid int64, name string)
	ProcessName(pid int64, name string)
}

// Stats are what a decoder counted that rows do not show; the analyzers turn the
// non-zero ones into metrics and limitations.
type Stats struct {
	// Events counts the trace events (or track-event packets) read.
	Events int64
	// Slices counts the slices delivered to the sink.
	Slices int64
	// UnmatchedEnds counts E (or async e) events without an open begin; none is invented.
	UnmatchedEnds int64
	// UnfinishedBegins counts B (or async b) events still open at the end of the trace.
	UnfinishedBegins int64
	// Instants, Counters, Flows and Metadata count events that are not slices.
	Instants int64
	Counters int64
	Flows    int64
	Metadata int64
	// Ignored counts events of phases the decoder does not read (samples, objects, ...).
	Ignored int64
	// InvalidIntervals counts intervals recorded with an end before their start, or
	// without a start or an end (Nsight Systems records, Trace Event X events with a
	// negative dur and E events before their B): not delivered as slices.
	InvalidIntervals int64
	// Truncated is set when a Trace Event array ends without its closing "]" (the
	// format allows it) or with a trailing comma.
	Truncated bool
}

// Opener is an optional interface of a Sink. A decoder that delivers a slice only when
// it ends (Trace Event B/E and async b/e pairs) calls Open when such a slice begins, so
// that a Nester holds back the slices that start after it until it arrives.
type Opener interface {
	// Open says that the slice with this ID (the ordinal of its begin event) began at ts
	// on track and will be delivered to Slice when it ends, if it ends.
	Open(id, track, ts int64)
	// Close says that the slice Open announced ended without a slice (its end came
	// before its begin), so nothing waits for it.
	Close(id int64)
}
