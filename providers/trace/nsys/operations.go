package nsys

import (
	"context"
	"slices"
)

// Filter is summarize_trace_operations' filters as the readers apply them (decision
// 0037): a row passes when its table's PyTorch event kind is among Kinds and its span
// kind (its table) among Categories (each when given), its name contains Contains, and
// its end minus its start is at least MinDuration (when positive). A nil *Filter passes
// every row.
type Filter struct {
	Kinds, Categories []string
	Contains          string
	MinDuration       int64
}

// excludes reports whether the filters leave out every row of the table of span kind
// kind and event kind event.
func (f *Filter) excludes(kind, event string) bool {
	return f != nil && ((len(f.Kinds) > 0 && !slices.Contains(f.Kinds, event)) || (len(f.Categories) > 0 && !slices.Contains(f.Categories, kind)))
}

// OpGroup is one (table, name) group of summarize_trace_operations: its table's span
// kind (Kind) and, for GPU activity, PyTorch event kind (Event), its name (null read as
// ""), its calls, the calls with a duration (end not before start) and their total and
// longest duration (0 when none has one), and the distinct streams of its GPU activity,
// ascending.
type OpGroup struct {
	Kind, Event, Name        string
	Calls, Timed, Total, Max int64
	Streams                  []int64
}

// NestRow is a call or range that nests on a CPU thread (self time): its table's span
// kind (nvtx, runtime or osrt), its name (null read as ""), its global thread id and its
// interval (end not before start).
type NestRow struct {
	Kind, Name  string
	Thread      OptInt
	Start, Stop int64
}

// OpSink takes what Operations reads.
type OpSink interface {
	// Group takes one group, tables in Operations' order (GPU activity first) and a
	// table's groups in GROUP BY's name order (null first); an error ends the read and
	// comes back as it is.
	Group(g *OpGroup) error
	// Table ends the table of span kind kind: calls were grouped of its rows, all of them
	// (all is counted where a filter is given).
	Table(kind string, calls, all int64)
	// Excluded takes the rows of a table that the filters leave out whole.
	Excluded(rows int64)
	// Nested asks, once every group is taken, whether any wants self time; if so, Nest
	// takes every call and range of the nesting tables in order of thread, start, longer
	// first, kind (an NVTX range around runtime calls, a runtime call around the OS calls
	// it makes) and rowid: a call's parent is the innermost call still open at its start.
	Nested() bool
	Nest(r *NestRow)
}

// Operations groups the export's GPU activity, runtime API calls, NVTX ranges and OS
// runtime calls by (table, name) under f into sink, then hands it the calls and ranges
// of self time: in SQL over an nsys-sqlite export, natively over a parquetdir (decision
// 0057). A call whose end precedes its start counts as a call without a duration.
func (x Export) Operations(ctx context.Context, f *Filter, sink OpSink) error {
	if x.Parquet {
		return parquetOperations(ctx, x.In, f, sink)
	}
	return x.withDB(ctx, func(d *db) error { return d.operations(ctx, f, sink) })
}

// opTable is one table summarize_trace_operations reads from an export: the span
// kind of its rows, the SQL expressions of an event's name (plain: without
// the enum table, when the export lacks it), the FROM and WHERE clauses, and for GPU
// activity the PyTorch event kind and the stream column.
type opTable struct {
	kind, table, name, plain, from, where string
	event, stream                         string
	// enum is the table name resolves labels from; plain and fromPlain are used without it.
	enum, fromPlain string
}

// opTables are the tables summarize_trace_operations reads, GPU activity first.
var opTables = []opTable{
	{kind: "kernel", table: "CUPTI_ACTIVITY_KIND_KERNEL", name: "s.value",
		from: "CUPTI_ACTIVITY_KIND_KERNEL e LEFT JOIN StringIds s ON s.id = e.shortName", event: "kernel", stream: "e.streamId"},
	{kind: "memcpy", table: "CUPTI_ACTIVITY_KIND_MEMCPY",
		name: "'[CUDA memcpy ' || coalesce(c.label, e.copyKind) || ']'", from: "CUPTI_ACTIVITY_KIND_MEMCPY e LEFT JOIN ENUM_CUDA_MEMCPY_OPER c ON c.id = e.copyKind",
		enum: "ENUM_CUDA_MEMCPY_OPER", plain: "'[CUDA memcpy ' || e.copyKind || ']'", fromPlain: "CUPTI_ACTIVITY_KIND_MEMCPY e",
		event: "memcpy", stream: "e.streamId"},
	{kind: "memset", table: "CUPTI_ACTIVITY_KIND_MEMSET", name: "'[CUDA memset]'",
		from: "CUPTI_ACTIVITY_KIND_MEMSET e", event: "memset", stream: "e.streamId"},
	{kind: "runtime", table: "CUPTI_ACTIVITY_KIND_RUNTIME", name: "s.value",
		from: "CUPTI_ACTIVITY_KIND_RUNTIME e LEFT JOIN StringIds s ON s.id = e.nameId"},
	{kind: "nvtx", table: "NVTX_EVENTS", name: "coalesce(e.text, s.value)",
		from: "NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId", where: ` WHERE e."end" IS NOT NULL`},
	{kind: "osrt", table: "OSRT_API", name: "s.value",
		from: "OSRT_API e LEFT JOIN StringIds s ON s.id = e.nameId"},
}

// nestedKinds are the tables whose calls and ranges nest on a CPU thread, in the order
// equal intervals nest (an NVTX range around runtime calls, a runtime call around the OS
// calls it makes).
var nestedKinds = []string{"nvtx", "runtime", "osrt"}
