// Package nsys reads Nsight Systems exports into records (decisions 0025 and 0057): an
// SQLite export (nsys export --type sqlite, or a .nsys-rep report the trace family
// converted into one), queried in SQL through providers/internal/sqlitefile, and a
// parquetdir (nsys export --type parquetdir), read natively from its Parquet files with
// the SQL readers' joins done in Go, bounded by the bytes it decodes. Both forms yield
// the same records in the same order.
//
// An Export is one source's export; its methods read it: Decode delivers the kernels,
// memcpys, memsets, CUDA API calls and NVTX ranges to a tracemodel.Sink as slices;
// Operations groups the calls by (table, name) into an OpSink, with the calls and ranges
// that nest on a CPU thread (self time); Lifecycle and Transitions are the spans'
// figures and their start and end transitions; Launches and LaunchRows the GPU
// launches' figures and rows (each with its CUDA API call); Tables and TableRows view
// "tables"' tables and rows. The rows of a population are read a page at a time, from
// an offset up to an end (LIMIT and OFFSET in SQL). IsSQLiteHead and IsParquetDir are
// the detectors' tests, CheckParquetDir a declared parquetdir's.
//
// It imports the trace model, providers (the typed errors) and providers/internal, never
// providers/trace, whose format table opens Nsight Systems sources with it and which
// turns its records into answers (rankings, metrics, rows) and runs nsys to convert a
// report (decision 0064).
//
// Files, by what they own (only sqlite*.go import database/sql or SQLite):
//
//	export.go            Export, the tables that mark an export, reading a page
//	records.go           OptInt, OptStr: a column's value that may be null
//	slices.go            Decode: the slice union as events, tracks and names
//	operations.go        Operations, Filter, OpGroup, NestRow, OpSink; the tables grouped
//	lifecycle.go         Lifecycle, LifecycleFigures, Transitions, Transition
//	launches.go          Launches, LaunchFigures, LaunchRows, Launch
//	tables.go            Tables, Table, TableRows, TableRow: view "tables"
//	sqlite.go            IsSQLiteHead; an SQLite export sniffed, opened and checked;
//	                     LIMIT/OFFSET paging; OptInt's and OptStr's Scan
//	sqliteslices.go      the slice union and the names in SQL
//	sqliteoperations.go  the groups, the filters' WHERE clauses and the nested calls in SQL
//	sqlitelifecycle.go   the session start, the span counts and the transitions in SQL
//	sqlitelaunches.go    the launch query, its figures and rows
//	sqlitetables.go      the tables listed, counted and read in SQL
//	parquet.go           IsParquetDir, CheckParquetDir, TablesRead; a parquetdir's files,
//	                     its decoded-bytes bound and the column scans
//	parquetjoins.go      StringIds, ENUM_CUDA_MEMCPY_OPER and CUDA API calls joined in Go
//	parquetslices.go     the slice union and the names, natively
//	parquetoperations.go the groups and the nested calls, natively
//	parquetlifecycle.go  the session start, the span counts and the transitions, natively
//	parquetlaunches.go   the launch records, their figures and rows, natively
//	parquettables.go     the Parquet files listed, counted and read
package nsys
