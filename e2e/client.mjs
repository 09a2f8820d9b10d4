// client.mjs drives `flameox mcp serve` over stdio with the official TypeScript MCP SDK,
// an implementation independent of the Go server's SDK. It lists the tools, pages through
// a file by submitting next_page unchanged, preserves the first page, queries and inspects
// the evidence, replays it, and provokes a failure. The SDK validates each
// structuredContent against the advertised outputSchema, failures included.
// FLAMEOX_DATA_DIR is passed through to the server.
//
// With an OTLP/JSON TRACE it also pages summarize_trace's view "tables" (the export's own
// resources, scopes, spans, events and links) by submitting next_page unchanged.
//
// With a torch.profiler (Kineto) KINETO trace it also ranks the trace's GPU kernels with
// summarize_trace_operations under an event_kind filter, one row a page, following
// next_page: the new optional row fields pass the SDK's output-schema validation.
//
// With an Nsight Compute details page NCU it also reads the default launches view of
// inspect_gpu_kernel_metrics.
//
// With the OTLP TRACE it also ranks the spans with summarize_trace_operations (total and
// self time), and with a benchmark result BENCH it reads summarize_benchmarks' view
// series (one row per series).
//
// usage: node client.mjs FLAMEOX_BINARY FILE [TRACE [KINETO [NCU [BENCH]]]]
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, file, trace, kineto, ncu, bench] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "serve"],
  stderr: "inherit",
  env: { PATH: process.env.PATH, HOME: process.env.HOME, FLAMEOX_DATA_DIR: process.env.FLAMEOX_DATA_DIR },
});
const client = new Client({ name: "flameox-e2e", version: "1.0.0" });
await client.connect(transport);

const report = {};
const { tools } = await client.listTools();
report.tools = tools.map((t) => ({
  name: t.name,
  readOnlyHint: t.annotations?.readOnlyHint,
  openWorldHint: t.annotations?.openWorldHint,
  sourcesMaxItems: t.inputSchema.properties.sources?.maxItems ?? null,
  hasOutputSchema: t.outputSchema?.type === "object",
}));

async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const sc = res.structuredContent;
  const text = JSON.parse(res.content[0].text);
  if (JSON.stringify(text) !== JSON.stringify(sc)) throw new Error("text block differs from structuredContent");
  if (res.isError) throw new Error(name + " failed: " + res.content[0].text);
  return sc;
}
const lines = (sc) => sc.blocks[sc.blocks.length - 1].rows.map((r) => r.line);

let args = { sources: [{ kind: "path", path: file }], page_size: 4 };
const pages = [];
let firstID;
for (let i = 0; i < 20; i++) {
  const sc = await call("preview_artifact", args);
  firstID ??= sc.analysis_id;
  pages.push(lines(sc));
  if (!sc.next_page) break;
  args = sc.next_page.arguments;
}
report.pages = pages;

const preserved = await call("preserve_evidence", { analysis_id: firstID });
const query = await call("query_evidence", { operation: "preview_artifact" });
const view = await call("inspect_evidence", { evidence_id: preserved.evidence_id });
const replay = await call("preview_artifact", { sources: view.analysis_sources, page_size: 4 });
const next = await call(preserved.next_page.tool, preserved.next_page.arguments);
report.evidence = {
  queried: query.evidence.map((e) => e.evidence_id === preserved.evidence_id),
  analysis_sources: view.analysis_sources.map((s) => s.kind),
  replayed_first_page: lines(replay),
  evidence_second_page: lines(next),
};

const captured = await call("capture_and_preview_artifact", {
  target: { argv: ["sh", "-c", "echo e2e; exit 1"], cwd: path.dirname(file) },
  provider: { kind: "direct" },
});
report.capture = {
  status: captured.status,
  workload_status: captured.capture.workload_status,
  rows: captured.blocks[captured.blocks.length - 1].rows.map((r) => r.text),
  next_action: captured.next_action.kind,
  next_tool: captured.next_action.tool,
  workload_failure: [captured.workload_failure.code, captured.workload_failure.returncode],
};
// The next action runs as given: preserve_evidence with the capture's handle.
const kept = await call(captured.next_action.tool, captured.next_action.arguments);
report.capture.preserved = kept.status;

if (trace) {
  let targs = { sources: [{ kind: "path", path: trace, format: "otlp" }], view: "tables", page_size: 2 };
  const tables = [];
  let metrics;
  for (let i = 0; i < 10; i++) {
    const sc = await call("summarize_trace", targs);
    metrics ??= sc.blocks[0].values;
    tables.push(sc.blocks[sc.blocks.length - 1].rows.map((r) => r.table));
    if (!sc.next_page) break;
    targs = sc.next_page.arguments;
  }
  report.tables = { pages: tables, table_count: metrics.table_count, row_count: metrics.row_count };
  const ops = await call("summarize_trace_operations", { sources: [{ kind: "path", path: trace }] });
  report.span_operations = ops.blocks[ops.blocks.length - 1].rows.map((r) => [r.operation, r.span_kind, r.call_count,
    r.total_duration_ns, r.self_duration_ns, r.share_of_kind]);
}

if (kineto) {
  let kargs = { sources: [{ kind: "path", path: kineto }], event_kind: ["kernel"], page_size: 1 };
  const ranked = [];
  for (let i = 0; i < 5; i++) {
    const sc = await call("summarize_trace_operations", kargs);
    for (const r of sc.blocks[sc.blocks.length - 1].rows) {
      ranked.push([r.operation, r.mangled_name ?? null, r.event_kind, r.call_count, r.total_duration_ns, r.self_duration_ns,
        r.share_of_kind, r.launch_op_name ?? null, r.launch_op_count ?? null, r.streams ?? null]);
    }
    if (!sc.next_page) break;
    kargs = sc.next_page.arguments;
    if (JSON.stringify(kargs.event_kind) !== JSON.stringify(["kernel"])) throw new Error("next_page lost the filter");
  }
  report.kernels = ranked;
}

if (ncu) {
  const sc = await call("inspect_gpu_kernel_metrics", { sources: [{ kind: "path", path: ncu }] });
  report.launches = sc.blocks[sc.blocks.length - 1].rows.map((r) => [r.launch_id, r.duration_ns, r.compute_throughput_pct,
    r.achieved_occupancy_pct, r.rules.map((x) => [x.rule, x.estimated_speedup])]);
}

if (bench) {
  const sc = await call("summarize_benchmarks", { sources: [{ kind: "path", path: bench }], view: "series" });
  report.series_count = sc.blocks[0].values.series_count;
  report.series = sc.blocks[sc.blocks.length - 1].rows.map((r) => [r.benchmark, r.unit, r.dimensions, r.variant, r.value_count,
    r.warmup_count, r.mean, r.median, r.stdev, r.min, r.max]);
}

const bad = await client.callTool({
  name: "preview_artifact",
  arguments: { sources: [{ kind: "path", path: file, format: "pyperf" }] },
});
report.failure = {
  isError: bad.isError,
  code: bad.structuredContent.code,
  field_path: bad.structuredContent.field_path,
  accepted_values: bad.structuredContent.accepted_values,
};
await client.close();
console.log(JSON.stringify(report, null, 2));
