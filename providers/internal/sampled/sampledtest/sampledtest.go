// Package sampledtest holds what the tests of package sampled and of the families that
// read through it (providers/cpu, providers/memory) share: the invariants every decoded
// profile keeps (Check), the bounds a hostile input is decoded within (ExpectLimit,
// Allocated), and generated pprof profiles (SyntheticPprof, PprofFile, WriteOnce). It is
// imported by tests only.
package sampledtest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// finite fails the target when x is NaN or infinite.
func finite(t *testing.T, what string, x float64) {
	t.Helper()
	if math.IsNaN(x) || math.IsInf(x, 0) {
		t.Fatalf("%s = %v", what, x)
	}
}

// atMost reports whether a <= b up to the rounding of a sum of floats.
func atMost(a, b float64) bool { return a <= b+1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-12 }

// Check checks what every sampled decoder returns: counts >= 0, finite weights,
// parallel per-frame slices, the samples with a stack (self samples per frame) plus the
// unresolved ones equal to Samples, and edges between interned frames. signed is set
// for pprof, whose sample values may be negative (diff profiles); the other formats'
// weights are >= 0, and then a frame's self weight is at most its inclusive weight and
// both at most the total.
func Check(t *testing.T, s *sampled.Sampled, signed bool) {
	t.Helper()
	if s == nil {
		t.Fatal("nil profile without an error")
	}
	fuzztool.NonNegative(t, "Samples", s.Samples)
	fuzztool.NonNegative(t, "Unresolved", s.Unresolved)
	finite(t, "TotalWeight", s.TotalWeight)
	finite(t, "Scale", s.Scale)
	if !(s.Scale > 0) {
		t.Fatalf("Scale = %v", s.Scale)
	}
	if !signed && s.TotalWeight < 0 {
		t.Fatalf("TotalWeight = %v < 0", s.TotalWeight)
	}
	n := len(s.Frames)
	if len(s.Self) != n || len(s.Inclusive) != n || len(s.SelfSamples) != n {
		t.Fatalf("%d frames, %d self, %d inclusive, %d self samples", n, len(s.Self), len(s.Inclusive), len(s.SelfSamples))
	}
	selfSamples := s.Unresolved
	for i := range n {
		fuzztool.NonNegative(t, "SelfSamples", s.SelfSamples[i])
		finite(t, "Self", s.Self[i])
		finite(t, "Inclusive", s.Inclusive[i])
		if !signed && (s.Self[i] < 0 || !atMost(s.Self[i], s.Inclusive[i]) || !atMost(s.Inclusive[i], s.TotalWeight)) {
			t.Fatalf("frame %d: self %v, inclusive %v, total %v", i, s.Self[i], s.Inclusive[i], s.TotalWeight)
		}
		selfSamples += s.SelfSamples[i]
		if selfSamples < 0 {
			t.Fatalf("self samples overflow")
		}
	}
	if selfSamples != s.Samples {
		t.Fatalf("self samples %d + unresolved %d != Samples %d", selfSamples-s.Unresolved, s.Unresolved, s.Samples)
	}
	for k, e := range s.Edges {
		if k[0] < 0 || k[0] >= n || k[1] < 0 || k[1] >= n {
			t.Fatalf("edge %v between frames outside [0, %d)", k, n)
		}
		fuzztool.NonNegative(t, "edge Samples", e.Samples)
		finite(t, "edge Weight", e.Weight)
		if e.Samples > s.Samples {
			t.Fatalf("edge %v has %d of %d samples", k, e.Samples, s.Samples)
		}
	}
	// Ranking must take whatever was decoded.
	if got := s.Hotspots(); len(got) != n {
		t.Fatalf("%d hotspots of %d frames", len(got), n)
	}
	if inc := s.HotspotOrder(true); len(inc) != n {
		t.Fatalf("inclusive order has %d of %d frames", len(inc), n)
	}
}

// MaxBombHeap is the heap a decoder may grow to on a hostile input before failing: a
// memory bound, far above what the bounds allow and far below what the bombs expand to.
const MaxBombHeap = 256 << 20

// ExpectLimit runs decode under PeakHeap and requires a LimitError and a bounded heap.
func ExpectLimit(t *testing.T, decode func() error) *providers.LimitError {
	t.Helper()
	var err error
	peak := testtool.PeakHeap(func() { err = decode() })
	var lim *providers.LimitError
	if !errors.As(err, &lim) {
		t.Fatalf("got %T %v, want a LimitError", err, err)
	}
	t.Logf("%v (peak heap %d MiB)", lim, peak>>20)
	if !testtool.Race && peak > MaxBombHeap {
		t.Errorf("peak heap %d MiB, want below %d MiB", peak>>20, MaxBombHeap>>20)
	}
	return lim
}

