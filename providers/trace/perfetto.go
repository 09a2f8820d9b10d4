package trace

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flameox/flameox/providers"
)

// PerfettoLimits bound what DecodePerfetto keeps in memory. A zero field takes its default.
type PerfettoLimits struct {
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
	DefaultPerfettoMaxPacketBytes = 64 << 20
	DefaultPerfettoMaxOpenSlices  = 1 << 16
	DefaultPerfettoMaxTracks      = 1 << 20
	DefaultPerfettoMaxInterned    = 1 << 20
	DefaultPerfettoMaxSequences   = 1 << 16
	DefaultPerfettoMaxStringBytes = 1 << 20
)

func (l PerfettoLimits) withDefaults() PerfettoLimits {
	if l.MaxPacketBytes <= 0 {
		l.MaxPacketBytes = DefaultPerfettoMaxPacketBytes
	}
	if l.MaxOpenSlices <= 0 {
		l.MaxOpenSlices = DefaultPerfettoMaxOpenSlices
	}
	if l.MaxTracks <= 0 {
		l.MaxTracks = DefaultPerfettoMaxTracks
	}
	if l.MaxInterned <= 0 {
		l.MaxInterned = DefaultPerfettoMaxInterned
	}
	if l.MaxSequences <= 0 {
		l.MaxSequences = DefaultPerfettoMaxSequences
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultPerfettoMaxStringBytes
	}
	return l
}

// PerfettoInfo is what DecodePerfetto saw beyond the slices: the packets it did not read,
// by kind, and the clocks the timestamps came from.
type PerfettoInfo struct {
	// Packets counts the TracePackets in the file.
	Packets int64
	// TrackEventPackets and TrackDescriptors count the packets read natively.
	TrackEventPackets int64
	TrackDescriptors  int64
	// Unread counts the packets whose data the native decoder does not read, by
	// TracePacket field number (see PerfettoPacketKind for names).
	Unread map[int]int64
	// Clocks counts track-event timestamps by the builtin clock domain they are in
	// (3 MONOTONIC, 6 BOOTTIME, ...). A packet timestamp without a clock id is on the
	// trace's clock: the primary_trace_clock a ClockSnapshot names, else BOOTTIME.
	// TrackEvent's own timestamp_delta_us / timestamp_absolute_us are MONOTONIC (as
	// trace_processor reads them). Timestamps of sequence-scoped clocks (ids 64-127,
	// such as Chromium's incremental microsecond clock) are converted through their
	// ClockSnapshot into the builtin clock listed beside them, and counted under that
	// clock. Different builtin domains are not converted into one another.
	Clocks map[uint32]int64
	// MixedClocks is set when track-event timestamps come from more than one clock
	// domain; slices of different domains are then not comparable.
	MixedClocks bool
	// SequenceClockTimestamps counts timestamps converted from sequence-scoped clocks.
	SequenceClockTimestamps int64
	// UnresolvedTimestamps counts track events without a timestamp that can be resolved:
	// one in a sequence-scoped clock that no ClockSnapshot of its sequence defined, a
	// timestamp_delta_us without a ThreadDescriptor reference since the sequence's last
	// clear or loss, or none at all. They are not read.
	UnresolvedTimestamps int64
	// OutOfRangeTimestamps counts track events whose timestamp or end is negative or
	// does not fit int64 nanoseconds (a timestamp at or past 2^63, a clock multiplier or
	// a legacy duration that overflows when scaled). They are not read.
	OutOfRangeTimestamps int64
	// NegativeDurations counts slices whose end came before their begin (an end event
	// before its begin, often of different clock domains, or a legacy complete event with
	// a negative duration). They are not delivered.
	NegativeDurations int64
	// PreviousPacketDropped counts packets flagged as following a loss on their sequence.
	PreviousPacketDropped int64
	// UndefinedInterned counts event names and categories given by an interned id that
	// their sequence never defined (or defined while its state was invalid); they are
	// read as empty, as trace_processor reads them as null.
	UndefinedInterned int64
	// InvalidStatePackets counts packets flagged SEQ_NEEDS_INCREMENTAL_STATE that came
	// while their sequence's incremental state was invalid: from the sequence's start,
	// and from a packet with previous_packet_dropped, until the next packet with
	// SEQ_INCREMENTAL_STATE_CLEARED (or incremental_state_cleared). They are not read,
	// as trace_processor drops them; interned data arriving then is not kept either.
	InvalidStatePackets int64
	// Cut is where the file ends within a record (a trace cut short); nil when it ends
	// at a record boundary.
	Cut *PerfettoCut
	// Sequences counts the packet sequences seen.
	Sequences int
}

// PerfettoCut is where a cut Perfetto trace ends: within the record that starts at byte
// Offset, after the Packets complete packets before it.
type PerfettoCut struct {
	Offset  int64
	Packets int64
	// Declared is the length the record's header declares; -1 when the file ends within
	// the header.
	Declared int64
	// Present is how many of the Declared bytes the file holds.
	Present int64
}

// String says what a cut trace holds, for a limitation or an error.
func (c *PerfettoCut) String() string {
	s := fmt.Sprintf("the file ends within the header of the record at byte %d", c.Offset)
	if c.Declared >= 0 {
		s = fmt.Sprintf("the file ends within the record at byte %d, which declares %d bytes and holds %d", c.Offset, c.Declared, c.Present)
	}
	return fmt.Sprintf("%s; the %d complete packets before it (%d bytes) were read and the rest of the trace is missing", s, c.Packets, c.Offset)
}

// UnreadPackets is the number of packets whose data the native decoder does not read.
func (i *PerfettoInfo) UnreadPackets() int64 {
	var n int64
	for _, c := range i.Unread {
		n += c
	}
	return n
}

// UnreadDataPackets is UnreadPackets less the bookkeeping packets (trace config and
// stats, service events, clock snapshots, uuids, markers, ...) that hold no timeline
// data: what only trace_processor_shell would show.
func (i *PerfettoInfo) UnreadDataPackets() int64 {
	var n int64
	for f, c := range i.Unread {
		if !perfettoBookkeeping[f] {
			n += c
		}
	}
	return n
}

// NothingNative reports whether the trace has no track events: the native decoder can
// read nothing of it.
func (i *PerfettoInfo) NothingNative() bool { return i.TrackEventPackets == 0 }

// UnreadByKind is Unread keyed by PerfettoPacketKind.
func (i *PerfettoInfo) UnreadByKind() map[string]int64 { return i.unreadByKind(false) }

// UnreadDataByKind is UnreadByKind less the bookkeeping kinds: the packets
// UnreadDataPackets counts.
func (i *PerfettoInfo) UnreadDataByKind() map[string]int64 { return i.unreadByKind(true) }

func (i *PerfettoInfo) unreadByKind(dataOnly bool) map[string]int64 {
	m := make(map[string]int64, len(i.Unread))
	for f, c := range i.Unread {
		if !dataOnly || !perfettoBookkeeping[f] {
			m[PerfettoPacketKind(f)] += c
		}
	}
	return m
}

// TracePacket field numbers (protos/perfetto/trace/trace_packet.proto).
const (
	tpFtraceEvents      = 1
	tpProcessTree       = 2
	tpTrustedUID        = 3
	tpClockSnapshot     = 6
	tpTimestamp         = 8
	tpSequenceID        = 10
	tpTrackEvent        = 11
	tpInternedData      = 12
	tpSequenceFlags     = 13
	tpIncrCleared       = 41
	tpPrevDropped       = 42
	tpProcessDescriptor = 43
	tpThreadDescriptor  = 44
	tpClockID           = 58
	tpDefaults          = 59
	tpTrackDescriptor   = 60
	tpTrustedPID        = 79
	tpFirstOnSequence   = 87
	tpMachineID         = 98

	seqIncrementalStateCleared = 1
	seqNeedsIncrementalState   = 2

	clockMonotonic = 3
	clockBoottime  = 6
)

