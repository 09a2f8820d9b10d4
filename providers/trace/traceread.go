package trace

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// maxTraceBytes bounds the decompressed bytes one trace read may yield.
const maxTraceBytes = 64 << 30

// scan is one read of a trace: the nested slices in start order, and what the decoder
// counted and named on the way.
type scan struct {
	stats     *tracemodel.Stats
	perfetto  *perfetto.Info
	unordered int64
	misnested int64
	tracks    map[int64]tracemodel.Track
	threads   map[[2]int64]string
	processes map[int64]string
	// traceProcessor is set when trace_processor_shell read the slices.
	traceProcessor bool
}

// names collects track descriptions and metadata names for the rows.
type names struct{ s *scan }

func (n names) Track(t tracemodel.Track) { n.s.tracks[t.ID] = t }
func (n names) ThreadName(pid, tid int64, name string) {
	n.s.threads[[2]int64{pid, tid}] = name
}
func (n names) ProcessName(pid int64, name string) { n.s.processes[pid] = name }

// read decodes in (through trace_processor_shell when tp is not nil, else through its
// source's slices, sliceSource) and calls visit for every slice in start order with its
// parent and depth on its track. visit's Nested and its Args are reused after it
// returns: a visitor that keeps one keeps a copy (Nested.Clone).
func read(ctx context.Context, in providers.Input, tp *traceProcessor, visit func(*tracemodel.Nested) error) (*scan, error) {
	s := &scan{tracks: map[int64]tracemodel.Track{}, threads: map[[2]int64]string{}, processes: map[int64]string{}}
	if tp != nil {
		if err := tp.read(ctx, in, s, visit); err != nil {
			return nil, err
		}
		return s, nil
	}
	src, ok := sourceOf(in).(sliceSource)
	if !ok {
		return nil, unsupported(in)
	}
	nest := tracemodel.NewNester(tracemodel.DefaultNesterOptions, names{s}, visit)
	if err := src.slices(ctx, nest, s); err != nil {
		return nil, err
	}
	if err := nest.Flush(); err != nil {
		return nil, err
	}
	s.unordered, s.misnested = nest.Unordered(), nest.Overlaps()
	return s, nil
}

// slice is one selected slice with what its row needs.
type slice struct {
	tracemodel.Nested
	kind    string
	launch  *int64
	launchN *string
}

func ownSlice(s *slice) { s.Nested = s.Nested.Clone() }

func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// threadName and processName resolve a track's names from the trace's metadata.
func (s *scan) threadName(track int64) *string {
	t, ok := s.tracks[track]
	if !ok {
		return nil
	}
	if t.Async {
		// An async track is not a thread.
		return nil
	}
	if n, ok := s.threads[[2]int64{t.PID, t.TID}]; ok {
		return &n
	}
	if t.Name != "" {
		return &t.Name
	}
	return nil
}

func (s *scan) processName(track int64) *string {
	t, ok := s.tracks[track]
	if !ok {
		return nil
	}
	if n, ok := s.processes[t.PID]; ok {
		return &n
	}
	return nil
}

// metrics are the decoder's counts every trace operation reports.
func (s *scan) metrics() map[string]any {
	m := map[string]any{
		"event_count":            s.stats.Events,
		"track_count":            len(s.tracks),
		"instant_count":          s.stats.Instants,
		"counter_count":          s.stats.Counters,
		"flow_count":             s.stats.Flows,
		"unmatched_end_count":    s.stats.UnmatchedEnds,
		"unfinished_begin_count": s.stats.UnfinishedBegins,
	}
	if s.unordered > 0 {
		m["unordered_slice_count"] = s.unordered
	}
	if s.misnested > 0 {
		m["misnested_slice_count"] = s.misnested
	}
	if s.stats.InvalidIntervals > 0 {
		m["invalid_interval_count"] = s.stats.InvalidIntervals
	}
	return m
}

