package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/trace/chrome"
	"github.com/flameox/flameox/providers/trace/chrome/chrometest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// How pipelineRun reads a trace: chrome.Decode into the Nester, chrome.Decode through
// decodePipelined (as Perfetto traces are read), or chrome.DecodeStaged (as Chrome
// traces are read).
type readMode int

const (
	readDirect readMode = iota
	readPipelined
	readStaged
)

func (m readMode) String() string { return [...]string{"direct", "pipelined", "staged"}[m] }

// pipelineRun nests a trace as mode says, recording what the visitor saw; visit may
// fail.
func pipelineRun(ctx context.Context, data []byte, mode readMode, visit func(*tracemodel.Nested) error) ([]tracemodel.Nested, *tracemodel.Stats, error) {
	got, _, st, err := pipelineMeta(ctx, data, mode, visit)
	return got, st, err
}

// pipelineMeta is pipelineRun that also returns the tracks and names announced.
func pipelineMeta(ctx context.Context, data []byte, mode readMode, visit func(*tracemodel.Nested) error) ([]tracemodel.Nested, *metaList, *tracemodel.Stats, error) {
	var got []tracemodel.Nested
	meta := &metaList{}
	nest := tracemodel.NewNester(tracemodel.NesterOptions{Window: 512, MaxHeld: 2048}, meta, func(s *tracemodel.Nested) error {
		got = append(got, s.Clone())
		if visit != nil {
			return visit(s)
		}
		return nil
	})
	var st *tracemodel.Stats
	decode := func(ctx context.Context, sink tracemodel.Sink) (err error) {
		st, err = chrome.Decode(ctx, bytes.NewReader(data), 0, chrome.Limits{}, sink)
		return err
	}
	var err error
	switch mode {
	case readDirect:
		err = decode(ctx, nest)
	case readPipelined:
		err = decodePipelined(ctx, nest, decode)
	case readStaged:
		st, err = chrome.DecodeStaged(ctx, bytes.NewReader(data), 0, chrome.Limits{}, nest)
	}
	if err == nil {
		err = nest.Flush()
	}
	if len(meta.Tracks) == 0 && err == nil {
		return nil, nil, nil, fmt.Errorf("no tracks announced")
	}
	return got, meta, st, err
}

// metaList records the tracks and names a Nester forwards, in order.
type metaList struct {
	Tracks  []tracemodel.Track
	Threads [][3]any
	Procs   [][2]any
}

func (l *metaList) Track(t tracemodel.Track) { l.Tracks = append(l.Tracks, t) }
func (l *metaList) ThreadName(pid, tid int64, name string) {
	l.Threads = append(l.Threads, [3]any{pid, tid, name})
}
func (l *metaList) ProcessName(pid int64, name string) { l.Procs = append(l.Procs, [2]any{pid, name}) }

