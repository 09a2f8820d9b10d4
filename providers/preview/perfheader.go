package preview

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
)

// The perf.data header view (linux tools/perf/Documentation/perf.data-file-format.txt):
// the file header's sections (attributes, data), the features its bitmap announces by
// name, the text features as perf report --header-only prints them (hostname, os
// release, perf version, arch, cpu description and id, CPUs online and available, total
// memory, command line, event names), and the records of the data section counted by
// type, as perf report --stats counts them. Feature sections are read at most
// maxPerfFeatureBytes each; the data section is walked record header by record header.

const (
	perfHeaderBytes     = 104
	maxPerfFeatureBytes = 1 << 20
)

var perfFeatureNames = []string{
	1: "tracing_data", 2: "build_id", 3: "hostname", 4: "osrelease", 5: "version", 6: "arch", 7: "nrcpus",
	8: "cpudesc", 9: "cpuid", 10: "total_mem", 11: "cmdline", 12: "event_desc", 13: "cpu_topology",
	14: "numa_topology", 15: "branch_stack", 16: "pmu_mappings", 17: "group_desc", 18: "auxtrace", 19: "stat",
	20: "cache", 21: "sample_time", 22: "mem_topology", 23: "clockid", 24: "dir_format", 25: "bpf_prog_info",
	26: "bpf_btf", 27: "compressed", 28: "cpu_pmu_caps", 29: "clock_data", 30: "hybrid_topology", 31: "pmu_caps",
}

// perfRecordNames are perf's names of record types (tools/perf/util/event.c), as perf
// report --stats prints them.
var perfRecordNames = map[uint32]string{
	1: "MMAP", 2: "LOST", 3: "COMM", 4: "EXIT", 5: "THROTTLE", 6: "UNTHROTTLE", 7: "FORK", 8: "READ", 9: "SAMPLE",
	10: "MMAP2", 11: "AUX", 12: "ITRACE_START", 13: "LOST_SAMPLES", 14: "SWITCH", 15: "SWITCH_CPU_WIDE",
	16: "NAMESPACES", 17: "KSYMBOL", 18: "BPF_EVENT", 19: "CGROUP", 20: "TEXT_POKE", 21: "AUX_OUTPUT_HW_ID",
	64: "ATTR", 65: "EVENT_TYPE", 66: "TRACING_DATA", 67: "BUILD_ID", 68: "FINISHED_ROUND", 69: "ID_INDEX",
	70: "AUXTRACE_INFO", 71: "AUXTRACE", 72: "AUXTRACE_ERROR", 73: "THREAD_MAP", 74: "CPU_MAP", 75: "STAT_CONFIG",
	76: "STAT", 77: "STAT_ROUND", 78: "EVENT_UPDATE", 79: "TIME_CONV", 80: "HEADER_FEATURE", 81: "COMPRESSED",
	82: "FINISHED_INIT",
}

type perfSection struct{ offset, size uint64 }

