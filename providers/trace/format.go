package trace

import (
	gen "github.com/flameox/flameox/generated/contracts"
)

// family is how the trace analyzers read a format: which decoder yields its slices
// (or spans) and what the format offers besides (issue 37).
type family uint8

const (
	// familyNone is a format the trace analyzers do not read.
	familyNone family = iota
	// familyTraceEvent is Trace Event JSON (Chrome, Kineto): DecodeChrome, parsed on a
	// goroutine of its own.
	familyTraceEvent
	// familyPerfetto is Perfetto protobuf (Perfetto, rocprofv3): DecodePerfetto,
	// pipelined, with trace_processor_shell for the data it does not read.
	familyPerfetto
	// familyOTLP is OpenTelemetry spans: their own readers and rows (spans, tables).
	familyOTLP
	// familyNsys is an Nsight Systems export: its SQLite (a report converted with nsys)
	// queried in start order, or a parquetdir read natively in the same order, and its
	// tables.
	familyNsys
	// familyMacOnly is read only on macOS (xcrun xctrace): UNAVAILABLE_CAPABILITY here.
	familyMacOnly
)

// formats is the format table: the one place where the trace analyzers tell formats
// apart. A new trace format adds its row here (and its detector in register.go).
var formatFamilies = map[gen.Format]family{
	gen.FormatChromeTrace:    familyTraceEvent,
	gen.FormatPytorch:        familyTraceEvent,
	gen.FormatPerfetto:       familyPerfetto,
	gen.FormatRocprofPftrace: familyPerfetto,
	gen.FormatOtlp:           familyOTLP,
	gen.FormatNsysSqlite:     familyNsys,
	gen.FormatNsysRep:        familyNsys,
	gen.FormatNsysParquet:    familyNsys,
	gen.FormatXctrace:        familyMacOnly,
}

// familyOf is the family of format f (familyNone when the table has no row for it).
func familyOf(f gen.Format) family { return formatFamilies[f] }

// isNsys reports whether f is an Nsight Systems format, read through the SQLite readers.
func isNsys(f gen.Format) bool { return familyOf(f) == familyNsys }

// isOTLP reports whether f is read as OpenTelemetry spans.
func isOTLP(f gen.Format) bool { return familyOf(f) == familyOTLP }