// perfettoKinds names the TracePacket data fields.
var perfettoKinds = map[int]string{
	1: "ftrace_events", 2: "process_tree", 4: "inode_file_map", 5: "chrome_events",
	6: "clock_snapshot", 7: "sys_stats", 9: "process_stats", 11: "track_event",
	33: "trace_config", 34: "ftrace_stats", 35: "trace_stats", 36: "synchronization_marker",
	37: "profile_packet", 38: "battery", 39: "android_log", 40: "power_rails",
	43: "process_descriptor", 44: "thread_descriptor", 45: "system_info", 46: "trigger",
	47: "packages_list", 48: "chrome_benchmark_metadata", 49: "perfetto_metatrace",
	50: "compressed_packets", 51: "chrome_metadata", 52: "gpu_counter_event",
	53: "gpu_render_stage_event", 54: "streaming_profile_packet", 57: "graphics_frame_event",
	60: "track_descriptor", 61: "module_symbols", 62: "vulkan_memory_event", 63: "gpu_log",
	64: "deobfuscation_mapping", 65: "vulkan_api_event", 66: "perf_sample", 67: "cpu_info",
	68: "smaps_packet", 69: "service_event", 70: "initial_display_state",
	71: "gpu_mem_total_event", 72: "extension_descriptor", 73: "memory_tracker_snapshot",
	74: "streaming_allocation", 75: "streaming_free", 77: "android_energy_estimation_breakdown",
	78: "ui_state", 82: "translation_table", 83: "android_game_intervention_list",
	84: "statsd_atom", 86: "android_system_property", 89: "trace_uuid",
	90: "track_event_range_of_interest", 91: "entity_state_residency", 95: "etw_events",
	99: "v8_js_code", 100: "v8_internal_code", 101: "v8_wasm_code", 102: "v8_reg_exp_code",
	103: "v8_code_move", 107: "remote_clock_sync", 109: "chrome_trigger", 110: "pixel_modem_events",
	111: "pixel_modem_token_database", 113: "clone_snapshot_trigger", 115: "kernel_wakelock_data",
	117: "generic_kernel_task_state_event", 118: "generic_kernel_cpu_freq_event",
	119: "cpu_per_uid_data", 120: "generic_kernel_task_rename_event",
	122: "generic_kernel_process_tree", 123: "user_list", 124: "trace_provenance",
	125: "protovms", 126: "trace_attributes", 127: "android_aflags", 128: "gpu_info",
	129: "generic_gpu_frequency_event", 130: "interrupt_info", 131: "art_process_metadata",
	132: "journald_event", 133: "zstd_compressed_packets", 134: "concurrent_session_event",
	135: "stack_sample", 900: "for_testing",
}

// perfettoPacketMeta are the TracePacket fields outside the data oneof, with their wire
// types (all varints except interned_data and trace_packet_defaults).
var perfettoPacketMeta = map[int]protowire.Type{
	tpTrustedUID: protowire.VarintType, tpTimestamp: protowire.VarintType,
	tpSequenceID: protowire.VarintType, tpInternedData: protowire.BytesType,
	tpSequenceFlags: protowire.VarintType, tpIncrCleared: protowire.VarintType,
	tpPrevDropped: protowire.VarintType, tpClockID: protowire.VarintType,
	tpDefaults: protowire.BytesType, tpTrustedPID: protowire.VarintType,
	tpFirstOnSequence: protowire.VarintType, tpMachineID: protowire.VarintType,
}

// packetMetaWire is perfettoPacketMeta as a switch, for the per-field loop.
func packetMetaWire(f int) (protowire.Type, bool) {
	switch f {
	case tpTrustedUID, tpTimestamp, tpSequenceID, tpSequenceFlags, tpIncrCleared, tpPrevDropped,
		tpClockID, tpTrustedPID, tpFirstOnSequence, tpMachineID:
		return protowire.VarintType, true
	case tpInternedData, tpDefaults:
		return protowire.BytesType, true
	}
	return 0, false
}

func isNativeKind(f int) bool {
	switch f {
	case tpTrackEvent, tpTrackDescriptor, tpProcessTree, tpClockSnapshot, tpProcessDescriptor, tpThreadDescriptor:
		return true
	}
	return false
}

// perfettoBookkeeping are data kinds that hold no timeline data.
var perfettoBookkeeping = map[int]bool{
	6: true, 33: true, 34: true, 35: true, 36: true, 45: true, 46: true, 48: true, 51: true,
	67: true, 69: true, 72: true, 89: true, 90: true, 107: true, 109: true, 113: true,
	124: true, 126: true, 134: true,
}

// PerfettoPacketKind names a TracePacket data field number ("field_N" when unknown).
func PerfettoPacketKind(field int) string {
	if s, ok := perfettoKinds[field]; ok {
		return s
	}
	return fmt.Sprintf("field_%d", field)
}

// IsPerfetto sniffs the first bytes of a file for a Perfetto Trace.
//
// The rule: a Trace is a sequence of records `packet = 1` (tag byte 0x0A, length
// delimited). head must start with such a record; every record that ends within head
// must be one too, and each such packet a well-formed protobuf message. The first packet
// (or the part of it within head) is checked against the TracePacket schema: every
// top-level field has a valid wire type, known TracePacket fields have the wire type the
// schema gives them (timestamp, sequence id, flags and clock id are varints, data fields
// are messages), the payload of each message-typed field that lies within head is itself
// a well-formed protobuf message, and at least one TracePacket envelope field (timestamp,
// trusted_uid, trusted_packet_sequence_id, sequence_flags, clock id, defaults, interned
// data, ...) is present: every packet the Perfetto service, the SDK or Chromium writes has
// one, and other schemas whose messages happen to fit the data fields (an OTLP
// ExportTraceServiceRequest does) have none. head should hold the first packet whole
// (4 KiB is ample for the corpus; a trace whose first packet is cut before its first
// envelope field is not recognised).
// JSON ('[' or '{'), gzip (0x1F 0x8B) and text fail the first byte; an XSpace
// (XLA's profile.xplane.pb) starts 0x0A too, but its first XPlane's fields do not fit
// TracePacket: name = 2 is a string where TracePacket has the ProcessTree message, and
// id = 1 is a varint where TracePacket has the ftrace bundle.
func IsPerfetto(head []byte) bool {
	b := head
	first := true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return !first
		}
		if num != 1 || typ != protowire.BytesType {
			return false
		}
		l, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return !first
		}
		if l > DefaultPerfettoMaxPacketBytes {
			return false
		}
		body := b[n+m:]
		complete := uint64(len(body)) >= l
		if complete {
			body = body[:l]
		}
		if first {
			if !plausiblePacket(body, complete) {
				return false
			}
			first = false
		} else if complete && !wellFormed(body) {
			return false
		}
		if !complete {
			return true
		}
		b = b[n+m+int(l):]
	}
	return !first
}

// plausiblePacket checks a TracePacket (or its first bytes when !complete).
func plausiblePacket(b []byte, complete bool) bool {
	known := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return !complete && known
		}
		f := int(num)
		want, meta := perfettoPacketMeta[f]
		_, data := perfettoKinds[f]
		switch {
		case meta:
			if typ != want {
				return false
			}
			known = true
		case data:
			if typ != protowire.BytesType {
				return false
			}
		}
		if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			// Cut by the end of head.
			return !complete && known
		}
		if typ == protowire.BytesType && (meta || data) && f != 36 && f != 50 && f != 133 {
			v, _ := protowire.ConsumeBytes(b[n:])
			if !wellFormed(v) {
				return false
			}
		}
		b = b[n+m:]
	}
	return known
}

