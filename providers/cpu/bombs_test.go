package cpu

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	gen "github.com/flameox/flameox/generated/contracts"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// maxBombHeap is the heap a decoder may grow to on a hostile input before failing: a
// memory bound, far above what the bounds allow and far below what the bombs expand to.
const maxBombHeap = 256 << 20

// expectLimit runs decode under PeakHeap and requires a LimitError and a bounded heap.
func expectLimit(t *testing.T, decode func() error) *providers.LimitError {
	t.Helper()
	var err error
	peak := testtool.PeakHeap(func() { err = decode() })
	var lim *providers.LimitError
	if !errors.As(err, &lim) {
		t.Fatalf("got %T %v, want a LimitError", err, err)
	}
	t.Logf("%v (peak heap %d MiB)", lim, peak>>20)
	if !testtool.Race && peak > maxBombHeap {
		t.Errorf("peak heap %d MiB, want below %d MiB", peak>>20, maxBombHeap>>20)
	}
	return lim
}

// marshalWriter writes CPython marshal data by hand.
type marshalWriter struct{ bytes.Buffer }

func (w *marshalWriter) i32(code byte, v int32) {
	w.WriteByte(code)
	binary.Write(&w.Buffer, binary.LittleEndian, v)
}

func (w *marshalWriter) key(line int32) {
	w.Write([]byte{')', 3, 'z', 1, 'a'})
	w.i32('i', line)
	w.Write([]byte{'z', 1, 'f'})
}

// pstatsRefBomb is a pstats dict of n functions whose callers are all one dict of m
// callers, written once with FLAG_REF and then named by reference ('r' 0): about
// 18m+45n bytes that expand to n*m caller edges.
func pstatsRefBomb(n, m int) []byte {
	var w marshalWriter
	w.WriteByte('{')
	for i := 0; i < n; i++ {
		w.key(int32(1_000_000 + i))
		w.Write([]byte{')', 5})
		for range 4 {
			w.i32('i', 1)
		}
		if i == 0 {
			w.WriteByte('{' | flagRef)
			for j := 0; j < m; j++ {
				w.key(int32(j))
				w.i32('i', 1)
			}
			w.WriteByte('0')
		} else {
			w.i32('r', 0)
		}
	}
	w.WriteByte('0')
	return w.Bytes()
}

// Issue 21: a pstats file of under a megabyte whose marshal references repeat one
// callers dict for every function expands to 10^8 edges (gigabytes); it fails typed
// at the edge bound, with or without the edges kept.
func TestPstatsReferenceBomb(t *testing.T) {
	b := pstatsRefBomb(20_000, 5_000)
	t.Logf("bomb of %d bytes", len(b))
	for _, keep := range []bool{true, false} {
		lim := expectLimit(t, func() error {
			_, err := decodePstatsTable(bytes.NewReader(b), keep)
			return err
		})
		if lim.Unit != "caller_edges" {
			t.Errorf("unit %q, want caller_edges", lim.Unit)
		}
	}
	// The same shape, small, still decodes: references are valid marshal.
	fs, err := DecodePstats(bytes.NewReader(pstatsRefBomb(3, 4)))
	if err != nil || len(fs) != 3 || len(fs[2].Callers) != 4 {
		t.Fatalf("small shared-callers file: %v, %d functions", err, len(fs))
	}
}

