package cpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
	"github.com/flameox/flameox/providers/providerstest"
)

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
		lim := sampledtest.ExpectLimit(t, func() error {
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

// decodeFile decodes data as a CPU source of format through the bounded reader.
func decodeFile(t *testing.T, data []byte, name string, format gen.Format) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := decode(context.Background(), providerstest.Input(t, path, format), gen.EffectiveLimits{MaxInputBytes: 1 << 30}, sampled.Options{})
	return err
}

// Issue 21: a gzipped Speedscope document far smaller than the 64 MiB JSON bound that
// decompresses beyond it fails at the bound, typed, as the bound on decompressed bytes.
func TestSpeedscopeGzipBomb(t *testing.T) {
	data := sampledtest.Gzip(t, func(w io.Writer) {
		io.WriteString(w, `{"shared":{"frames":[`)
		sampledtest.Repeat(bytes.Repeat([]byte(`{"name":"a"},`), 1<<16), 160)(w) // 130 MiB
		io.WriteString(w, `{"name":"a"}]},"profiles":[]}`)
	})
	t.Logf("bomb of %d bytes", len(data))
	lim := sampledtest.ExpectLimit(t, func() error { return decodeFile(t, data, "bomb.json.gz", gen.FormatPySpy) })
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
	var s *sampled.Sampled
	peak := testtool.PeakHeap(func() { s, err = DecodeCPUProfile(bytes.NewReader(deep), sampled.Options{Edges: true}) })
	if err != nil || s.Samples != 1 {
		t.Fatalf("60k chain: %v", err)
	}
	t.Logf("60k chain of %d bytes: peak heap %d MiB", len(deep), peak>>20)
	if !testtool.Race && peak > sampledtest.MaxBombHeap {
		t.Errorf("peak heap %d MiB, want below %d MiB", peak>>20, sampledtest.MaxBombHeap>>20)
	}
	lim := sampledtest.ExpectLimit(t, func() error {
		_, err := DecodeCPUProfile(bytes.NewReader(cpuprofileChain(maxCPUProfileDepth+10)), sampled.Options{})
		return err
	})
	if lim.Limit != maxCPUProfileDepth {
		t.Errorf("limit %d, want %d", lim.Limit, maxCPUProfileDepth)
	}
}

// A cycle in the node tree stays a DecodeError.
func TestCPUProfileCycle(t *testing.T) {
	doc := `{"nodes":[{"id":1,"callFrame":{"functionName":"a"},"children":[2]},{"id":2,"callFrame":{"functionName":"b"},"hitCount":1,"children":[1]}]}`
	_, err := DecodeCPUProfile(strings.NewReader(doc), sampled.Options{})
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
			lim := sampledtest.ExpectLimit(t, func() error { return tt.decode(bytes.NewReader(tt.doc)) })
			if lim.Unit != tt.unit {
				t.Errorf("unit %q, want %q", lim.Unit, tt.unit)
			}
		})
	}
}

func speedscope(r io.Reader) error { _, _, err := DecodeSpeedscope(r, sampled.Options{}); return err }
func cpuprofile(r io.Reader) error { _, err := DecodeCPUProfile(r, sampled.Options{}); return err }

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
// built: a stack of sampled.MaxStackFrames frames decodes and one more frame fails
// typed. A V8 CPU profile, whose samples name nodes that stand for their whole path, is
// bounded by its depth in nodes (TestCPUProfileDeepChain), and in all by
// sampled.MaxSampledFrames. The pprof reader's stack bombs are sampled's
// TestPprofStackBombs.
func TestStackDepthBound(t *testing.T) {
	collapsed := func(n int) []byte { return []byte(strings.Repeat("a;", n-1) + "a 1\n") }
	perfScript := func(n int) []byte {
		return []byte("prog 1 1.0: cycles:\n" + strings.Repeat("\tffffffff81000000 f+0x1 (/lib/x.so)\n", n) + "\n")
	}
	speedscopeDoc := func(n int) []byte {
		return []byte(`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[` +
			strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]],"weights":[1]}]}`)
	}
	decodeCollapsed := func(r io.Reader) error { _, err := DecodeCollapsed(r, sampled.Options{Edges: true}); return err }
	decodePerfScript := func(r io.Reader) error { _, err := DecodePerfScript(r, sampled.Options{Edges: true}); return err }
	chainDepth := 1 << 14
	tests := []struct {
		name   string
		doc    []byte
		decode func(io.Reader) error
		// limit and unit are the LimitError's; limit is 0 when the document decodes.
		limit int64
		unit  string
	}{
		{"collapsed at the bound", collapsed(sampled.MaxStackFrames), decodeCollapsed, 0, ""},
		{"collapsed past the bound", collapsed(sampled.MaxStackFrames + 1), decodeCollapsed, sampled.MaxStackFrames, "stack_frames"},
		{"perf script at the bound", perfScript(sampled.MaxStackFrames), decodePerfScript, 0, ""},
		{"perf script past the bound", perfScript(sampled.MaxStackFrames + 1), decodePerfScript, sampled.MaxStackFrames, "stack_frames"},
		{"speedscope at the bound", speedscopeDoc(sampled.MaxStackFrames), speedscope, 0, ""},
		{"speedscope past the bound", speedscopeDoc(sampled.MaxStackFrames + 1), speedscope, sampled.MaxStackFrames, "stack_frames"},
		{"cpuprofile samples beyond the total", cpuprofileSampled(chainDepth, sampled.MaxSampledFrames/chainDepth+1), cpuprofile, sampled.MaxSampledFrames, "stack_frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := sampledtest.Allocated(func() { err = tt.decode(bytes.NewReader(tt.doc)) })
			t.Logf("document of %d KiB: %v (%d MiB allocated)", len(tt.doc)>>10, err, n>>20)
			if !testtool.Race && n > sampledtest.MaxStackAlloc {
				t.Errorf("%d MiB allocated, want at most %d MiB", n>>20, sampledtest.MaxStackAlloc>>20)
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
