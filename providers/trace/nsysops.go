package trace

import (
	"context"
	"fmt"
	"math/big"
	"sort"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/nsys"
)

func ptr[T any](v T) *T { return &v }

// nsysOpMetrics name the count of each table of summarize_trace_operations, by the span
// kind of its rows (nsys.OpGroup.Kind).
var nsysOpMetrics = map[string]string{"kernel": "kernel_count", "memcpy": "memcpy_count", "memset": "memset_count",
	"runtime": "runtime_call_count", "nvtx": "nvtx_range_count", "osrt": "osrt_call_count"}

// nsysOp is one aggregated operation of an export.
type nsysOp struct {
	name, kind, event string
	calls, timed      int64
	total             *big.Int
	// covered is the part of total that nested calls and ranges on the same thread cover.
	covered u128
	max     int64
	streams []int64
}

// nsysOperations ranks an export's GPU activity, runtime API calls, NVTX ranges and OS
// runtime calls by (table, name), as nsys.Export.Operations groups them (a call whose
// end precedes its start counts as a call without a duration), with their self time.
func nsysOperations(ctx context.Context, x nsysSource, limits gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	defer done()
	c := newNsysOpTally(x.in, f)
	if err := src.Operations(ctx, f.nsysFilter(), c); err != nil {
		return nil, err
	}
	c.done()
	ops, events, missing, excluded, counts := c.ops, c.events, c.missing, c.excluded, c.counts
	sort.Slice(ops, func(i, j int) bool {
		a, b := ops[i], ops[j]
		return ranksBefore(a.total.Cmp(b.total), a.calls, b.calls, a.name, b.name, a.kind, b.kind)
	})
	m := map[string]any{"operation_count": len(ops), "event_count": events, "missing_duration_count": missing}
	for k, v := range counts {
		m[k] = v
	}
	var lim []string
	f.figures(m, excluded)
	switch {
	case len(ops) == 0 && excluded > 0:
		lim = append(lim, f.emptyNote(excluded, "calls and ranges"))
	case len(ops) == 0:
		lim = append(lim, "no_operations_activity_observed: the export holds no GPU kernel, memcpy or memset, CUDA API call, NVTX range or OS runtime call.")
	}
	a.Metrics, a.Limitations = m, lim
	totals := map[string]*big.Int{}
	for _, o := range ops {
		if totals[o.kind] == nil {
			totals[o.kind] = new(big.Int)
		}
		totals[o.kind].Add(totals[o.kind], o.total)
	}
	a.Rows = providers.ProjectSlice(ops, func(o *nsysOp) gen.TraceOperationRow {
		row := gen.TraceOperationRow{Operation: sliceName(o.name), SpanKind: o.kind, CallCount: o.calls, TotalDurationNS: bigNanos(o.total),
			ShareOfKind: share(o.total, totals[o.kind])}
		if o.event != "" {
			row.EventKind = ptr(o.event)
		}
		if len(o.streams) > 0 {
			row.Streams = o.streams
		}
		row.SelfDurationNS = bigNanos(new(big.Int).Sub(o.total, o.covered.big()))
		if o.timed > 0 {
			row.MeanDurationNS = bigNanos(meanHalfEven(o.total, o.timed))
			row.MaxDurationNS = nanos(o.max)
		}
		return row
	})
	return a, nil
}

// nsysFilter is f as the Nsight Systems readers apply it (nil: no filter).
func (f *filter) nsysFilter() *nsys.Filter {
	if f == nil {
		return nil
	}
	return &nsys.Filter{Kinds: f.kinds, Categories: f.cats, Contains: f.contains, MinDuration: f.minDur}
}

// nsysOpTally collects summarize_trace_operations' groups (an nsys.OpSink), table by
// table in nsys.Export.Operations' order and within a table in the name order of GROUP
// BY (null first), and gives the listed calls and ranges their self time (nester).
type nsysOpTally struct {
	in                        providers.Input
	f                         *filter
	ops                       []*nsysOp
	events, missing, excluded int64
	counts                    map[string]any
	nester                    *nsysNester
}