// gzipOf compresses what write writes.
func gzipOf(t *testing.T, write func(w io.Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	write(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// repeat writes chunk n times.
func repeat(chunk []byte, n int) func(io.Writer) {
	return func(w io.Writer) {
		for range n {
			w.Write(chunk)
		}
	}
}

// decodePprofFile decodes a pprof file as the CPU family does: through the bounded
// reader, which removes the outer gzip layer.
func decodePprofFile(t *testing.T, data []byte) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bomb.pb.gz")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: path, Format: gen.FormatPprof, Size: int64(len(data))}
	limits := gen.EffectiveLimits{MaxInputBytes: 1 << 30}
	_, err := decode(context.Background(), in, limits, Options{})
	return err
}

// Issue 21: a pprof file holding a gzip stream inside its gzip stream: the streaming
// reader does not take it, and profile.Parse used to un-gzip the inner layer without a
// bound. The inner layer here expands to 128 MiB.
func TestPprofGzipInsideGzip(t *testing.T) {
	inner := gzipOf(t, repeat(bytes.Repeat([]byte{0xff}, 1<<20), 128))
	outer := gzipOf(t, func(w io.Writer) { w.Write(inner) })
	t.Logf("bomb of %d bytes", len(outer))
	lim := expectLimit(t, func() error { return decodePprofFile(t, outer) })
	if lim.Limit != maxParsedPprofBytes {
		t.Errorf("limit %d, want %d", lim.Limit, maxParsedPprofBytes)
	}
}

// Issue 21: small gzipped pprof files whose string table is huge: many strings, or
// long ones.
func TestPprofStringTableBombs(t *testing.T) {
	empty := []byte{0x32, 0x00} // string_table: ""
	long := append([]byte{0x32, 0x80, 0x80, 0x40}, bytes.Repeat([]byte{'a'}, 1<<20)...)
	for _, c := range []struct {
		name string
		data []byte
		unit string
	}{
		{"many strings", gzipOf(t, repeat(empty, 8<<20)), "strings"},
		{"long strings", gzipOf(t, func(w io.Writer) { w.Write(empty); repeat(long, 128)(w) }), "bytes"},
		{"one declared string", append(append([]byte(nil), empty...), 0x32, 0xff, 0xff, 0xff, 0xff, 0x07), "bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("bomb of %d bytes", len(c.data))
			lim := expectLimit(t, func() error {
				_, _, err := DecodePprof(bytes.NewReader(c.data), Options{})
				return err
			})
			if lim.Unit != c.unit {
				t.Errorf("unit %q, want %q", lim.Unit, c.unit)
			}
			if err := decodePprofFile(t, c.data); !errors.As(err, new(*providers.LimitError)) {
				t.Errorf("through the bounded reader: %v", err)
			}
		})
	}
}

// decodeFile decodes data as a CPU source of format through the bounded reader.
func decodeFile(t *testing.T, data []byte, name string, format gen.Format) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: path, Format: format, Size: int64(len(data))}
	_, err := decode(context.Background(), in, gen.EffectiveLimits{MaxInputBytes: 1 << 30}, Options{})
	return err
}

// Issue 21: a gzipped Speedscope document far smaller than the 64 MiB JSON bound that
// decompresses beyond it fails at the bound, typed, as the bound on decompressed bytes.
func TestSpeedscopeGzipBomb(t *testing.T) {
	data := gzipOf(t, func(w io.Writer) {
		io.WriteString(w, `{"shared":{"frames":[`)
		repeat(bytes.Repeat([]byte(`{"name":"a"},`), 1<<16), 160)(w) // 130 MiB
		io.WriteString(w, `{"name":"a"}]},"profiles":[]}`)
	})
	t.Logf("bomb of %d bytes", len(data))
	lim := expectLimit(t, func() error { return decodeFile(t, data, "bomb.json.gz", gen.FormatPySpy) })
	if lim.Limit != maxJSONProfileBytes || lim.Unit != "bytes" {
		t.Errorf("limit %d %s, want %d bytes", lim.Limit, lim.Unit, maxJSONProfileBytes)
	}
}

