package perfetto

import (
	"fmt"
)

// Info is what Decode saw beyond the slices: the packets it did not read,
// by kind, and the clocks the timestamps came from.
type Info struct {
	// Packets counts the TracePackets in the file.
	Packets int64
	// TrackEventPackets and TrackDescriptors count the packets read natively.
	TrackEventPackets int64
	TrackDescriptors  int64
	// Unread counts the packets whose data the native decoder does not read, by
	// TracePacket field number (see PacketKind for names).
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
	Cut *Cut
	// Sequences counts the packet sequences seen.
	Sequences int
}

// Cut is where a cut Perfetto trace ends: within the record that starts at byte
// Offset, after the Packets complete packets before it.
type Cut struct {
	Offset  int64
	Packets int64
	// Declared is the length the record's header declares; -1 when the file ends within
	// the header.
	Declared int64
	// Present is how many of the Declared bytes the file holds.
	Present int64
}

// String says what a cut trace holds, for a limitation or an error.
func (c *Cut) String() string {
	s := fmt.Sprintf("the file ends within the header of the record at byte %d", c.Offset)
	if c.Declared >= 0 {
		s = fmt.Sprintf("the file ends within the record at byte %d, which declares %d bytes and holds %d", c.Offset, c.Declared, c.Present)
	}
	return fmt.Sprintf("%s; the %d complete packets before it (%d bytes) were read and the rest of the trace is missing", s, c.Packets, c.Offset)
}

// UnreadPackets is the number of packets whose data the native decoder does not read.
func (i *Info) UnreadPackets() int64 {
	var n int64
	for _, c := range i.Unread {
		n += c
	}
	return n
}

// UnreadDataPackets is UnreadPackets less the bookkeeping packets (trace config and
// stats, service events, clock snapshots, uuids, markers, ...) that hold no timeline
// data: what only trace_processor_shell would show.
func (i *Info) UnreadDataPackets() int64 {
	var n int64
	for f, c := range i.Unread {
		if !bookkeeping[f] {
			n += c
		}
	}
	return n
}

// NothingNative reports whether the trace has no track events: the native decoder can
// read nothing of it.
func (i *Info) NothingNative() bool { return i.TrackEventPackets == 0 }

// UnreadByKind is Unread keyed by PacketKind.
func (i *Info) UnreadByKind() map[string]int64 { return i.unreadByKind(false) }

// UnreadDataByKind is UnreadByKind less the bookkeeping kinds: the packets
// UnreadDataPackets counts.
func (i *Info) UnreadDataByKind() map[string]int64 { return i.unreadByKind(true) }

func (i *Info) unreadByKind(dataOnly bool) map[string]int64 {
	m := make(map[string]int64, len(i.Unread))
	for f, c := range i.Unread {
		if !dataOnly || !bookkeeping[f] {
			m[PacketKind(f)] += c
		}
	}
	return m
}

// kinds names the TracePacket data fields.
var kinds = map[int]string{
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

// bookkeeping are data kinds that hold no timeline data.
var bookkeeping = map[int]bool{
	6: true, 33: true, 34: true, 35: true, 36: true, 45: true, 46: true, 48: true, 51: true,
	67: true, 69: true, 72: true, 89: true, 90: true, 107: true, 109: true, 113: true,
	124: true, 126: true, 134: true,
}

// PacketKind names a TracePacket data field number ("field_N" when unknown).
func PacketKind(field int) string {
	if s, ok := kinds[field]; ok {
		return s
	}
	return fmt.Sprintf("field_%d", field)
}