func newNsysOpTally(in providers.Input, f *filter) *nsysOpTally {
	c := &nsysOpTally{in: in, f: f, counts: map[string]any{}}
	for _, m := range nsysOpMetrics {
		c.counts[m] = int64(0)
	}
	return c
}

// Group adds one group, its streams the first maxStreams.
func (c *nsysOpTally) Group(g *nsys.OpGroup) error {
	if len(c.ops) >= maxOperations {
		return &providers.LimitError{Source: c.in.Index, Limit: maxOperations, Unit: "operations",
			Message: fmt.Sprintf("source %d holds more than %d distinct operations", c.in.Index, maxOperations)}
	}
	streams := g.Streams
	if len(streams) > maxStreams {
		streams = streams[:maxStreams]
	}
	c.ops = append(c.ops, &nsysOp{name: g.Name, kind: g.Kind, event: g.Event, calls: g.Calls, timed: g.Timed,
		total: big.NewInt(g.Total), max: g.Max, streams: streams})
	c.missing += g.Calls - g.Timed
	return nil
}

// Table ends a table: n calls were grouped of the all rows it holds (all counts only
// under filters).
func (c *nsysOpTally) Table(kind string, n, all int64) {
	c.counts[nsysOpMetrics[kind]] = n
	c.events += n
	if c.f != nil {
		c.excluded += all - n
	}
}

// Excluded counts a table the filters leave out whole.
func (c *nsysOpTally) Excluded(all int64) { c.excluded += all }

// Nested starts the self time of the listed runtime, NVTX and OS runtime operations, if
// any is listed.
func (c *nsysOpTally) Nested() bool {
	c.nester = newNsysNester(c.ops)
	return c.nester != nil
}

// Nest takes the next call or range.
func (c *nsysOpTally) Nest(r *nsys.NestRow) { c.nester.add(r) }

// done closes the last thread's calls, when self time was taken.
func (c *nsysOpTally) done() {
	if c.nester != nil {
		c.nester.done()
	}
}

// nsysNestRow is one call or range of the self-time union (nsysSelfTime): its table's

// durations that no call or range nested in them on the same thread covers, from the
// calls in order of thread, start, longer first, kind, rowid: a call's parent is the
// innermost call still open at its start; cover clips children that outlive their
// parent.
type nsysNester struct {
	want   map[[2]string]*nsysOp
	stack  []nsysOpen
	thread nsys.OptInt
}

type nsysOpen struct {
	op    *nsysOp
	cover cover
}

// newNsysNester is nil when no listed operation takes self time.
func newNsysNester(ops []*nsysOp) *nsysNester {
	want := map[[2]string]*nsysOp{}
	for _, o := range ops {
		if o.event == "" {
			want[[2]string{o.kind, o.name}] = o
		}
	}
	if len(want) == 0 {
		return nil
	}
	return &nsysNester{want: want}
}

func (s *nsysNester) closeTo(n int) {
	for _, f := range s.stack[n:] {
		if f.op != nil {
			f.op.covered.add(f.cover.covered)
		}
	}
	s.stack = s.stack[:n]
}

// add takes the next call.
func (s *nsysNester) add(r *nsys.NestRow) {
	if r.Thread != s.thread {
		s.closeTo(0)
		s.thread = r.Thread
	}
	n := len(s.stack)
	for n > 0 && s.stack[n-1].cover.end <= r.Start {
		n--
	}
	s.closeTo(n)
	if n > 0 {
		s.stack[n-1].cover.add(r.Start, r.Stop)
	}
	s.stack = append(s.stack, nsysOpen{op: s.want[[2]string{r.Kind, r.Name}], cover: newCover(r.Start, r.Stop)})
}

// done closes the last thread's calls.
func (s *nsysNester) done() { s.closeTo(0) }
