package nsys

import (
	"context"
	"database/sql"
	"fmt"
)

// sessionStart is the export's session start in Unix nanoseconds
// (TARGET_INFO_SESSION_START_TIME.utcEpochNs), and whether the export records it.
func (d *db) sessionStart(ctx context.Context) (int64, bool, error) {
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

// lifecycleQuery lists a span_started (tr 0) and a span_ended (tr 1) transition for
// every slice of the export whose end is not before its start, ordered by time, span id
// (the slice id), transition; the parent of GPU activity is the slice id of its CUDA API
// call (the first runtime row by rowid with its correlation id and process).
func (d *db) lifecycleQuery(ctx context.Context) (string, error) {
	union, bases, err := d.sliceUnion(ctx)
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

// lifecycleFigures counts the export's spans in SQL.
func (d *db) lifecycleFigures(ctx context.Context) (LifecycleFigures, error) {
	var fig LifecycleFigures
	var err error
	if fig.Epoch, fig.UTC, err = d.sessionStart(ctx); err != nil {
		return fig, err
	}
	union, _, err := d.sliceUnion(ctx)
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
		if tab < 0 || tab >= int64(len(fig.Tables)) {
			return fig, d.sqlErr(ctx, fmt.Errorf("slice table %d", tab))
		}
		fig.Tables[tab].Rows, fig.Tables[tab].Valid = n, valid
	}
	if err := rows.Err(); err != nil {
		return fig, d.sqlErr(ctx, err)
	}
	return fig, nil
}

// transitions reads the lifecycle query's rows from offset up to end (pageRows).
func (d *db) transitions(ctx context.Context, offset, end int64, add func(*Transition) (bool, error)) error {
	q, err := d.lifecycleQuery(ctx)
	if err != nil {
		return err
	}
	return pageRows(ctx, d, q, offset, end, func(rows *sql.Rows, r *Transition) error {
		return rows.Scan(&r.Time, &r.Kind, &r.ID, &r.Parent, &r.Name, &r.Process)
	}, add)
}
