// Package trace reads timeline traces and answers the trace operations on them.
//
// Formats: Trace Event JSON (chrome-trace: Chrome, JAX; pytorch: Kineto/torch.profiler),
// Perfetto protobuf (perfetto; rocprof-pftrace, rocprofv3's output), OpenTelemetry
// spans (otlp, OTLP/JSON or OTLP/protobuf), Nsight Systems exports (nsys-sqlite;
// nsys-rep, converted with the installed nsys; nsys-parquet, a parquetdir read
// natively) and Instruments traces (xctrace). Operations: summarize_trace,
// inspect_trace_call_graph, summarize_pytorch_trace, inspect_trace_window,
// summarize_trace_operations, summarize_trace_lifecycle and inspect_gpu_launches; and
// the torch-profiler, rocprofv3, xctrace and nsight-systems capture providers.
//
// The model (source.go): the format table (format.go) opens each input as a source of
// its format; what a source offers is a capability found by type assertion (slices
// through a Sink and the Nester, spans, its own operations, lifecycle, GPU launches, view
// "tables"). Decoders turn a file into finished slices and track descriptions delivered
// to a Sink, natively and streaming; the Nester orders slices by start and gives each its
// parent and depth on its track with bounded memory. The analyzers (one file each:
// summarize.go, callgraph.go, pytorch.go, window.go, operations.go, lifecycle.go,
// launches.go, and tables.go for view "tables") open their source, ask for the
// capability their operation needs, and select and project the rows; they never look at
// the format (decision 0064).
//
// Packages: what the readers and the analyzers share (Sink, Event, Track, Stats, the
// Nester, TopK) is providers/trace/tracemodel; every format is read in a package of its
// own, which imports the model or providers/internal and never this package nor another
// format's: providers/trace/perfetto, providers/trace/chrome, providers/trace/otlp,
// providers/trace/nsys (Nsight Systems exports, SQLite and parquetdir, into records) and
// providers/trace/xctrace (Instruments exports). Their sources here (perfettosource.go,
// chromesource.go, otlpsource.go, nsyssource.go, xctracesource.go) open the input and
// call them. What turns records into answers stays here: the OTLP spans' analyses
// (otlpslices.go, otlpops.go, otlplifecycle.go) and view "tables"' sink (otlptables.go);
// the Nsight Systems rankings and self time (nsysops.go), lifecycle (nsyslifecycle.go),
// launches (nsyslaunch.go), view "tables" (nsystables.go) and their pages (nsyspages.go);
// and the conversions with the vendors' tools (nsysrep.go: nsys export; xctracesource.go:
// xcrun xctrace export) and the capture providers (collector.go, xctrace.go, nsysrep.go).
package trace