// cpuprofileChain is a V8 CPU profile whose nodes form one chain n deep, the leaf hit.
func cpuprofileChain(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"nodes":[`)
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"callFrame":{"functionName":"f%d","url":"a.js","lineNumber":%d,"columnNumber":0},"hitCount":%d`, i, i%7, i, min(1, i/n))
		if i < n {
			fmt.Fprintf(&b, `,"children":[%d]`, i+1)
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// Issue 21: a V8 CPU profile with a 60k-deep node chain copied every ancestor's stack
// per node (O(depth²) memory); it now decodes in linear memory, and a chain beyond
// maxCPUProfileDepth fails typed.
func TestCPUProfileDeepChain(t *testing.T) {
	deep := cpuprofileChain(60_000)
	var err error
	var s *Sampled
	peak := testtool.PeakHeap(func() { s, err = DecodeCPUProfile(bytes.NewReader(deep), Options{Edges: true}) })
	if err != nil || s.Samples != 1 {
		t.Fatalf("60k chain: %v", err)
	}
	t.Logf("60k chain of %d bytes: peak heap %d MiB", len(deep), peak>>20)
	if !testtool.Race && peak > maxBombHeap {
		t.Errorf("peak heap %d MiB, want below %d MiB", peak>>20, maxBombHeap>>20)
	}
	lim := expectLimit(t, func() error {
		_, err := DecodeCPUProfile(bytes.NewReader(cpuprofileChain(maxCPUProfileDepth+10)), Options{})
		return err
	})
	if lim.Limit != maxCPUProfileDepth {
		t.Errorf("limit %d, want %d", lim.Limit, maxCPUProfileDepth)
	}
}

// A cycle in the node tree stays a DecodeError.
func TestCPUProfileCycle(t *testing.T) {
	doc := `{"nodes":[{"id":1,"callFrame":{"functionName":"a"},"children":[2]},{"id":2,"callFrame":{"functionName":"b"},"hitCount":1,"children":[1]}]}`
	_, err := DecodeCPUProfile(strings.NewReader(doc), Options{})
	var de *providers.DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Message, "cycle") {
		t.Fatalf("got %v, want the cycle DecodeError", err)
	}
}

// Issue 21: whole-document JSON profiles within the 64 MiB byte bound whose millions of
// tiny values (`0`, `[]`, `{}`) decode to several times the document; the shape is
// bounded before anything is built, and fails typed naming the count.
func TestJSONProfileShapeBombs(t *testing.T) {
	const n = 16 << 20
	tests := []struct {
		name   string
		doc    []byte
		decode func(io.Reader) error
		unit   string
	}{
		{"speedscope frame references", testtool.Repeated(`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[`, "0", n, `]],"weights":[1]}]}`),
			speedscope, "values"},
		{"speedscope empty samples", testtool.Repeated(`{"shared":{"frames":[]},"profiles":[{"type":"sampled","unit":"none","samples":[`, "[]", n/2, `],"weights":[]}]}`),
			speedscope, "objects_and_arrays"},
		{"speedscope long name", []byte(`{"shared":{"frames":[{"name":"` + strings.Repeat("a", 48<<20) + `"}]},"profiles":[]}`),
			speedscope, "bytes"},
		{"cpuprofile empty nodes", testtool.Repeated(`{"nodes":[`, "{}", n/2, `]}`), cpuprofile, "objects_and_arrays"},
		{"cpuprofile samples", testtool.Repeated(`{"nodes":[{"id":1,"hitCount":1}],"samples":[`, "1", n, `]}`), cpuprofile, "values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Logf("document of %d MiB", len(tt.doc)>>20)
			lim := expectLimit(t, func() error { return tt.decode(bytes.NewReader(tt.doc)) })
			if lim.Unit != tt.unit {
				t.Errorf("unit %q, want %q", lim.Unit, tt.unit)
			}
		})
	}
}

func speedscope(r io.Reader) error { _, _, err := DecodeSpeedscope(r, Options{}); return err }
func cpuprofile(r io.Reader) error { _, err := DecodeCPUProfile(r, Options{}); return err }