// wellFormed reports whether b is a sequence of protobuf fields without groups.
func wellFormed(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// DecodePerfetto reads a Perfetto protobuf Trace from r, packet by packet, and delivers
// the finished slices of its track events to sink in file order, with the tracks they
// are on and the process and thread names the trace gives.
//
// It reads TrackEvent (typed SLICE_BEGIN/SLICE_END/INSTANT/COUNTER events and Chromium's
// legacy events), TrackDescriptor, interned event names, categories and debug annotation
// names and strings (per sequence, cleared with the incremental state),
// TracePacketDefaults, sequence-scoped clocks defined by ClockSnapshot, packet-level
// Process/ThreadDescriptor and ProcessTree. Other packets (ftrace, process stats,
// profiles, ...) are counted by kind in PerfettoInfo.Unread; trace_processor_shell reads
// them. Clock domains are not converted into one another (see PerfettoInfo.Clocks).
// A sequence's incremental state is valid and invalid as trace_processor holds it (see
// PerfettoInfo.InvalidStatePackets). A track is announced again, with what its
// descriptor says, when the TrackDescriptor comes after the track's first slice.
//
// A trace that ends within a record (a cut trace) keeps what was read and says where it
// ends in PerfettoInfo.Cut. Malformed packets are *providers.DecodeError naming the
// packet; bounds are *providers.LimitError; both carry source.
func DecodePerfetto(ctx context.Context, r io.Reader, source int, lim PerfettoLimits, sink Sink) (*Stats, *PerfettoInfo, error) {
	d := &pfDecoder{
		lim:       lim.withDefaults(),
		source:    source,
		sink:      sink,
		stats:     &Stats{},
		info:      &PerfettoInfo{Unread: map[int]int64{}, Clocks: map[uint32]int64{}},
		seqs:      map[uint32]*pfSequence{},
		descs:     map[uint64]*pfDesc{},
		uuidID:    map[uint64]int64{},
		thrID:     map[[2]int64]int64{},
		open:      map[int64][]pfOpen{},
		named:     map[int64]Track{},
		orphans:   map[uint64][]int64{},
		waiting:   map[int64]bool{},
		thrNamed:  map[[2]int64]string{},
		procNamed: map[int64]string{},
		keys:      map[int64]pfKey{},
		primary:   clockBoottime,
	}
	d.opener, _ = sink.(Opener)
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

type pfDecoder struct {
	lim    PerfettoLimits
	source int
	sink   Sink
	opener Opener // the sink's, when it holds slices for open begins
	stats  *Stats
	info   *PerfettoInfo

	seqs      map[uint32]*pfSequence
	descs     map[uint64]*pfDesc
	uuidID    map[uint64]int64   // track uuid -> Track.ID
	thrID     map[[2]int64]int64 // (pid, tid) -> Track.ID
	nextID    int64
	open      map[int64][]pfOpen
	named     map[int64]Track // tracks announced, as last announced
	thrNamed  map[[2]int64]string
	procNamed map[int64]string

	// orphans are the announced tracks whose parent chain reaches a uuid not described
	// yet, by that uuid; waiting marks them.
	orphans map[uint64][]int64
	waiting map[int64]bool

	packet    int64  // index of the packet being read
	primary   uint32 // the trace's clock: a ClockSnapshot's primary_trace_clock, else BOOTTIME
	src       *pfReader
	lastSeq   *pfSequence
	lastSeqID uint32
	keys      map[int64]pfKey // Track.ID -> what it was made from
	buf       []byte
	ev        Event
}

type pfSequence struct {
	names, cats, annNames, annStrs map[uint64]string
	interned                       int
	// valid is the incremental state's validity: false until the sequence's first
	// clear and from a packet loss to the next clear.
	valid bool

	defTrack    uint64
	hasDefTrack bool
	defClock    uint32
	hasDefClock bool

	clocks map[uint32]*pfClock

	pid, tid  int64
	hasThread bool
	// refNs is ThreadDescriptor.reference_timestamp_us in ns, advanced by
	// timestamp_delta_us; hasRef is set by a ThreadDescriptor read since the last clear
	// or loss.
	refNs  int64
	hasRef bool
}

type pfClock struct {
	value       int64 // last value, in the clock's units
	base        int64 // value at the snapshot
	mult        int64 // ns per unit
	incremental bool
	anchorClock uint32 // builtin clock listed beside it (0: none)
	anchorNs    int64  // that clock's ns at the snapshot
	// outOfRange is set when the snapshot's figures do not fit int64 nanoseconds.
	outOfRange bool
}

type pfDesc struct {
	parent   uint64
	name     string
	pid, tid int64
	thread   bool
	process  bool
}

type pfKey struct {
	uuid     uint64
	thread   bool // a (pid, tid) track without a descriptor
	pid, tid int64
}

type pfOpen struct {
	id, ts    int64
	name, cat string
	args      Args
}

func (d *pfDecoder) decodeErr(format string, a ...any) error {
	return &providers.DecodeError{Source: d.source, Message: fmt.Sprintf(format, a...),
		Details: map[string]any{"packet": d.packet}}
}

func (d *pfDecoder) malformed(what string) error {
	return d.decodeErr("packet %d of the Perfetto trace is malformed (%s)", d.packet, what)
}

func (d *pfDecoder) limit(bound string, n int64, unit, format string, a ...any) error {
	return &providers.LimitError{Source: d.source, Limit: n, Unit: unit,
		Message: fmt.Sprintf(format, a...), Details: map[string]any{"bound": bound, "packet": d.packet}}
}

func (d *pfDecoder) run(ctx context.Context, r io.Reader) error {
	d.src = &pfReader{r: r}
	in := &pfCounter{br: bufio.NewReaderSize(d.src, 64<<10)}
	for {
		if d.packet%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		start := in.n
		tag, err := binary.ReadUvarint(in)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return d.ended(err, start, -1, 0)
		}
		num, typ := protowire.DecodeTag(tag)
		if num < 1 || typ > 5 {
			return d.decodeErr("the Perfetto trace is malformed before packet %d", d.packet)
		}
		if num != 1 || typ != protowire.BytesType {
			// Trace has only field 1; skip others as protobuf allows.
			if err := d.skipTop(in, start, typ); err != nil {
				return err
			}
			if d.info.Cut != nil {
				return nil
			}
			continue
		}
		n, err := binary.ReadUvarint(in)
		if err != nil {
			return d.ended(err, start, -1, 0)
		}
		if n > uint64(d.lim.MaxPacketBytes) {
			return d.limit("max_packet_bytes", d.lim.MaxPacketBytes, "bytes",
				"packet %d of the Perfetto trace is larger than %d bytes", d.packet, d.lim.MaxPacketBytes)
		}
		if uint64(cap(d.buf)) < n {
			d.buf = make([]byte, n)
		}
		d.buf = d.buf[:n]
		if m, err := io.ReadFull(in, d.buf); err != nil {
			return d.ended(err, start, int64(n), int64(m))
		}
		d.info.Packets++
		if err := d.packetBody(d.buf); err != nil {
			return err
		}
		d.packet++
	}
}

// ended answers a read that failed within the record starting at byte start: the end
// of the file there is a cut trace (declared is the record's length, -1 when the file
// ends within its header; present how many of those bytes it holds), anything else the
// reader's own error or a malformed trace.
func (d *pfDecoder) ended(err error, start, declared, present int64) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		d.info.Cut = &PerfettoCut{Offset: start, Packets: d.info.Packets, Declared: declared, Present: present}
		return nil
	}
	if rerr := d.readErr(); rerr != nil {
		return rerr
	}
	return d.decodeErr("the Perfetto trace is malformed before packet %d", d.packet)
}

