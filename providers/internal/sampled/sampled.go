// Package sampled owns sampled profiles as the families read them: the aggregation of
// stacks into per-frame self and inclusive weights and caller-to-callee edges (Sampled),
// with the bounds on its frames, edges and stacks; the pprof format decoded into it
// (DecodePprof, DecodePprofStream: a streaming protobuf reader, which refuses pprof's
// legacy formats with the conversion to profile.proto); and the buffered Input
// the pprof reader and the CPU family's marshal (pstats) reader read through. It is a
// format, not a family: the CPU family reads CPU profiles with it, the memory family Go
// heap profiles (docs/decisions/0044-profile-package.md).
package sampled

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/flameox/flameox/providers"
)

// Frame is one stack frame of a sampled profile. Line and Column are 0 when unknown.
type Frame struct {
	Function string
	File     string
	Line     int64
	Column   int64
}

// String is "<file>:<line>:<function>", the form the function filter matches.
func (f Frame) String() string { return fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Function) }

// Bounds of one sampled profile.
const (
	maxFrames = 1_000_000
	maxEdges  = 1_000_000
)

// Bounds on the stacks of one sampled profile (issue 40). A format that names frames by
// reference lets a few bytes stand for many frames: a pprof location of 30,000 inlined
// lines named 100,000 times by one sample is a 215 KiB file whose stack is 3*10^9 frames,
// and a V8 node deep in its tree stands for its whole path each time a sample names it.
// Decoders count a stack's frames as they expand it and fail past MaxStackFrames, before
// the stack is built; Add fails once the stacks of all the samples pass MaxSampledFrames.
//
// MaxStackFrames is far beyond any real stack: profilers cut stacks off well below it (Go
// at 64 to 128 frames, Linux perf at 127 by default, V8 at 255, async-profiler at 2,048)
// and runtimes overflow first (Python's default recursion limit is 1,000 frames, Node's
// default stack holds about 10,000 small frames). MaxSampledFrames bounds the
// work of the aggregation, which visits every frame of every stack (a few nanoseconds a
// frame, about 100 with caller edges): a profile that reaches it holds millions of samples
// hundreds of frames deep, where text formats, which spell every frame out, need more than
// the 1 GiB input bound.
const (
	MaxStackFrames   = 1 << 16
	MaxSampledFrames = 1 << 28
)

// StackLimit is the LimitError of a stack of more than MaxStackFrames frames; what names
// the stack ("pprof sample 3").
func StackLimit(what string) *providers.LimitError {
	return &providers.LimitError{Limit: MaxStackFrames, Unit: "stack_frames",
		Message: fmt.Sprintf("%s has a stack of more than %d frames", what, MaxStackFrames)}
}

// Sampled is a sampled profile (CPU time, or a Go heap profile's sample type) aggregated
// as it is decoded: self and inclusive weight per frame and caller-to-callee edges, each
// counted once per sample.
type Sampled struct {
	// Unit of every reported weight: seconds, samples, or the profile's own unit.
	Unit string
	// Scale converts the accumulated raw weights to Unit when they are reported, so sums
	// of integer sample values stay exact until then.
	Scale       float64
	Frames      []Frame
	Self        []float64
	Inclusive   []float64
	SelfSamples []int64
	Samples     int64
	TotalWeight float64
	// Unresolved counts samples with an empty stack.
	Unresolved int64
	Edges      map[[2]int]*Edge

	index map[Frame]int
	edges bool
	adds  int64
	// stackFrames counts the frames of the stacks added, up to MaxSampledFrames.
	stackFrames int64
	seen        []int64 // by frame: the last Add call that counted it
	// edgeAt is Edges with the last Add call that counted each edge: one lookup per
	// frame of a stack.
	edgeAt map[[2]int]*edgeSeen
}

// edgeSeen is an edge and the last Add call that counted it.
type edgeSeen struct {
	*Edge
	seen int64
}

// Edge aggregates one caller-to-callee pair.
type Edge struct {
	Samples int64
	Weight  float64
}