// MaxStackAlloc is what decoding a stack bomb may allocate in all: far above what a
// stack of sampled.MaxStackFrames frames costs, far below what the bombs expand to.
const MaxStackAlloc = 64 << 20

// Allocated is the bytes f allocates (the growth of runtime.MemStats.TotalAlloc).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Gzip compresses what write writes.
func Gzip(t *testing.T, write func(w io.Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	write(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Repeat writes chunk n times.
func Repeat(chunk []byte, n int) func(io.Writer) {
	return func(w io.Writer) {
		for range n {
			w.Write(chunk)
		}
	}
}

// PprofFile writes (once) a synthetic CPU profile of the given numbers of functions and
// samples (see SyntheticPprof), gzip-compressed as Go writes profiles.
func PprofFile(tb testing.TB, functions, samples int) string {
	return WriteOnce(tb, fmt.Sprintf("flameox-bench-tree-%d-%d.pprof.gz", functions, samples), func() *profile.Profile {
		return SyntheticPprof(functions, samples)
	})
}

// WriteOnce writes the profile build returns to name in testtool.BenchDir, gzip-compressed
// as Go writes profiles, unless the file is there already, and returns its path.
func WriteOnce(tb testing.TB, name string, build func() *profile.Profile) string {
	p := filepath.Join(testtool.BenchDir(), name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	prof := build()
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		tb.Fatal(err)
	}
	if err := prof.Write(f); err != nil { // Write gzips
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// SyntheticPprof builds a CPU profile shaped like a real one: one location per function,
// every eighth with a second, inlined function on its line list, arranged in a call tree
// of 32 levels (each function called from one of the level above); 2,000 more locations
// carry an address only, in a mapped library. A sample is the path from the root to a
// random function, with a library frame on top one time in twenty, and carries a count
// and a time in nanoseconds.
func SyntheticPprof(functions, samples int) *profile.Profile {
	r := rand.New(rand.NewPCG(1, 2))
	lib := &profile.Mapping{ID: 1, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/usr/lib/libfast.so"}
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Mapping: []*profile.Mapping{lib},
	}
	for i := 0; i < functions; i++ {
		prof.Function = append(prof.Function, &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("example.com/pkg%d.Function%d", i%200, i),
			Filename: fmt.Sprintf("/src/pkg%d/file%d.go", i%200, i%7), StartLine: int64(i % 1000)})
	}
	for i := 0; i < functions; i++ {
		loc := &profile.Location{ID: uint64(i + 1), Address: uint64(0x400000 + i*16), Line: []profile.Line{{Function: prof.Function[i], Line: int64(i%1000 + 3)}}}
		if i%8 == 0 { // an inlined call: the callee's line comes first
			callee := prof.Function[(i+1)%functions]
			loc.Line = append([]profile.Line{{Function: callee, Line: 9}}, loc.Line...)
		}
		prof.Location = append(prof.Location, loc)
	}
	var libs []*profile.Location
	for i := 0; i < 2000; i++ {
		loc := &profile.Location{ID: uint64(functions + i + 1), Mapping: lib, Address: lib.Start + uint64(i*64)}
		prof.Location = append(prof.Location, loc)
		libs = append(libs, loc)
	}
	// Level l holds about functions*l/528 functions (1+2+...+32 = 528 parts).
	parent := make([]int, functions)
	levelStart := []int{0}
	for l, next := 1, 1; l <= 32 && next < functions; l++ {
		size := max(1, functions*l/528)
		prev := levelStart[len(levelStart)-1]
		levelStart = append(levelStart, next)
		for i := next; i < min(functions, next+size); i++ {
			parent[i] = prev + r.IntN(next-prev)
		}
		next += size
		if l == 32 || next >= functions {
			for i := next; i < functions; i++ { // the remainder joins the last level
				parent[i] = prev + r.IntN(levelStart[len(levelStart)-1]-prev)
			}
		}
	}
	parent[0] = -1
	for i := 0; i < samples; i++ {
		s := &profile.Sample{Value: []int64{1 + int64(r.IntN(3)), 10_000_000 * (1 + int64(r.IntN(3)))}}
		if r.IntN(20) == 0 {
			s.Location = append(s.Location, libs[r.IntN(len(libs))])
		}
		for f := r.IntN(functions); f >= 0; f = parent[f] { // leaf first, as pprof stores stacks
			s.Location = append(s.Location, prof.Location[f])
		}
		prof.Sample = append(prof.Sample, s)
	}
	return prof
}