// pfCounter counts the bytes read through it, so that a cut trace says where it ends.
type pfCounter struct {
	br *bufio.Reader
	n  int64
}

func (c *pfCounter) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *pfCounter) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.n += int64(n)
	return n, err
}

// pfReader records the error of the underlying reader, so that a read error
// (cancellation, a limit, I/O) is told from a malformed varint.
type pfReader struct {
	r   io.Reader
	err error
}

func (p *pfReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		p.err = err
	}
	return n, err
}

// readErr is the reader's own error behind err, if any.
func (d *pfDecoder) readErr() error { return d.src.err }

// skipTop skips a top-level record other than a packet, starting at byte start; the
// end of the file within it is a cut trace.
func (d *pfDecoder) skipTop(in *pfCounter, start int64, typ protowire.Type) error {
	size := int64(-1)
	switch typ {
	case protowire.VarintType:
		if _, err := binary.ReadUvarint(in); err != nil {
			return d.ended(err, start, -1, 0)
		}
		return nil
	case protowire.Fixed64Type:
		size = 8
	case protowire.Fixed32Type:
		size = 4
	case protowire.BytesType:
		n, err := binary.ReadUvarint(in)
		if err != nil {
			return d.ended(err, start, -1, 0)
		}
		if n > uint64(d.lim.MaxPacketBytes) {
			return d.limit("max_packet_bytes", d.lim.MaxPacketBytes, "bytes",
				"a record of the Perfetto trace before packet %d is larger than %d bytes", d.packet, d.lim.MaxPacketBytes)
		}
		size = int64(n)
	default:
		return d.decodeErr("the Perfetto trace is malformed before packet %d", d.packet)
	}
	m, err := in.br.Discard(int(size))
	in.n += int64(m)
	if err != nil {
		return d.ended(err, start, size, int64(m))
	}
	return nil
}

// pfField is one decoded protobuf field.
type pfField struct {
	num  int
	typ  protowire.Type
	v    uint64
	data []byte
}

// next decodes the field at the start of b; ok is false when b is malformed.
func next(b []byte) (f pfField, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return f, nil, false
	}
	f.num, f.typ = int(num), typ
	b = b[n:]
	switch typ {
	case protowire.VarintType:
		f.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.v, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		f.v = uint64(v)
	case protowire.BytesType:
		f.data, n = protowire.ConsumeBytes(b)
	default:
		return f, nil, false
	}
	if n < 0 {
		return f, nil, false
	}
	return f, b[n:], true
}

// eachField calls fn for every field of b.
func eachField(b []byte, fn func(f pfField) error) (bool, error) {
	for len(b) > 0 {
		f, rest, ok := next(b)
		if !ok {
			return false, nil
		}
		if err := fn(f); err != nil {
			if err == errBadWire {
				return false, nil
			}
			return true, err
		}
		b = rest
	}
	return true, nil
}

// varints calls fn for each value of a repeated varint field, packed or not.
func varints(f pfField, fn func(uint64)) bool {
	switch f.typ {
	case protowire.VarintType, protowire.Fixed64Type, protowire.Fixed32Type:
		fn(f.v)
		return true
	case protowire.BytesType:
		b := f.data
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			fn(v)
			b = b[n:]
		}
		return true
	}
	return false
}

// countFixed64 counts the values of a repeated fixed64 field, packed or not.
func countFixed64(f pfField) (int64, bool) {
	if f.typ == protowire.BytesType {
		if len(f.data)%8 != 0 {
			return 0, false
		}
		return int64(len(f.data) / 8), true
	}
	return 1, true
}

type pfPacket struct {
	ts, clock                 uint64
	hasTS, hasClock, hasSeq   bool
	seq                       uint32
	flags                     uint64
	cleared, dropped          bool
	trackEvent, interned      []byte
	defaults, snapshot        []byte
	trackDesc, threadDesc     []byte
	processDesc, processTree  []byte
	hasTrackEvent, hasDefault bool

	// The packet timestamp in ns, resolved once per packet since sequence-scoped
	// incremental clocks advance with every packet that has a timestamp.
	tsNs   int64
	tsRes  pfTS
	domain uint32
	seqClk bool
}

// pfTS is how a timestamp resolved.
type pfTS uint8

const (
	tsOK         pfTS = iota
	tsUnresolved      // no timestamp, an undefined sequence clock, a delta without reference
	tsOutOfRange      // negative or beyond int64 nanoseconds
)

func (d *pfDecoder) packetBody(b []byte) error {
	var p pfPacket
	ok, err := eachField(b, func(f pfField) error {
		want, meta := packetMetaWire(f.num)
		if meta && f.typ != want {
			return errBadWire
		}
		switch f.num {
		case tpTimestamp:
			p.ts, p.hasTS = f.v, true
		case tpClockID:
			p.clock, p.hasClock = f.v, true
		case tpSequenceID:
			p.seq, p.hasSeq = uint32(f.v), true
		case tpSequenceFlags:
			p.flags = f.v
		case tpIncrCleared:
			p.cleared = f.v != 0
		case tpPrevDropped:
			p.dropped = f.v != 0
		case tpInternedData:
			p.interned = f.data
		case tpDefaults:
			p.defaults, p.hasDefault = f.data, true
		case tpTrackEvent:
			p.trackEvent, p.hasTrackEvent = f.data, true
		case tpTrackDescriptor:
			p.trackDesc = f.data
		case tpThreadDescriptor:
			p.threadDesc = f.data
		case tpProcessDescriptor:
			p.processDesc = f.data
		case tpProcessTree:
			p.processTree = f.data
		case tpClockSnapshot:
			p.snapshot = f.data
		}
		if !meta && !isNativeKind(f.num) {
			d.info.Unread[f.num]++
		}
		return nil
	})
	if !ok || err != nil {
		return d.malformed("not a TracePacket")
	}
	seq, err := d.sequence(p.seq)
	if err != nil {
		return err
	}
	if p.dropped {
		d.info.PreviousPacketDropped++
	}
	// trace_processor (proto_trace_reader.cc): a clear makes the sequence's incremental
	// state valid, a loss invalid; both need the packet's sequence id.
	switch {
	case p.hasSeq && (p.cleared || p.flags&seqIncrementalStateCleared != 0):
		seq.clear()
		seq.valid = true
	case p.hasSeq && p.dropped:
		seq.valid, seq.hasRef = false, false
	}
	if p.hasDefault {
		if err := d.defaults(seq, p.defaults); err != nil {
			return err
		}
	}
	if p.snapshot != nil {
		if err := d.clockSnapshot(seq, p.snapshot); err != nil {
			return err
		}
	}
	if p.interned != nil && seq.valid {
		if err := d.internedData(seq, p.interned); err != nil {
			return err
		}
	}
	if p.flags&seqNeedsIncrementalState != 0 && !seq.valid {
		d.info.InvalidStatePackets++
		return nil
	}
	if p.trackDesc != nil {
		d.info.TrackDescriptors++
		if err := d.trackDescriptor(p.trackDesc); err != nil {
			return err
		}
	}
	if p.threadDesc != nil && seq.valid {
		// trace_processor ignores it while the state is invalid, so that delta
		// timestamps never start from it.
		pid, tid, name, ref, err := d.threadDescriptor(p.threadDesc)
		if err != nil {
			return err
		}
		seq.pid, seq.tid, seq.hasThread = pid, tid, true
		seq.refNs, seq.hasRef = mulNs(ref, 1000)
		if name != "" {
			d.threadName(pid, tid, name)
		}
	}
	if p.processDesc != nil {
		pid, name, err := d.processDescriptor(p.processDesc)
		if err != nil {
			return err
		}
		if name != "" {
			d.processName(pid, name)
		}
	}
	if p.processTree != nil {
		if err := d.processTreePacket(p.processTree); err != nil {
			return err
		}
	}
	if p.hasTS {
		p.tsNs, p.tsRes, p.domain = d.resolve(seq, &p)
	}
	if p.hasTrackEvent {
		d.info.TrackEventPackets++
		d.stats.Events++
		return d.trackEvent(seq, &p)
	}
	return nil
}

