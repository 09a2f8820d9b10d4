package trace

import (
	"fmt"
	"math/big"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// The records the Nsight Systems analyses consume, whichever reader produced them: the
// SQL queries over an nsys-sqlite export (nsysslices.go, nsysops.go, nsyslifecycle.go,
// nsyslaunch.go) or the native reader of a parquetdir (nsysparquetrows.go, decision
// 0057). Both yield them in the same order with the same values, and the code below
// turns them into events, figures and rows, so that an analysis does not depend on the
// format the export came in.

// optInt is an integer column's value that may be null (SQL's NULL, Parquet's null);
// a null is always the zero optInt, so that two nulls compare equal.
type optInt struct {
	n  int64
	ok bool
}

// some is the non-null n.
func some(n int64) optInt { return optInt{n: n, ok: true} }

// ptr is a copy of the value, nil when it is null.
func (o optInt) ptr() *int64 {
	if !o.ok {
		return nil
	}
	n := o.n
	return &n
}

// optStr is a string column's value that may be null.
type optStr struct {
	s  string
	ok bool
}

// ptr is a copy of the value, nil when it is null.
func (o optStr) ptr() *string {
	if !o.ok {
		return nil
	}
	s := o.s
	return &s
}

// nsysSlice is one row of the slice union (nsysSliceUnion): its table (the index in
// nsysSliceTables), its id, interval and name, and its process, thread, device, stream
// and correlation ids as the union selects them (tid null for GPU activity).
type nsysSlice struct {
	tab, id                                  int64
	start, stop, pid, tid, dev, stream, corr optInt
	name                                     string
}

// nsysSliceSink turns the slice union's rows, in the union's order, into events:
// kernels, memcpys and memsets on one track per (process, device, stream), API calls
// and NVTX ranges on their thread's track (so the Nester nests calls inside the ranges
// around them).
type nsysSliceSink struct {
	sink    tracemodel.Sink
	st      *tracemodel.Stats
	gpu     map[[3]int64]int64
	threads map[int64]bool
	e       tracemodel.Event
}

func newNsysSliceSink(sink tracemodel.Sink, st *tracemodel.Stats) *nsysSliceSink {
	return &nsysSliceSink{sink: sink, st: st, gpu: map[[3]int64]int64{}, threads: map[int64]bool{}}
}

// add takes the next row of the union.
func (k *nsysSliceSink) add(r *nsysSlice) error {
	k.st.Events++
	if !r.start.ok || !r.stop.ok || r.stop.n < r.start.n {
		// Not a slice (a window would list a zero-length one): counted and said.
		k.st.InvalidIntervals++
		return nil
	}
	k.e = tracemodel.Event{ID: r.id, TS: r.start.n, Dur: r.stop.n - r.start.n, Name: r.name, Category: nsysSliceCategories[r.tab], Phase: "X"}
	e := &k.e
	if r.tid.ok {
		e.Track = r.tid.n
		if !k.threads[e.Track] {
			k.threads[e.Track] = true
			k.sink.Track(tracemodel.Track{ID: e.Track, PID: r.pid.n, TID: r.tid.n & 0xFFFFFF})
		}
	} else {
		key := [3]int64{r.pid.n, r.dev.n, r.stream.n}
		tr, ok := k.gpu[key]
		if !ok {
			// GPU tracks are negative ordinals in order of first activity.
			tr = -int64(len(k.gpu) + 1)
			k.gpu[key] = tr
			k.sink.Track(tracemodel.Track{ID: tr, PID: r.pid.n, TID: -1})
		}
		e.Track = tr
		e.Args.Device, e.Args.Stream = clone(&r.dev.n), clone(&r.stream.n)
	}
	if r.corr.ok {
		e.Args.CorrelationID = clone(&r.corr.n)
	}
	k.st.Slices++
	return k.sink.Slice(e)
}

// nsysOpGroup is one (table, name) group of summarize_trace_operations: its calls, the
// calls with a duration (end not before start) and their total and longest duration
// (null when none has one), and the distinct streams of its GPU activity (streamList's).
type nsysOpGroup struct {
	name              optStr
	calls             int64
	timed, total, max optInt
	streams           []int64
}

// nsysOpTally collects summarize_trace_operations' groups, table by table in
// nsysOpTables' order and within a table in the name order of GROUP BY (null first).
type nsysOpTally struct {
	in                        providers.Input
	f                         *filter
	ops                       []*nsysOp
	events, missing, excluded int64
	counts                    map[string]any
}

func newNsysOpTally(in providers.Input, f *filter) *nsysOpTally {
	c := &nsysOpTally{in: in, f: f, counts: map[string]any{}}
	for _, t := range nsysOpTables {
		c.counts[t.metric] = int64(0)
	}
	return c
}

// group adds one group of t.
func (c *nsysOpTally) group(t nsysOpTable, g nsysOpGroup) error {
	if len(c.ops) >= maxOperations {
		return &providers.LimitError{Source: c.in.Index, Limit: maxOperations, Unit: "operations",
			Message: fmt.Sprintf("source %d holds more than %d distinct operations", c.in.Index, maxOperations)}
	}
	c.ops = append(c.ops, &nsysOp{name: g.name.s, kind: t.kind, event: t.event, calls: g.calls, timed: g.timed.n,
		total: big.NewInt(g.total.n), max: g.max.n, streams: g.streams})
	c.missing += g.calls - g.timed.n
	return nil
}

// table ends t: n calls were grouped of the all rows it holds (all counts only under
// filters).
func (c *nsysOpTally) table(t nsysOpTable, n, all int64) {
	c.counts[t.metric] = n
	c.events += n
	if c.f != nil {
		c.excluded += all - n
	}
}

// nsysNestRow is one call or range of the self-time union (nsysSelfTime): its table's
// rank in nsysNested, rowid, name (null read as ""), thread and interval (end not
// before start).
type nsysNestRow struct {
	rank        int
	id          int64
	name        string
	tid         optInt
	start, stop int64
}

// nsysNester gives the listed runtime, NVTX and OS runtime operations the part of their
// durations that no call or range nested in them on the same thread covers, from the
// calls in order of thread, start, longer first, rank, rowid: a call's parent is the
// innermost call still open at its start; cover clips children that outlive their
// parent.
type nsysNester struct {
	want   map[[2]string]*nsysOp
	stack  []nsysOpen
	thread optInt
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
func (s *nsysNester) add(r *nsysNestRow) {
	if r.tid != s.thread {
		s.closeTo(0)
		s.thread = r.tid
	}
	n := len(s.stack)
	for n > 0 && s.stack[n-1].cover.end <= r.start {
		n--
	}
	s.closeTo(n)
	if n > 0 {
		s.stack[n-1].cover.add(r.start, r.stop)
	}
	s.stack = append(s.stack, nsysOpen{op: s.want[[2]string{nsysNested[r.rank], r.name}], cover: newCover(r.start, r.stop)})
}

// done closes the last thread's calls.
func (s *nsysNester) done() { s.closeTo(0) }

// nsysLifeFigures are what summarize_trace_lifecycle counts before its rows: the session
// start (utc: the export records one), and per slice table the rows of the union and
// those whose end is not before their start.
type nsysLifeFigures struct {
	epoch int64
	utc   bool
	tabs  [len(nsysSliceTables)]struct{ rows, valid int64 }
}

// nsysTransition is one row of the lifecycle query: a span's start (tr 0) or end (tr 1)
// at t, its slice id, its parent (the CUDA API call of GPU activity), name and process.
type nsysTransition struct {
	t, tr, id, proc int64
	parent          optInt
	name            string
}

// row is the transition's lifecycle row; epoch is the session start.
func (r *nsysTransition) row(epoch int64) gen.TraceLifecycleRow {
	row := gen.TraceLifecycleRow{Transition: transitionNames[2*r.tr], TimeUnixNano: nanos(r.t + epoch),
		TraceID: strconv.FormatInt(r.proc, 10), SpanID: strconv.FormatInt(r.id, 10), Operation: sliceName(r.name)}
	if r.parent.ok {
		p := strconv.FormatInt(r.parent.n, 10)
		row.ParentSpanID = &p
	}
	return row
}

// nsysLaunch is one row of the launch query (launchQuery): a kernel, memcpy or memset
// record that launchValid admits, its names and figures, and its CUDA API call.
type nsysLaunch struct {
	ord, start, stop, dev, ctx, stream, rid int64
	name                                    string
	demangled, copyKind, apiName            optStr
	gx, gy, gz, bx, by, bz, regs, smem      optInt
	bytes, corr, apiStart, apiTid           optInt
}

// row is the launch's inspect_gpu_launches row.
func (l *nsysLaunch) row() (*gen.GpuLaunchRow, error) {
	if l.ord < 0 || l.ord >= int64(len(launchKinds)) {
		return nil, fmt.Errorf("launch kind %d", l.ord)
	}
	row := &gen.GpuLaunchRow{Kind: launchKinds[l.ord], StartNS: nanos(l.start), EndNS: nanos(l.stop), DurationNS: nanos(l.stop - l.start),
		DeviceID: l.dev, ContextID: l.ctx, StreamID: l.stream, Name: sliceName(l.name),
		DemangledName: l.demangled.ptr(), CopyKind: l.copyKind.ptr(), ApiName: l.apiName.ptr(),
		RegistersPerThread: l.regs.ptr(), SharedMemoryBytes: l.smem.ptr(), Bytes: l.bytes.ptr(), CorrelationID: l.corr.ptr()}
	if l.gx.ok {
		g := fmt.Sprintf("(%d, %d, %d)", l.gx.n, l.gy.n, l.gz.n)
		b := fmt.Sprintf("(%d, %d, %d)", l.bx.n, l.by.n, l.bz.n)
		row.Grid, row.Block = &g, &b
	}
	if l.apiStart.ok {
		row.ApiStartNS = nanos(l.apiStart.n)
		row.LaunchLatencyNS = nanos(l.start - l.apiStart.n)
		// A serialized global thread id holds the thread id in its low 24 bits.
		tid := l.apiTid.n & 0xFFFFFF
		row.ApiThreadID = &tid
	}
	return row, nil
}
