package trace

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

func ptr[T any](v T) *T { return &v }

// nsysOpTables are the tables summarize_trace_operations reads from an export: the span
// kind, the table, and the SQL expression of an event's name.
var nsysOpTables = []struct {
	kind, metric, table, name, from, where string
}{
	{"runtime", "runtime_call_count", "CUPTI_ACTIVITY_KIND_RUNTIME", "s.value", "CUPTI_ACTIVITY_KIND_RUNTIME e LEFT JOIN StringIds s ON s.id = e.nameId", ""},
	{"nvtx", "nvtx_range_count", "NVTX_EVENTS", "coalesce(e.text, s.value)", "NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId", ` WHERE e."end" IS NOT NULL`},
	{"osrt", "osrt_call_count", "OSRT_API", "s.value", "OSRT_API e LEFT JOIN StringIds s ON s.id = e.nameId", ""},
}

// nsysOp is one aggregated operation of an export.
type nsysOp struct {
	name, kind   string
	calls, timed int64
	total        *big.Int
	max          int64
}

// nsysOperations groups an export's runtime API calls, NVTX ranges and OS runtime calls
// by (table, name) in SQL; a call whose end precedes its start counts as a call without
// a duration.
func nsysOperations(ctx context.Context, in providers.Input, limits gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	src, a, done, err := nsysInput(ctx, in, limits)
	if err != nil {
		return nil, err
	}
	defer done()
	var ops []*nsysOp
	var events, missing, excluded int64
	counts := map[string]any{}
	err = src.withNsys(ctx, func(d *nsysDB) error {
		for _, t := range nsysOpTables {
			counts[t.metric] = int64(0)
			if !d.tables[t.table] {
				continue
			}
			where, args := f.nsysWhere(t.kind, t.name, t.where)
			if f != nil {
				var all, kept int64
				if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM `+t.from+t.where).Scan(&all); err != nil {
					return d.sqlErr(ctx, err)
				}
				if where != "" {
					if err := d.sql.QueryRowContext(ctx, `SELECT count(*) FROM `+t.from+where, args...).Scan(&kept); err != nil {
						return d.sqlErr(ctx, err)
					}
				}
				excluded += all - kept
				if where == "" {
					continue
				}
			}
			rows, err := d.sql.QueryContext(ctx, `SELECT `+t.name+` AS name, count(*), sum(e."end" >= e.start),
				sum(CASE WHEN e."end" >= e.start THEN e."end" - e.start END), max(CASE WHEN e."end" >= e.start THEN e."end" - e.start END)
				FROM `+t.from+where+` GROUP BY name`, args...)
			if err != nil {
				return d.sqlErr(ctx, err)
			}
			var n int64
			for rows.Next() {
				var name sql.NullString
				var calls int64
				var timed, total, mx sql.NullInt64
				if err := rows.Scan(&name, &calls, &timed, &total, &mx); err != nil {
					rows.Close()
					return d.sqlErr(ctx, err)
				}
				if len(ops) >= maxOperations {
					rows.Close()
					return &providers.LimitError{Source: in.Index, Limit: maxOperations, Unit: "operations",
						Message: fmt.Sprintf("source %d holds more than %d distinct operations", in.Index, maxOperations)}
				}
				ops = append(ops, &nsysOp{name: name.String, kind: t.kind, calls: calls, timed: timed.Int64,
					total: big.NewInt(total.Int64), max: mx.Int64})
				n += calls
				missing += calls - timed.Int64
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				return d.sqlErr(ctx, err)
			}
			counts[t.metric] = n
			events += n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
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
		lim = append(lim, "no_operations_activity_observed: the export holds no CUDA API call, NVTX range or OS runtime call.")
	}
	a.Metrics, a.Limitations = m, lim
	a.Rows = providers.ProjectSlice(ops, func(o *nsysOp) gen.TraceOperationRow {
		row := gen.TraceOperationRow{Operation: sliceName(o.name), SpanKind: o.kind, CallCount: o.calls, TotalDurationNS: bigNanos(o.total)}
		if o.timed > 0 {
			row.MeanDurationNS = bigNanos(meanHalfEven(o.total, o.timed))
			row.MaxDurationNS = nanos(o.max)
		}
		return row
	})
	return a, nil
}

// nsysWhere is the WHERE clause of one operations table under the filters, with its
// arguments: the table's own condition (base, "" or " WHERE ..."), the row's span kind
// (the table) for category, the name expression for name_contains, and end minus start
// for min_duration_ns. It is "" when the filters exclude the whole table: its rows have
// no PyTorch event kind, or its kind is not a category asked for.
func (f *filter) nsysWhere(kind, name, base string) (string, []any) {
	if f == nil {
		return base, nil
	}
	if len(f.kinds) > 0 || (len(f.cats) > 0 && !slices.Contains(f.cats, kind)) {
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
