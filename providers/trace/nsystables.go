package trace

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonvalue"
)

// View "tables" of an Nsight Systems export (decision 0032): the rows catalog §1.3 gives,
// {table, ...columns}, from the tables §1.4's prefix filter selects for the operation, or
// the caller's prefixes. tables.go checks and dispatches the view; OTLP traces' tables
// are in otlptables.go.

// launchTablePrefixes are §1.4's tables of GPU activity.
var launchTablePrefixes = []string{"CUDA_GPU_", "CUDA_KERNEL", "CUDA_MEM", "CUPTI_ACTIVITY_KIND_KERNEL",
	"CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}

// tableView is one operation's view of an export's tables.
type tableView struct {
	// filter is §1.4's table name prefixes for the operation; nil selects every table.
	filter []string
	// metric counts the rows of the selected tables that match counted, by §1.3's key;
	// accelerator_activity_observed is a boolean.
	metric  string
	counted []string
	// empty is the limitation said when those tables hold no row.
	empty string
}

var tableViews = map[gen.OperationName]tableView{
	gen.OperationNameSummarizeTrace: {metric: "accelerator_activity_observed", counted: launchTablePrefixes,
		empty: "no_accelerator_activity_observed: no selected table of GPU activity (" + strings.Join(launchTablePrefixes, ", ") + ") holds a row."},
	gen.OperationNameInspectGPULaunches: {filter: launchTablePrefixes, metric: "accelerator_activity_observed", counted: launchTablePrefixes,
		empty: "no_accelerator_activity_observed: no selected table of GPU activity (" + strings.Join(launchTablePrefixes, ", ") + ") holds a row."},
	gen.OperationNameSummarizeTraceOperations: {filter: operationTablePrefixes, metric: "operation_row_count", counted: operationTablePrefixes,
		empty: "no_operations_activity_observed: no selected table of API calls or ranges (" + strings.Join(operationTablePrefixes, ", ") + ") holds a row."},
	gen.OperationNameSummarizeTraceLifecycle: {filter: lifecycleTablePrefixes, metric: "lifecycle_row_count", counted: lifecycleTablePrefixes,
		empty: "no_lifecycle_activity_observed: no selected table of process, thread or session lifetimes (" + strings.Join(lifecycleTablePrefixes, ", ") + ") holds a row."},
}

// operationTablePrefixes and lifecycleTablePrefixes are §1.4's filters of
// summarize_trace_operations and summarize_trace_lifecycle.
var (
	operationTablePrefixes = []string{"CUDA_API", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER",
		"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX", "OSRT", "OS_RUNTIME", "OPENACC", "OPENMP", "MPI", "VULKAN", "DX12"}
	lifecycleTablePrefixes = []string{"PROCESS", "THREAD", "SESSION", "TARGET", "CONTEXT_SWITCH"}
)

// tableViewLimitations are said with every table view (catalog §1.4).
var tableViewLimitations = []string{
	"Rows are the export's tables as Nsight Systems wrote them, {table, ...columns}: table schemas vary by Nsight Systems version.",
	"Cross-table temporal relationships require provider-qualified columns: ids (StringIds, correlationId, globalTid) are not resolved; the operation's own rows (view \"operation\") join them.",
	"Tables are in name order, rows in table order (rowid); integers beyond 2^53-1 are decimal strings, bytes that are not UTF-8 base64; a table with its own column named table has its columns under value.",
}

// maxListedTables bounds the tables the metrics name.
const maxListedTables = 256

// nsysTablesAnalysis answers view "tables" for op: the selected tables' names, counts
// and the rows, paged by name then rowid.
func nsysTablesAnalysis(ctx context.Context, op gen.OperationName, f *gen.TableViewFields, x nsysSource, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	in := x.in
	v := tableViews[op]
	prefixes := v.filter
	if len(f.Tables) > 0 {
		prefixes = f.Tables
	}
	pick := func(table string) bool {
		return !strings.HasPrefix(table, "sqlite_") && (prefixes == nil || matchesAny(table, prefixes))
	}
	var (
		r   providers.Rows
		a   *providers.Analysis
		all []table
	)
	if x.form == nsysFormParquet {
		// A parquetdir's tables are read natively: no scratch database.
		files, err := parquetFiles(in)
		if err != nil {
			return nil, err
		}
		if all, err = parquetTableList(in, files, pick); err != nil {
			return nil, err
		}
		r, a = &parquetTablePages{in: in, files: files, tables: all, total: rowTotal(all)}, &providers.Analysis{Provider: nsysParquetProvider()}
	} else {
		src, an, done, err := x.export(ctx, limits)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, done)
		p := &tablePages{src: src, done: done}
		if err := src.withNsys(ctx, func(d *nsysDB) error { return p.count(ctx, d, pick) }); err != nil {
			done()
			return nil, err
		}
		r, a, all = p, an, p.tables
	}
	total, counted := rowTotal(all), int64(0)
	listed := make([]listedTable, 0, min(len(all), maxListedTables))
	for _, t := range all {
		if matchesAny(t.name, v.counted) {
			counted += t.rows
		}
		if len(listed) < maxListedTables {
			listed = append(listed, listedTable{t.name, t.rows})
		}
	}
	a.Metrics = map[string]any{"table_count": int64(len(all)), "row_count": total, "tables": listed}
	if v.metric == "accelerator_activity_observed" {
		a.Metrics[v.metric] = counted > 0
	} else {
		a.Metrics[v.metric] = counted
	}
	a.OwnLimitations = true
	a.Limitations = append(a.Limitations, tableViewLimitations...)
	if len(all) > maxListedTables {
		a.Limitations = append(a.Limitations, fmt.Sprintf("The tables metric names the first %d of %d tables.", maxListedTables, len(all)))
	}
	if len(all) == 0 {
		a.Limitations = append(a.Limitations, "No table of the export matches the table prefixes.")
	}
	if counted == 0 {
		a.Limitations = append(a.Limitations, v.empty)
	}
	a.Rows = r
	return a, nil
}

