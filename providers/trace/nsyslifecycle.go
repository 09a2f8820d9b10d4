package trace

import (
	"context"
	"database/sql"
	"fmt"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// nsysLifecycleMetrics name the span count of each slice table (nsysSliceTables' order).
var nsysLifecycleMetrics = [...]string{"kernel_count", "memcpy_count", "memset_count", "cuda_api_call_count", "nvtx_range_count"}

// nsysSessionStart is the export's session start in Unix nanoseconds
// (TARGET_INFO_SESSION_START_TIME.utcEpochNs), and whether the export records it.
func (d *nsysDB) nsysSessionStart(ctx context.Context) (int64, bool, error) {
	if !d.tables["TARGET_INFO_SESSION_START_TIME"] {
		return 0, false, nil
	}
	var start sql.NullInt64
	err := d.sql.QueryRowContext(ctx, `SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1`).Scan(&start)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, d.sqlErr(ctx, err)
	}
	return start.Int64, start.Valid, nil
}

// nsysLifecycleQuery lists a span_started (tr 0) and a span_ended (tr 1) transition for
// every slice of the export whose end is not before its start, ordered by time, span id
// (the slice id), transition; the parent of GPU activity is the slice id of its CUDA API
// call (the first runtime row by rowid with its correlation id and process).
func (d *nsysDB) nsysLifecycleQuery(ctx context.Context) (string, error) {
	union, bases, err := d.nsysSliceUnion(ctx)
	if err != nil || union == "" {
		return union, err
	}
	api, parent := `SELECT NULL AS cid, NULL AS pid, NULL AS rid WHERE 0`, `NULL`
	if rt := bases[3]; rt >= 0 {
		api = `SELECT correlationId AS cid, globalTid >> 24 AS pid, min(rowid) AS rid FROM CUPTI_ACTIVITY_KIND_RUNTIME
			WHERE correlationId IS NOT NULL GROUP BY correlationId, globalTid >> 24`
		parent = fmt.Sprintf(`CASE WHEN s.tab < 3 THEN %d + a.rid - 1 END`, rt)
	}
	return `WITH s AS (` + union + `), api AS (` + api + `),
		v AS (SELECT s.id, s.start, s.stop, s.name, (coalesce(s.pid, 0) >> 24) & 16777215 AS proc, ` + parent + ` AS parent
			FROM s LEFT JOIN api a ON s.tab < 3 AND a.cid = s.corr AND a.pid = s.pid >> 24 WHERE s.stop >= s.start)
		SELECT t, tr, id, parent, name, proc FROM (SELECT start AS t, 0 AS tr, * FROM v UNION ALL SELECT stop AS t, 1 AS tr, * FROM v)
		ORDER BY t, id, tr`, nil
}

// nsysLifecycleFigures counts the export's spans in SQL.
func (d *nsysDB) nsysLifecycleFigures(ctx context.Context) (nsysLifeFigures, error) {
	var fig nsysLifeFigures
	var err error
	if fig.epoch, fig.utc, err = d.nsysSessionStart(ctx); err != nil {
		return fig, err
	}
	union, _, err := d.nsysSliceUnion(ctx)
	if err != nil || union == "" {
		return fig, err
	}
	rows, err := d.sql.QueryContext(ctx, `SELECT tab, count(*), coalesce(sum(stop >= start), 0) FROM (`+union+`) GROUP BY tab`)
	if err != nil {
		return fig, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tab, n, valid int64
		if err := rows.Scan(&tab, &n, &valid); err != nil {
			return fig, d.sqlErr(ctx, err)
		}
		if tab < 0 || tab >= int64(len(fig.tabs)) {
			return fig, d.sqlErr(ctx, fmt.Errorf("slice table %d", tab))
		}
		fig.tabs[tab].rows, fig.tabs[tab].valid = n, valid
	}
	if err := rows.Err(); err != nil {
		return fig, d.sqlErr(ctx, err)
	}
	return fig, nil
}

// nsysLifecycle is summarize_trace_lifecycle on an Nsight Systems export (decision 0025,
// item 12): each kernel, memcpy, memset, CUDA API call and NVTX range is a span that
// starts and ends; times are Unix nanoseconds when the export records its session start.
// An nsys-sqlite export is read in SQL, a parquetdir natively (decision 0057).
func nsysLifecycle(ctx context.Context, x nsysSource, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, done)
	var fig nsysLifeFigures
	if src.parquet {
		fig, err = parquetLifecycleFigures(ctx, src.in)
	} else {
		err = src.withNsys(ctx, func(d *nsysDB) error {
			var err error
			fig, err = d.nsysLifecycleFigures(ctx)
			return err
		})
	}
	if err != nil {
		done()
		return nil, err
	}
	var spans, invalid int64
	m := map[string]any{}
	for tab, k := range nsysLifecycleMetrics {
		m[k] = fig.tabs[tab].valid
		spans += fig.tabs[tab].valid
		invalid += fig.tabs[tab].rows - fig.tabs[tab].valid
	}
	m["transition_count"], m["span_count"], m["invalid_interval_count"] = 2*spans, spans, invalid
	if invalid > 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d records end before they start or lack a start or an end, and are not listed (invalid_interval_count).", invalid))
	}
	if !fig.utc {
		a.Limitations = append(a.Limitations, "The export records no session start (TARGET_INFO_SESSION_START_TIME): time_unix_nano is the export's own time, nanoseconds from the session start.")
	}
	if spans == 0 {
		a.Limitations = append(a.Limitations, "no_lifecycle_activity_observed: the export holds no kernel, memcpy, memset, CUDA API call or NVTX range.")
	}
	a.Metrics = m
	epoch := fig.epoch
	if src.parquet {
		a.Rows = &parquetPages{in: src.in, total: 2 * spans, rows: func(p *nsysParquet, offset, end int64) ([]any, error) {
			ts, err := p.lifecycle(offset, end)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(ts))
			for i := range ts {
				out[i] = ts[i].row(epoch)
			}
			return out, nil
		}}
		return a, nil
	}
	a.Rows = &sqlPages{src: src, total: 2 * spans, done: done,
		query: func(ctx context.Context, d *nsysDB) (string, error) { return d.nsysLifecycleQuery(ctx) },
		scan: func(rows *sql.Rows) (any, error) {
			var r nsysTransition
			if err := rows.Scan(&r.t, &r.tr, &r.id, &r.parent, &r.name, &r.proc); err != nil {
				return nil, err
			}
			return r.row(epoch), nil
		}}
	return a, nil
}