var errBadWire = errors.New("wire type")

func (d *pfDecoder) sequence(id uint32) (*pfSequence, error) {
	if d.lastSeq != nil && d.lastSeqID == id {
		return d.lastSeq, nil
	}
	s := d.seqs[id]
	defer func() { d.lastSeq, d.lastSeqID = s, id }()
	if s == nil {
		if len(d.seqs) >= d.lim.MaxSequences {
			return nil, d.limit("max_sequences", int64(d.lim.MaxSequences), "sequences",
				"the Perfetto trace has more than %d packet sequences", d.lim.MaxSequences)
		}
		s = &pfSequence{}
		s.clear()
		d.seqs[id] = s
	}
	return s, nil
}

// clear empties the incremental state (interned data, defaults, the delta reference);
// the sequence's thread stays.
func (s *pfSequence) clear() {
	s.names = map[uint64]string{}
	s.cats = map[uint64]string{}
	s.annNames = map[uint64]string{}
	s.annStrs = map[uint64]string{}
	s.interned = 0
	s.hasDefTrack, s.hasDefClock, s.hasRef = false, false, false
}

func (d *pfDecoder) str(b []byte) (string, error) {
	if len(b) > d.lim.MaxStringBytes {
		return "", d.limit("max_string_bytes", int64(d.lim.MaxStringBytes), "bytes",
			"packet %d of the Perfetto trace has a string longer than %d bytes", d.packet, d.lim.MaxStringBytes)
	}
	return string(b), nil
}

func (d *pfDecoder) defaults(seq *pfSequence, b []byte) error {
	ok, err := eachField(b, func(f pfField) error {
		switch {
		case f.num == 58 && f.typ == protowire.VarintType:
			seq.defClock, seq.hasDefClock = uint32(f.v), true
		case f.num == 11 && f.typ == protowire.BytesType:
			ok, _ := eachField(f.data, func(g pfField) error {
				if g.num == 11 && g.typ == protowire.VarintType {
					seq.defTrack, seq.hasDefTrack = g.v, true
				}
				return nil
			})
			if !ok {
				return errBadWire
			}
		}
		return nil
	})
	if !ok || err != nil {
		return d.malformed("trace_packet_defaults")
	}
	return nil
}

func (d *pfDecoder) clockSnapshot(seq *pfSequence, b []byte) error {
	type clk struct {
		id          uint32
		ts          uint64
		incremental bool
		mult        uint64
	}
	var cs []clk
	ok, _ := eachField(b, func(f pfField) error {
		if f.num == 2 && f.typ == protowire.VarintType && f.v != 0 && f.v < 64 {
			d.primary = uint32(f.v) // primary_trace_clock
		}
		if f.num != 1 || f.typ != protowire.BytesType {
			return nil
		}
		c := clk{mult: 1}
		ok, _ := eachField(f.data, func(g pfField) error {
			switch g.num {
			case 1:
				c.id = uint32(g.v)
			case 2:
				c.ts = g.v
			case 3:
				c.incremental = g.v != 0
			case 4:
				c.mult = g.v
			}
			return nil
		})
		if !ok {
			return errBadWire
		}
		if len(cs) < 256 {
			cs = append(cs, c)
		}
		return nil
	})
	if !ok {
		return d.malformed("clock_snapshot")
	}
	var anchor *clk
	for i := range cs {
		if cs[i].id > 0 && cs[i].id < 64 {
			anchor = &cs[i]
			break
		}
	}
	for _, c := range cs {
		if c.id < 64 || c.id > 127 {
			continue
		}
		if seq.clocks == nil {
			seq.clocks = map[uint32]*pfClock{}
		}
		if c.mult == 0 {
			c.mult = 1
		}
		k := &pfClock{value: int64(c.ts), base: int64(c.ts), mult: int64(c.mult), incremental: c.incremental}
		ok := c.ts <= math.MaxInt64 && c.mult <= math.MaxInt64
		if anchor != nil {
			k.anchorClock, k.anchorNs = anchor.id, int64(anchor.ts)
			ok = ok && anchor.ts <= math.MaxInt64
		} else if ok {
			k.anchorNs, ok = mulNs(k.base, k.mult)
		}
		k.outOfRange = !ok
		seq.clocks[c.id] = k
	}
	return nil
}

func (d *pfDecoder) internedData(seq *pfSequence, b []byte) error {
	var lerr error
	ok, _ := eachField(b, func(f pfField) error {
		var m map[uint64]string
		switch f.num {
		case 1:
			m = seq.cats
		case 2:
			m = seq.names
		case 3:
			m = seq.annNames
		case 29:
			m = seq.annStrs
		default:
			return nil
		}
		if f.typ != protowire.BytesType {
			return errBadWire
		}
		var iid uint64
		var name []byte
		ok, _ := eachField(f.data, func(g pfField) error {
			switch {
			case g.num == 1 && g.typ == protowire.VarintType:
				iid = g.v
			case g.num == 2 && g.typ == protowire.BytesType:
				name = g.data
			}
			return nil
		})
		if !ok {
			return errBadWire
		}
		if _, dup := m[iid]; !dup {
			if seq.interned >= d.lim.MaxInterned {
				lerr = d.limit("max_interned", int64(d.lim.MaxInterned), "entries",
					"a packet sequence of the Perfetto trace interns more than %d entries", d.lim.MaxInterned)
				return lerr
			}
			seq.interned++
		}
		s, err := d.str(name)
		if err != nil {
			lerr = err
			return err
		}
		m[iid] = s
		return nil
	})
	if lerr != nil {
		return lerr
	}
	if !ok {
		return d.malformed("interned_data")
	}
	return nil
}