// rowTotal is the rows of the tables together.
func rowTotal(tables []table) int64 {
	var n int64
	for _, t := range tables {
		n += t.rows
	}
	return n
}

// table is one selected table: its name, row count and the expression that orders its
// rows (empty for a WITHOUT ROWID table, which a scan reads in key order).
type table struct {
	name  string
	rows  int64
	order string
}

// tablePages pages the selected tables' rows, in table name order, then row order.
type tablePages struct {
	src    nsysData
	tables []table
	total  int64
	done   func()
}

// count lists the selected tables in name order with their row counts.
func (r *tablePages) count(ctx context.Context, d *nsysDB, pick func(string) bool) error {
	var names []string
	for n := range d.tables {
		if pick(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		t := table{name: n}
		if err := d.sql.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(n)).Scan(&t.rows); err != nil {
			return d.sqlErr(ctx, err)
		}
		var def sql.NullString
		if err := d.sql.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", n).Scan(&def); err != nil {
			return d.sqlErr(ctx, err)
		}
		if !strings.Contains(strings.ToUpper(def.String), "WITHOUT ROWID") {
			cols, err := columnsOf(ctx, d, n)
			if err != nil {
				return err
			}
			// The first rowid alias that no column shadows.
			for _, alias := range []string{"rowid", "_rowid_", "oid"} {
				if !slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, alias) }) {
					t.order = alias
					break
				}
			}
		}
		r.tables = append(r.tables, t)
	}
	r.total = rowTotal(r.tables)
	return nil
}

func columnsOf(ctx context.Context, d *nsysDB, name string) ([]string, error) {
	rows, err := d.sql.QueryContext(ctx, "SELECT * FROM "+quoteIdent(name)+" LIMIT 0")
	if err != nil {
		return nil, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, d.sqlErr(ctx, err)
	}
	return cols, nil
}

func (r *tablePages) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	return pageExport(ctx, r.src, r.done, r.total, offset, limit, func(d *nsysDB, end int64, page *providers.Page) error {
		return readTables(r.tables, offset, end, page,
			func(t table, skip, limit int64) (bool, error) { return r.read(ctx, d, t, skip, limit, fits, page) },
			func(t table) error {
				return &providers.DecodeError{Source: r.src.in.Index,
					Message: fmt.Sprintf("source %d: table %s holds fewer rows than it counted", r.src.in.Index, t.name)}
			})
	})
}

// readTables appends to page the rows from offset up to end of tables laid end to end:
// read appends up to limit rows of t from its row skip and says whether every one fit the
// page; a table that yields fewer rows than it counted is short's error.
func readTables(tables []table, offset, end int64, page *providers.Page,
	read func(t table, skip, limit int64) (bool, error), short func(t table) error) error {
	stop := offset
	var first int64 // the population index of the current table's first row
	for _, t := range tables {
		if stop >= end {
			break
		}
		if first+t.rows <= stop {
			first += t.rows
			continue
		}
		full, err := read(t, stop-first, end-stop)
		stop = offset + int64(len(page.Rows))
		if err != nil || !full {
			return err
		}
		first += t.rows
		if stop < min(first, end) {
			return short(t)
		}
	}
	return nil
}

// read appends up to limit rows of t from its row skip; full is false when a row did not
// fit the page.
func (r *tablePages) read(ctx context.Context, d *nsysDB, t table, skip, limit int64, fits func(json.RawMessage) bool, page *providers.Page) (bool, error) {
	q := "SELECT * FROM " + quoteIdent(t.name)
	if t.order != "" {
		q += " ORDER BY " + t.order
	}
	rows, err := d.sql.QueryContext(ctx, q+" LIMIT ? OFFSET ?", limit, skip)
	if err != nil {
		return false, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, d.sqlErr(ctx, err)
	}
	nested := slices.Contains(cols, "table")
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return false, d.sqlErr(ctx, err)
		}
		b := tableRow(t.name, cols, vals, nested)
		if fits != nil && !fits(b) {
			return false, nil
		}
		page.Rows = append(page.Rows, b)
	}
	if err := rows.Err(); err != nil {
		return false, d.sqlErr(ctx, err)
	}
	return true, nil
}

// tableRow renders one row: {table, ...columns}, or {table, value: {...columns}} when a
// column is itself named table.
func tableRow(name string, cols []string, vals []any, nested bool) json.RawMessage {
	b := append(make([]byte, 0, 64+24*len(cols)), `{"table":`...)
	b = jsonvalue.AppendString(b, name)
	if nested {
		b = append(b, `,"value":{`...)
	}
	for i, c := range cols {
		if i > 0 || !nested {
			b = append(b, ',')
		}
		b = jsonvalue.AppendString(b, c)
		b = append(b, ':')
		b = jsonvalue.Append(b, vals[i])
	}
	if nested {
		b = append(b, '}')
	}
	return append(b, '}')
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