func perfDataHeader(h *header) error {
	f, err := os.Open(h.src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	size := h.src.Size
	if size < perfHeaderBytes || len(h.head) < perfHeaderBytes {
		return unrecognized("the file is shorter than perf.data's %d-byte header", perfHeaderBytes)
	}
	le := binary.LittleEndian
	hb := h.head[:perfHeaderBytes]
	hdrSize, attrSize := le.Uint64(hb[8:]), le.Uint64(hb[16:])
	attrs := perfSection{le.Uint64(hb[24:]), le.Uint64(hb[32:])}
	data := perfSection{le.Uint64(hb[40:]), le.Uint64(hb[48:])}
	if hdrSize != perfHeaderBytes {
		return unrecognized("the header size is %d, not %d (a pipe-mode or foreign-endian perf.data)", hdrSize, perfHeaderBytes)
	}
	within := func(s perfSection) bool { return s.offset <= uint64(size) && s.size <= uint64(size)-s.offset }
	if !within(attrs) || !within(data) {
		return unrecognized("a header section lies beyond the end of the file")
	}
	var features []int
	for w := range 4 {
		word := le.Uint64(hb[72+8*w:])
		for word != 0 {
			b := bits.TrailingZeros64(word)
			features = append(features, 64*w+b)
			word &^= 1 << b
		}
	}
	h.field("header_size", hdrSize)
	h.field("attr_size", attrSize)
	if attrSize > 0 {
		h.field("attr_count", attrs.size/attrSize)
	}
	h.field("data_offset", data.offset)
	h.field("data_size", data.size)
	featOffset := data.offset + data.size
	h.field("feature_offset", featOffset)
	names := make([]string, 0, len(features))
	for _, b := range features {
		names = append(names, perfFeatureName(b))
	}
	h.field("features", names)

	// Feature sections: one (offset, size) per announced feature, in bit order.
	table := make([]byte, 16*len(features))
	if _, err := f.ReadAt(table, int64(featOffset)); err != nil {
		return truncated("the feature section table", err)
	}
	for i, b := range features {
		s := perfSection{le.Uint64(table[16*i:]), le.Uint64(table[16*i+8:])}
		if !within(s) {
			return unrecognized("the %s feature section lies beyond the end of the file", perfFeatureName(b))
		}
		if err := perfFeature(h, f, b, s); err != nil {
			return err
		}
	}
	return perfRecords(h, f, data)
}

func perfFeatureName(b int) string {
	if b < len(perfFeatureNames) && perfFeatureNames[b] != "" {
		return perfFeatureNames[b]
	}
	return fmt.Sprintf("feature_%d", b)
}

// perfFeature adds the fields of the text features.
func perfFeature(h *header, f *os.File, feature int, s perfSection) error {
	switch feature {
	case 3, 4, 5, 6, 7, 8, 9, 10, 11, 12:
	default:
		return nil
	}
	if s.size > maxPerfFeatureBytes {
		return nil
	}
	b := make([]byte, s.size)
	if _, err := f.ReadAt(b, int64(s.offset)); err != nil {
		return truncated("a feature section", err)
	}
	r := &perfReader{b: b}
	name := perfFeatureName(feature)
	switch feature {
	case 3, 4, 5, 6, 8, 9:
		if v, ok := r.str(); ok {
			h.field(name, v)
		}
	case 7:
		avail, ok1 := r.u32()
		online, ok2 := r.u32()
		if ok1 && ok2 {
			h.field("nrcpus_online", online)
			h.field("nrcpus_avail", avail)
		}
	case 10:
		if v, ok := r.u64(); ok {
			h.field("total_mem_kb", v)
		}
	case 11:
		n, ok := r.u32()
		var args []string
		for i := uint32(0); ok && i < n && len(args) < maxHeaderItems; i++ {
			var a string
			if a, ok = r.str(); ok {
				args = append(args, a)
			}
		}
		if ok {
			h.field("cmdline", args)
		}
	case 12:
		n, ok1 := r.u32()
		sz, ok2 := r.u32()
		if !ok1 || !ok2 {
			return nil
		}
		var events []string
		for i := uint32(0); i < n && len(events) < maxHeaderItems; i++ {
			if !r.skipN(uint64(sz)) {
				return nil
			}
			ids, ok := r.u32()
			if !ok {
				return nil
			}
			ev, ok := r.str()
			if !ok || !r.skipN(8*uint64(ids)) {
				return nil
			}
			events = append(events, ev)
		}
		h.field("events", events)
	}
	return nil
}

// perfReader reads perf's header encodings from a feature section.
type perfReader struct {
	b []byte
	i int
}

func (r *perfReader) u32() (uint32, bool) {
	if len(r.b)-r.i < 4 {
		return 0, false
	}
	r.i += 4
	return binary.LittleEndian.Uint32(r.b[r.i-4:]), true
}

func (r *perfReader) u64() (uint64, bool) {
	if len(r.b)-r.i < 8 {
		return 0, false
	}
	r.i += 8
	return binary.LittleEndian.Uint64(r.b[r.i-8:]), true
}

func (r *perfReader) skipN(n uint64) bool {
	if uint64(len(r.b)-r.i) < n {
		return false
	}
	r.i += int(n)
	return true
}

// str reads perf's string: a u32 length (padding included), then the NUL-padded bytes.
func (r *perfReader) str() (string, bool) {
	n, ok := r.u32()
	if !ok || uint64(len(r.b)-r.i) < uint64(n) {
		return "", false
	}
	s := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	if k := bytes.IndexByte(s, 0); k >= 0 {
		s = s[:k]
	}
	return string(s), true
}

// perfRecords counts the data section's records by type.
func perfRecords(h *header, f *os.File, data perfSection) error {
	r := bufio.NewReaderSize(io.NewSectionReader(f, int64(data.offset), int64(data.size)), 64<<10)
	counts := map[uint32]int64{}
	var total, overflow int64
	var hdr [8]byte
	for left := data.size; left > 0; {
		if total&0xfff == 0 {
			if err := h.ctx.Err(); err != nil {
				return err
			}
		}
		if left < 8 {
			return unrecognized("the data section ends inside a record header")
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return truncated("the data section", err)
		}
		typ, sz := binary.LittleEndian.Uint32(hdr[:]), uint64(binary.LittleEndian.Uint16(hdr[6:]))
		if sz < 8 || sz > left {
			return unrecognized("record %d of the data section has size %d", total, sz)
		}
		if _, err := r.Discard(int(sz - 8)); err != nil {
			return truncated("the data section", err)
		}
		left -= sz
		total++
		if _, ok := counts[typ]; ok || len(counts) < maxHeaderItems {
			counts[typ]++
		} else {
			overflow++
		}
	}
	h.field("record_count", total)
	types := make([]uint32, 0, len(counts))
	for t := range counts {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		name := perfRecordNames[t]
		if name == "" {
			name = fmt.Sprintf("type %d", t)
		}
		h.item("records", func(o *object) {
			o.int("type", int64(t))
			o.str("name", name)
			o.int("count", counts[t])
		})
	}
	if overflow > 0 {
		h.field("records_of_unlisted_types", overflow)
	}
	return nil
}