func (d *pfDecoder) trackDescriptor(b []byte) error {
	var uuid uint64
	desc := &pfDesc{}
	var lerr error
	ok, _ := eachField(b, func(f pfField) error {
		switch f.num {
		case 1:
			uuid = f.v
		case 5:
			desc.parent = f.v
		case 2, 10, 13:
			if f.typ == protowire.BytesType {
				s, err := d.str(f.data)
				if err != nil {
					lerr = err
					return err
				}
				desc.name = s
			}
		case 3:
			if f.typ != protowire.BytesType {
				return errBadWire
			}
			pid, name, err := d.processDescriptor(f.data)
			if err != nil {
				lerr = err
				return err
			}
			desc.process, desc.pid = true, pid
			if name != "" {
				d.processName(pid, name)
			}
		case 4:
			if f.typ != protowire.BytesType {
				return errBadWire
			}
			pid, tid, name, _, err := d.threadDescriptor(f.data)
			if err != nil {
				lerr = err
				return err
			}
			desc.thread, desc.pid, desc.tid = true, pid, tid
			if name != "" {
				d.threadName(pid, tid, name)
				if desc.name == "" {
					desc.name = name
				}
			}
		}
		return nil
	})
	if lerr != nil {
		return lerr
	}
	if !ok {
		return d.malformed("track_descriptor")
	}
	if _, seen := d.descs[uuid]; !seen && len(d.descs) >= d.lim.MaxTracks {
		return d.limit("max_tracks", int64(d.lim.MaxTracks), "tracks",
			"the Perfetto trace describes more than %d tracks", d.lim.MaxTracks)
	}
	if old := d.descs[uuid]; old != nil && desc.name == "" {
		desc.name = old.name
	}
	d.descs[uuid] = desc
	id, seen := d.uuidID[uuid]
	if desc.thread && seen {
		if _, ok := d.thrID[[2]int64{desc.pid, desc.tid}]; !ok {
			d.thrID[[2]int64{desc.pid, desc.tid}] = id
		}
	}
	// A descriptor after a track's first slice (trace_processor reads descriptors
	// before the sorted events) announces what it changes: its own track, and the
	// tracks whose parent chain stopped at it.
	if _, ok := d.named[id]; seen && ok {
		d.send(id)
	}
	if children, ok := d.orphans[uuid]; ok {
		delete(d.orphans, uuid)
		for _, c := range children {
			delete(d.waiting, c)
			d.send(c)
		}
	}
	return nil
}

// threadDescriptor reads a ThreadDescriptor; ref is its reference_timestamp_us (0 when
// absent, as trace_processor takes it).
func (d *pfDecoder) threadDescriptor(b []byte) (pid, tid int64, name string, ref int64, err error) {
	ok, _ := eachField(b, func(f pfField) error {
		switch f.num {
		case 1:
			pid = int64(int32(f.v))
		case 2:
			tid = int64(f.v)
		case 5:
			if f.typ == protowire.BytesType {
				name, err = d.str(f.data)
				return err
			}
		case 6:
			ref = int64(f.v)
		}
		return nil
	})
	if err != nil {
		return
	}
	if !ok {
		err = d.malformed("thread descriptor")
	}
	return
}

func (d *pfDecoder) processDescriptor(b []byte) (pid int64, name string, err error) {
	ok, _ := eachField(b, func(f pfField) error {
		switch f.num {
		case 1:
			pid = int64(int32(f.v))
		case 6:
			if f.typ == protowire.BytesType {
				name, err = d.str(f.data)
				return err
			}
		}
		return nil
	})
	if err != nil {
		return
	}
	if !ok {
		err = d.malformed("process descriptor")
	}
	return
}

func (d *pfDecoder) processTreePacket(b []byte) error {
	var lerr error
	ok, _ := eachField(b, func(f pfField) error {
		if (f.num != 1 && f.num != 2) || f.typ != protowire.BytesType {
			return nil
		}
		var pid, tid, tgid int64
		var name string
		cmd := false
		ok, _ := eachField(f.data, func(g pfField) error {
			switch {
			case g.num == 1:
				pid, tid = int64(int32(g.v)), int64(int32(g.v))
			case g.num == 3 && f.num == 2:
				tgid = int64(int32(g.v))
			case (f.num == 2 && g.num == 2) || (f.num == 1 && g.num == 3 && !cmd):
				if g.typ == protowire.BytesType {
					s, err := d.str(g.data)
					if err != nil {
						lerr = err
						return err
					}
					name, cmd = s, true
				}
			}
			return nil
		})
		if lerr != nil {
			return lerr
		}
		if !ok {
			return errBadWire
		}
		if name == "" {
			return nil
		}
		if f.num == 1 {
			d.processName(pid, name)
		} else {
			d.threadName(tgid, tid, name)
		}
		return nil
	})
	if lerr != nil {
		return lerr
	}
	if !ok {
		return d.malformed("process_tree")
	}
	return nil
}

func (d *pfDecoder) threadName(pid, tid int64, name string) {
	k := [2]int64{pid, tid}
	if d.thrNamed[k] == name {
		return
	}
	if _, seen := d.thrNamed[k]; !seen && len(d.thrNamed) >= d.lim.MaxTracks {
		return
	}
	d.thrNamed[k] = name
	d.sink.ThreadName(pid, tid, name)
}

// processName sends a process's first name: Chromium names a renderer "Renderer" on its
// own sequence and again by its command line on others; the first is the better name.
func (d *pfDecoder) processName(pid int64, name string) {
	if _, seen := d.procNamed[pid]; seen || len(d.procNamed) >= d.lim.MaxTracks {
		return
	}
	d.procNamed[pid] = name
	d.sink.ProcessName(pid, name)
}

// Legacy event phases (Trace Event Format characters).
const (
	phBegin    = 'B'
	phEnd      = 'E'
	phComplete = 'X'
)

type pfTrackEvent struct {
	typ                     uint64
	hasType                 bool
	nameIID                 uint64
	hasNameIID              bool
	name                    []byte
	hasName                 bool
	cats                    [][]byte
	catIIDs                 []uint64
	track                   uint64
	hasTrack                bool
	absUs, deltaUs          int64
	hasAbsUs, hasDeltaUs    bool
	annotations             [][]byte
	flows                   int64
	legacy                  bool
	phase                   int64
	durUs                   int64
	hasDur                  bool
	legacyNameIID           uint64
	hasLegacyName           bool
	pidOverride, tidOverrid int64
	hasPID, hasTID          bool
	bind                    bool
}

func (d *pfDecoder) parseTrackEvent(b []byte, e *pfTrackEvent) bool {
	ok, err := eachField(b, func(f pfField) error {
		switch f.num {
		case 3:
			if !varints(f, func(v uint64) {
				if len(e.catIIDs) < 64 {
					e.catIIDs = append(e.catIIDs, v)
				}
			}) {
				return errBadWire
			}
		case 22:
			if f.typ != protowire.BytesType {
				return errBadWire
			}
			if len(e.cats) < 64 {
				e.cats = append(e.cats, f.data)
			}
		case 10:
			e.nameIID, e.hasNameIID, e.hasName = f.v, true, false
		case 23:
			if f.typ != protowire.BytesType {
				return errBadWire
			}
			e.name, e.hasName, e.hasNameIID = f.data, true, false
		case 9:
			e.typ, e.hasType = f.v, true
		case 11:
			e.track, e.hasTrack = f.v, true
		case 1:
			e.deltaUs, e.hasDeltaUs, e.hasAbsUs = int64(f.v), true, false
		case 16:
			e.absUs, e.hasAbsUs, e.hasDeltaUs = int64(f.v), true, false
		case 4:
			if f.typ != protowire.BytesType {
				return errBadWire
			}
			if len(e.annotations) < 256 {
				e.annotations = append(e.annotations, f.data)
			}
		case 47, 48:
			n, ok := countFixed64(f)
			if !ok {
				return errBadWire
			}
			e.flows += n
		case 36, 42:
			if !varints(f, func(uint64) { e.flows++ }) {
				return errBadWire
			}
		case 6:
			if f.typ != protowire.BytesType {
				return errBadWire
			}
			e.legacy = true
			ok, _ := eachField(f.data, func(g pfField) error {
				switch g.num {
				case 1:
					e.legacyNameIID, e.hasLegacyName = g.v, true
				case 2:
					e.phase = int64(int32(g.v))
				case 3:
					e.durUs, e.hasDur = int64(g.v), true
				case 8:
					e.bind = true
				case 13:
					if g.v != 0 {
						e.bind = true
					}
				case 18:
					e.pidOverride, e.hasPID = int64(int32(g.v)), true
				case 19:
					e.tidOverrid, e.hasTID = int64(int32(g.v)), true
				}
				return nil
			})
			if !ok {
				return errBadWire
			}
		}
		return nil
	})
	return ok && err == nil
}

