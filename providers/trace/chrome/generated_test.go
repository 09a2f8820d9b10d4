package chrome

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// TestDecodeChromeGenerated checks the decoder and the Nester on generated traces (the
// torch.profiler-like one and one indented as torch writes it) with Python's reading of
// them.
func TestDecodeChromeGenerated(t *testing.T) {
	for name, write := range map[string]func(io.Writer) error{
		"trace":  func(w io.Writer) error { return chrometest.WriteTrace(w, 3000, 5, 3) },
		"kineto": func(w io.Writer) error { return chrometest.WriteKinetoTrace(w, 400_000, 3) },
	} {
		t.Run(name, func(t *testing.T) {
			path := t.TempDir() + "/gen.json"
			var buf bytes.Buffer
			if err := write(&buf); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			want := chrometest.PythonTruth(t, path, 5000)
			var out []tracemodel.Nested
			n := tracemodel.NewNester(tracemodel.NesterOptions{}, nil, func(x *tracemodel.Nested) error { out = append(out, *x); return nil })
			st, err := Decode(context.Background(), &buf, 0, Limits{}, n)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Stats, *st); diff != "" {
				t.Errorf("stats (-python +go):\n%s", diff)
			}
			sameNesting(t, want, out)
			if n.Unordered() != 0 {
				t.Errorf("unordered %d with B roots announced", n.Unordered())
			}
		})
	}
}

var benchTrace []byte

type nopSink struct{}

func (nopSink) Slice(*tracemodel.Event) error   { return nil }
func (nopSink) Track(tracemodel.Track)          {}
func (nopSink) ThreadName(int64, int64, string) {}
func (nopSink) ProcessName(int64, string)       {}

// SlicePacked makes nopSink a PackedSink, as the pipeline's recorder is.
func (nopSink) SlicePacked(int64, int64, int64, int64, string, string, string, *tracemodel.PackedArgs) error {
	return nil
}

// BenchmarkDecodeChrome decodes (and nests) a generated ~64 MiB Chrome trace in memory.
func BenchmarkDecodeChrome(b *testing.B) {
	benchGenerated(b, &benchTrace, func(w io.Writer) error { return chrometest.WriteTrace(w, 310_000, 16, 1) })
}

var benchSteps []byte

// BenchmarkDecodeChromeSteps decodes (and nests) 64 MiB of the runtime benchmark's
// trace shape (B/E steps of Kineto-like X events) in memory.
func BenchmarkDecodeChromeSteps(b *testing.B) {
	benchGenerated(b, &benchSteps, func(w io.Writer) error { return chrometest.WriteStepTrace(w, 64<<20) })
}

var benchKineto []byte

// BenchmarkDecodeChromeKineto decodes (and nests) 128 MiB of a torch.profiler trace as
// torch writes it (chrometest.WriteKinetoTrace: indented, Kineto's args) in memory.
func BenchmarkDecodeChromeKineto(b *testing.B) {
	benchGenerated(b, &benchKineto, func(w io.Writer) error { return chrometest.WriteKinetoTrace(w, 128<<20, 1) })
}

// benchGenerated runs benchDecode over the trace write writes, written once into
// *trace.
func benchGenerated(b *testing.B, trace *[]byte, write func(io.Writer) error) {
	if *trace == nil {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			b.Fatal(err)
		}
		*trace = buf.Bytes()
	}
	benchDecode(b, *trace)
}

// benchDecode measures decoding alone, decoding and nesting on one goroutine, and the
// staged read (parsing on a goroutine of its own) with nesting, as read does it.
func benchDecode(b *testing.B, benchTrace []byte) {
	for _, name := range []string{"decode", "decode+nest", "staged+nest"} {
		nest, staged := name != "decode", name == "staged+nest"
		b.Run(name, func(b *testing.B) {
			run := func() {
				var sink tracemodel.Sink = nopSink{}
				var n *tracemodel.Nester
				if nest {
					n = tracemodel.NewNester(tracemodel.NesterOptions{}, nil, func(*tracemodel.Nested) error { return nil })
					sink = n
				}
				decode := Decode
				if staged {
					decode = DecodeStaged
				}
				if _, err := decode(context.Background(), bytes.NewReader(benchTrace), 0, Limits{}, sink); err != nil {
					b.Fatal(err)
				}
				if n != nil {
					if err := n.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.SetBytes(int64(len(benchTrace)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run()
			}
			b.StopTimer()
			peak := testtool.PeakHeap(run)
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			runtime.GC()
		})
	}
}