// limitations are what this read could not do.
func (s *scan) limitations() []string {
	var out []string
	if s.stats.Truncated {
		out = append(out, "The Trace Event array ends without its closing bracket (the format allows a truncated trace); every complete event before the end was read.")
	}
	if s.stats.UnmatchedEnds > 0 || s.stats.UnfinishedBegins > 0 {
		out = append(out, fmt.Sprintf("%d end events had no open begin and %d begins were still open at the end of the trace; neither became a slice.", s.stats.UnmatchedEnds, s.stats.UnfinishedBegins))
	}
	if n := s.stats.InvalidIntervals; n > 0 {
		out = append(out, fmt.Sprintf("%d records end before they start, or lack a start or an end (invalid_interval_count); they are not slices and are not listed.", n))
	}
	if s.traceProcessor {
		out = append(out, "Perfetto's trace_processor_shell read this trace (it holds no track events the native decoder reads): slices are its slice table with a positive duration, ids its slice ids, parent and depth as it nests them; arguments are not read.")
	}
	if s.unordered > 0 {
		out = append(out, fmt.Sprintf("%d slices arrived too far out of start order on their track to be nested; they have no parent and depth 0.", s.unordered))
	}
	if s.misnested > 0 {
		out = append(out, fmt.Sprintf("%d slices overlap a slice on their track without nesting inside it; each is listed as the child of the innermost slice that contains it and is no slice's parent.", s.misnested))
	}
	if p := s.perfetto; p != nil {
		if p.Cut != nil {
			out = append(out, fmt.Sprintf("The Perfetto trace is cut short: %s.", p.Cut))
		}
		if n := p.UnreadDataPackets(); n > 0 {
			out = append(out, fmt.Sprintf("%d data packets were not read natively (packets skipped by kind: %s); Perfetto's trace_processor_shell reads them.", n, unreadKinds(p.UnreadDataByKind())))
		}
		if p.InvalidStatePackets > 0 {
			out = append(out, fmt.Sprintf("%d packets that need their sequence's incremental state came while it was invalid (before the sequence's first incremental-state clear, or after a packet loss until the next clear); they were not read, as trace_processor drops them.", p.InvalidStatePackets))
		}
		if p.UndefinedInterned > 0 {
			out = append(out, fmt.Sprintf("%d event names or categories name an interned id their sequence never defined; they read as <unnamed> or null.", p.UndefinedInterned))
		}
		if p.MixedClocks {
			out = append(out, "Timestamps come from more than one clock domain and are not converted to one: slices of different clocks are not comparable.")
		}
		if p.UnresolvedTimestamps > 0 {
			out = append(out, fmt.Sprintf("%d track events had no timestamp that could be resolved (a sequence clock no ClockSnapshot defined, a timestamp delta without a ThreadDescriptor reference, or none at all); they were skipped.", p.UnresolvedTimestamps))
		}
		if p.OutOfRangeTimestamps > 0 {
			out = append(out, fmt.Sprintf("%d track events had a timestamp or end that is negative or beyond 2^63-1 ns (an overflow when scaled); they were skipped.", p.OutOfRangeTimestamps))
		}
		if p.NegativeDurations > 0 {
			out = append(out, fmt.Sprintf("%d slices ended before they began (an end before its begin, or a negative legacy duration); they are not slices and are not listed.", p.NegativeDurations))
		}
	}
	return out
}

// nanos renders a nanosecond figure: a JSON integer within +-(2^53-1), else its exact
// decimal string.
func nanos(v int64) any {
	const safe = 1<<53 - 1
	if v > safe || v < -safe {
		return strconv.FormatInt(v, 10)
	}
	return v
}

// bigNanos renders an exact nanosecond sum like nanos.
func bigNanos(b *big.Int) any {
	if b.IsInt64() {
		return nanos(b.Int64())
	}
	return b.String()
}

// displayName renders a slice name for a row: an Itanium C++ symbol demangled, with the
// name as written returned beside it; otherwise sliceName's, and no mangled name.
func displayName(n string) (string, *string) {
	if d, ok := demangled(n); ok {
		return d, &n
	}
	return sliceName(n), nil
}

// sliceName renders an empty name as <unnamed>.
func sliceName(n string) string {
	if n == "" {
		return "<unnamed>"
	}
	return n
}

func parent(n *tracemodel.Nested) *int64 {
	if n.ParentID < 0 {
		return nil
	}
	p := n.ParentID
	return &p
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// unreadKinds names the packet kinds of by, largest first.
func unreadKinds(by map[string]int64) string {
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if by[kinds[i]] != by[kinds[j]] {
			return by[kinds[i]] > by[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return strings.Join(parts, ", ")
}
