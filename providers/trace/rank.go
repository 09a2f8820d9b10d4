package trace

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/ianlancetaylor/demangle"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// u128 is an exact sum of nanosecond durations.
type u128 struct{ hi, lo uint64 }

func (u *u128) add(v int64) {
	var c uint64
	u.lo, c = bits.Add64(u.lo, uint64(v), 0)
	u.hi += c
}

func (u u128) big() *big.Int {
	t := new(big.Int).SetUint64(u.hi)
	t.Lsh(t, 64)
	return t.Or(t, new(big.Int).SetUint64(u.lo))
}

func (u u128) cmp(v u128) int {
	switch {
	case u.hi != v.hi:
		return cmpU(u.hi, v.hi)
	case u.lo != v.lo:
		return cmpU(u.lo, v.lo)
	}
	return 0
}

// share is part over whole rounded to 4 decimals; nil when whole is 0.
func share(part, whole *big.Int) *float64 {
	if whole == nil || whole.Sign() == 0 {
		return nil
	}
	r, _ := new(big.Rat).SetFrac(part, whole).Float64()
	return ptr(math.Round(r*1e4) / 1e4)
}

// maxLaunchers and maxStreams bound what one ranked row remembers of its GPU launches.
const (
	maxLaunchers = 64
	maxStreams   = 16
)

// maxLaunchLinks bounds the launches one read remembers by correlation id and the
// operators by Kineto External id, and
// maxPendingLaunches the GPU slices that arrive before their operator.
const (
	maxLaunchLinks     = 1 << 20
	maxPendingLaunches = 1 << 16
)

// sliceOp aggregates the slices of one (name, category) of a slice-format trace.
type sliceOp struct {
	name, cat, kind string
	calls           int64
	total, self     u128
	max             int64
	// launchers sums the durations each launching operator accounts for (GPU activity).
	launchers map[string]*u128
	streams   []int64
}

// frame is one slice that may still have children on its track.
type frame struct {
	id   int64
	op   *sliceOp // nil when the slice is not in the population
	self int64
	// operator is the slice's name when it is a PyTorch operator.
	operator string
}

// opRef is the innermost operator seen for one External id.
type opRef struct {
	depth int32
	name  string
}

// sliceRanking ranks the slices of one Chrome, Kineto, Perfetto, rocprof or Nsight
// Systems trace by (name, category): the counts, exact sums, self time over each track's
// nesting, and for GPU activity the launching operator and the streams.
type sliceRanking struct {
	filter *filter
	ops    map[[2]string]*sliceOp
	names  map[string]string
	stacks map[int64][]frame
	// byCorrelation links a CPU slice's correlation id (a CUDA runtime call's) to the
	// innermost operator around it; byExternal links an operator's External id to its
	// name; pending holds GPU slices whose launch came later in start order.
	byCorrelation map[int64]string
	byExternal    map[int64]opRef
	pending       []pendingLaunch

	slices, excluded, dropped, unlinked, unlinkable int64
}

type pendingLaunch struct {
	op                    *sliceOp
	correlation, external *int64
	dur                   int64
}

func newSliceRanking(f *filter) *sliceRanking {
	return &sliceRanking{filter: f, ops: map[[2]string]*sliceOp{}, names: map[string]string{},
		stacks: map[int64][]frame{}, byCorrelation: map[int64]string{}, byExternal: map[int64]opRef{}}
}

// intern keeps one copy of each name the ranking holds (the visitor's strings are reused).
func (r *sliceRanking) intern(s string) string {
	if v, ok := r.names[s]; ok {
		return v
	}
	v := strings.Clone(s)
	r.names[v] = v
	return v
}

// visit takes one slice in start order.
func (r *sliceRanking) visit(s *tracemodel.Nested) error {
	if s.Dur <= 0 {
		return nil
	}
	r.slices++
	kind := eventKind(s)
	if kind == "operator" && s.Args.ExternalID != nil {
		r.link(*s.Args.ExternalID, s)
	}
	var op *sliceOp
	if r.filter.passKind(s, kind) {
		op = r.add(s, kind)
	} else {
		r.excluded++
	}
	operator := ""
	if kind == "operator" {
		operator = r.intern(sliceName(s.Name))
	}
	st := r.nest(s, op, operator)
	if c := s.Args.CorrelationID; c != nil && !gpu(kind) {
		r.correlate(*c, st)
	}
	return nil
}

