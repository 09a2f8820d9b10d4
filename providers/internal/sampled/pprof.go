package sampled

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/protowalk"
	"github.com/flameox/flameox/providers/internal/protowire"
)

// pprofUnits scales pprof time units to seconds.
var pprofUnits = map[string]float64{"nanoseconds": 1e-9, "microseconds": 1e-6, "milliseconds": 1e-3, "seconds": 1}

// PprofInfo describes the sample type a pprof profile was read with.
type PprofInfo struct {
	SampleType  string
	SampleUnit  string
	SampleTypes []string
}

// The bounds of a pprof profile: what its gzip layers decompress to, and what its string
// table retains (bytes, and strings, each of which costs a Go string header however
// short).
const (
	maxPprofBytes       = 1 << 30
	maxPprofStringBytes = 64 << 20
	maxPprofStrings     = 4 << 20
)

// pprofLimit is the LimitError of a pprof bound.
func pprofLimit(limit int64, unit, what string) *providers.LimitError {
	return &providers.LimitError{Limit: limit, Unit: unit,
		Message: fmt.Sprintf("the pprof profile %s (bound %d %s)", what, limit, unit)}
}

// limitedReader reads r and fails with err past max bytes.
type limitedReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (l *limitedReader) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	l.n += int64(n)
	if l.n > l.max {
		return n, l.err
	}
	return n, err
}

// DecodePprof reads a pprof profile (gzip or not) with the named sample type, or the
// profile's default (its default_sample_type, else the last). Frames are functions
// (name, file, start line), with inlined frames expanded; time units become seconds and
// count units samples. r is read from its current offset, and its head read again from
// there when the profile is not one the streaming reader takes.
func DecodePprof(r io.ReadSeeker, o Options) (*Sampled, PprofInfo, error) {
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, PprofInfo{}, &providers.DecodeError{Message: "the input is not a pprof profile"}
	}
	return decodePprof(r, func() (io.ReadCloser, error) {
		_, err := r.Seek(start, io.SeekStart)
		return io.NopCloser(r), err
	}, o)
}

// DecodePprofStream is DecodePprof for a stream that cannot seek: the head of a profile
// the streaming reader does not take is read again from reread, to tell a legacy
// profile. The families read their bounded source readers with it: the CPU family CPU
// profiles, the memory family Go heap profiles (docs/decisions/0021-memory-evidence.md,
// 0044-profile-package.md).
func DecodePprofStream(r io.Reader, reread func() (io.ReadCloser, error), o Options) (*Sampled, PprofInfo, error) {
	return decodePprof(r, reread, o)
}

// decodePprof reads a profile from r with the streaming reader, which takes every
// profile.proto message. What it does not take is refused: a profile in one of pprof's
// legacy formats, which carry addresses without symbols, is UNSUPPORTED_FORMAT with the
// conversion that symbolizes it (decision 0044's addendum); anything else is not a
// pprof profile.
func decodePprof(r io.Reader, reread func() (io.ReadCloser, error), o Options) (*Sampled, PprofInfo, error) {
	s, info, err := streamPprof(r, o)
	if !errors.Is(err, errNotStreamed) {
		return s, info, err
	}
	notPprof := &providers.DecodeError{Message: "the input is not a pprof profile"}
	rr, err := reread()
	if err != nil {
		return nil, PprofInfo{}, notPprof
	}
	defer rr.Close()
	kind := legacyPprof(rr)
	if kind == "" {
		return nil, PprofInfo{}, notPprof
	}
	return nil, PprofInfo{}, &providers.UnsupportedError{Details: map[string]any{"legacy_format": kind},
		Message: "the input is a pprof profile in a legacy format (" + kind + "), which records addresses without symbols; " +
			"Flameox reads profile.proto",
		Remediation: "Convert the profile to profile.proto, symbolized: run `go tool pprof -proto -output profile.pb.gz PROGRAM PROFILE` " +
			"(PROGRAM: the profiled executable; PROFILE: this source's path), then analyze profile.pb.gz."}
}

// legacyHeadBytes is how much of a profile's (decompressed) head legacyPprof reads.
const legacyHeadBytes = 4096

