package perfetto

import (
	"context"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// Limits bound what Decode keeps in memory. A zero field takes its default.
type Limits struct {
	// MaxPacketBytes is the largest TracePacket read (default 64 MiB).
	MaxPacketBytes int64
	// MaxOpenSlices is the deepest stack of open slices on one track (default 65536).
	MaxOpenSlices int
	// MaxTracks is the number of distinct tracks (descriptors and tracks derived from
	// pid/tid) kept (default 1<<20).
	MaxTracks int
	// MaxInterned is the number of interned entries (names, categories, annotation names
	// and strings) one packet sequence may hold between two incremental-state clears
	// (default 1<<20).
	MaxInterned int
	// MaxSequences is the number of distinct trusted_packet_sequence_ids (default 65536).
	MaxSequences int
	// MaxStringBytes is the longest name, category or kept string (default 1 MiB).
	MaxStringBytes int
}

// Default Perfetto decoder bounds.
const (
	DefaultMaxPacketBytes = 64 << 20
	DefaultMaxOpenSlices  = 1 << 16
	DefaultMaxTracks      = 1 << 20
	DefaultMaxInterned    = 1 << 20
	DefaultMaxSequences   = 1 << 16
	DefaultMaxStringBytes = 1 << 20
)

func (l Limits) withDefaults() Limits {
	l.MaxPacketBytes = positiveOr(l.MaxPacketBytes, DefaultMaxPacketBytes)
	l.MaxOpenSlices = positiveOr(l.MaxOpenSlices, DefaultMaxOpenSlices)
	l.MaxTracks = positiveOr(l.MaxTracks, DefaultMaxTracks)
	l.MaxInterned = positiveOr(l.MaxInterned, DefaultMaxInterned)
	l.MaxSequences = positiveOr(l.MaxSequences, DefaultMaxSequences)
	l.MaxStringBytes = positiveOr(l.MaxStringBytes, DefaultMaxStringBytes)
	return l
}

// positiveOr is v, or d when v is not positive.
func positiveOr[T int | int64](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Decode reads a Perfetto protobuf Trace from r, packet by packet, and delivers the
// finished slices of its track events to sink in file order, with the tracks they are on
// and the process and thread names the trace gives.
//
// It reads TrackEvent (typed SLICE_BEGIN/SLICE_END/INSTANT/COUNTER events and Chromium's
// legacy events), TrackDescriptor, interned event names, categories and debug annotation
// names and strings (per sequence, cleared with the incremental state),
// TracePacketDefaults, sequence-scoped clocks defined by ClockSnapshot, packet-level
// Process/ThreadDescriptor and ProcessTree. Other packets (ftrace, process stats,
// profiles, ...) are counted by kind in Info.Unread; trace_processor_shell reads them.
// Clock domains are not converted into one another (see Info.Clocks). A sequence's
// incremental state is valid and invalid as trace_processor holds it (see
// Info.InvalidStatePackets). A track is announced again, with what its descriptor says,
// when the TrackDescriptor comes after the track's first slice.
//
// A trace that ends within a record (a cut trace) keeps what was read and says where it
// ends in Info.Cut. Malformed packets are *providers.DecodeError naming the packet;
// bounds are *providers.LimitError; both carry source.
func Decode(ctx context.Context, r io.Reader, source int, lim Limits, sink tracemodel.Sink) (*tracemodel.Stats, *Info, error) {
	d := &decoder{
		lim:       lim.withDefaults(),
		source:    source,
		sink:      sink,
		stats:     &tracemodel.Stats{},
		info:      &Info{Unread: map[int]int64{}, Clocks: map[uint32]int64{}},
		seqs:      map[uint32]*sequence{},
		descs:     map[uint64]*descriptor{},
		uuidID:    map[uint64]int64{},
		thrID:     map[[2]int64]int64{},
		open:      map[int64][]openSlice{},
		named:     map[int64]tracemodel.Track{},
		orphans:   map[uint64][]int64{},
		waiting:   map[int64]bool{},
		thrNamed:  map[[2]int64]string{},
		procNamed: map[int64]string{},
		keys:      map[int64]trackKey{},
		primary:   clockBoottime,
	}
	d.opener, _ = sink.(tracemodel.Opener)
	err := d.run(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	for _, st := range d.open {
		d.stats.UnfinishedBegins += int64(len(st))
	}
	d.info.Sequences = len(d.seqs)
	if n, ok := d.info.Clocks[0]; ok {
		// Timestamps without a clock id are on the trace's clock.
		delete(d.info.Clocks, 0)
		d.info.Clocks[d.primary] += n
	}
	d.info.MixedClocks = len(d.info.Clocks) > 1
	return d.stats, d.info, nil
}

// decoder is one read of a trace: its bounds and sink, the state that crosses packets
// (sequences, track descriptors, tracks announced, open slices), and what it counted.
type decoder struct {
	lim    Limits
	source int
	sink   tracemodel.Sink
	opener tracemodel.Opener // the sink's, when it holds slices for open begins
	stats  *tracemodel.Stats
	info   *Info

	seqs      map[uint32]*sequence
	descs     map[uint64]*descriptor
	uuidID    map[uint64]int64   // track uuid -> Track.ID
	thrID     map[[2]int64]int64 // (pid, tid) -> Track.ID
	nextID    int64
	open      map[int64][]openSlice
	named     map[int64]tracemodel.Track // tracks announced, as last announced
	thrNamed  map[[2]int64]string
	procNamed map[int64]string

	// orphans are the announced tracks whose parent chain reaches a uuid not described
	// yet, by that uuid; waiting marks them.
	orphans map[uint64][]int64
	waiting map[int64]bool

	packet    int64  // index of the packet being read
	primary   uint32 // the trace's clock: a ClockSnapshot's primary_trace_clock, else BOOTTIME
	src       *protowalk.Reader
	lastSeq   *sequence
	lastSeqID uint32
	keys      map[int64]trackKey // Track.ID -> what it was made from
	ev        tracemodel.Event
}

func (d *decoder) decodeErr(format string, a ...any) error {
	return &providers.DecodeError{Source: d.source, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"packet": d.packet}}
}

func (d *decoder) malformed(what string) error {
	return d.decodeErr("packet %d of the Perfetto trace is malformed (%s)", d.packet, what)
}

func (d *decoder) limit(bound string, n int64, unit, format string, a ...any) error {
	return &providers.LimitError{Source: d.source, Limit: n, Unit: unit,
		Message: fmt.Sprintf(format, a...), Details: map[string]any{"bound": bound, "packet": d.packet}}
}

func (d *decoder) str(b []byte) (string, error) {
	if len(b) > d.lim.MaxStringBytes {
		return "", d.limit("max_string_bytes", int64(d.lim.MaxStringBytes), "bytes",
			"packet %d of the Perfetto trace has a string longer than %d bytes", d.packet, d.lim.MaxStringBytes)
	}
	return string(b), nil
}
