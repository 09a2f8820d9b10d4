package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// resolved is t as the export d reads it: without its enum table, the plain name.
func (t opTable) resolved(d *db) opTable {
	if t.enum != "" && !d.tables[t.enum] {
		t.name, t.from = t.plain, t.fromPlain
	}
	return t
}

// operations groups the export's tables in SQL into sink.
func (d *db) operations(ctx context.Context, f *Filter, sink OpSink) error {
	for _, t := range opTables {
		if !d.tables[t.table] {
			continue
		}
		t = t.resolved(d)
		where, args := f.where(t.kind, t.event, t.name, t.where)
		var all int64 // the table's rows, when filters leave some out
		if f != nil {
			if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM `+t.from+t.where).Scan(&all); err != nil {
				return d.sqlErr(ctx, err)
			}
			if where == "" {
				sink.Excluded(all)
				continue
			}
		}
		streams := "NULL"
		if t.stream != "" {
			streams = "group_concat(DISTINCT " + t.stream + ")"
		}
		// The alias is no column's name: SQLite resolves a GROUP BY name against the joined
		// tables' columns first (ENUM_CUDA_MEMCPY_OPER has a column name).
		rows, err := d.sql.QueryContext(ctx, `SELECT `+t.name+` AS op_name, count(*), sum(e."end" >= e.start), `+streams+`,
			sum(CASE WHEN e."end" >= e.start THEN e."end" - e.start END), max(CASE WHEN e."end" >= e.start THEN e."end" - e.start END)
			FROM `+t.from+where+` GROUP BY op_name`, args...)
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		var n int64
		for rows.Next() {
			g := OpGroup{Kind: t.kind, Event: t.event}
			var name OptStr
			var timed, total, most OptInt
			var streams sql.NullString
			if err := rows.Scan(&name, &g.Calls, &timed, &streams, &total, &most); err != nil {
				rows.Close()
				return d.sqlErr(ctx, err)
			}
			g.Name, g.Timed, g.Total, g.Max = name.s, timed.n, total.n, most.n
			g.Streams = streamList(streams.String)
			if err := sink.Group(&g); err != nil {
				rows.Close()
				return err
			}
			n += g.Calls
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		sink.Table(t.kind, n, all)
	}
	return d.selfTime(ctx, sink)
}

// selfTime hands sink, when it asks for them, the calls and ranges that nest on a CPU
// thread (every call of the nesting tables, listed or not; GPU activity nests nothing),
// read in SQL in OpSink.Nest's order.
func (d *db) selfTime(ctx context.Context, sink OpSink) error {
	if !sink.Nested() {
		return nil
	}
	var parts []string
	for rank, kind := range nestedKinds {
		for _, t := range opTables {
			if t.kind != kind || !d.tables[t.table] {
				continue
			}
			t = t.resolved(d)
			where := ` WHERE e."end" >= e.start`
			if t.where != "" {
				where += " AND " + strings.TrimPrefix(t.where, " WHERE ")
			}
			parts = append(parts, fmt.Sprintf(`SELECT %d AS rank, e.rowid AS id, `+t.name+` AS name, e.globalTid AS tid, e.start AS start, e."end" AS stop FROM `+t.from+where, rank))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	rows, err := d.sql.QueryContext(ctx, strings.Join(parts, " UNION ALL ")+` ORDER BY tid, start, stop DESC, rank, id`)
	if err != nil {
		return d.sqlErr(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r NestRow
		var rank int
		var id int64
		var name sql.NullString
		if err := rows.Scan(&rank, &id, &name, &r.Thread, &r.Start, &r.Stop); err != nil {
			return d.sqlErr(ctx, err)
		}
		r.Kind, r.Name = nestedKinds[rank], name.String
		sink.Nest(&r)
	}
	if err := rows.Err(); err != nil {
		return d.sqlErr(ctx, err)
	}
	return nil
}

// streamList is a group_concat of stream ids, distinct and ascending.
func streamList(s string) []int64 {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// where is the WHERE clause of one operations table under the filters, with its
// arguments: the table's own condition (base, "" or " WHERE ..."), the row's span kind
// (the table) for category, the table's PyTorch event kind (GPU activity) for
// event_kind, the name expression for name_contains, and end minus start for
// min_duration_ns. It is "" when the filters exclude the whole table.
func (f *Filter) where(kind, event, name, base string) (string, []any) {
	if f == nil {
		return base, nil
	}
	if f.excludes(kind, event) {
		return "", nil
	}
	var conds []string
	var args []any
	if base != "" {
		conds = append(conds, strings.TrimPrefix(base, " WHERE "))
	}
	if f.Contains != "" {
		conds = append(conds, `instr(`+name+`, ?) > 0`)
		args = append(args, f.Contains)
	}
	if f.MinDuration > 0 {
		conds = append(conds, `e."end" - e.start >= ?`)
		args = append(args, f.MinDuration)
	}
	if len(conds) == 0 {
		return " WHERE 1", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
