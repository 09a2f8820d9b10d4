package nsys

import "context"

// LifecycleFigures are what summarize_trace_lifecycle counts before its rows: the session
// start in Unix nanoseconds (UTC: the export records one), and per slice table, in
// Decode's order (kernels, memcpys, memsets, CUDA API calls, NVTX ranges), the rows of
// the union and those whose end is not before their start.
type LifecycleFigures struct {
	Epoch  int64
	UTC    bool
	Tables [len(sliceTables)]struct{ Rows, Valid int64 }
}

// Transition is one row of the lifecycle query: a span's start (Kind 0) or end (Kind 1)
// at Time, its slice id (Decode's event id), its parent (the slice id of the CUDA API
// call of GPU activity), name and process.
type Transition struct {
	Time, Kind, ID, Process int64
	Parent                  OptInt
	Name                    string
}

// Lifecycle counts the export's spans: in SQL over an nsys-sqlite export, natively over
// a parquetdir (decision 0057).
func (x Export) Lifecycle(ctx context.Context) (LifecycleFigures, error) {
	if x.Parquet {
		return parquetLifecycleFigures(ctx, x.In)
	}
	return withDBValue(ctx, x, func(d *db) (LifecycleFigures, error) { return d.lifecycleFigures(ctx) })
}

// Transitions reads the lifecycle query's rows from offset up to end, in its order
// (time, span id, transition), into add, in one read of the export; add ends the read
// early with false (the row did not fit its page). The rows are a span started and a
// span ended for every slice of the export whose end is not before its start.
func (x Export) Transitions(ctx context.Context, offset, end int64, add func(*Transition) (bool, error)) error {
	if x.Parquet {
		return parquetPage(ctx, x.In, offset, end, (*parquetRead).lifecycle, add)
	}
	return x.withDB(ctx, func(d *db) error { return d.transitions(ctx, offset, end, add) })
}
