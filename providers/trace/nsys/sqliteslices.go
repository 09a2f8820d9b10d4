package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// sliceQuery is the union of the export's slices ordered by start, longer first,
// then id, with columns: table, id, start, end, name, globalPid, globalTid (NULL for GPU
// activity), deviceId, streamId, correlationId.
func (d *db) sliceQuery(ctx context.Context) (string, error) {
	q, _, err := d.sliceUnion(ctx)
	if err != nil || q == "" {
		return q, err
	}
	return q + ` ORDER BY start, stop DESC, id`, nil
}

// sliceUnion is sliceQuery's union unordered, its columns named tab, id, start,
// stop, name, pid, tid, device, stream, corr, and the id base of each table (-1 where
// the export lacks it): a row's id is its table's base plus its rowid - 1.
func (d *db) sliceUnion(ctx context.Context) (string, [len(sliceTables)]int64, error) {
	var parts []string
	var base int64
	var bases [len(sliceTables)]int64
	for t, table := range sliceTables {
		bases[t] = -1
		if !d.tables[table] {
			continue
		}
		bases[t] = base
		var top int64
		if err := d.sql.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM "`+table+`"`).Scan(&top); err != nil {
			return "", bases, d.sqlErr(ctx, err)
		}
		id := fmt.Sprintf("%d + e.rowid - 1", base)
		base += top
		var sel, from string
		switch t {
		case 0:
			sel = `coalesce(n.value, '') AS name, e.globalPid AS pid, NULL AS tid, e.deviceId AS device, e.streamId AS stream, e.correlationId AS corr`
			from = `CUPTI_ACTIVITY_KIND_KERNEL e LEFT JOIN StringIds n ON n.id = e.shortName`
		case 1:
			label, enum := `e.copyKind`, ``
			if d.tables["ENUM_CUDA_MEMCPY_OPER"] {
				label, enum = `coalesce(c.label, e.copyKind)`, ` LEFT JOIN ENUM_CUDA_MEMCPY_OPER c ON c.id = e.copyKind`
			}
			sel = `'[CUDA memcpy ' || ` + label + ` || ']' AS name, e.globalPid AS pid, NULL AS tid, e.deviceId AS device, e.streamId AS stream, e.correlationId AS corr`
			from = `CUPTI_ACTIVITY_KIND_MEMCPY e` + enum
		case 2:
			sel = `'[CUDA memset]' AS name, e.globalPid AS pid, NULL AS tid, e.deviceId AS device, e.streamId AS stream, e.correlationId AS corr`
			from = `CUPTI_ACTIVITY_KIND_MEMSET e`
		case 3:
			sel = `coalesce(n.value, '') AS name, e.globalTid & ~16777215 AS pid, e.globalTid AS tid, NULL AS device, NULL AS stream, e.correlationId AS corr`
			from = `CUPTI_ACTIVITY_KIND_RUNTIME e LEFT JOIN StringIds n ON n.id = e.nameId`
		case 4:
			sel = `coalesce(e.text, n.value, '') AS name, e.globalTid & ~16777215 AS pid, coalesce(e.globalTid, 0) AS tid, NULL AS device, NULL AS stream, NULL AS corr`
			from = `NVTX_EVENTS e LEFT JOIN StringIds n ON n.id = e.textId`
		}
		// An NVTX event without an end is a mark, not a range; a CUDA record without a
		// start or an end is an invalid interval, counted by the readers.
		where := ""
		if t == 4 {
			where = ` WHERE e.start IS NOT NULL AND e."end" IS NOT NULL`
		}
		parts = append(parts, fmt.Sprintf(`SELECT %d AS tab, %s AS id, e.start AS start, e."end" AS stop, %s FROM %s%s`,
			t, id, sel, from, where))
	}
	if len(parts) == 0 {
		return "", bases, nil
	}
	return strings.Join(parts, " UNION ALL "), bases, nil
}

// names announces the export's thread names (ThreadNames) and process names
// (PROCESSES), keyed by the global process id and the thread id.
func (d *db) names(ctx context.Context, meta tracemodel.MetaSink) error {
	read := func(table, q string, f func(pid, tid int64, name string)) error {
		if !d.tables[table] {
			return nil
		}
		rows, err := d.sql.QueryContext(ctx, q)
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		defer rows.Close()
		for n := 0; rows.Next() && n < maxNames; n++ {
			var pid, tid sql.NullInt64
			var name sql.NullString
			if err := rows.Scan(&pid, &tid, &name); err != nil {
				return d.sqlErr(ctx, err)
			}
			if pid.Valid && name.Valid {
				f(pid.Int64, tid.Int64, name.String)
			}
		}
		if err := rows.Err(); err != nil {
			return d.sqlErr(ctx, err)
		}
		return nil
	}
	if d.tables["StringIds"] {
		if err := read("ThreadNames", `SELECT t.globalTid & ~16777215, t.globalTid & 16777215, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId ORDER BY t.rowid`,
			meta.ThreadName); err != nil {
			return err
		}
	}
	return read("PROCESSES", `SELECT globalPid, NULL, name FROM PROCESSES ORDER BY rowid`,
		func(pid, _ int64, name string) { meta.ProcessName(pid, name) })
}

// slices reads the export's thread and process names into meta, then the slice union in
// its order into add.
func (d *db) slices(ctx context.Context, meta tracemodel.MetaSink, add func(*sliceRow) error) error {
	if err := d.names(ctx, meta); err != nil {
		return err
	}
	q, err := d.sliceQuery(ctx)
	if err != nil || q == "" {
		return err
	}
	rows, err := d.sql.QueryContext(ctx, q)
	if err != nil {
		return d.sqlErr(ctx, err)
	}
	defer rows.Close()
	var r sliceRow
	for rows.Next() {
		if err := rows.Scan(&r.tab, &r.id, &r.start, &r.stop, &r.name, &r.pid, &r.tid, &r.dev, &r.stream, &r.corr); err != nil {
			return d.sqlErr(ctx, err)
		}
		if err := add(&r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return d.sqlErr(ctx, err)
	}
	return nil
}
