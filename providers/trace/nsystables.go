package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/flameox/flameox/providers/trace/nsys"
)

// View "tables" of an Nsight Systems export (decision 0032): the rows catalog §1.3 gives,
// {table, ...columns}, from the tables §1.4's prefix filter selects for the operation, or
// the caller's prefixes, as nsys.Export.Tables and TableRows read them. tables.go checks
// and dispatches the view; OTLP traces' tables are in otlptables.go.

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
// and the rows, paged by name then rowid (nsys.Export.Tables and TableRows).
func nsysTablesAnalysis(ctx context.Context, op gen.OperationName, f *gen.TableViewFields, x nsysSource, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	v := tableViews[op]
	prefixes := v.filter
	if len(f.Tables) > 0 {
		prefixes = f.Tables
	}
	pick := func(table string) bool {
		return !strings.HasPrefix(table, "sqlite_") && (prefixes == nil || matchesAny(table, prefixes))
	}
	// A report's conversion lives until the page is read or the analysis ends; a
	// parquetdir's tables are read natively, with no scratch database.
	src, a, done, err := x.export(ctx, limits)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, done)
	all, err := src.Tables(ctx, pick)
	if err != nil {
		done()
		return nil, err
	}
	total, counted := rowTotal(all), int64(0)
	listed := make([]listedTable, 0, min(len(all), maxListedTables))
	for _, t := range all {
		if matchesAny(t.Name, v.counted) {
			counted += t.Rows
		}
		if len(listed) < maxListedTables {
			listed = append(listed, listedTable{t.Name, t.Rows})
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
	// The tables' rows laid end to end, in table name order, then row order.
	a.Rows = &exportPages[nsys.TableRow]{total: total, done: done,
		read: func(ctx context.Context, offset, end int64, add func(*nsys.TableRow) (bool, error)) error {
			return src.TableRows(ctx, all, offset, end, add)
		},
		encode: func(r *nsys.TableRow) (json.RawMessage, error) {
			return tableRow(r.Table, r.Columns, r.Values, slices.Contains(r.Columns, "table")), nil
		}}
	return a, nil
}

// rowTotal is the rows of the tables together.
func rowTotal(tables []nsys.Table) int64 {
	var n int64
	for _, t := range tables {
		n += t.Rows
	}
	return n
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
