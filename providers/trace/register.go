package trace

import (
	"bytes"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/nsys"
	"github.com/flameox/flameox/providers/trace/otlp"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/xctrace"
)

// Register adds summarize_trace, inspect_trace_call_graph, summarize_pytorch_trace,
// inspect_trace_window, summarize_trace_operations, summarize_trace_lifecycle and
// inspect_gpu_launches and the detectors of the chrome-trace, pytorch, perfetto,
// rocprof-pftrace, otlp, xctrace, nsys-sqlite, nsys-rep and nsys-parquet formats, the
// torch-profiler, rocprofv3, xctrace and nsight-systems capture providers and the records
// of the preparable providers it uses (tools).
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeTrace, summarize))
	r.Analyzer(providers.Analyze(gen.OperationNameInspectTraceCallGraph, callGraph))
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizePytorchTrace, summarizePytorch))
	r.Analyzer(providers.AnalyzeChecked(gen.OperationNameInspectTraceWindow, window, func(f *gen.WindowFields) error {
		_, _, err := windowBounds(f)
		return err
	}))
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeTraceOperations, summarizeOperations))
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeTraceLifecycle, summarizeLifecycle))
	r.Analyzer(providers.Analyze(gen.OperationNameInspectGPULaunches, inspectLaunches))
	for _, d := range detectors {
		r.Detector(d)
	}
	// Nsight Systems exports are SQLite (a report converted into it by nsys) or Parquet,
	// which decodes to up to 64 times its size (decision 0057).
	r.Amplifying(gen.FormatNsysSqlite, gen.FormatNsysRep, gen.FormatNsysParquet)
	r.Collector(torchCollector)
	r.Collector(rocprofCollector)
	r.Collector(xctraceCollector)
	r.Collector(nsysCollector)
	for _, t := range tools {
		r.Tool(t)
	}
}

var detectors = []providers.Detector{
	// Kineto writes its own keys before traceEvents.
	{Format: gen.FormatPytorch, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.Contains(head, []byte(`"schemaVersion"`)) &&
			(bytes.Contains(head, []byte(`"deviceProperties"`)) || bytes.Contains(head, []byte(`"distributedInfo"`)) ||
				bytes.Contains(head, []byte(`"record_shapes"`)) || bytes.Contains(head, []byte(`"traceName"`)))
	}},
	{Format: gen.FormatChromeTrace, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		t := bytes.TrimLeft(head, " \t\r\n\ufeff")
		if bytes.HasPrefix(t, []byte("{")) {
			return bytes.Contains(head, []byte(`"traceEvents"`))
		}
		return bytes.HasPrefix(t, []byte("[")) && bytes.Contains(head, []byte(`"ph"`)) && bytes.Contains(head, []byte(`"ts"`))
	}},
	{Format: gen.FormatPerfetto, Suffixes: []string{".pftrace", ".perfetto-trace"}, Match: func(_ string, head []byte) bool {
		return perfetto.IsTrace(head)
	}},
	// rocprofv3 writes Perfetto protobuf; only its declared format or its output name tells it apart.
	{Format: gen.FormatRocprofPftrace, Suffixes: []string{"_results.pftrace"}},
	// Instruments: an xctrace export's XML, and a .trace bundle (decision 0062).
	{Format: gen.FormatXctrace, Suffixes: []string{".trace"}, Container: gen.FormatText, Match: func(_ string, head []byte) bool {
		return xctrace.IsExport(head)
	}},
	{Format: gen.FormatXctrace, Directory: xctrace.IsDirectory},
	// OTLP/JSON: an ExportTraceServiceRequest (or TracesData) object.
	{Format: gen.FormatOtlp, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n\ufeff"), []byte("{")) && bytes.Contains(head, []byte(`"resourceSpans"`))
	}},
	// OTLP/protobuf (.binpb, .pb, or any name): recognized by content only.
	{Format: gen.FormatOtlp, Match: func(_ string, head []byte) bool { return otlp.IsProto(head) }},
	// Nsight Systems' SQLite export (nsys export --type sqlite): SQLite named *.sqlite; its
	// tables are checked when it is opened.
	{Format: gen.FormatNsysSqlite, Match: nsys.IsSQLiteHead},
	// Nsight Systems' native report, converted with the installed nsys.
	{Format: gen.FormatNsysRep, Suffixes: []string{".nsys-rep"}},
	// Nsight Systems' parquetdir export (nsys export --type parquetdir): a directory of
	// <TABLE>.parquet files holding StringIds and an export's marker tables.
	{Format: gen.FormatNsysParquet, Directory: nsys.IsParquetDir},
}

func provider() gen.Provider { return gen.Provider{ID: "flameox-trace", Version: "native-1"} }