func (d *pfDecoder) trackEvent(seq *pfSequence, p *pfPacket) error {
	var e pfTrackEvent
	if !d.parseTrackEvent(p.trackEvent, &e) {
		return d.malformed("track_event")
	}
	d.stats.Flows += e.flows
	if e.bind {
		d.stats.Flows++
	}

	// What the event is.
	const (
		kBegin = iota + 1
		kEnd
		kComplete
		kInstant
		kCounter
		kMetadata
		kFlow
		kIgnored
	)
	kind := kIgnored
	switch {
	case e.hasType && e.typ != 0:
		switch e.typ {
		case 1:
			kind = kBegin
		case 2:
			kind = kEnd
		case 3:
			kind = kInstant
		case 4:
			kind = kCounter
		}
	case e.legacy:
		switch e.phase {
		case phBegin:
			kind = kBegin
		case phEnd:
			kind = kEnd
		case phComplete:
			kind = kComplete
		case 'I', 'i', 'R', 'n':
			kind = kInstant
		case 'C':
			kind = kCounter
		case 'M':
			kind = kMetadata
		case 's', 't', 'f':
			kind = kFlow
		}
	}
	ts, res := d.timestamp(seq, p, &e)
	end := ts
	if res == tsOK && kind == kComplete && e.hasDur && e.durUs < 0 {
		// A legacy complete event that ends before it starts is no slice: counted with
		// the begin/end pairs that do.
		d.info.NegativeDurations++
		return nil
	}
	if res == tsOK && kind == kComplete && e.hasDur && e.durUs > 0 {
		if end, res = nsAfter(ts, e.durUs); res != tsOK {
			res = tsOutOfRange
		}
	}
	if res != tsOK && kind != kIgnored {
		if res == tsOutOfRange {
			d.info.OutOfRangeTimestamps++
		} else {
			d.info.UnresolvedTimestamps++
		}
		d.stats.Ignored++
		return nil
	}
	switch kind {
	case kInstant:
		d.stats.Instants++
		return nil
	case kCounter:
		d.stats.Counters++
		return nil
	case kMetadata:
		d.stats.Metadata++
		return nil
	case kFlow:
		if !e.bind {
			d.stats.Flows++
		}
		return nil
	case kIgnored:
		d.stats.Ignored++
		return nil
	}

	track, err := d.trackFor(seq, &e)
	if err != nil {
		return err
	}

	switch kind {
	case kEnd:
		st := d.open[track]
		if len(st) == 0 {
			d.stats.UnmatchedEnds++
			return nil
		}
		o := st[len(st)-1]
		d.open[track] = st[:len(st)-1]
		if ts < o.ts {
			// The end closes its begin, but the interval is no slice: counted and said,
			// and nothing waits for it any more.
			d.info.NegativeDurations++
			if d.opener != nil {
				d.opener.Close(o.id)
			}
			return nil
		}
		if len(e.annotations) > 0 {
			d.annotate(seq, &e, &o.args)
		}
		return d.emit(track, o, ts)
	case kBegin, kComplete:
		o := pfOpen{id: d.packet, ts: ts}
		if o.name, err = d.eventName(seq, &e); err != nil {
			return err
		}
		if o.cat, err = d.category(seq, &e); err != nil {
			return err
		}
		if len(e.annotations) > 0 {
			d.annotate(seq, &e, &o.args)
		}
		d.announce(track)
		if kind == kComplete {
			return d.emit(track, o, end)
		}
		st := d.open[track]
		if len(st) >= d.lim.MaxOpenSlices {
			return d.limit("max_open_slices", int64(d.lim.MaxOpenSlices), "slices",
				"a track of the Perfetto trace has more than %d open slices", d.lim.MaxOpenSlices)
		}
		d.open[track] = append(st, o)
		if d.opener != nil {
			// The slice arrives at its end; a Nester holds later slices for it.
			d.opener.Open(o.id, track, ts)
		}
	}
	return nil
}

func (d *pfDecoder) emit(track int64, o pfOpen, end int64) error {
	d.ev = Event{ID: o.id, TS: o.ts, Dur: end - o.ts, Track: track, Name: o.name, Category: o.cat, Phase: "X", Args: o.args}
	d.stats.Slices++
	return d.sink.Slice(&d.ev)
}

// timestamp is the event's timestamp in ns as trace_processor's track-event tokenizer
// takes it, counting its clock domain in info.Clocks: TrackEvent.timestamp_delta_us
// (added to the sequence's ThreadDescriptor reference, which it advances), else a
// non-zero timestamp_absolute_us (a one-off that leaves the reference alone), both on
// the MONOTONIC clock; else the packet timestamp.
func (d *pfDecoder) timestamp(seq *pfSequence, p *pfPacket, e *pfTrackEvent) (int64, pfTS) {
	var ns int64
	var res pfTS
	switch {
	case e.hasDeltaUs:
		if !seq.hasRef {
			return 0, tsUnresolved
		}
		if ns, res = nsAfter(seq.refNs, e.deltaUs); res == tsOK {
			seq.refNs = ns
		}
	case e.hasAbsUs && e.absUs != 0:
		ns, res = nsAfter(0, e.absUs)
	case p.hasTS:
		if p.tsRes != tsOK {
			return 0, p.tsRes
		}
		if p.seqClk {
			d.info.SequenceClockTimestamps++
		}
		d.info.Clocks[p.domain]++
		return p.tsNs, tsOK
	default:
		return 0, tsUnresolved
	}
	if res != tsOK || ns < 0 {
		return 0, tsOutOfRange
	}
	d.info.Clocks[clockMonotonic]++
	return ns, tsOK
}

// nsAfter is ns + us microseconds; tsOutOfRange when it leaves int64.
func nsAfter(ns, us int64) (int64, pfTS) {
	d, ok := mulNs(us, 1000)
	if !ok {
		return 0, tsOutOfRange
	}
	if ns, ok = addNs(ns, d); !ok {
		return 0, tsOutOfRange
	}
	return ns, tsOK
}

// mulNs is a*b for b > 0; ok is false when it leaves int64.
func mulNs(a, b int64) (int64, bool) {
	if a > math.MaxInt64/b || a < math.MinInt64/b {
		return 0, false
	}
	return a * b, true
}

