package preview

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// pbStream reads protocol buffer fields from a stream without holding a message: a
// varint, a tag, a length-delimited payload read (when small) or discarded.
type pbStream struct {
	r   *bufio.Reader
	pos int64
}

func (p *pbStream) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, unrecognized("a protobuf varint is longer than 10 bytes")
		}
		b, err := p.r.ReadByte()
		if err != nil {
			return 0, err
		}
		p.pos++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
}

// tag reads a field tag: its number and wire type.
func (p *pbStream) tag() (uint64, int, error) {
	t, err := p.varint()
	if err != nil {
		return 0, 0, err
	}
	if t>>3 == 0 {
		return 0, 0, unrecognized("a protobuf field number is 0")
	}
	return t >> 3, int(t & 7), nil
}

func (p *pbStream) discard(n uint64) error {
	for n > 0 {
		k := int(min(n, 1<<30))
		d, err := p.r.Discard(k)
		p.pos += int64(d)
		if err != nil {
			return err
		}
		n -= uint64(k)
	}
	return nil
}

// bytes reads a length-delimited payload of at most max bytes (else discarded, nil).
func (p *pbStream) bytes(n uint64, max int) ([]byte, error) {
	if n > uint64(max) {
		return nil, p.discard(n)
	}
	b := make([]byte, n)
	k, err := io.ReadFull(p.r, b)
	p.pos += int64(k)
	return b, err
}

// skip discards the value of a field of wire type typ (its tag read); a length-delimited
// value's length is returned.
func (p *pbStream) skip(typ int) (uint64, error) {
	switch typ {
	case 0:
		_, err := p.varint()
		return 0, err
	case 1:
		return 0, p.discard(8)
	case 5:
		return 0, p.discard(4)
	case 2:
		n, err := p.varint()
		if err != nil {
			return 0, err
		}
		return n, p.discard(n)
	}
	return 0, unrecognized("protobuf wire type %d (a group, or not protobuf)", typ)
}