// stackPprof is the protobuf of a CPU profile of locations locations, each of lines
// inlined lines of its own function (a frame per location), and samples samples that
// each name the locations in turn, refs times in all: stacks of lines*refs frames. With
// one location of 30,000 lines named 100,000 times it is issue 40's 215 KiB profile,
// whose stack is 3*10^9 frames.
func stackPprof(locations, lines, refs, samples int) []byte {
	msg := func(b []byte, field protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, field, protowire.BytesType), m)
	}
	varint := func(b []byte, field protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, field, protowire.VarintType), v)
	}
	b := msg(nil, 1, varint(varint(nil, 1, 1), 2, 2)) // sample_type: cpu nanoseconds
	var ids []byte
	for j := range refs {
		ids = protowire.AppendVarint(ids, uint64(j%locations+1))
	}
	smp := varint(msg(nil, 1, ids), 2, 10) // location_id (packed), value
	for range samples {
		b = msg(b, 2, smp)
	}
	for i := range locations {
		loc := varint(nil, 1, uint64(i+1))
		line := msg(nil, 4, varint(nil, 1, uint64(i+1))) // Line: function_id
		for range lines {
			loc = append(loc, line...)
		}
		b = msg(b, 4, loc)
	}
	for i := range locations { // Function: id, name, filename, start_line
		b = msg(b, 5, varint(varint(varint(varint(nil, 1, uint64(i+1)), 2, 3), 4, 4), 5, uint64(i)))
	}
	for _, s := range []string{"", "cpu", "nanoseconds", "main.f", "a.go"} {
		b = msg(b, 6, []byte(s))
	}
	return b
}

// maxStackAlloc is what decoding a stack bomb may allocate in all: far above what a
// stack of maxStackFrames frames costs, far below what the bombs expand to.
const maxStackAlloc = 64 << 20

// allocated is the bytes f allocates (the growth of runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// expectStackLimit runs decode and requires the LimitError of limit stack frames, with
// at most maxStackAlloc bytes allocated.
func expectStackLimit(t *testing.T, limit int64, decode func() error) {
	t.Helper()
	var err error
	n := allocated(func() { err = decode() })
	var lim *providers.LimitError
	if !errors.As(err, &lim) {
		t.Fatalf("got %T %v, want a LimitError", err, err)
	}
	t.Logf("%v (%d MiB allocated)", lim, n>>20)
	if lim.Limit != limit || lim.Unit != "stack_frames" || lim.Source != 0 {
		t.Errorf("limit %d %s at source %d, want %d stack_frames at source 0", lim.Limit, lim.Unit, lim.Source, limit)
	}
	if !testtool.Race && n > maxStackAlloc {
		t.Errorf("%d MiB allocated, want at most %d MiB", n>>20, maxStackAlloc>>20)
	}
}

// Issue 40: a pprof profile whose locations' inlined lines, named again and again by its
// samples, expand to stacks beyond maxStackFrames, or to more than maxSampledFrames
// frames over all the samples, fails typed in little memory, by either reader and
// through the bounded file reader; stacks up to the bound decode.
func TestPprofStackBombs(t *testing.T) {
	perSample := maxSampledFrames/maxStackFrames + 1
	tests := []struct {
		name                            string
		locations, lines, refs, samples int
		// limit is the LimitError's bound; 0 when the profile decodes.
		limit int64
	}{
		{"issue 40: 30,000 lines named 100,000 times", 1, 30_000, 100_000, 1, maxStackFrames},
		{"recursion one frame past the bound", 1, 1, maxStackFrames + 1, 1, maxStackFrames},
		{"inlined lines past the bound", 1, maxStackFrames + 1, 1, 1, maxStackFrames},
		{"samples at the bound beyond the total", 1, maxStackFrames / 2, 2, perSample, maxSampledFrames},
		{"distinct frames at the bound", maxStackFrames, 1, maxStackFrames, 1, 0},
		{"inlined frames at the bound", 4096, 16, 4096, 2, 0},
		{"recursion at the bound", 1, 1, maxStackFrames, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := stackPprof(tt.locations, tt.lines, tt.refs, tt.samples)
			t.Logf("profile of %d KiB", len(data)>>10)
			readers := []struct {
				name   string
				decode func() (*Sampled, error)
			}{
				{"streaming", func() (*Sampled, error) { s, _, err := DecodePprof(bytes.NewReader(data), Options{}); return s, err }},
				{"profile.Parse", func() (*Sampled, error) { s, _, err := parsedPprof(data, Options{}); return s, err }},
			}
			for _, r := range readers {
				if tt.limit != 0 {
					expectStackLimit(t, tt.limit, func() error { _, err := r.decode(); return err })
					continue
				}
				s, err := r.decode()
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if s.Samples != int64(tt.samples) || len(s.Frames) != tt.locations || s.stackFrames != int64(tt.samples*tt.lines*tt.refs) {
					t.Errorf("%s: %d samples, %d frames, %d stack frames", r.name, s.Samples, len(s.Frames), s.stackFrames)
				}
			}
			if tt.limit != 0 {
				expectStackLimit(t, tt.limit, func() error { return decodePprofFile(t, gzipOf(t, func(w io.Writer) { w.Write(data) })) })
			}
		})
	}
}