// legacyPprof tells a profile in one of the legacy formats github.com/google/pprof reads
// by its head, after one gzip layer: gperftools' binary CPU profile (a header of the
// words 0, 3, 0, period, 0, in 32 or 64 bits of either byte order), the text heap
// profiles of gperftools and of Go's debug=1 (`heap profile:`, `heap_v2/`), Go's debug=1
// count profiles (`goroutine profile: total N`, threadcreate), and the contention
// profiles of Go's debug=1 block and mutex profiles and of gperftools (`--- contention`,
// `--- mutex`, `--- contentionz`). It returns the family's name, or "".
func legacyPprof(r io.Reader) string {
	head := make([]byte, legacyHeadBytes)
	n, _ := io.ReadFull(r, head)
	head = head[:n]
	if sourcefile.IsGzip(head) {
		zr, err := gzip.NewReader(io.MultiReader(bytes.NewReader(head), r))
		if err != nil {
			return ""
		}
		head = make([]byte, legacyHeadBytes)
		n, _ = io.ReadFull(zr, head)
		head = head[:n]
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		if len(head) >= 16 && order.Uint64(head) == 0 && order.Uint64(head[8:]) == 3 ||
			len(head) >= 8 && order.Uint32(head) == 0 && order.Uint32(head[4:]) == 3 {
			return "cpu"
		}
	}
	line, _, _ := bytes.Cut(bytes.TrimLeft(head, " \t\r\n"), []byte("\n"))
	text := string(line)
	switch {
	case strings.HasPrefix(text, "heap profile:"), strings.HasPrefix(text, "heap_v2/"), strings.HasPrefix(text, "heap/"):
		return "heap"
	case strings.HasPrefix(text, "--- contention"), strings.HasPrefix(text, "--- mutex"):
		return "contention"
	}
	if name, rest, ok := strings.Cut(text, " profile: total "); ok && name != "" && !strings.ContainsAny(name, " \t") {
		if _, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64); err == nil {
			return "count"
		}
	}
	return ""
}

// pprofSampleType chooses the sample type to weigh by: the named one, else the default
// type when the profile names one it has, else the last.
func pprofSampleType(types, units []string, defaultType, want string) (int, PprofInfo, error) {
	info := PprofInfo{SampleTypes: types}
	if len(types) == 0 {
		return 0, info, &providers.DecodeError{Message: "the pprof profile declares no sample types"}
	}
	idx := len(types) - 1
	named := want
	if named == "" && defaultType != "" {
		named = defaultType
	}
	if named != "" {
		idx = -1
		for i, t := range types {
			if t == named {
				idx = i
			}
		}
		if idx < 0 {
			if want != "" {
				return 0, info, &providers.FieldError{Field: []any{"sample_type"}, Accepted: types,
					Message: fmt.Sprintf("the pprof profile has no sample type %q; it has %s", want, strings.Join(types, ", "))}
			}
			idx = len(types) - 1
		}
	}
	info.SampleType, info.SampleUnit = types[idx], units[idx]
	return idx, info, nil
}

// newPprofSampled is the empty profile for a sample type unit: time units in seconds,
// count in samples, others as they are.
func newPprofSampled(unit string, o Options) *Sampled {
	u, scale := unit, 1.0
	if f, ok := pprofUnits[unit]; ok {
		u, scale = "seconds", f
	} else if unit == "count" {
		u = "samples"
	}
	s := NewSampled(u, o)
	s.Scale = scale
	return s
}

// The streaming reader.
//
// github.com/google/pprof/profile's Parse (the tests' oracle) reads the whole
// (decompressed) profile into memory and then builds every
// sample, location, function and string as a Go object before anything is counted; for a
// 10 MB profile of 50,000 functions that is most of the time and memory of a ranking.
// streamPprof reads the protobuf as it comes, with providers/internal/protowalk: a
// sample's bytes are kept (its location ids and values, packed) in an arena of blocks,
// locations, functions and mappings as a few integers each, and strings once (frames
// name the same strings).
// Samples are aggregated once the tables are complete, since writers put the tables
// after the samples. Every check profile.Parse makes (wire types per field, string
// indices, unique non-zero ids, references that resolve, value counts, the first string
// empty, a second time_nanos) is made too; a profile that fails one, or that the
// stricter protowire rejects, is errNotStreamed: refused, as a legacy profile when
// legacyPprof tells one.

// errNotStreamed is a profile the streaming reader does not take.
var errNotStreamed = errors.New("not a profile the streaming reader takes")

