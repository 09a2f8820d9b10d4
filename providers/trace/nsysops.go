package trace

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

func ptr[T any](v T) *T { return &v }

// nsysOpTable is one table summarize_trace_operations reads from an export: the span
// kind of its rows, its metric, the SQL expressions of an event's name (plain: without
// the enum table, when the export lacks it), the FROM and WHERE clauses, and for GPU
// activity the PyTorch event kind and the stream column.
type nsysOpTable struct {
	kind, metric, table, name, plain, from, where string
	event, stream                                 string
	// enum is the table name resolves labels from; plain and fromPlain are used without it.
	enum, fromPlain string
}

// nsysOpTables are the tables summarize_trace_operations reads, GPU activity first.
var nsysOpTables = []nsysOpTable{
	{kind: "kernel", metric: "kernel_count", table: "CUPTI_ACTIVITY_KIND_KERNEL", name: "s.value",
		from: "CUPTI_ACTIVITY_KIND_KERNEL e LEFT JOIN StringIds s ON s.id = e.shortName", event: "kernel", stream: "e.streamId"},
	{kind: "memcpy", metric: "memcpy_count", table: "CUPTI_ACTIVITY_KIND_MEMCPY",
		name: "'[CUDA memcpy ' || coalesce(c.label, e.copyKind) || ']'", from: "CUPTI_ACTIVITY_KIND_MEMCPY e LEFT JOIN ENUM_CUDA_MEMCPY_OPER c ON c.id = e.copyKind",
		enum: "ENUM_CUDA_MEMCPY_OPER", plain: "'[CUDA memcpy ' || e.copyKind || ']'", fromPlain: "CUPTI_ACTIVITY_KIND_MEMCPY e",
		event: "memcpy", stream: "e.streamId"},
	{kind: "memset", metric: "memset_count", table: "CUPTI_ACTIVITY_KIND_MEMSET", name: "'[CUDA memset]'",
		from: "CUPTI_ACTIVITY_KIND_MEMSET e", event: "memset", stream: "e.streamId"},
	{kind: "runtime", metric: "runtime_call_count", table: "CUPTI_ACTIVITY_KIND_RUNTIME", name: "s.value",
		from: "CUPTI_ACTIVITY_KIND_RUNTIME e LEFT JOIN StringIds s ON s.id = e.nameId"},
	{kind: "nvtx", metric: "nvtx_range_count", table: "NVTX_EVENTS", name: "coalesce(e.text, s.value)",
		from: "NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId", where: ` WHERE e."end" IS NOT NULL`},
	{kind: "osrt", metric: "osrt_call_count", table: "OSRT_API", name: "s.value",
		from: "OSRT_API e LEFT JOIN StringIds s ON s.id = e.nameId"},
}

// resolved is t as the export d reads it: without its enum table, the plain name.
func (t nsysOpTable) resolved(d *nsysDB) nsysOpTable {
	if t.enum != "" && !d.tables[t.enum] {
		t.name, t.from = t.plain, t.fromPlain
	}
	return t
}

// nsysOp is one aggregated operation of an export.
type nsysOp struct {
	name, kind, event string
	calls, timed      int64
	total             *big.Int
	// covered is the part of total that nested calls and ranges on the same thread cover.
	covered u128
	max     int64
	streams []int64
}

// nsysOperations groups an export's GPU activity, runtime API calls, NVTX ranges and OS
// runtime calls by (table, name): in SQL over an nsys-sqlite export, natively over a
// parquetdir (parquetOperations); a call whose end precedes its start counts as a call
// without a duration.
func nsysOperations(ctx context.Context, x nsysSource, limits gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	defer done()
	c := newNsysOpTally(x.in, f)
	if src.parquet {
		err = parquetOperations(ctx, src.in, c)
	} else {
		err = src.withNsys(ctx, func(d *nsysDB) error { return d.nsysOperations(ctx, c) })
	}
	if err != nil {
		return nil, err
	}
	ops, events, missing, excluded, counts := c.ops, c.events, c.missing, c.excluded, c.counts
	sort.Slice(ops, func(i, j int) bool {
		a, b := ops[i], ops[j]
		return ranksBefore(a.total.Cmp(b.total), a.calls, b.calls, a.name, b.name, a.kind, b.kind)
	})
	m := map[string]any{"operation_count": len(ops), "event_count": events, "missing_duration_count": missing}
	for k, v := range counts {
		m[k] = v
	}
	var lim []string
	f.figures(m, excluded)
	switch {
	case len(ops) == 0 && excluded > 0:
		lim = append(lim, f.emptyNote(excluded, "calls and ranges"))
	case len(ops) == 0:
		lim = append(lim, "no_operations_activity_observed: the export holds no GPU kernel, memcpy or memset, CUDA API call, NVTX range or OS runtime call.")
	}
	a.Metrics, a.Limitations = m, lim
	totals := map[string]*big.Int{}
	for _, o := range ops {
		if totals[o.kind] == nil {
			totals[o.kind] = new(big.Int)
		}
		totals[o.kind].Add(totals[o.kind], o.total)
	}
	a.Rows = providers.ProjectSlice(ops, func(o *nsysOp) gen.TraceOperationRow {
		row := gen.TraceOperationRow{Operation: sliceName(o.name), SpanKind: o.kind, CallCount: o.calls, TotalDurationNS: bigNanos(o.total),
			ShareOfKind: share(o.total, totals[o.kind])}
		if o.event != "" {
			row.EventKind = ptr(o.event)
		}
		if len(o.streams) > 0 {
			row.Streams = o.streams
		}
		row.SelfDurationNS = bigNanos(new(big.Int).Sub(o.total, o.covered.big()))
		if o.timed > 0 {
			row.MeanDurationNS = bigNanos(meanHalfEven(o.total, o.timed))
			row.MaxDurationNS = nanos(o.max)
		}
		return row
	})
	return a, nil
}

