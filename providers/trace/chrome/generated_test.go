package chrome

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// TestDecodeChromeGenerated checks the decoder and the Nester on a generated trace with
// Python's reading of it.
func TestDecodeChromeGenerated(t *testing.T) {
	path := t.TempDir() + "/gen.json"
	var buf bytes.Buffer
	if err := chrometest.WriteTrace(&buf, 3000, 5, 3); err != nil {
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
	got := map[string][2]int64{}
	for _, x := range out {
		got[strconv.FormatInt(x.ID, 10)] = [2]int64{x.ParentID, int64(x.Depth)}
	}
	if diff := cmp.Diff(want.Nest, got); diff != "" {
		t.Errorf("nesting (-python +go):\n%s", diff)
	}
	if n.Unordered() != 0 {
		t.Errorf("unordered %d with B roots announced", n.Unordered())
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
	if benchTrace == nil {
		var buf bytes.Buffer
		if err := chrometest.WriteTrace(&buf, 310_000, 16, 1); err != nil {
			b.Fatal(err)
		}
		benchTrace = buf.Bytes()
	}
	benchDecode(b, benchTrace)
}

var benchSteps []byte

// BenchmarkDecodeChromeSteps decodes (and nests) 64 MiB of the runtime benchmark's
// trace shape (B/E steps of Kineto-like X events) in memory.
func BenchmarkDecodeChromeSteps(b *testing.B) {
	if benchSteps == nil {
		var buf bytes.Buffer
		if err := chrometest.WriteStepTrace(&buf, 64<<20); err != nil {
			b.Fatal(err)
		}
		benchSteps = buf.Bytes()
	}
	benchDecode(b, benchSteps)
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
