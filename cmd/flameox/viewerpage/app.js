// Flameox evidence viewer: a small script over the read-only JSON API (/api/...).
// Views: #/ (the evidence list) and #/evidence/<id> (one evidence). No dependencies.
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
};
const CPU_OPERATIONS = ["rank_cpu_hotspots", "inspect_cpu_callers"];
// The chart of each operation family: its server-side SVG route and the page section.
const CHARTS = [
  { ops: CPU_OPERATIONS, route: "/charts/flamegraph/", box: "#flamegraph", section: "#flamegraph-section" },
  { ops: ["summarize_trace", "inspect_trace_window", "inspect_trace_call_graph", "summarize_pytorch_trace"],
    route: "/charts/timeline/", box: "#timeline", section: "#timeline-section" },
  { ops: ["summarize_benchmarks", "compare_benchmarks", "analyze_benchmark_scaling"],
    route: "/charts/benchmarks/", box: "#benchchart", section: "#benchchart-section" },
];

async function api(path, body) {
  const init = body === undefined ? {} :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const resp = await fetch(path, init);
  const text = await resp.text();
  let doc;
  try { doc = JSON.parse(text); } catch (e) { doc = null; }
  if (!resp.ok) {
    const msg = doc && doc.message ? `${doc.code}: ${doc.message}` : `HTTP ${resp.status}`;
    throw new Error(msg);
  }
  return doc;
}

function showError(err) {
  const e = $("#error");
  e.hidden = !err;
  e.textContent = err ? String(err.message || err) : "";
}

// ---- the evidence list -------------------------------------------------------------

let listArgs = {};

function filterArgs() {
  const f = new FormData($("#filters"));
  const args = {};
  for (const [k, v] of f.entries()) if (String(v).trim() !== "") args[k] = String(v).trim();
  return args;
}

async function loadList(args) {
  showError(null);
  listArgs = args;
  const q = new URLSearchParams(args).toString();
  const res = await api("/api/evidence" + (q ? "?" + q : ""));
  const body = $("#evidence-table tbody");
  body.replaceChildren();
  for (const ev of res.evidence) {
    const tr = el("tr");
    tr.dataset.evidenceId = ev.evidence_id;
    tr.append(el("td", ev.created_at));
    const link = el("a", ev.evidence_id.slice(0, 16), "mono evidence-link");
    link.href = "#/evidence/" + ev.evidence_id;
    link.title = ev.evidence_id;
    const td = el("td"); td.append(link); tr.append(td);
    tr.append(el("td", ev.evidence_kind), el("td", ev.operation),
      el("td", ev.provider ? `${ev.provider.id} ${ev.provider.version}` : ""),
      el("td", coverageText(ev.coverage)));
    body.append(tr);
  }
  $("#list-status").textContent = `${res.evidence.length} shown of ${res.inventory_size} in the store`;
  const next = $("#list-next");
  next.disabled = !res.next_page;
  next.onclick = () => {
    const a = Object.assign({}, listArgs, { cursor: res.next_page.arguments.cursor });
    loadList(a).catch(showError);
  };
}

function coverageText(c) {
  if (!c) return "";
  return `${c.rows_returned ?? "?"} of ${c.rows_observed ?? "?"} rows` + (c.complete ? "" : " (partial)");
}

// ---- one evidence --------------------------------------------------------------------

let current = null;

function dl(target, pairs) {
  target.replaceChildren();
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === "") continue;
    target.append(el("dt", k), el("dd", typeof v === "object" ? JSON.stringify(v) : v));
  }
}

async function loadEvidence(id) {
  showError(null);
  const ev = await api("/api/evidence/" + encodeURIComponent(id));
  current = ev;
  const b = ev.body || {};
  $("#evidence-title").textContent = `${b.operation || b.evidence_kind} · ${ev.evidence_id}`;
  const req = b.analysis_request || {};
  dl($("#provenance"), [
    ["Evidence", ev.evidence_id], ["Kind", b.evidence_kind], ["Operation", b.operation],
    ["Provider", b.provider ? `${b.provider.id} ${b.provider.version}` : ""],
    ["Created", b.episode && b.episode.created_at], ["Request", req.request_sha256],
    ["Arguments", req.arguments && Object.keys(req.arguments).length ? req.arguments : ""],
    ["Capture", b.capture_request ? "yes" : ""],
    ["Artifacts", (b.artifacts || []).length], ["Data files", (b.data_files || []).length],
  ]);
  const inputs = $("#inputs-table tbody");
  inputs.replaceChildren();
  for (const inp of b.inputs || []) {
    const tr = el("tr");
    const a = el("a", inp.sha256, "mono");
    // Download only: the server sends artifacts as attachments, never to be rendered here.
    a.href = `/api/artifacts/${encodeURIComponent(inp.sha256)}?evidence_id=${encodeURIComponent(ev.evidence_id)}`;
    a.setAttribute("download", "");
    a.title = "Download the stored bytes";
    const td = el("td"); td.append(a);
    tr.append(el("td", inp.format), el("td", inp.role), td, el("td", inp.size_bytes, "num"));
    inputs.append(tr);
  }
  dl($("#coverage"), Object.entries(b.coverage || {}));
  const lims = $("#limitations");
  lims.replaceChildren(...(b.limitations || []).map((l) => el("li", l)));

  const cpu = CPU_OPERATIONS.includes(b.operation);
  const chart = CHARTS.find((c) => c.ops.includes(b.operation));
  for (const c of CHARTS) {
    $(c.section).hidden = c !== chart;
    $(c.box).replaceChildren();
  }
  const ops = $("#cpu-ops");
  ops.replaceChildren(...(cpu ? CPU_OPERATIONS : [b.operation]).map((o) => { const x = el("option"); x.value = o; return x; }));
  const form = $("#analysis");
  form.elements.operation.value = b.operation || "";
  // inspect_trace_window evidence opens on its preserved window, when its bounds are exact
  // here (decimal strings, the canonical {"$flameox.integer": ...} form, or safe integers).
  const exact = (v) => typeof v === "string" ? v : Number.isSafeInteger(v) ? String(v) :
    v && typeof v["$flameox.integer"] === "string" ? v["$flameox.integer"] : "";
  const a = (b.analysis_request && b.analysis_request.arguments) || {};
  const win = $("#timeline-window").elements;
  const own = b.operation === "inspect_trace_window";
  win.start_ns.value = own ? exact(a.start_ns) : "";
  win.end_ns.value = own ? exact(a.end_ns) : "";
  const windowQuery = win.start_ns.value && win.end_ns.value ?
    new URLSearchParams({ start_ns: win.start_ns.value, end_ns: win.end_ns.value }).toString() : undefined;
  const work = [runAnalysis(firstRequest())];
  if (chart) work.push(loadChart(chart, ev.evidence_id, chart.box === "#timeline" ? windowQuery : undefined));
  await Promise.all(work);
}