// correlate links a CPU slice's correlation id to the innermost operator on its track's
// chain (itself included), when there is one.
func (r *sliceRanking) correlate(c int64, st []frame) {
	for i := len(st) - 1; i >= 0; i-- {
		if st[i].operator == "" {
			continue
		}
		if _, ok := r.byCorrelation[c]; ok || len(r.byCorrelation) < maxLaunchLinks {
			r.byCorrelation[c] = st[i].operator
		}
		return
	}
}

// launcher is the operator that launched a GPU slice: through its correlation id (the
// CUDA runtime call's innermost operator), else its Kineto External id (the innermost
// operator carrying it).
func (r *sliceRanking) launcher(correlation, external *int64) (string, bool) {
	if correlation != nil {
		if name, ok := r.byCorrelation[*correlation]; ok {
			return name, true
		}
	}
	if external != nil {
		if o, ok := r.byExternal[*external]; ok {
			return o.name, true
		}
	}
	return "", false
}

// link remembers the innermost operator slice of an External id.
func (r *sliceRanking) link(x int64, s *tracemodel.Nested) {
	o, ok := r.byExternal[x]
	if ok && o.depth >= s.Depth {
		return
	}
	if !ok && len(r.byExternal) >= maxLaunchLinks {
		r.unlinkable++
		return
	}
	r.byExternal[x] = opRef{depth: s.Depth, name: r.intern(sliceName(s.Name))}
}

func (r *sliceRanking) add(s *tracemodel.Nested, kind string) *sliceOp {
	k := [2]string{s.Name, s.Category}
	op := r.ops[k]
	if op == nil {
		if len(r.ops) >= maxOperations {
			r.dropped++
			return nil
		}
		op = &sliceOp{name: r.intern(s.Name), cat: r.intern(s.Category), kind: kind}
		r.ops[[2]string{op.name, op.cat}] = op
	}
	op.calls++
	op.total.add(s.Dur)
	op.max = max(op.max, s.Dur)
	if op.kind != kind {
		// The classification depends on the name and category only, except for the
		// argument rule of runtime events: a mixed row has no single kind.
		op.kind = ""
	}
	if gpu(kind) {
		if s.Args.Stream != nil {
			op.stream(*s.Args.Stream)
		}
		if c, x := s.Args.CorrelationID, s.Args.ExternalID; c != nil || x != nil {
			if name, ok := r.launcher(c, x); ok {
				op.launched(name, s.Dur)
			} else if len(r.pending) < maxPendingLaunches {
				r.pending = append(r.pending, pendingLaunch{op, clone(c), clone(x), s.Dur})
			} else {
				r.unlinked++
			}
		}
	}
	return op
}

func (op *sliceOp) stream(id int64) {
	if i, found := slices.BinarySearch(op.streams, id); !found && len(op.streams) < maxStreams {
		op.streams = slices.Insert(op.streams, i, id)
	}
}

func (op *sliceOp) launched(name string, dur int64) {
	if op.launchers == nil {
		op.launchers = map[string]*u128{}
	}
	t := op.launchers[name]
	if t == nil {
		if len(op.launchers) >= maxLaunchers {
			return
		}
		t = &u128{}
		op.launchers[name] = t
	}
	t.add(dur)
}

// nest keeps each track's chain of open slices to subtract a child's duration from its
// parent's self time: a slice's parent is on its track's chain (the Nester gives it),
// and slices that cannot have more children are popped and their self time counted.
func (r *sliceRanking) nest(s *tracemodel.Nested, op *sliceOp, operator string) []frame {
	st := r.stacks[s.Track]
	if s.ParentID < 0 {
		for i := range st {
			st[i].done()
		}
		st = st[:0]
	} else {
		i := len(st) - 1
		for i >= 0 && st[i].id != s.ParentID {
			i--
		}
		for j := len(st) - 1; j > i; j-- {
			st[j].done()
		}
		st = st[:max(i+1, 0)]
		if i >= 0 {
			st[i].self = max(st[i].self-s.Dur, 0)
		}
	}
	st = append(st, frame{id: s.ID, op: op, self: s.Dur, operator: operator})
	r.stacks[s.Track] = st
	return st
}

func (f *frame) done() {
	if f.op != nil {
		f.op.self.add(f.self)
	}
}

// finish counts the self time of the slices still open and links the launches whose
// operator came after them.
func (r *sliceRanking) finish() {
	for _, st := range r.stacks {
		for i := range st {
			st[i].done()
		}
	}
	r.stacks = nil
	for _, p := range r.pending {
		if name, ok := r.launcher(p.correlation, p.external); ok {
			p.op.launched(name, p.dur)
		} else {
			r.unlinked++
		}
	}
	r.pending = nil
}

