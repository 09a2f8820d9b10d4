package nsys

import (
	"context"

	"github.com/flameox/flameox/providers"
)

// Export is the Nsight Systems export a source is read from: an nsys-sqlite export (for
// nsys-rep, the report's conversion), read in SQL, or a parquetdir (nsys export --type
// parquetdir), read natively (decision 0057). Its methods read it into records, the same
// records in the same order from either form: Decode (slices), Operations, Lifecycle and
// Transitions, Launches and LaunchRows, Tables and TableRows. Every read opens the
// export anew and closes it before it returns.
type Export struct {
	In providers.Input
	// Parquet is set for a parquetdir.
	Parquet bool
}

// markerTables are tables of which an Nsight Systems export holds at least one besides
// StringIds.
var markerTables = []string{"META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME", "CUPTI_ACTIVITY_KIND_KERNEL",
	"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API", "ANALYSIS_DETAILS"}

// The readers of the populations the analyses page (lifecycle transitions, GPU
// launches, view "tables"' rows) read one page's rows at a time, from offset up to end,
// into a function that takes each and may end the read early (a row that does not fit
// its page). Over an nsys-sqlite export the query reads only those rows (LIMIT and
// OFFSET); over a parquetdir the native reader orders the population anew for each page
// and keeps the rows up to end (tracemodel.TopK).

// parquetPage reads the rows from offset up to end of a population that read orders
// anew, in one read of the parquetdir in, into add until add ends the read.
func parquetPage[T any](ctx context.Context, in providers.Input, offset, end int64, read func(p *parquetRead, offset, end int64) ([]T, error),
	add func(*T) (bool, error)) error {
	p, err := openParquet(ctx, in)
	if err != nil {
		return err
	}
	rs, err := read(p, offset, end)
	if err != nil {
		return err
	}
	for i := range rs {
		if ok, err := add(&rs[i]); err != nil || !ok {
			return err
		}
	}
	return nil
}