// Options select what a decoder aggregates.
type Options struct {
	// Edges aggregates caller-to-callee edges (inspect_cpu_callers); ranking does not need
	// them.
	Edges bool
	// SampleType selects the pprof sample type; empty for the profile's default.
	SampleType string
}

// NewSampled returns an empty profile in unit.
func NewSampled(unit string, o Options) *Sampled {
	return &Sampled{Unit: unit, Scale: 1, edges: o.Edges, Edges: map[[2]int]*Edge{}, index: map[Frame]int{}, edgeAt: map[[2]int]*edgeSeen{}}
}

// reserve makes room for n frames.
func (s *Sampled) reserve(n int) {
	s.Frames = slices.Grow(s.Frames, n)
	s.Self = slices.Grow(s.Self, n)
	s.Inclusive = slices.Grow(s.Inclusive, n)
	s.SelfSamples = slices.Grow(s.SelfSamples, n)
	s.seen = slices.Grow(s.seen, n)
	if len(s.index) == 0 {
		s.index = make(map[Frame]int, n)
	}
}

// Frame interns f and returns its index.
func (s *Sampled) Frame(f Frame) (int, error) {
	if i, ok := s.index[f]; ok {
		return i, nil
	}
	if len(s.Frames) >= maxFrames {
		return 0, &providers.LimitError{Message: fmt.Sprintf("the profile has more than %d distinct frames", maxFrames), Limit: maxFrames}
	}
	i := len(s.Frames)
	s.index[f] = i
	s.Frames = append(s.Frames, f)
	s.Self = append(s.Self, 0)
	s.Inclusive = append(s.Inclusive, 0)
	s.SelfSamples = append(s.SelfSamples, 0)
	s.seen = append(s.seen, 0)
	return i, nil
}

// Add records count samples of total weight whose stack is frame indices from root to
// leaf. A negative sample count is a DecodeError; counts that overflow int64 (collapsed stacks and V8 hit counts are
// integers as written) are a LimitError, and a total weight that is no longer finite
// (large Speedscope weights or V8 time deltas) a DecodeError: every sum stays exact or
// finite, as the JSON result needs. A stack of more than MaxStackFrames frames, or one
// that takes the frames of all the stacks added beyond MaxSampledFrames, is a LimitError
// (decoders bound a stack before they build it; this is the bound on the whole profile).
func (s *Sampled) Add(stack []int, count int64, weight float64) error {
	if count < 0 {
		return &providers.DecodeError{Message: fmt.Sprintf("a sample count of %d; counts are >= 0", count)}
	}
	if count > math.MaxInt64-s.Samples {
		return &providers.LimitError{Message: "the profile holds more than 2^63-1 samples", Limit: math.MaxInt64, Unit: "samples"}
	}
	if total := s.TotalWeight + weight; math.IsNaN(total) || math.IsInf(total, 0) {
		return &providers.DecodeError{Message: "the profile's total sample weight is not a finite number"}
	}
	if len(stack) > MaxStackFrames {
		return StackLimit("a sample")
	}
	if int64(len(stack)) > MaxSampledFrames-s.stackFrames {
		return &providers.LimitError{Limit: MaxSampledFrames, Unit: "stack_frames",
			Message: fmt.Sprintf("the profile's samples have more than %d stack frames in all", MaxSampledFrames)}
	}
	s.stackFrames += int64(len(stack))
	s.Samples += count
	s.TotalWeight += weight
	if len(stack) == 0 {
		s.Unresolved += count
		return nil
	}
	s.adds++
	id := s.adds
	leaf := stack[len(stack)-1]
	s.Self[leaf] += weight
	s.SelfSamples[leaf] += count
	for i, f := range stack {
		if s.seen[f] != id {
			s.seen[f] = id
			s.Inclusive[f] += weight
		}
		if i == 0 || !s.edges {
			continue
		}
		k := [2]int{stack[i-1], f}
		e := s.edgeAt[k]
		if e == nil {
			if len(s.Edges) >= maxEdges {
				return &providers.LimitError{Message: fmt.Sprintf("the profile has more than %d distinct caller edges", maxEdges), Limit: maxEdges}
			}
			e = &edgeSeen{Edge: &Edge{}}
			s.Edges[k], s.edgeAt[k] = e.Edge, e
		}
		if e.seen == id {
			continue
		}
		e.seen = id
		e.Samples += count
		e.Weight += weight
	}
	return nil
}