// cpuprofileSampled is cpuprofileChain(depth) with samples samples of its leaf.
func cpuprofileSampled(depth, samples int) []byte {
	doc := cpuprofileChain(depth)
	doc = append(doc[:len(doc)-1], `,"samples":[`...)
	doc = append(doc, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%d,", depth), samples), ",")...)
	doc = append(doc, `],"timeDeltas":[`...)
	doc = append(doc, strings.TrimSuffix(strings.Repeat("1,", samples), ",")...)
	return append(doc, "]}"...)
}

// Issue 40: every sampled format bounds a stack as it reads it, before the stack is
// built: a stack of maxStackFrames frames decodes and one more frame fails typed. A V8
// CPU profile, whose samples name nodes that stand for their whole path, is bounded by
// its depth in nodes (TestCPUProfileDeepChain), and in all by maxSampledFrames.
func TestStackDepthBound(t *testing.T) {
	collapsed := func(n int) []byte { return []byte(strings.Repeat("a;", n-1) + "a 1\n") }
	perfScript := func(n int) []byte {
		return []byte("prog 1 1.0: cycles:\n" + strings.Repeat("\tffffffff81000000 f+0x1 (/lib/x.so)\n", n) + "\n")
	}
	speedscopeDoc := func(n int) []byte {
		return []byte(`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[` +
			strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]],"weights":[1]}]}`)
	}
	decodeCollapsed := func(r io.Reader) error { _, err := DecodeCollapsed(r, Options{Edges: true}); return err }
	decodePerfScript := func(r io.Reader) error { _, err := DecodePerfScript(r, Options{Edges: true}); return err }
	chainDepth := 1 << 14
	tests := []struct {
		name   string
		doc    []byte
		decode func(io.Reader) error
		// limit and unit are the LimitError's; limit is 0 when the document decodes.
		limit int64
		unit  string
	}{
		{"collapsed at the bound", collapsed(maxStackFrames), decodeCollapsed, 0, ""},
		{"collapsed past the bound", collapsed(maxStackFrames + 1), decodeCollapsed, maxStackFrames, "stack_frames"},
		{"perf script at the bound", perfScript(maxStackFrames), decodePerfScript, 0, ""},
		{"perf script past the bound", perfScript(maxStackFrames + 1), decodePerfScript, maxStackFrames, "stack_frames"},
		{"speedscope at the bound", speedscopeDoc(maxStackFrames), speedscope, 0, ""},
		{"speedscope past the bound", speedscopeDoc(maxStackFrames + 1), speedscope, maxStackFrames, "stack_frames"},
		{"cpuprofile samples beyond the total", cpuprofileSampled(chainDepth, maxSampledFrames/chainDepth+1), cpuprofile, maxSampledFrames, "stack_frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { err = tt.decode(bytes.NewReader(tt.doc)) })
			t.Logf("document of %d KiB: %v (%d MiB allocated)", len(tt.doc)>>10, err, n>>20)
			if !testtool.Race && n > maxStackAlloc {
				t.Errorf("%d MiB allocated, want at most %d MiB", n>>20, maxStackAlloc>>20)
			}
			if tt.limit == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var lim *providers.LimitError
			if !errors.As(err, &lim) || lim.Limit != tt.limit || lim.Unit != tt.unit {
				t.Fatalf("got %v, want the LimitError of %d %s", err, tt.limit, tt.unit)
			}
		})
	}
}
