package trace

import (
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// formats is the format table: the one place the trace analyzers tell formats apart
// (besides the detectors in register.go). Each row maps a format to the opener of its
// source (source.go), whose type says what the format offers. A new trace format adds
// its row here, its source, and its detector. Rows are in the order a failure lists
// formats in (view "tables": Nsight Systems' forms before OTLP).
var formats = []struct {
	format gen.Format
	open   func(providers.Input) source
}{
	// Perfetto protobuf (Perfetto, rocprofv3): track events natively, the rest through
	// trace_processor_shell.
	{gen.FormatPerfetto, func(in providers.Input) source { return perfettoSource{sourceBase{in}} }},
	// Trace Event JSON (Chrome, Kineto/torch.profiler).
	{gen.FormatChromeTrace, func(in providers.Input) source { return traceEventSource{sourceBase{in}} }},
	{gen.FormatPytorch, func(in providers.Input) source { return traceEventSource{sourceBase{in}} }},
	{gen.FormatRocprofPftrace, func(in providers.Input) source { return perfettoSource{sourceBase{in}} }},
	// Nsight Systems: an SQLite export, a report converted to one with nsys, a
	// parquetdir read natively (decision 0057).
	{gen.FormatNsysSqlite, func(in providers.Input) source { return nsysSource{sourceBase{in}, nsysFormSQLite} }},
	{gen.FormatNsysRep, func(in providers.Input) source { return nsysSource{sourceBase{in}, nsysFormReport} }},
	{gen.FormatNsysParquet, func(in providers.Input) source { return nsysSource{sourceBase{in}, nsysFormParquet} }},
	// OpenTelemetry spans, OTLP/JSON or OTLP/protobuf.
	{gen.FormatOtlp, func(in providers.Input) source { return otlpSource{sourceBase{in}} }},
	// Instruments traces: an xctrace export's XML, read on every host, or a .trace bundle,
	// exported by xcrun xctrace on macOS (decision 0062).
	{gen.FormatXctrace, func(in providers.Input) source { return xctraceSource{sourceBase{in}} }},
}

// sourceOf is in's source as the format table opens it: for a format without a row, a
// source with no capability.
func sourceOf(in providers.Input) source {
	for _, r := range formats {
		if r.format == in.Format {
			return r.open(in)
		}
	}
	return sourceBase{in}
}
