package nsys

import (
	"context"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// sliceTables are the tables an export's slices come from, in the fixed order their
// ids are laid out in (decision 0025, item 11): a slice's id is the rowids of the tables
// before its own (their max(rowid)) plus its rowid - 1.
var sliceTables = [...]string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
	"CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"}

// sliceCategories are the slice categories by table.
var sliceCategories = [...]string{"kernel", "memcpy", "memset", "cuda_api", "nvtx"}

// maxNames bounds the thread and process names read from one export.
const maxNames = 1 << 20

// Decode reads the export's kernels, memcpys, memsets, CUDA API calls and NVTX ranges
// into sink in start order (sliceSink), after the thread and process names: in SQL over
// an nsys-sqlite export, natively over a parquetdir (decision 0057).
func (x Export) Decode(ctx context.Context, sink tracemodel.Sink) (*tracemodel.Stats, error) {
	st := &tracemodel.Stats{}
	k := newSliceSink(sink, st)
	if x.Parquet {
		return st, parquetSlices(ctx, x.In, sink, k.add)
	}
	return st, x.withDB(ctx, func(d *db) error { return d.slices(ctx, sink, k.add) })
}

// sliceRow is one row of the slice union (sliceUnion): its table (the index in
// sliceTables), its id, interval and name, and its process, thread, device, stream
// and correlation ids as the union selects them (tid null for GPU activity).
type sliceRow struct {
	tab, id                                  int64
	start, stop, pid, tid, dev, stream, corr OptInt
	name                                     string
}

// sliceSink turns the slice union's rows, in the union's order, into events:
// kernels, memcpys and memsets on one track per (process, device, stream), API calls
// and NVTX ranges on their thread's track (so the Nester nests calls inside the ranges
// around them).
type sliceSink struct {
	sink    tracemodel.Sink
	st      *tracemodel.Stats
	gpu     map[[3]int64]int64
	threads map[int64]bool
	e       tracemodel.Event
}

func newSliceSink(sink tracemodel.Sink, st *tracemodel.Stats) *sliceSink {
	return &sliceSink{sink: sink, st: st, gpu: map[[3]int64]int64{}, threads: map[int64]bool{}}
}

// add takes the next row of the union.
func (k *sliceSink) add(r *sliceRow) error {
	k.st.Events++
	if !r.start.ok || !r.stop.ok || r.stop.n < r.start.n {
		// Not a slice (a window would list a zero-length one): counted and said.
		k.st.InvalidIntervals++
		return nil
	}
	k.e = tracemodel.Event{ID: r.id, TS: r.start.n, Dur: r.stop.n - r.start.n, Name: r.name, Category: sliceCategories[r.tab], Phase: "X"}
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
		dev, stream := r.dev.n, r.stream.n
		e.Args.Device, e.Args.Stream = &dev, &stream
	}
	if r.corr.ok {
		corr := r.corr.n
		e.Args.CorrelationID = &corr
	}
	k.st.Slices++
	return k.sink.Slice(e)
}