// pbFields walks the fields of an in-memory message.
func pbFields(b []byte, f func(num uint64, typ int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		t, n := uvarint(b)
		if n <= 0 {
			return unrecognized("a protobuf message is truncated")
		}
		b = b[n:]
		num, typ := t>>3, int(t&7)
		var v uint64
		var data []byte
		switch typ {
		case 0:
			v, n = uvarint(b)
			if n <= 0 {
				return unrecognized("a protobuf message is truncated")
			}
			b = b[n:]
		case 1, 5:
			w := 8
			if typ == 5 {
				w = 4
			}
			if len(b) < w {
				return unrecognized("a protobuf message is truncated")
			}
			b = b[w:]
		case 2:
			l, n := uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return unrecognized("a protobuf message is truncated")
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return unrecognized("protobuf wire type %d (a group, or not protobuf)", typ)
		}
		if err := f(num, typ, v, data); err != nil {
			return err
		}
	}
	return nil
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// The pprof header view: the profile.proto Profile's own fields (sample types, period
// type and period, time, duration, comments, default sample type, drop and keep frames)
// and the number of samples, locations, functions, mappings and strings. Strings are
// kept for the indexes these fields name: the first maxPprofStrings of the table, at
// most maxPprofStringBytes in all.
const (
	maxPprofStrings     = 1 << 16
	maxPprofStringBytes = 4 << 20
	maxPprofMessage     = 64 << 10
)

func pprofHeader(h *header) error {
	r, c, err := h.stream()
	if err != nil {
		return err
	}
	defer c.Close()
	p := &pbStream{r: r}
	type valueType struct{ typ, unit int64 }
	var (
		sampleTypes                         []valueType
		periodType                          *valueType
		strs                                []string
		strBytes, stringCount               int64
		samples, locations, functions, maps int64
		period, timeNanos, durationNanos    int64
		dropFrames, keepFrames, defaultType int64
		comments                            []int64
		seen                                = map[uint64]bool{}
	)
	readValueType := func(n uint64) (*valueType, error) {
		b, err := p.bytes(n, maxPprofMessage)
		if err != nil {
			return nil, err
		}
		vt := &valueType{}
		return vt, pbFields(b, func(num uint64, typ int, v uint64, _ []byte) error {
			switch {
			case num == 1 && typ == 0:
				vt.typ = int64(v)
			case num == 2 && typ == 0:
				vt.unit = int64(v)
			}
			return nil
		})
	}
	for fields := 0; ; fields++ {
		if fields&0xfff == 0 {
			if err := h.ctx.Err(); err != nil {
				return err
			}
		}
		num, typ, err := p.tag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return truncated("a protobuf field", err)
		}
		seen[num] = true
		if typ == 2 {
			n, err := p.varint()
			if err != nil {
				return truncated("a protobuf field", err)
			}
			switch num {
			case 1, 11:
				vt, err := readValueType(n)
				if err != nil {
					return truncated("a value type", err)
				}
				if num == 11 {
					periodType = vt
				} else if len(sampleTypes) < maxHeaderItems {
					sampleTypes = append(sampleTypes, *vt)
				}
				continue
			case 6:
				stringCount++
				if len(strs) < maxPprofStrings && strBytes+int64(n) <= maxPprofStringBytes {
					b, err := p.bytes(n, maxPprofStringBytes)
					if err != nil {
						return truncated("the string table", err)
					}
					strs = append(strs, string(b))
					strBytes += int64(n)
					continue
				}
			case 13:
				// Packed comments.
				b, err := p.bytes(n, maxPprofMessage)
				if err != nil {
					return truncated("the comments", err)
				}
				for len(b) > 0 && len(comments) < maxHeaderItems {
					v, k := uvarint(b)
					if k <= 0 {
						return unrecognized("the packed comments are truncated")
					}
					comments, b = append(comments, int64(v)), b[k:]
				}
				continue
			case 2:
				samples++
			case 3:
				maps++
			case 4:
				locations++
			case 5:
				functions++
			}
			if err := p.discard(n); err != nil {
				return truncated("a protobuf field", err)
			}
			continue
		}
		if typ != 0 {
			if _, err := p.skip(typ); err != nil {
				return truncated("a protobuf field", err)
			}
			continue
		}
		v, err := p.varint()
		if err != nil {
			return truncated("a protobuf field", err)
		}
		switch num {
		case 7:
			dropFrames = int64(v)
		case 8:
			keepFrames = int64(v)
		case 9:
			timeNanos = int64(v)
		case 10:
			durationNanos = int64(v)
		case 12:
			period = int64(v)
		case 13:
			if len(comments) < maxHeaderItems {
				comments = append(comments, int64(v))
			}
		case 14:
			defaultType = int64(v)
		}
	}
	if !seen[1] || !seen[6] {
		return unrecognized("the data has no sample types or no string table: it is not a profile.proto Profile")
	}
	str := func(i int64) string {
		if i >= 0 && i < int64(len(strs)) {
			return strs[i]
		}
		return "#" + strconv.FormatInt(i, 10)
	}
	for i, st := range sampleTypes {
		h.item("sample_types", func(o *object) {
			o.int("index", int64(i))
			o.val("type", str(st.typ))
			o.val("unit", str(st.unit))
		})
	}
	if defaultType != 0 {
		h.field("default_sample_type", str(defaultType))
	}
	if periodType != nil {
		h.field("period_type", str(periodType.typ)+"/"+str(periodType.unit))
	}
	h.field("period", period)
	h.field("time_nanos", timeNanos)
	h.field("duration_nanos", durationNanos)
	h.field("sample_count", samples)
	h.field("location_count", locations)
	h.field("function_count", functions)
	h.field("mapping_count", maps)
	h.field("string_count", stringCount)
	if len(comments) > 0 {
		cs := make([]string, len(comments))
		for i, c := range comments {
			cs[i] = str(c)
		}
		h.field("comments", cs)
	}
	if dropFrames != 0 {
		h.field("drop_frames", str(dropFrames))
	}
	if keepFrames != 0 {
		h.field("keep_frames", str(keepFrames))
	}
	return nil
}

// The Perfetto header view: the trace's packet count and, per kind, the packets whose
// payload is that TracePacket field (the data oneof: track_event, clock_snapshot,
// process_tree, ...), named from perfetto's trace_packet.proto; fields every packet may
// carry beside its payload (timestamp, sequence id, interned data, ...) are not kinds.
var tracePacketCommon = map[uint64]bool{3: true, 8: true, 10: true, 12: true, 13: true, 41: true, 42: true, 58: true, 79: true, 87: true, 98: true}