async function loadChart(chart, id, query) {
  const resp = await fetch(chart.route + encodeURIComponent(id) + (query ? "?" + query : ""));
  const text = await resp.text();
  if (!resp.ok) {
    let msg = `HTTP ${resp.status}`;
    try { const d = JSON.parse(text); msg = `${d.code}: ${d.message}`; } catch (e) { /* keep the status */ }
    $(chart.box).replaceChildren(el("p", "No chart: " + msg, "error"));
    return;
  }
  // The SVG is built by the server with every name escaped; parse it as SVG, never as HTML.
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  $(chart.box).replaceChildren(document.importNode(doc.documentElement, true));
}

// firstRequest is the analysis request of the form: the evidence's analysis_sources, and
// the preserved arguments when the operation is the evidence's own.
function firstRequest() {
  const form = $("#analysis");
  const op = form.elements.operation.value.trim();
  const b = current.body || {};
  const args = op === b.operation && b.analysis_request ? Object.assign({}, b.analysis_request.arguments) : {};
  args.sources = current.analysis_sources;
  args.page_size = Number(form.elements.page_size.value) || 20;
  return { operation: op, args };
}

async function runAnalysis(request) {
  showError(null);
  const status = $("#rows-status");
  status.textContent = "analysing…";
  document.body.dataset.rows = "loading";
  let res;
  try {
    res = await api("/api/analyze/" + encodeURIComponent(request.operation), request.args);
  } catch (err) {
    status.textContent = "";
    renderRows([]);
    $("#rows-next").disabled = true;
    showError(err);
    document.body.dataset.rows = "failed";
    return;
  }
  const rows = [];
  const metrics = [];
  for (const block of res.blocks || []) {
    if (block.type === "table") rows.push(...block.rows);
    if (block.type === "metrics") metrics.push(block.values);
  }
  renderRows(rows);
  const cov = res.coverage ? coverageText(res.coverage) : "";
  status.textContent = `${request.operation}: ${res.status}; ${rows.length} rows on this page` + (cov ? `; ${cov}` : "") +
    (metrics.length ? "; " + metrics.map((m) => JSON.stringify(m)).join(" ") : "");
  const next = $("#rows-next");
  next.disabled = !res.next_page;
  next.onclick = () => runAnalysis({ operation: res.next_page.tool, args: res.next_page.arguments });
  document.body.dataset.rows = String(++rowsLoaded);
}

let rowsLoaded = 0;

function renderRows(rows) {
  const cols = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  const head = $("#rows-table thead");
  const tr = el("tr");
  tr.append(...cols.map((c) => el("th", c)));
  head.replaceChildren(tr);
  const body = $("#rows-table tbody");
  body.replaceChildren(...rows.map((r) => {
    const row = el("tr");
    for (const c of cols) {
      const v = r[c];
      const shown = typeof v === "number" && !Number.isInteger(v) ? Number(v.toPrecision(6)) : v;
      const td = el("td", v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : shown);
      if (typeof v === "number") td.className = "num";
      row.append(td);
    }
    return row;
  }));
}

// ---- routing ---------------------------------------------------------------------------

async function route() {
  const m = location.hash.match(/^#\/evidence\/([0-9a-f]{64})$/);
  $("#list-view").hidden = !!m;
  $("#evidence-view").hidden = !m;
  document.body.dataset.view = m ? "evidence" : "list";
  document.body.dataset.ready = "";
  try {
    if (m) await loadEvidence(m[1]);
    else await loadList(filterArgs());
  } catch (err) {
    showError(err);
  }
  document.body.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", () => {
  $("#filters").addEventListener("submit", (e) => { e.preventDefault(); loadList(filterArgs()).catch(showError); });
  $("#list-first").addEventListener("click", () => loadList(filterArgs()).catch(showError));
  $("#analysis").addEventListener("submit", (e) => { e.preventDefault(); runAnalysis(firstRequest()); });
  $("#rows-first").addEventListener("click", () => runAnalysis(firstRequest()));
  // The timeline of a window: the server validates the bounds and answers a typed failure.
  const timelineChart = CHARTS.find((c) => c.box === "#timeline");
  $("#timeline-window").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const q = new URLSearchParams({ start_ns: String(f.get("start_ns")).trim(), end_ns: String(f.get("end_ns")).trim() });
    loadChart(timelineChart, current.evidence_id, q.toString()).catch(showError);
  });
  $("#timeline-window").addEventListener("reset", () => {
    loadChart(timelineChart, current.evidence_id).catch(showError);
  });
  window.addEventListener("hashchange", route);
  route();
});