// nsysOperations groups the export's tables in SQL into c.
func (d *nsysDB) nsysOperations(ctx context.Context, c *nsysOpTally) error {
	f := c.f
	for _, t := range nsysOpTables {
		if !d.tables[t.table] {
			continue
		}
		t = t.resolved(d)
		where, args := f.nsysWhere(t.kind, t.event, t.name, t.where)
		var all int64 // the table's rows, when filters leave some out
		if f != nil {
			if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM `+t.from+t.where).Scan(&all); err != nil {
				return d.sqlErr(ctx, err)
			}
			if where == "" {
				c.excluded += all
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
			var g nsysOpGroup
			var streams sql.NullString
			if err := rows.Scan(&g.name, &g.calls, &g.timed, &streams, &g.total, &g.max); err != nil {
				rows.Close()
				return d.sqlErr(ctx, err)
			}
			g.streams = streamList(streams.String)
			if err := c.group(t, g); err != nil {
				rows.Close()
				return err
			}
			n += g.calls
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return d.sqlErr(ctx, err)
		}
		c.table(t, n, all)
	}
	return nsysSelfTime(ctx, d, c.ops)
}

// nsysNested are the tables whose calls and ranges nest on a CPU thread, in the order
// equal intervals nest (an NVTX range around runtime calls, a runtime call around the OS
// calls it makes).
var nsysNested = []string{"nvtx", "runtime", "osrt"}

// nsysSelfTime gives the listed runtime, NVTX and OS runtime rows the part of their
// durations that no call or range nested in them on the same thread covers (every call
// of those tables counts as a child, listed or not; GPU activity nests nothing): the
// export's calls, read in SQL in nsysNester's order.
func nsysSelfTime(ctx context.Context, d *nsysDB, ops []*nsysOp) error {
	nest := newNsysNester(ops)
	if nest == nil {
		return nil
	}
	var parts []string
	for rank, kind := range nsysNested {
		for _, t := range nsysOpTables {
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
		var r nsysNestRow
		var name sql.NullString
		if err := rows.Scan(&r.rank, &r.id, &name, &r.tid, &r.start, &r.stop); err != nil {
			return d.sqlErr(ctx, err)
		}
		r.name = name.String
		nest.add(&r)
	}
	if err := rows.Err(); err != nil {
		return d.sqlErr(ctx, err)
	}
	nest.done()
	return nil
}

// streamList is a group_concat of stream ids, distinct and ascending (the first
// maxStreams).
func streamList(s string) []int64 {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64); err == nil {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxStreams {
		out = out[:maxStreams]
	}
	return out
}

// nsysWhere is the WHERE clause of one operations table under the filters, with its
// arguments: the table's own condition (base, "" or " WHERE ..."), the row's span kind
// (the table) for category, the table's PyTorch event kind (GPU activity) for
// event_kind, the name expression for name_contains, and end minus start for
// min_duration_ns. It is "" when the filters exclude the whole table.
func (f *filter) nsysWhere(kind, event, name, base string) (string, []any) {
	if f == nil {
		return base, nil
	}
	if (len(f.kinds) > 0 && !slices.Contains(f.kinds, event)) || (len(f.cats) > 0 && !slices.Contains(f.cats, kind)) {
		return "", nil
	}
	var conds []string
	var args []any
	if base != "" {
		conds = append(conds, strings.TrimPrefix(base, " WHERE "))
	}
	if f.contains != "" {
		conds = append(conds, `instr(`+name+`, ?) > 0`)
		args = append(args, f.contains)
	}
	if f.minDur > 0 {
		conds = append(conds, `e."end" - e.start >= ?`)
		args = append(args, f.minDur)
	}
	if len(conds) == 0 {
		return " WHERE 1", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