var tracePacketKinds = map[uint64]string{
	1: "ftrace_events", 2: "process_tree", 4: "inode_file_map", 5: "chrome_events", 6: "clock_snapshot", 7: "sys_stats",
	9: "process_stats", 11: "track_event", 33: "trace_config", 34: "ftrace_stats", 35: "trace_stats", 36: "synchronization_marker",
	37: "profile_packet", 38: "battery", 39: "android_log", 40: "power_rails", 43: "process_descriptor", 44: "thread_descriptor",
	45: "system_info", 46: "trigger", 47: "packages_list", 48: "chrome_benchmark_metadata", 49: "perfetto_metatrace",
	50: "compressed_packets", 51: "chrome_metadata", 52: "gpu_counter_event", 53: "gpu_render_stage_event",
	54: "streaming_profile_packet", 55: "profiled_frame_symbols", 56: "heap_graph", 57: "graphics_frame_event",
	60: "track_descriptor", 61: "module_symbols", 62: "vulkan_memory_event", 63: "gpu_log", 64: "deobfuscation_mapping",
	65: "vulkan_api_event", 66: "perf_sample", 67: "cpu_info", 68: "smaps_packet", 69: "service_event",
	70: "initial_display_state", 71: "gpu_mem_total_event", 72: "extension_descriptor", 73: "memory_tracker_snapshot",
	74: "streaming_allocation", 75: "streaming_free", 76: "frame_timeline_event", 77: "android_energy_estimation_breakdown",
	78: "ui_state", 80: "android_camera_frame_event", 81: "android_camera_session_stats", 82: "translation_table",
	83: "android_game_intervention_list", 84: "statsd_atom", 86: "android_system_property", 88: "network_packet",
	89: "trace_uuid", 90: "track_event_range_of_interest", 91: "entity_state_residency", 92: "network_packet_bundle",
	900: "for_testing",
}

func perfettoHeader(h *header) error {
	r, c, err := h.stream()
	if err != nil {
		return err
	}
	defer c.Close()
	p := &pbStream{r: r}
	var packets, other int64
	kinds := map[uint64]int64{}
	overflow := int64(0)
	for {
		if packets&0xfff == 0 {
			if err := h.ctx.Err(); err != nil {
				return err
			}
		}
		num, typ, err := p.tag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return truncated("a trace packet", err)
		}
		if num != 1 || typ != 2 {
			if packets == 0 && other == 0 {
				return unrecognized("the data does not start with a Trace packet (field 1, length-delimited): it is not a Perfetto protobuf trace")
			}
			other++
			if _, err := p.skip(typ); err != nil {
				return truncated("a top-level field", err)
			}
			continue
		}
		n, err := p.varint()
		if err != nil {
			return truncated("a trace packet", err)
		}
		packets++
		end := p.pos + int64(n)
		kind := uint64(0)
		for p.pos < end {
			f, ft, err := p.tag()
			if err != nil {
				return truncated("a trace packet", err)
			}
			if _, err := p.skip(ft); err != nil {
				return truncated("a trace packet", err)
			}
			if kind == 0 && !tracePacketCommon[f] {
				kind = f
			}
		}
		if p.pos != end {
			return unrecognized("trace packet %d overruns its length", packets)
		}
		if _, ok := kinds[kind]; ok || len(kinds) < maxHeaderItems {
			kinds[kind]++
		} else {
			overflow++
		}
	}
	if packets == 0 {
		return unrecognized("the data holds no trace packets")
	}
	h.field("packet_count", packets)
	if other > 0 {
		h.field("other_top_level_fields", other)
	}
	nums := make([]uint64, 0, len(kinds))
	for k := range kinds {
		nums = append(nums, k)
	}
	slices.Sort(nums)
	for _, k := range nums {
		name := tracePacketKinds[k]
		switch {
		case k == 0:
			name = "none"
		case name == "":
			name = fmt.Sprintf("field %d", k)
		}
		h.item("packet_kinds", func(o *object) {
			o.int("field", int64(k))
			o.str("kind", name)
			o.int("count", kinds[k])
		})
	}
	if overflow > 0 {
		h.field("packets_of_unlisted_kinds", overflow)
	}
	return nil
}