// pprofStream is what the streaming reader keeps of a profile.
type pprofStream struct {
	strs []string
	// strBytes are the bytes of strs; limit is the bound the profile went beyond.
	strBytes int64
	limit    *providers.LimitError
	// maxStr is the largest string index referenced; negStr records a negative one.
	maxStr int64
	negStr bool

	types     [][2]int64 // sample types: type and unit string indices
	dflt      int64      // default_sample_type
	timeNanos int64

	mapIDs  []uint64
	mapFile []int64

	funcIDs []uint64
	funcs   []pprofFunc

	locIDs    []uint64
	locs      []pprofLoc
	lineFuncs []uint64 // function ids of every location line

	samples sampleArena

	// Indices of the ids, made by check.
	locIndex, funcIndex, mapIndex index
}

func (p *pprofStream) str(x int64) {
	if x < 0 {
		p.negStr = true
	}
	p.maxStr = max(p.maxStr, x)
}

type pprofFunc struct{ name, file, start int64 }

// pprofLoc is a location; its lines' functions are lineFuncs[lines:] up to the next
// location's.
type pprofLoc struct {
	mapping, address uint64
	lines            int
}

// sampleArena keeps sample payloads, each behind its length, in blocks of up to 1 MiB.
type sampleArena struct {
	blocks [][]byte
	n      int
}

func (a *sampleArena) add(b []byte) {
	need := binary.MaxVarintLen64 + len(b)
	last := len(a.blocks) - 1
	if last < 0 || cap(a.blocks[last])-len(a.blocks[last]) < need {
		size := 4 << 10 // doubling to 1 MiB, so that a small profile stays small
		if last >= 0 {
			size = min(2*cap(a.blocks[last]), 1<<20)
		}
		a.blocks = append(a.blocks, make([]byte, 0, max(size, need)))
		last++
	}
	blk := protowire.AppendVarint(a.blocks[last], uint64(len(b)))
	a.blocks[last] = append(blk, b...)
	a.n++
}

