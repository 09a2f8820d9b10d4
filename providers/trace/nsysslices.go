package trace

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// nsysSliceTables are the tables an export's slices come from, in the fixed order their
// ids are laid out in (decision 0025, item 11): a slice's id is the rowids of the tables
// before its own (their max(rowid)) plus its rowid - 1.
var nsysSliceTables = [...]string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
	"CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"}

// nsysSliceCategories are the slice categories by table.
var nsysSliceCategories = [...]string{"kernel", "memcpy", "memset", "cuda_api", "nvtx"}

// maxNsysNames bounds the thread and process names read from one export.
const maxNsysNames = 1 << 20

// nsysSliceQuery is the union of the export's slices ordered by start, longer first,
// then id, with columns: table, id, start, end, name, globalPid, globalTid (NULL for GPU
// activity), deviceId, streamId, correlationId.
func (d *nsysDB) nsysSliceQuery(ctx context.Context) (string, error) {
	q, _, err := d.nsysSliceUnion(ctx)
	if err != nil || q == "" {
		return q, err
	}
	return q + ` ORDER BY start, stop DESC, id`, nil
}

// nsysSliceUnion is nsysSliceQuery's union unordered, its columns named tab, id, start,
// stop, name, pid, tid, device, stream, corr, and the id base of each table (-1 where
// the export lacks it): a row's id is its table's base plus its rowid - 1.
func (d *nsysDB) nsysSliceUnion(ctx context.Context) (string, [len(nsysSliceTables)]int64, error) {
	var parts []string
	var base int64
	var bases [len(nsysSliceTables)]int64
	for t, table := range nsysSliceTables {
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

// decodeNsys reads an export's kernels, memcpys, memsets, CUDA API calls and NVTX ranges
// into sink in start order (nsysSliceSink): in SQL over an nsys-sqlite export, natively
// over a parquetdir (decision 0057).
func decodeNsys(ctx context.Context, src nsysData, sink tracemodel.Sink) (*tracemodel.Stats, error) {
	st := &tracemodel.Stats{}
	k := newNsysSliceSink(sink, st)
	if src.parquet {
		return st, parquetSlices(ctx, src.in, sink, k.add)
	}
	err := src.withNsys(ctx, func(d *nsysDB) error {
		if err := d.nsysNames(ctx, sink); err != nil {
			return err
		}
		q, err := d.nsysSliceQuery(ctx)
		if err != nil || q == "" {
			return err
		}
		rows, err := d.sql.QueryContext(ctx, q)
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		defer rows.Close()
		var r nsysSlice
		for rows.Next() {
			if err := rows.Scan(&r.tab, &r.id, &r.start, &r.stop, &r.name, &r.pid, &r.tid, &r.dev, &r.stream, &r.corr); err != nil {
				return d.sqlErr(ctx, err)
			}
			if err := k.add(&r); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return d.sqlErr(ctx, err)
		}
		return nil
	})
	return st, err
}

// Scan reads a column as sql.NullInt64 does.
func (o *optInt) Scan(src any) error {
	var n sql.NullInt64
	if err := n.Scan(src); err != nil {
		return err
	}
	*o = optInt{}
	if n.Valid {
		*o = some(n.Int64)
	}
	return nil
}

// Scan reads a column as sql.NullString does.
func (o *optStr) Scan(src any) error {
	var s sql.NullString
	if err := s.Scan(src); err != nil {
		return err
	}
	*o = optStr{s: s.String, ok: s.Valid}
	return nil
}

// nsysNames announces the export's thread names (ThreadNames) and process names
// (PROCESSES), keyed by the global process id and the thread id.
func (d *nsysDB) nsysNames(ctx context.Context, meta tracemodel.MetaSink) error {
	read := func(table, q string, f func(pid, tid int64, name string)) error {
		if !d.tables[table] {
			return nil
		}
		rows, err := d.sql.QueryContext(ctx, q)
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		defer rows.Close()
		for n := 0; rows.Next() && n < maxNsysNames; n++ {
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