// sorted is the ranking: total duration, then calls, descending; then name and category.
func (r *sliceRanking) sorted() []*sliceOp {
	list := make([]*sliceOp, 0, len(r.ops))
	for _, op := range r.ops {
		list = append(list, op)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		return ranksBefore(a.total.cmp(b.total), a.calls, b.calls, a.name, b.name, a.cat, b.cat)
	})
	return list
}

// ranksBefore is the order of ranked operations: total duration (total compares a with
// b), then calls, descending; then name and kind ascending.
func ranksBefore(total int, aCalls, bCalls int64, aName, bName, aKind, bKind string) bool {
	switch {
	case total != 0:
		return total > 0
	case aCalls != bCalls:
		return aCalls > bCalls
	case aName != bName:
		return aName < bName
	}
	return aKind < bKind
}

// kindTotals sums the rows' totals by category, for their shares.
func kindTotals(list []*sliceOp) map[string]*big.Int {
	t := map[string]*big.Int{}
	for _, op := range list {
		if t[op.cat] == nil {
			t[op.cat] = new(big.Int)
		}
		t[op.cat].Add(t[op.cat], op.total.big())
	}
	return t
}

// row projects one ranked operation.
func (op *sliceOp) row(kindTotal *big.Int) gen.TraceOperationRow {
	name := sliceName(op.name)
	row := gen.TraceOperationRow{Operation: name, SpanKind: op.cat, CallCount: op.calls,
		TotalDurationNS: bigNanos(op.total.big()), SelfDurationNS: bigNanos(op.self.big()),
		MeanDurationNS: bigNanos(meanHalfEven(op.total.big(), op.calls)), MaxDurationNS: nanos(op.max)}
	if d, ok := demangled(op.name); ok {
		row.Operation, row.MangledName = d, &name
	}
	if row.SpanKind == "" {
		row.SpanKind = "<uncategorized>"
	}
	if op.kind != "" {
		row.EventKind = ptr(op.kind)
	}
	row.ShareOfKind = share(op.total.big(), kindTotal)
	if len(op.launchers) > 0 {
		var best string
		var top u128
		for name, t := range op.launchers {
			if c := t.cmp(top); c > 0 || (c == 0 && name < best) {
				best, top = name, *t
			}
		}
		row.LaunchOpName, row.LaunchOpCount = &best, ptr(int64(len(op.launchers)))
	}
	if len(op.streams) > 0 {
		row.Streams = op.streams
	}
	return row
}

// demangled is an Itanium C++ symbol's demangled form (what c++filt prints), when name
// is one.
func demangled(name string) (string, bool) {
	if !strings.HasPrefix(name, "_Z") {
		return "", false
	}
	d, err := demangle.ToString(name, demangle.NoClones)
	if err != nil || d == name {
		return "", false
	}
	return d, true
}

// sliceOperations is summarize_trace_operations over a slice format.
func sliceOperations(ctx context.Context, in providers.Input, tp *traceProcessor, f *filter, a *providers.Analysis) (*providers.Analysis, error) {
	r := newSliceRanking(f)
	sc, err := read(ctx, in, tp, r.visit)
	if err != nil {
		return nil, err
	}
	r.finish()
	list := r.sorted()
	m := sc.metrics()
	m["operation_count"] = len(list)
	m["slice_count"] = r.slices
	f.figures(m, r.excluded)
	lim := sc.limitations()
	if r.dropped > 0 {
		lim = append(lim, fmt.Sprintf("More than %d distinct operations: %d slices of further operations were not aggregated.", maxOperations, r.dropped))
	}
	if r.unlinked > 0 {
		m["unlinked_launch_count"] = r.unlinked
		lim = append(lim, fmt.Sprintf("%d GPU slices have no launching operator: no CPU slice with their correlation id lies within an operator, and no operator carries their Kineto External id (or it was past the %d remembered); they count in their rows without one.", r.unlinked, maxLaunchLinks))
	}
	switch {
	case len(list) == 0 && r.excluded > 0:
		lim = append(lim, f.emptyNote(r.excluded, "slices"))
	case len(list) == 0:
		lim = append(lim, "no_slices_observed: the trace holds no slice with a positive duration.")
	}
	totals := kindTotals(list)
	a.Metrics, a.Limitations = m, lim
	a.Rows = providers.ProjectSlice(list, func(op *sliceOp) gen.TraceOperationRow { return op.row(totals[op.cat]) })
	return tp.bind(a), nil
}