// HotspotRow is one ranked frame.
type HotspotRow struct {
	Frame
	SelfWeight      float64
	InclusiveWeight float64
	SelfSamples     int64
}

// Hotspots ranks the frames by self weight, then inclusive weight, then identity.
func (s *Sampled) Hotspots() []HotspotRow {
	order := s.HotspotOrder(false)
	rows := make([]HotspotRow, len(order))
	for i, f := range order {
		rows[i] = s.Hotspot(int(f))
	}
	return rows
}

// Hotspot is the row of frame i.
func (s *Sampled) Hotspot(i int) HotspotRow {
	return HotspotRow{Frame: s.Frames[i], SelfWeight: s.Self[i] * s.Scale, InclusiveWeight: s.Inclusive[i] * s.Scale, SelfSamples: s.SelfSamples[i]}
}

// HotspotOrder is the frame indices in Hotspots order: by self weight, then inclusive
// weight, then identity; with inclusive, by inclusive weight first.
func (s *Sampled) HotspotOrder(inclusive bool) []int32 {
	order := make([]int32, len(s.Frames))
	for i := range order {
		order[i] = int32(i)
	}
	first, second := s.Self, s.Inclusive
	if inclusive {
		first, second = s.Inclusive, s.Self
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := Descending(first[a]*s.Scale, first[b]*s.Scale); c != 0 {
			return c
		}
		if c := Descending(second[a]*s.Scale, second[b]*s.Scale); c != 0 {
			return c
		}
		if frameLess(s.Frames[a], s.Frames[b]) {
			return -1
		}
		if frameLess(s.Frames[b], s.Frames[a]) {
			return 1
		}
		return cmp.Compare(a, b)
	})
	return order
}

// Descending orders x before y when x is larger; NaN comes last: the order of the
// hotspot rankings here and of the CPU family's pstats rankings.
func Descending(x, y float64) int {
	switch {
	case x > y:
		return -1
	case x < y:
		return 1
	case x == y:
		return 0
	}
	return cmp.Compare(y, x) // cmp.Compare orders NaN first
}

func frameLess(a, b Frame) bool {
	if a.Function != b.Function {
		return a.Function < b.Function
	}
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Column < b.Column
}

// EdgeRow is one caller-to-callee edge.
type EdgeRow struct {
	Caller, Callee Frame
	Samples        int64
	Weight         float64
}

// CallerEdges lists the edges that pass the filter, heaviest first.
func (s *Sampled) CallerEdges(function, direction string) []EdgeRow {
	needle := strings.ToLower(function)
	match := func(f Frame) bool { return needle == "" || strings.Contains(strings.ToLower(f.String()), needle) }
	var rows []EdgeRow
	for k, e := range s.Edges {
		caller, callee := s.Frames[k[0]], s.Frames[k[1]]
		if !KeepEdge(match(caller), match(callee), direction) {
			continue
		}
		rows = append(rows, EdgeRow{Caller: caller, Callee: callee, Samples: e.Samples, Weight: e.Weight * s.Scale})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Weight != b.Weight {
			return a.Weight > b.Weight
		}
		if a.Caller != b.Caller {
			return frameLess(a.Caller, b.Caller)
		}
		return frameLess(a.Callee, b.Callee)
	})
	return rows
}

// KeepEdge applies direction: callers keeps edges into a matching callee, callees edges out
// of a matching caller, both either.
func KeepEdge(callerMatches, calleeMatches bool, direction string) bool {
	switch direction {
	case "callers":
		return calleeMatches
	case "callees":
		return callerMatches
	}
	return callerMatches || calleeMatches
}