func pipelineTrace(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := chrometest.WriteTrace(&buf, 20_000, 4, 3); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPipelineMatchesDirect checks that decoding on a goroutine of its own yields the
// same slices, in the same order, and the same counts.
func TestPipelineMatchesDirect(t *testing.T) {
	check := func(t *testing.T, data []byte) *metaList {
		t.Helper()
		want, wmeta, wst, err := pipelineMeta(context.Background(), data, readDirect, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []readMode{readPipelined, readStaged} {
			got, gmeta, gst, err := pipelineMeta(context.Background(), data, mode, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gst, wst) {
				t.Fatalf("%s read differs: %d slices (want %d), stats %+v (want %+v)", mode, len(got), len(want), gst, wst)
			}
			if diff := cmp.Diff(wmeta, gmeta); diff != "" {
				t.Fatalf("%s tracks and names differ (-direct +%s):\n%s", mode, mode, diff)
			}
		}
		return wmeta
	}
	check(t, pipelineTrace(t))
	read, named := 0, 0
	for _, name := range chrometest.CorpusTraces {
		t.Run(name, func(t *testing.T) {
			b, err := io.ReadAll(chrometest.OpenCorpus(t, name)) // skips without the corpus
			if err != nil {
				t.Fatal(err)
			}
			m := check(t, b)
			read++
			if len(m.Threads) > 0 && len(m.Procs) > 0 {
				named++
			}
		})
	}
	if read > 0 && named < 3 {
		t.Errorf("only %d corpus traces have both thread and process names to compare", named)
	}
}

// TestPipelineStops checks that a cancelled context and a failing visitor stop the
// decoder goroutine and return their error.
func TestPipelineStops(t *testing.T) {
	testtool.Short(t, "stops the decoder at many points")
	for _, mode := range []readMode{readPipelined, readStaged} {
		t.Run(mode.String(), func(t *testing.T) { pipelineStops(t, mode) })
	}
}

// spin keeps a slow visitor's loop from being optimized away.
var spin int

func pipelineStops(t *testing.T, mode readMode) {
	data := pipelineTrace(t)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := pipelineRun(ctx, data, mode, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	// Cancelled while reading, at many points and with a slow visitor, so that the
	// decoder is often waiting for an empty batch when it learns of it: what was
	// visited is a prefix of the whole read (no batch is handed over twice).
	all, _, err := pipelineRun(context.Background(), data, readDirect, nil)
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 40; it++ {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		got, _, err := pipelineRun(ctx, data, mode, func(*tracemodel.Nested) error {
			if n++; n == 3000+it*13 {
				cancel()
			}
			for i := 0; i < 2000; i++ {
				spin += i
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("context cancelled while reading: %v", err)
		}
		if len(got) > len(all) || !reflect.DeepEqual(got, all[:len(got)]) {
			t.Fatalf("cancelled at slice %d: the %d slices visited are not the first of the read", 3000+it*13, len(got))
		}
	}
	boom := errors.New("sink failed")
	for _, at := range []int{1, 700, 5000} {
		n := 0
		got, _, err := pipelineRun(context.Background(), data, mode, func(*tracemodel.Nested) error {
			if n++; n == at {
				return boom
			}
			return nil
		})
		if err != boom || len(got) != at {
			t.Fatalf("failing visitor at %d: %v after %d slices", at, err, len(got))
		}
	}
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines after the reads, %d before", g, before)
	}
}

// TestOverlapsMatchesBig checks the window predicate against big-integer arithmetic
// at the ends of int64.
func TestOverlapsMatchesBig(t *testing.T) {
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 62, -5, -1, 0, 1, 5, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	for _, ts := range vals {
		for _, dur := range vals {
			for _, start := range vals {
				for _, end := range vals {
					want := dur >= 0 && ts < end && new(big.Int).Add(big.NewInt(ts), big.NewInt(dur)).Cmp(big.NewInt(start)) > 0
					if got := overlaps(ts, dur, start, end); got != want {
						t.Fatalf("overlaps(%d, %d, %d, %d) = %v, want %v", ts, dur, start, end, got, want)
					}
				}
			}
		}
	}
}

type recordSink struct{ recs []pipeRec }

func (r *recordSink) Slice(e *tracemodel.Event) error {
	var p tracemodel.PackedArgs
	p.Pack(&e.Args)
	return r.SlicePacked(e.ID, e.TS, e.Dur, e.Track, e.Name, e.Category, e.Phase, &p)
}

func (r *recordSink) SlicePacked(id, ts, dur, track int64, name, cat, phase string, args *tracemodel.PackedArgs) error {
	r.recs = append(r.recs, pipeRec{kind: recSlice, id: id, ts: ts, dur: dur, track: track, name: name, cat: cat, phase: phaseByte(phase), args: *args})
	return nil
}

func (r *recordSink) Close(id int64) { r.recs = append(r.recs, pipeRec{kind: recClose, id: id}) }

func (r *recordSink) Open(id, track, ts int64) {
	r.recs = append(r.recs, pipeRec{kind: recOpen, id: id, track: track, ts: ts})
}

func (r *recordSink) Track(t tracemodel.Track) {
	r.recs = append(r.recs, pipeRec{kind: recTrack, id: t.ID, ts: t.PID, dur: t.TID, name: t.Name, async: t.Async})
}

func (r *recordSink) ThreadName(int64, int64, string) {}

func (r *recordSink) ProcessName(int64, string) {}

// BenchmarkNestSteps nests the slices of BenchmarkDecodeChromeSteps's trace, decoded
// once beforehand: the Nester's share of the pipeline's work.
func BenchmarkNestSteps(b *testing.B) {
	var buf bytes.Buffer
	if err := chrometest.WriteStepTrace(&buf, 64<<20); err != nil {
		b.Fatal(err)
	}
	rec := &recordSink{}
	if _, err := chrome.Decode(context.Background(), bytes.NewReader(buf.Bytes()), 0, chrome.Limits{}, rec); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := tracemodel.NewNester(tracemodel.NesterOptions{}, nil, func(*tracemodel.Nested) error { return nil })
		for j := 0; j < len(rec.recs); j += pipeBatch {
			if err := replay(n, rec.recs[j:min(j+pipeBatch, len(rec.recs))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := n.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