// each calls f with every sample payload in order.
func (a *sampleArena) each(f func([]byte) error) error {
	for _, blk := range a.blocks {
		for len(blk) > 0 {
			n, k := protowire.ConsumeVarint(blk)
			b := blk[k : k+int(n)]
			blk = blk[k+int(n):]
			if err := f(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamPprof reads a profile with the streaming reader.
func streamPprof(r io.Reader, o Options) (*Sampled, PprofInfo, error) {
	raw := NewInput(r)
	in := &raw
	if raw.fill(2) && sourcefile.IsGzip(raw.buf[raw.i:raw.n]) {
		zr, err := gzip.NewReader(&raw)
		if err != nil {
			return nil, PprofInfo{}, errNotStreamed
		}
		// The input may itself be decompressed already (a gzip inside the gzip).
		unzipped := NewInput(&limitedReader{r: zr, max: maxPprofBytes,
			err: pprofLimit(maxPprofBytes, "bytes", fmt.Sprintf("decompresses to more than %d bytes", maxPprofBytes))})
		in = &unzipped
	}
	if in.AtEnd() { // an empty profile is not one
		return nil, PprofInfo{}, errNotStreamed
	}
	p := &pprofStream{}
	ok := p.read(protowalk.NewReader(in, 64<<10))
	if p.limit != nil {
		return nil, PprofInfo{}, p.limit
	}
	var lim *providers.LimitError
	if errors.As(in.err, &lim) || errors.As(raw.err, &lim) {
		return nil, PprofInfo{}, lim
	}
	if !ok || !p.check() {
		return nil, PprofInfo{}, errNotStreamed
	}
	return p.aggregate(o)
}

// Read implements io.Reader over what the input has not consumed, for gzip and for
// the streaming reader's protowalk.Reader.
func (in *Input) Read(b []byte) (int, error) {
	if !in.fill(1) {
		return 0, in.err
	}
	n := copy(b, in.buf[in.i:in.n])
	in.i += n
	return n, nil
}

// read reads the Profile message to the end of the input.
func (p *pprofStream) read(in *protowalk.Reader) bool {
	for !in.AtEnd() {
		tag, err := in.Varint()
		if err != nil {
			return false // the data ends or is malformed, or the read or decompression failed
		}
		f := protowalk.Field{Num: tag >> 3, Type: protowire.Type(tag & 7)}
		switch f.Type {
		case protowire.VarintType:
			if f.Value, err = in.Varint(); err != nil {
				return false
			}
		case protowire.Fixed64Type, protowire.Fixed32Type:
			n := uint64(8)
			if f.Type == protowire.Fixed32Type {
				n = 4
			}
			if _, err := in.Discard(n); err != nil {
				return false
			}
		case protowire.BytesType:
			n, err := in.Varint()
			if err != nil || n > math.MaxInt32 {
				return false
			}
			if f.Num == 6 && !p.strFits(n) {
				return false
			}
			if f.Bytes, err = in.Bytes(n); err != nil {
				return false
			}
		default:
			return false
		}
		if !p.field(f) {
			return false
		}
	}
	return true
}

// strFits reports whether a string of n bytes fits the string table's bounds, setting
// limit when it does not.
func (p *pprofStream) strFits(n uint64) bool {
	switch {
	case len(p.strs) >= maxPprofStrings:
		p.limit = pprofLimit(maxPprofStrings, "strings", fmt.Sprintf("has more than %d strings in its string table", maxPprofStrings))
	case n > maxPprofStringBytes || p.strBytes+int64(n) > maxPprofStringBytes:
		p.limit = pprofLimit(maxPprofStringBytes, "bytes", fmt.Sprintf("has a string table of more than %d bytes", maxPprofStringBytes))
	default:
		return true
	}
	return false
}

// field takes one field of the Profile message.
func (p *pprofStream) field(f protowalk.Field) bool {
	isMsg, isInt := f.Type == protowire.BytesType, f.Type == protowire.VarintType
	data := f.Bytes
	switch f.Num {
	case 1, 11: // sample_type, period_type: ValueType{type, unit}
		var vt [2]uint64
		if !isMsg || !varints(data, vt[:]) {
			return false
		}
		p.str(int64(vt[0]))
		p.str(int64(vt[1]))
		if f.Num == 1 {
			p.types = append(p.types, [2]int64{int64(vt[0]), int64(vt[1])})
		}
	case 2: // sample
		if !isMsg {
			return false
		}
		p.samples.add(data)
	case 3: // mapping: id, memory_start, memory_limit, file_offset, filename, build_id, 4 flags
		var m [10]uint64
		if !isMsg || !varints(data, m[:]) {
			return false
		}
		p.str(int64(m[4]))
		p.str(int64(m[5]))
		p.mapIDs, p.mapFile = Push(p.mapIDs, m[0]), Push(p.mapFile, int64(m[4]))
	case 4: // location: id, mapping_id, address, line (repeated Line), is_folded
		var id, mapping, address uint64
		lines := len(p.lineFuncs)
		if !isMsg || !protowalk.Each(data, func(g protowalk.Field) bool {
			switch {
			case g.Num == 0 || g.Num > 5:
				return true
			case g.Num == 4: // Line: function_id, line, column
				var ln [3]uint64
				p.lineFuncs = Push(p.lineFuncs, 0)
				if g.Type != protowire.BytesType || !varints(g.Bytes, ln[:]) {
					return false
				}
				p.lineFuncs[len(p.lineFuncs)-1] = ln[0]
			case g.Type != protowire.VarintType:
				return false
			case g.Num == 1:
				id = g.Value
			case g.Num == 2:
				mapping = g.Value
			case g.Num == 3:
				address = g.Value
			}
			return true
		}) {
			return false
		}
		p.locIDs, p.locs = Push(p.locIDs, id), Push(p.locs, pprofLoc{mapping: mapping, address: address, lines: lines})
	case 5: // function: id, name, system_name, filename, start_line
		var fn [5]uint64
		if !isMsg || !varints(data, fn[:]) {
			return false
		}
		for _, x := range fn[1:4] {
			p.str(int64(x))
		}
		p.funcIDs = Push(p.funcIDs, fn[0])
		p.funcs = Push(p.funcs, pprofFunc{name: int64(fn[1]), file: int64(fn[3]), start: int64(fn[4])})
	case 6: // string_table
		if !isMsg || len(p.strs) == 0 && len(data) > 0 {
			return false // profile.Parse requires string_table[0] == ""
		}
		if !p.strFits(uint64(len(data))) {
			return false
		}
		p.strBytes += int64(len(data))
		p.strs = Push(p.strs, string(data))
	case 7, 8, 15: // drop_frames, keep_frames, doc_url
		if !isInt {
			return false
		}
		p.str(int64(f.Value))
	case 9: // time_nanos; a second one means concatenated profiles
		if !isInt || p.timeNanos != 0 {
			return false
		}
		p.timeNanos = int64(f.Value)
	case 10, 12: // duration_nanos, period
		return isInt
	case 13: // comment
		return f.Varints(func(x uint64) bool { p.str(int64(x)); return true })
	case 14: // default_sample_type
		if !isInt {
			return false
		}
		p.dflt = int64(f.Value)
	}
	return true
}

// varints decodes a message whose fields 1 to len(out) are integers into out (the last
// occurrence of a field wins, as in protobuf; field 0 and later fields are skipped).
func varints(data []byte, out []uint64) bool {
	return protowalk.Each(data, func(f protowalk.Field) bool {
		if f.Num == 0 || f.Num > uint64(len(out)) {
			return true
		}
		out[f.Num-1] = f.Value
		return f.Type == protowire.VarintType
	})
}

// index maps ids to positions: a slice when the ids are dense, else a map.
type index struct {
	dense []int32 // position+1 by id
	m     map[uint64]int32
}

// newIndex indexes ids, refusing a zero or repeated id.
func newIndex(ids []uint64) (index, bool) {
	var top uint64
	for _, id := range ids {
		top = max(top, id)
	}
	var x index
	if top <= uint64(4*len(ids)+1024) {
		x.dense = make([]int32, top+1)
	} else {
		x.m = make(map[uint64]int32, len(ids))
	}
	for i, id := range ids {
		if id == 0 {
			return x, false
		}
		if x.dense != nil {
			if x.dense[id] != 0 {
				return x, false
			}
			x.dense[id] = int32(i + 1)
		} else {
			if _, dup := x.m[id]; dup {
				return x, false
			}
			x.m[id] = int32(i + 1)
		}
	}
	return x, true
}

// at is the position of id, or -1.
func (x index) at(id uint64) int {
	if x.dense != nil {
		if id < uint64(len(x.dense)) {
			return int(x.dense[id]) - 1
		}
		return -1
	}
	if i, ok := x.m[id]; ok {
		return int(i) - 1
	}
	return -1
}

// check makes the checks of profile.Parse that need the whole profile, but for the
// samples (aggregate checks those), and indexes the ids.
func (p *pprofStream) check() bool {
	p.str(p.dflt)
	if p.negStr || len(p.strs) == 0 || p.maxStr >= int64(len(p.strs)) {
		return false
	}
	if len(p.types) == 0 && p.samples.n > 0 {
		return false
	}
	var ok1, ok2, ok3 bool
	p.mapIndex, ok1 = newIndex(p.mapIDs)
	p.funcIndex, ok2 = newIndex(p.funcIDs)
	p.locIndex, ok3 = newIndex(p.locIDs)
	if !(ok1 && ok2 && ok3) {
		return false
	}
	for _, fn := range p.lineFuncs {
		if p.funcIndex.at(fn) < 0 {
			return false
		}
	}
	return true
}

// aggregate chooses the sample type and aggregates the samples. A sample that fails
// profile.Parse's checks makes the profile errNotStreamed, even after another error
// (a bound reached, an unknown sample type), which only stands for a valid profile.
func (p *pprofStream) aggregate(o Options) (*Sampled, PprofInfo, error) {
	var types, units []string
	for _, t := range p.types {
		types, units = append(types, p.strs[t[0]]), append(units, p.strs[t[1]])
	}
	idx, info, err := pprofSampleType(types, units, p.strs[p.dflt], o.SampleType)
	if err != nil {
		var smp pprofSample
		if p.samples.each(func(b []byte) error { return p.sample(b, &smp, 0) }) != nil {
			return nil, PprofInfo{}, errNotStreamed
		}
		return nil, info, err
	}
	s := newPprofSampled(info.SampleUnit, o)
	// At most a frame per function and per location without lines.
	frameBound := len(p.funcs)
	for l, loc := range p.locs {
		if l+1 < len(p.locs) && p.locs[l+1].lines == loc.lines || l+1 == len(p.locs) && len(p.lineFuncs) == loc.lines {
			frameBound++
		}
	}
	s.reserve(min(frameBound, maxFrames))
	frames := make([]locFrames, len(p.locs))
	var list []int
	var smp pprofSample
	stack := make([]int, 0, 64)
	var bound error
	si := -1
	err = p.samples.each(func(b []byte) error {
		if err := p.sample(b, &smp, idx); err != nil {
			return err
		}
		if bound != nil {
			return nil // a bound was reached: only checking now
		}
		si++
		stack = stack[:0]
		for li := len(smp.locs) - 1; li >= 0; li-- { // root first
			l := smp.locs[li]
			f := frames[l]
			if f.n == 0 {
				start := len(list)
				if list, bound = p.locationFrames(s, l, list); bound != nil {
					return nil
				}
				f = locFrames{int32(start), int32(len(list) - start)}
				frames[l] = f
			}
			if int(f.n) > MaxStackFrames-len(stack) {
				bound = pprofStackLimit(si)
				return nil
			}
			for fi := f.start + f.n - 1; fi >= f.start; fi-- { // callers of inlined frames first
				stack = append(stack, list[fi])
			}
		}
		bound = s.Add(stack, 1, float64(smp.weight))
		return nil
	})
	if err != nil {
		return nil, PprofInfo{}, errNotStreamed
	}
	if bound != nil {
		return nil, info, bound
	}
	return s, info, nil
}

// pprofStackLimit is the LimitError of sample si (counted from 0), whose locations' lines
// make a stack of more than MaxStackFrames frames.
func pprofStackLimit(si int) *providers.LimitError {
	return StackLimit(fmt.Sprintf("pprof sample %d (its locations' lines, counted at every reference)", si))
}

// locFrames are the frames of a location in the aggregation's list, leaf-most (inlined)
// first; n is 0 until they are interned (a location has at least one).
type locFrames struct{ start, n int32 }

// locationFrames interns the frames of location l and appends them to list.
func (p *pprofStream) locationFrames(s *Sampled, l int, list []int) ([]int, error) {
	loc := p.locs[l]
	end := len(p.lineFuncs)
	if l+1 < len(p.locs) {
		end = p.locs[l+1].lines
	}
	if loc.lines == end {
		f := Frame{Function: fmt.Sprintf("0x%x", loc.address)}
		if m := p.mapIndex.at(loc.mapping); m >= 0 {
			f.File = p.strs[p.mapFile[m]]
		}
		i, err := s.Frame(f)
		return append(list, i), err
	}
	for _, id := range p.lineFuncs[loc.lines:end] {
		fn := p.funcs[p.funcIndex.at(id)]
		i, err := s.Frame(Frame{Function: p.strs[fn.name], File: p.strs[fn.file], Line: fn.start})
		if err != nil {
			return list, err
		}
		list = append(list, i)
	}
	return list, nil
}

// pprofSample is one decoded sample: its location positions, leaf first, and the value
// of the chosen sample type.
type pprofSample struct {
	locs   []int
	weight int64
}

// sample decodes and checks one sample as profile.Parse does.
func (p *pprofStream) sample(b []byte, smp *pprofSample, idx int) error {
	smp.locs, smp.weight = smp.locs[:0], 0
	values := 0
	ok := protowalk.Each(b, func(f protowalk.Field) bool {
		switch f.Num {
		case 1, 2: // location_id, value: packed (as writers write them) or not
			return f.Varints(func(x uint64) bool { return p.sampleInt(f.Num, x, smp, idx, &values) })
		case 3:
			return p.label(f.Type, f.Bytes)
		}
		return true
	})
	if !ok || values != len(p.types) {
		return errNotStreamed
	}
	return nil
}

// sampleInt takes one location id (field 1) or value (field 2) of a sample.
func (p *pprofStream) sampleInt(field, x uint64, smp *pprofSample, idx int, values *int) bool {
	if field == 2 {
		if *values == idx {
			smp.weight = int64(x)
		}
		*values++
		return true
	}
	l := p.locIndex.at(x)
	smp.locs = append(smp.locs, l)
	return l >= 0
}

// label checks a sample label's string indices as profile.Parse resolves them: the key
// always, then the string value, or else the unit of a numeric value.
func (p *pprofStream) label(typ protowire.Type, data []byte) bool {
	var l [4]uint64 // key, str, num, num_unit
	if typ != protowire.BytesType || !varints(data, l[:]) {
		return false
	}
	key, str, unit := int64(l[0]), int64(l[1]), int64(l[3])
	if str != 0 {
		unit = 0 // not resolved; index 0 is always valid here
	}
	for _, x := range [...]int64{key, str, unit} {
		if x < 0 || x >= int64(len(p.strs)) {
			return false
		}
	}
	return true
}
