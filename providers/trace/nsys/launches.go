package nsys

import "context"

// launchKinds are the row kinds by their order key in the launch query.
var launchKinds = [...]string{"kernel", "memcpy", "memset"}

// Launch is one row of the launch query (launchQuery): a kernel, memcpy or memset record
// that launchValid admits, its names and figures, and its CUDA API call (the first
// runtime call by rowid with its correlation id and process), whose global thread id
// APIThread is.
type Launch struct {
	// Kind is kernel, memcpy or memset.
	Kind                                 string
	Start, Stop, Device, Context, Stream int64
	Name                                 string
	Demangled, CopyKind, APIName         OptStr
	GridX, GridY, GridZ                  OptInt
	BlockX, BlockY, BlockZ               OptInt
	Registers, SharedMemory, Bytes       OptInt
	Correlation, APIStart, APIThread     OptInt
	// ord is Kind's index in launchKinds, and rid the record's rowid: with Start, the
	// launch query's order.
	ord, rid int64
}

// LaunchFigures are what inspect_gpu_launches counts over the launch query: its rows
// (Launches) by kind, their distinct devices, the kernels' total duration, the rows
// without a CUDA API call, and every record of the three tables, rows or not (Records).
type LaunchFigures struct {
	Launches, Kernels, Memcpys, Memsets, Devices int64
	KernelTime, Unmatched, Records               int64
}

// Launches counts the export's launches: in one aggregate over the launch query of an
// nsys-sqlite export, natively over a parquetdir (decision 0057).
func (x Export) Launches(ctx context.Context) (LaunchFigures, error) {
	if x.Parquet {
		return parquetLaunches(ctx, x.In)
	}
	return withDBValue(ctx, x, func(d *db) (LaunchFigures, error) { return d.launchFigures(ctx) })
}

// LaunchRows reads the launch query's rows from offset up to end, in its order (start,
// kind, table rowid), into add, in one read of the export; add ends the read early
// with false (the row did not fit its page).
func (x Export) LaunchRows(ctx context.Context, offset, end int64, add func(*Launch) (bool, error)) error {
	if x.Parquet {
		return parquetPage(ctx, x.In, offset, end, (*parquetRead).launches, add)
	}
	return x.withDB(ctx, func(d *db) error {
		return pageRows(ctx, d, d.launchQuery()+` ORDER BY start, ord, rid`, offset, end, scanLaunch, add)
	})
}
