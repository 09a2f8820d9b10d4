// Package tracemodeltest holds what the tests of the trace format readers share: a Sink
// that checks what a decoder delivers (Checker), one that keeps it (Recorder), and the
// invariants of a decoder's counts (CheckStats). It is imported by tests only.
package tracemodeltest

import (
	"fmt"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// Checker is a Sink that checks what a decoder delivers: every slice has Dur >= 0 and
// ID >= 0 and lies on a track announced before it; Slices counts them. Tracks must be
// set (an empty map).
type Checker struct {
	T      *testing.T
	Tracks map[int64]bool
	Slices int64
}

// Slice checks e.
func (s *Checker) Slice(e *tracemodel.Event) error {
	if e.Dur < 0 {
		s.T.Fatalf("slice %d has Dur %d < 0", e.ID, e.Dur)
	}
	if e.ID < 0 {
		s.T.Fatalf("slice ID %d < 0", e.ID)
	}
	if !s.Tracks[e.Track] {
		s.T.Fatalf("slice %d on unannounced track %d", e.ID, e.Track)
	}
	s.Slices++
	return nil
}

// Track, ThreadName and ProcessName note the tracks announced.
func (s *Checker) Track(t tracemodel.Track) { s.Tracks[t.ID] = true }

func (s *Checker) ThreadName(pid, tid int64, name string) {}

func (s *Checker) ProcessName(pid int64, name string) {}

// CheckStats fails t when a count of st is negative or st.Slices is not delivered, the
// slices the sink received.
func CheckStats(t *testing.T, st *tracemodel.Stats, delivered int64) {
	t.Helper()
	for what, n := range map[string]int64{"Events": st.Events, "Slices": st.Slices, "UnmatchedEnds": st.UnmatchedEnds,
		"UnfinishedBegins": st.UnfinishedBegins, "Instants": st.Instants, "Counters": st.Counters,
		"Flows": st.Flows, "Metadata": st.Metadata, "Ignored": st.Ignored} {
		fuzztool.NonNegative(t, what, n)
	}
	if st.Slices != delivered {
		t.Fatalf("Stats.Slices = %d, sink received %d", st.Slices, delivered)
	}
}

// Recorder is a Sink that keeps what it receives, with a copy of each slice's
// arguments; Errs lists the slices on tracks not announced before them.
type Recorder struct {
	Slices   []tracemodel.Event
	Tracks   []tracemodel.Track
	Threads  map[[2]int64]string
	Procs    map[int64]string
	Announce map[int64]bool
	Errs     []string
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{Threads: map[[2]int64]string{}, Procs: map[int64]string{}, Announce: map[int64]bool{}}
}

// Slice, Track, ThreadName and ProcessName keep what they receive.
func (r *Recorder) Slice(e *tracemodel.Event) error {
	if !r.Announce[e.Track] {
		r.Errs = append(r.Errs, fmt.Sprintf("slice %d on unannounced track %d", e.ID, e.Track))
	}
	c := *e
	var p tracemodel.PackedArgs
	p.Pack(&e.Args)
	c.Args = p.Expand(new(tracemodel.PackedArgs))
	r.Slices = append(r.Slices, c)
	return nil
}

func (r *Recorder) Track(t tracemodel.Track) {
	r.Announce[t.ID] = true
	r.Tracks = append(r.Tracks, t)
}

func (r *Recorder) ThreadName(pid, tid int64, name string) { r.Threads[[2]int64{pid, tid}] = name }

func (r *Recorder) ProcessName(pid int64, name string) { r.Procs[pid] = name }