// addNs is a+b; ok is false when it leaves int64.
func addNs(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

// resolve converts a packet timestamp to ns: builtin clocks (ids < 64) are ns already;
// sequence-scoped clocks (64-127) advance (when incremental) and are converted through
// their snapshot into the builtin clock listed beside them. Domain 0 is the trace's
// clock (no clock id).
func (d *pfDecoder) resolve(seq *pfSequence, p *pfPacket) (ns int64, res pfTS, domain uint32) {
	clock := uint32(0)
	if p.hasClock {
		clock = uint32(p.clock)
	} else if seq.hasDefClock {
		clock = seq.defClock
	}
	if p.ts > math.MaxInt64 {
		return 0, tsOutOfRange, clock
	}
	v := int64(p.ts)
	if clock < 64 || clock > 127 {
		return v, tsOK, clock
	}
	c := seq.clocks[clock]
	if c == nil {
		return 0, tsUnresolved, clock
	}
	p.seqClk = true
	ok := !c.outOfRange
	if c.incremental && ok {
		if v, ok = addNs(c.value, v); ok {
			c.value = v
		}
	}
	if ok {
		ns, ok = mulNs(v-c.base, c.mult) // v and base are >= 0: no overflow
	}
	if ok {
		ns, ok = addNs(c.anchorNs, ns)
	}
	if !ok || ns < 0 {
		return 0, tsOutOfRange, c.anchorClock
	}
	return ns, tsOK, c.anchorClock
}

// trackFor resolves the track of an event: legacy pid/tid overrides, else its track uuid
// (or the sequence default), else the thread of the sequence's ThreadDescriptor, else
// the trace's default track (uuid 0).
func (d *pfDecoder) trackFor(seq *pfSequence, e *pfTrackEvent) (int64, error) {
	if e.hasTID || e.hasPID {
		pid, tid := seq.pid, seq.tid
		if e.hasPID {
			pid = e.pidOverride
		}
		if e.hasTID {
			tid = e.tidOverrid
		}
		return d.threadTrack(pid, tid)
	}
	uuid, has := e.track, e.hasTrack
	if !has && seq.hasDefTrack {
		uuid, has = seq.defTrack, true
	}
	if (!has || uuid == 0) && seq.hasThread {
		return d.threadTrack(seq.pid, seq.tid)
	}
	if id, ok := d.uuidID[uuid]; ok {
		return id, nil
	}
	if desc := d.descs[uuid]; desc != nil && desc.thread {
		if id, ok := d.thrID[[2]int64{desc.pid, desc.tid}]; ok {
			d.uuidID[uuid] = id
			return id, nil
		}
	}
	id, err := d.newTrack()
	if err != nil {
		return 0, err
	}
	d.uuidID[uuid] = id
	d.keys[id] = pfKey{uuid: uuid}
	if desc := d.descs[uuid]; desc != nil && desc.thread {
		d.thrID[[2]int64{desc.pid, desc.tid}] = id
	}
	return id, nil
}

func (d *pfDecoder) threadTrack(pid, tid int64) (int64, error) {
	k := [2]int64{pid, tid}
	if id, ok := d.thrID[k]; ok {
		return id, nil
	}
	id, err := d.newTrack()
	if err != nil {
		return 0, err
	}
	d.thrID[k] = id
	d.keys[id] = pfKey{thread: true, pid: pid, tid: tid}
	return id, nil
}

func (d *pfDecoder) newTrack() (int64, error) {
	if d.nextID >= int64(d.lim.MaxTracks) {
		return 0, d.limit("max_tracks", int64(d.lim.MaxTracks), "tracks",
			"the Perfetto trace has more than %d tracks", d.lim.MaxTracks)
	}
	d.nextID++
	return d.nextID, nil
}

// announce sends a track to the sink before its first slice.
func (d *pfDecoder) announce(id int64) {
	if _, ok := d.named[id]; !ok {
		d.send(id)
	}
}

// send announces track id with what the trace says of it so far, unless that is what
// was announced; a track whose parent chain reaches a uuid not described yet waits for
// that descriptor in orphans.
func (d *pfDecoder) send(id int64) {
	t, missing := d.track(id)
	if missing != 0 && !d.waiting[id] {
		d.waiting[id] = true
		d.orphans[missing] = append(d.orphans[missing], id)
	}
	if last, ok := d.named[id]; !ok || last != t {
		d.named[id] = t
		d.sink.Track(t)
	}
}

// track is what the trace says of track id so far: its descriptor, or the thread it was
// derived from; missing is a parent uuid its descriptor's chain reaches undescribed.
func (d *pfDecoder) track(id int64) (t Track, missing uint64) {
	t.ID = id
	k := d.keys[id]
	if k.thread {
		t.PID, t.TID = k.pid, k.tid
		t.Name = d.thrNamed[[2]int64{k.pid, k.tid}]
	} else if desc := d.descs[k.uuid]; desc != nil {
		t.Name = desc.name
		if desc.thread {
			t.PID, t.TID = desc.pid, desc.tid
		} else {
			t.Async = true
			t.PID, missing = d.processOf(desc)
		}
	} else {
		t.Async = k.uuid != 0
	}
	return t, missing
}

// processOf walks a descriptor's parents (at most 64) to the process that holds it;
// missing is the first parent uuid not described yet (0: none).
func (d *pfDecoder) processOf(desc *pfDesc) (pid int64, missing uint64) {
	for i := 0; i < 64; i++ {
		if desc.process || desc.thread {
			return desc.pid, 0
		}
		if desc.parent == 0 {
			break
		}
		p := d.descs[desc.parent]
		if p == nil {
			return 0, desc.parent
		}
		desc = p
	}
	return 0, 0
}

func (d *pfDecoder) eventName(seq *pfSequence, e *pfTrackEvent) (string, error) {
	switch {
	case e.hasName:
		return d.str(e.name)
	case e.hasNameIID:
		return d.interned(seq.names, e.nameIID), nil
	case e.hasLegacyName:
		return d.interned(seq.names, e.legacyNameIID), nil
	}
	return "", nil
}

// interned looks up an interned string; an iid the sequence never defined (or whose
// definition came while its state was invalid) is "" and counted.
func (d *pfDecoder) interned(m map[uint64]string, iid uint64) string {
	s, ok := m[iid]
	if !ok {
		d.info.UndefinedInterned++
	}
	return s
}

func (d *pfDecoder) category(seq *pfSequence, e *pfTrackEvent) (string, error) {
	if len(e.cats)+len(e.catIIDs) == 0 {
		return "", nil
	}
	if len(e.cats) == 1 && len(e.catIIDs) == 0 {
		return d.str(e.cats[0])
	}
	if len(e.cats) == 0 && len(e.catIIDs) == 1 {
		return d.interned(seq.cats, e.catIIDs[0]), nil
	}
	var sb strings.Builder
	add := func(s string) {
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(s)
	}
	for _, c := range e.cats {
		add(string(c))
	}
	for _, iid := range e.catIIDs {
		add(d.interned(seq.cats, iid))
	}
	return d.str([]byte(sb.String()))
}

// annotate maps the top-level debug annotations whose names are model.Args keys.
// Nested (dict/array) annotations are not read.
func (d *pfDecoder) annotate(seq *pfSequence, e *pfTrackEvent, a *Args) {
	for _, b := range e.annotations {
		var name string
		var iv int64
		var sv string
		hasInt, hasStr := false, false
		ok, _ := eachField(b, func(f pfField) error {
			switch f.num {
			case 1:
				name = seq.annNames[f.v]
			case 10:
				if f.typ == protowire.BytesType && len(f.data) <= 64 {
					name = string(f.data)
				}
			case 3, 4:
				if f.typ == protowire.VarintType {
					iv, hasInt = int64(f.v), true
				}
			case 6:
				if f.typ == protowire.BytesType && len(f.data) <= d.lim.MaxStringBytes {
					sv, hasStr = string(f.data), true
				}
			case 17:
				if s, ok := seq.annStrs[f.v]; ok {
					sv, hasStr = s, true
				}
			}
			return nil
		})
		if !ok {
			continue
		}
		switch name {
		case "File", "file", "filename", "fileName":
			if hasStr {
				s := sv
				a.Filename = &s
			}
		case "Line", "line", "lineNumber":
			if hasInt {
				v := iv
				a.Line = &v
			}
		case "correlation", "correlation_id":
			if hasInt {
				v := iv
				a.CorrelationID = &v
			}
		case "device", "device_id":
			if hasInt {
				v := iv
				a.Device = &v
			}
		case "stream":
			if hasInt {
				v := iv
				a.Stream = &v
			}
		case "External id":
			if hasInt {
				v := iv
				a.ExternalID = &v
			}
		}
	}
}
