// Flameox evidence viewer: a small script over the read-only JSON API (/api/...) and the
// server-drawn SVG charts (/charts/...). Views: #/ (the evidence list) and
// #/evidence/<id>[?start_ns=&end_ns=&origin_ns=] (one evidence, optionally on a window of
// its timeline). No dependencies, no inline script or style: text goes in through
// textContent, SVG is parsed as image/svg+xml, positions are set through the CSSOM.
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
};
const SVG_NS = "http://www.w3.org/2000/svg";
const CPU_OPERATIONS = ["rank_cpu_hotspots", "inspect_cpu_callers"];
// The chart of each operation family: its server-side SVG route, the page section, and
// what the page adds to the drawing once it is in the document.
const CHARTS = [
  { ops: CPU_OPERATIONS, route: "/charts/flamegraph/", box: "#flamegraph", section: "#flamegraph-section", setup: (svg) => setupFlame(svg) },
  { ops: ["summarize_trace", "inspect_trace_window", "inspect_trace_call_graph", "summarize_pytorch_trace"],
    route: "/charts/timeline/", box: "#timeline", section: "#timeline-section", setup: (svg) => setupTimeline(svg) },
  { ops: ["summarize_benchmarks", "compare_benchmarks", "analyze_benchmark_scaling"],
    route: "/charts/benchmarks/", box: "#benchchart", section: "#benchchart-section", setup: (svg) => setupTips(svg, "g.series") },
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

// ---- units -------------------------------------------------------------------------

// fmtSig writes x with four significant digits, without trailing zeros.
function fmtSig(x) {
  if (x === 0 || !Number.isFinite(x)) return String(x);
  const d = Math.max(0, 3 - Math.floor(Math.log10(Math.abs(x))));
  let s = x.toFixed(d);
  if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  return s;
}

// fmtNs writes nanoseconds in ns, µs, ms or s ("22.53 ms").
function fmtNs(ns) {
  const units = [["ns", 1], ["µs", 1e3], ["ms", 1e6], ["s", 1e9]];
  let i = 0;
  while (i < units.length - 1 && Math.abs(ns) >= units[i + 1][1]) i++;
  let s = fmtSig(ns / units[i][1]);
  if (Math.abs(Number(s)) >= 1000 && i < units.length - 1) { i++; s = fmtSig(ns / units[i][1]); }
  return `${s} ${units[i][0]}`;
}

const TIME_UNITS = { seconds: 1e9, second: 1e9, s: 1e9, ms: 1e6, milliseconds: 1e6, us: 1e3, "µs": 1e3, microseconds: 1e3, ns: 1, nanoseconds: 1 };

// fmtWeight writes a flame graph weight: times humanised, other units as numbers.
function fmtWeight(v, unit) {
  if (unit in TIME_UNITS) return fmtNs(v * TIME_UNITS[unit]);
  return `${fmtSig(v)} ${unit}`;
}

const pct = (part, whole) => whole > 0 ? `${(part / whole * 100).toFixed(2)}%` : "";

// ---- tooltip -------------------------------------------------------------------------

function showTip(e, lines) {
  const tip = $("#tooltip");
  tip.textContent = lines.filter((l) => l !== "").join("\n");
  tip.hidden = false;
  const pad = 14;
  let x = e.clientX + pad, y = e.clientY + pad;
  const r = tip.getBoundingClientRect();
  if (x + r.width > window.innerWidth - 4) x = Math.max(4, e.clientX - r.width - pad);
  if (y + r.height > window.innerHeight - 4) y = Math.max(4, e.clientY - r.height - pad);
  tip.style.left = `${x}px`;
  tip.style.top = `${y}px`;
}

function hideTip() { $("#tooltip").hidden = true; }

// moveTitles moves each matching element's <title> into data-tip: the page's tooltip
// shows it at once (the browser's own would show it again, late).
function moveTitles(svg, selector) {
  for (const e of svg.querySelectorAll(selector)) {
    const t = e.querySelector(":scope > title");
    if (t) { e.dataset.tip = t.textContent; t.remove(); }
  }
}

// setupTips gives the elements of selector the page's tooltip, from their titles.
function setupTips(svg, selector) {
  moveTitles(svg, selector);
  svg.addEventListener("mousemove", (e) => {
    const g = e.target.closest(selector);
    if (g && g.dataset.tip) showTip(e, [g.dataset.tip]); else hideTip();
  });
  svg.addEventListener("mouseleave", hideTip);
}

// ---- the evidence list ---------------------------------------------------------------

// The list is read whole (up to LIST_MAX evidence, in pages of 200) and sorted newest
// first, by creation time then id: query_evidence pages in inventory order, which is not
// time. Each shown row's inputs and status come from its projection (GET
// /api/evidence/{id}), which the summaries do not carry.
const LIST_MAX = 2000;
let list = { all: [], pos: 0, size: 50, inventory: 0, capped: false, seq: 0 };
let renders = 0; // each rendering of a list page fetches its rows' details

function filterArgs() {
  const f = new FormData($("#filters"));
  const args = {};
  for (const [k, v] of f.entries()) if (String(v).trim() !== "") args[k] = String(v).trim();
  return args;
}

// timeKey makes an RFC 3339 time sortable as text to the nanosecond.
function timeKey(t) {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(t || "");
  if (!m) return t || "";
  const base = m[3] === "Z" ? m[1] : new Date(m[1] + m[3]).toISOString().slice(0, 19);
  return base + "." + (m[2] || "").padEnd(9, "0");
}

async function loadList(args) {
  showError(null);
  const seq = ++list.seq;
  const size = Math.min(Math.max(Number(args.page_size) || 50, 1), 200);
  const q = Object.assign({}, args, { page_size: "200" });
  const all = [];
  let res;
  for (;;) {
    res = await api("/api/evidence?" + new URLSearchParams(q).toString());
    all.push(...res.evidence);
    if (!res.next_page || all.length >= LIST_MAX) break;
    q.cursor = res.next_page.arguments.cursor;
  }
  if (seq !== list.seq) return;
  all.sort((a, b) => {
    const ka = timeKey(a.created_at), kb = timeKey(b.created_at);
    return ka < kb ? 1 : ka > kb ? -1 : a.evidence_id < b.evidence_id ? -1 : a.evidence_id > b.evidence_id ? 1 : 0;
  });
  list = { all, pos: 0, size, inventory: res.inventory_size, capped: !!res.next_page, seq };
  await renderList();
}

async function renderList() {
  const { all, pos, size } = list;
  const shown = all.slice(pos, pos + size);
  const body = $("#evidence-table tbody");
  body.replaceChildren();
  const cells = [];
  for (const ev of shown) {
    const tr = el("tr");
    tr.dataset.evidenceId = ev.evidence_id;
    tr.dataset.created = ev.created_at;
    const link = el("a", ev.evidence_id.slice(0, 16), "mono evidence-link");
    link.href = "#/evidence/" + ev.evidence_id;
    link.title = ev.evidence_id;
    const td = el("td"); td.append(link);
    const c = ev.coverage || {};
    const status = el("td", c.complete === false ? "partial" : "complete", c.complete === false ? "status status-partial" : "status");
    const inputs = el("td", "…", "inputs");
    tr.append(el("td", ev.created_at, "mono"), td, el("td", ev.operation), status, inputs, el("td", ev.evidence_kind),
      el("td", ev.provider ? `${ev.provider.id} ${ev.provider.version}` : ""), el("td", coverageText(ev.coverage)));
    body.append(tr);
    cells.push({ id: ev.evidence_id, status, inputs });
  }
  const end = Math.min(pos + size, all.length);
  $("#list-status").textContent = `${all.length ? pos + 1 : 0}–${end} of ${all.length} evidence, newest first` +
    (list.capped ? ` (the first ${all.length} of ${list.inventory} in the store's order: narrow the filters to sort the rest)` :
      `; ${list.inventory} in the store`);
  $("#list-prev").disabled = pos === 0;
  $("#list-next").disabled = end >= all.length;
  document.body.dataset.listDetails = "loading";
  const seq = ++renders;
  await listDetails(cells, seq);
  if (seq === renders) document.body.dataset.listDetails = "done";
}

// listDetails fills each shown row's inputs (role, format, digest prefix: the manifest
// holds no file names) and status (a recorded failure, a capture's execution statuses,
// else the coverage) from its projection, two requests at a time.
async function listDetails(cells, seq) {
  let next = 0;
  const worker = async () => {
    while (next < cells.length && seq === renders) {
      const c = cells[next++];
      try {
        const p = await api("/api/evidence/" + encodeURIComponent(c.id));
        const b = p.body || {};
        const ins = (b.analysis_request && b.analysis_request.inputs && b.analysis_request.inputs.length ?
          b.analysis_request.inputs : b.inputs) || [];
        c.inputs.replaceChildren(...ins.map((i, n) => {
          const s = el("span", `${n ? ", " : ""}${i.role} (${i.format}, ${i.sha256.slice(0, 8)})`);
          s.title = `${i.sha256}, ${i.size_bytes} bytes`;
          return s;
        }));
        const st = evidenceStatus(b);
        c.status.textContent = st.text;
        c.status.className = "status" + (st.kind ? " status-" + st.kind : "");
      } catch (err) {
        c.inputs.textContent = "(" + String(err.message || err) + ")";
      }
    }
  };
  await Promise.all([worker(), worker()]);
}

function evidenceStatus(b) {
  const fl = b.analysis_request && b.analysis_request.failure;
  if (fl && fl.code) return { text: "failed: " + fl.code, kind: "failed" };
  const execs = (b.capture_request && b.capture_request.executions) || [];
  const failed = execs.map((e) => e.failure_code).filter(Boolean);
  if (failed.length) return { text: "capture failed: " + [...new Set(failed)].join(", "), kind: "failed" };
  const statuses = [...new Set(execs.map((e) => e.status).filter(Boolean))];
  const cov = b.coverage || {};
  const base = cov.complete === false ? "partial" : "complete";
  return { text: statuses.length ? `${base}; capture ${statuses.join(", ")}` : base, kind: cov.complete === false ? "partial" : "" };
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

async function loadEvidence(id, params) {
  showError(null);
  hideTip();
  const ev = await api("/api/evidence/" + encodeURIComponent(id));
  current = ev;
  const b = ev.body || {};
  $("#evidence-title").textContent = `${b.operation || b.evidence_kind} · ${ev.evidence_id}`;
  const req = b.analysis_request || {};
  const st = evidenceStatus(b);
  $("#evidence-summary").textContent = [b.provider ? `${b.provider.id} ${b.provider.version}` : "",
    b.episode && b.episode.created_at, st.text,
    (b.inputs || []).map((i) => `${i.role} (${i.format})`).join(", ")].filter(Boolean).join(" · ");
  dl($("#provenance"), [
    ["Evidence", ev.evidence_id], ["Kind", b.evidence_kind], ["Operation", b.operation],
    ["Provider", b.provider ? `${b.provider.id} ${b.provider.version}` : ""],
    ["Created", b.episode && b.episode.created_at], ["Status", st.text], ["Request", req.request_sha256],
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
  flame.svg = null;
  $("#flame-search").value = "";
  timelineState = { id: ev.evidence_id, origin: params.get("origin_ns") || "", lanes: null };
  const ops = $("#cpu-ops");
  ops.replaceChildren(...(cpu ? CPU_OPERATIONS : [b.operation]).map((o) => { const x = el("option"); x.value = o; return x; }));
  const form = $("#analysis");
  form.elements.operation.value = b.operation || "";
  // The timeline opens on the window of the URL, else inspect_trace_window evidence on its
  // preserved window when its bounds are exact here (decimal strings, the canonical
  // {"$flameox.integer": ...} form, or safe integers).
  const exact = (v) => typeof v === "string" ? v : Number.isSafeInteger(v) ? String(v) :
    v && typeof v["$flameox.integer"] === "string" ? v["$flameox.integer"] : "";
  const a = (b.analysis_request && b.analysis_request.arguments) || {};
  const own = b.operation === "inspect_trace_window";
  let start = params.get("start_ns") || "", end = params.get("end_ns") || "";
  if (!(start && end) && own) { start = exact(a.start_ns); end = exact(a.end_ns); }
  const work = [runAnalysis(firstRequest())];
  if (chart && chart.box === "#timeline") work.push(showTimeline(start && end ? { start, end } : null, false));
  else if (chart) work.push(loadChart(chart, ev.evidence_id));
  await Promise.all(work);
}

async function loadChart(chart, id, query) {
  const resp = await fetch(chart.route + encodeURIComponent(id) + (query ? "?" + query : ""));
  const text = await resp.text();
  if (!resp.ok) {
    let msg = `HTTP ${resp.status}`;
    try { const d = JSON.parse(text); msg = `${d.code}: ${d.message}`; } catch (e) { /* keep the status */ }
    $(chart.box).replaceChildren(el("p", "No chart: " + msg, "error"));
    return null;
  }
  // The SVG is built by the server with every name escaped; parse it as SVG, never as HTML.
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = document.importNode(doc.documentElement, true);
  $(chart.box).replaceChildren(svg);
  chart.setup(svg);
  return svg;
}

// ---- flame graph: zoom, search, tooltip ------------------------------------------------

// The server draws every frame at 1200 px with its start and width as fractions of the
// total (data-x, data-w), its index and its parent's. The page lays the frames out again
// at the box's own width: the focused frame fills it, its ancestors span it above, its
// descendants are scaled with it, the rest is hidden.
const flame = { svg: null, frames: [], focus: 0, unit: "", total: 0 };

function setupFlame(svg) {
  flame.svg = svg;
  flame.unit = svg.dataset.unit || "";
  flame.total = Number(svg.dataset.total) || 0;
  flame.focus = 0;
  for (const t of svg.querySelectorAll("g.frame > title")) t.remove();
  flame.frames = [...svg.querySelectorAll("g.frame")].map((g) => {
    let text = g.querySelector("text");
    if (!text) { text = document.createElementNS(SVG_NS, "text"); g.append(text); }
    return { g, rect: g.querySelector("rect"), text, index: Number(g.dataset.index), parent: Number(g.dataset.parent),
      depth: Number(g.dataset.depth), x: Number(g.dataset.x), w: Number(g.dataset.w), fn: g.dataset.function || "" };
  });
  svg.addEventListener("click", (e) => {
    const g = e.target.closest("g.frame");
    if (g) zoomFlame(Number(g.dataset.index));
  });
  svg.addEventListener("mousemove", (e) => {
    const g = e.target.closest("g.frame");
    if (g) showTip(e, frameTip(g)); else hideTip();
  });
  svg.addEventListener("mouseleave", hideTip);
  layoutFlame();
  searchFlame();
}

function frameTip(g) {
  const d = g.dataset, u = flame.unit, T = flame.total;
  const w = Number(d.w); // the box's exact fraction of the total
  if (Number(d.depth) === 0) return ["all", `total: ${fmtWeight(T, u)}`];
  return [
    d.function,
    d.file ? `${d.file}:${d.line}` : "",
    `this frame: ${fmtWeight(w * T, u)} (${(w * 100).toFixed(2)}% of total)`,
    `function total (inclusive): ${fmtWeight(Number(d.total), u)} (${pct(Number(d.total), T)})`,
    `function self: ${fmtWeight(Number(d.self), u)} (${pct(Number(d.self), T)})`,
    "click to zoom",
  ];
}

// frameLabel is the server's rule: the characters that fit at 6.6 px after 6 px of padding.
function frameLabel(name, w) {
  const chars = Math.floor((w - 6) / 6.6);
  if (chars < 3) return "";
  const r = [...name];
  return r.length > chars ? r.slice(0, chars - 1).join("") + "…" : name;
}

function layoutFlame() {
  const svg = flame.svg;
  if (!svg || !svg.isConnected) return;
  const W = Math.max(320, Math.floor($("#flamegraph").clientWidth));
  const H = svg.getAttribute("height");
  svg.setAttribute("width", String(W));
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const frames = flame.frames;
  const F = frames[flame.focus];
  const ancestors = new Set();
  for (let i = flame.focus; i >= 0; i = frames[i].parent) ancestors.add(i);
  const inside = new Array(frames.length).fill(false);
  inside[flame.focus] = true;
  for (const f of frames) if (f.parent >= 0 && inside[f.parent]) inside[f.index] = true; // pre-order
  for (const f of frames) {
    let x, w;
    if (ancestors.has(f.index)) { x = 0; w = W; }
    else if (inside[f.index]) { x = (f.x - F.x) / F.w * W; w = f.w / F.w * W; }
    f.g.classList.toggle("off", x === undefined);
    f.g.classList.toggle("ancestor", ancestors.has(f.index) && f.index !== flame.focus);
    f.g.classList.toggle("focus", f.index === flame.focus && f.index !== 0);
    if (x === undefined) continue;
    f.rect.setAttribute("x", x.toFixed(3));
    f.rect.setAttribute("width", w.toFixed(3));
    f.text.setAttribute("x", (x + 3).toFixed(3));
    f.text.textContent = frameLabel(f.fn, w);
  }
  svg.dataset.focus = String(flame.focus);
  svg.dataset.width = String(W);
  const crumbs = $("#flame-crumbs");
  const path = [...ancestors].reverse();
  crumbs.replaceChildren();
  if (path.length > 1) {
    path.forEach((i, n) => {
      if (n) crumbs.append(el("span", "›", "sep"));
      const bt = el("button", frames[i].fn || "all");
      bt.type = "button";
      bt.dataset.index = String(i);
      bt.addEventListener("click", () => zoomFlame(i));
      crumbs.append(bt);
    });
  }
  $("#flame-reset").disabled = flame.focus === 0;
}

function zoomFlame(index) {
  if (!flame.svg || !(index >= 0 && index < flame.frames.length)) return;
  flame.focus = index;
  layoutFlame();
}

// searchFlame highlights the frames whose function name contains the text (case-
// insensitive) and sums their share of the total: a match inside another match is
// already in it, so only matches with no matching ancestor count.
function searchFlame() {
  if (!flame.svg) return;
  const q = $("#flame-search").value.trim().toLowerCase();
  const out = $("#flame-match");
  flame.svg.classList.toggle("searching", q !== "");
  const matched = new Array(flame.frames.length).fill(false);
  const nested = new Array(flame.frames.length).fill(false);
  let share = 0, count = 0;
  const functions = new Set();
  for (const f of flame.frames) { // pre-order: parents first
    const m = q !== "" && f.depth > 0 && f.fn.toLowerCase().includes(q);
    matched[f.index] = m;
    nested[f.index] = f.parent >= 0 && (matched[f.parent] || nested[f.parent]);
    f.g.classList.toggle("match", m);
    if (!m) continue;
    count++;
    functions.add(`${f.fn}\u0000${f.g.dataset.file}\u0000${f.g.dataset.line}`);
    if (!nested[f.index]) share += f.w;
  }
  out.dataset.share = q ? String(share) : "";
  out.dataset.count = String(count);
  out.textContent = !q ? "" : count === 0 ? "no frame matches" :
    `${count} frames of ${functions.size} functions match: ${(share * 100).toFixed(2)}% of the total (${fmtWeight(share * flame.total, flame.unit)})`;
}

// ---- timeline: axis, drag to a window, flows, tooltips -----------------------------------

let timelineState = { id: "", origin: "", lanes: null };
const timelineChart = CHARTS.find((c) => c.box === "#timeline");

// showTimeline draws the whole trace (win null) or the window {start, end} (decimal ns),
// with the axis counted from the trace's start when the page knows it; with record, the
// URL says which window is shown, so that a reload or a link opens on it.
async function showTimeline(win, record) {
  const id = timelineState.id;
  const f = $("#timeline-window").elements;
  f.start_ns.value = win ? win.start : "";
  f.end_ns.value = win ? win.end : "";
  const box = $("#timeline");
  box.dataset.startNs = win ? win.start : "";
  box.dataset.endNs = win ? win.end : "";
  const q = new URLSearchParams();
  if (win) {
    q.set("start_ns", win.start);
    q.set("end_ns", win.end);
    if (timelineState.origin) q.set("origin_ns", timelineState.origin);
  }
  if (record) history.replaceState(null, "", `#/evidence/${id}` + (win ? "?" + q.toString() : ""));
  box.dataset.loading = "true";
  const svg = await loadChart(timelineChart, id, win ? q.toString() : undefined);
  box.dataset.loading = "";
  if (svg && !win) {
    timelineState.origin = svg.dataset.t0;
    timelineState.lanes = new Map([...svg.querySelectorAll("text.lane")].map((t) => [t.dataset.track, t.dataset.label]));
  } else if (svg && timelineState.lanes) {
    // A window's rows carry no thread or process names: name its lanes by track from the
    // whole trace's lanes, when the page has drawn them.
    for (const t of svg.querySelectorAll("text.lane")) {
      const label = timelineState.lanes.get(t.dataset.track);
      if (label) { t.dataset.label = label; t.textContent = [...label].length > 29 ? [...label].slice(0, 28).join("") + "…" : label; }
    }
    for (const g of svg.querySelectorAll("g.slice")) {
      const label = timelineState.lanes.get(g.dataset.track);
      if (label) g.dataset.lane = label;
    }
  }
  const status = $("#timeline-status");
  if (!svg) { status.textContent = ""; return; }
  const t0 = BigInt(svg.dataset.t0), t1 = BigInt(svg.dataset.t1), origin = BigInt(svg.dataset.origin);
  status.textContent = win ?
    `Window [${win.start}, ${win.end}) ns: ${fmtNs(Number(t1 - t0))} from ${fmtNs(Number(t0 - origin))} into the trace. Drag again to zoom in, Whole trace to go back.` :
    `Whole trace: ${fmtNs(Number(t1 - t0))}. Drag across the plot to zoom into a window.`;
}

function setupTimeline(svg) {
  svg.classList.toggle("hide-flows", !$("#timeline-flows").checked);
  for (const t of svg.querySelectorAll("g.slice > title, text.lane > title")) t.remove();
  const origin = BigInt(svg.dataset.origin);
  svg.addEventListener("mousemove", (e) => {
    if (drag) return;
    const s = e.target.closest("g.slice"), lane = e.target.closest("text.lane");
    if (s) {
      const d = s.dataset;
      showTip(e, [d.name, `${fmtNs(Number(d.dur))} at ${fmtNs(Number(BigInt(d.ts) - origin))}`, d.lane, `ts ${d.ts} ns, dur ${d.dur} ns`]);
    } else if (lane) {
      showTip(e, [lane.dataset.label]);
    } else hideTip();
  });
  svg.addEventListener("mouseleave", hideTip);
  svg.addEventListener("mousedown", (e) => startDrag(e, svg));
}

let drag = null;

function svgPoint(svg, e) {
  return new DOMPoint(e.clientX, e.clientY).matrixTransform(svg.getScreenCTM().inverse());
}

function startDrag(e, svg) {
  if (e.button !== 0) return;
  const plotX = Number(svg.dataset.plotX), plotW = Number(svg.dataset.plotW);
  const p = svgPoint(svg, e);
  if (p.x < plotX || p.x > plotX + plotW) return;
  e.preventDefault();
  hideTip();
  const rect = document.createElementNS(SVG_NS, "rect");
  rect.setAttribute("class", "selection");
  rect.setAttribute("y", "0");
  rect.setAttribute("height", svg.getAttribute("height"));
  rect.setAttribute("x", String(p.x));
  rect.setAttribute("width", "0");
  svg.append(rect);
  const clamp = (x) => Math.min(Math.max(x, plotX), plotX + plotW);
  drag = { svg, rect, x0: clamp(p.x), x1: clamp(p.x), plotX, plotW };
  const move = (ev) => {
    drag.x1 = clamp(svgPoint(svg, ev).x);
    rect.setAttribute("x", String(Math.min(drag.x0, drag.x1)));
    rect.setAttribute("width", String(Math.abs(drag.x1 - drag.x0)));
  };
  const up = (ev) => {
    window.removeEventListener("mousemove", move);
    window.removeEventListener("mouseup", up);
    move(ev);
    const d = drag;
    drag = null;
    rect.remove();
    if (Math.abs(d.x1 - d.x0) < 3) return; // a click, not a drag
    const t0 = BigInt(svg.dataset.t0), t1 = BigInt(svg.dataset.t1);
    const at = (x) => t0 + (t1 - t0) * BigInt(Math.round((x - d.plotX) / d.plotW * 1e6)) / 1000000n;
    const start = at(Math.min(d.x0, d.x1));
    let end = at(Math.max(d.x0, d.x1));
    if (end <= start) end = start + 1n;
    showTimeline({ start: String(start), end: String(end) }, true).catch(showError);
  };
  window.addEventListener("mousemove", move);
  window.addEventListener("mouseup", up);
}

// ---- rows ------------------------------------------------------------------------------

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
  const m = location.hash.match(/^#\/evidence\/([0-9a-f]{64})(?:\?(.*))?$/);
  $("#list-view").hidden = !!m;
  $("#evidence-view").hidden = !m;
  document.body.dataset.view = m ? "evidence" : "list";
  document.body.dataset.ready = "";
  try {
    if (m) await loadEvidence(m[1], new URLSearchParams(m[2] || ""));
    else await loadList(filterArgs());
  } catch (err) {
    showError(err);
  }
  document.body.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", () => {
  $("#filters").addEventListener("submit", (e) => { e.preventDefault(); loadList(filterArgs()).catch(showError); });
  $("#list-first").addEventListener("click", () => loadList(filterArgs()).catch(showError));
  $("#list-next").addEventListener("click", () => { list.pos += list.size; renderList().catch(showError); });
  $("#list-prev").addEventListener("click", () => { list.pos = Math.max(0, list.pos - list.size); renderList().catch(showError); });
  $("#analysis").addEventListener("submit", (e) => { e.preventDefault(); runAnalysis(firstRequest()); });
  $("#rows-first").addEventListener("click", () => runAnalysis(firstRequest()));
  $("#flame-search").addEventListener("input", searchFlame);
  $("#flame-reset").addEventListener("click", () => zoomFlame(0));
  // The flame graph follows its box's width (the window's, a scroll bar coming and going).
  let frame = 0, width = 0;
  new ResizeObserver(() => {
    const w = $("#flamegraph").clientWidth;
    if (w === width) return;
    width = w;
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(layoutFlame);
  }).observe($("#flamegraph"));
  // The timeline of a window: the server validates the bounds and answers a typed failure.
  $("#timeline-window").addEventListener("submit", (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    showTimeline({ start: String(f.get("start_ns")).trim(), end: String(f.get("end_ns")).trim() }, true).catch(showError);
  });
  $("#timeline-window").addEventListener("reset", (e) => {
    e.preventDefault();
    showTimeline(null, true).catch(showError);
  });
  $("#timeline-flows").addEventListener("change", (e) => {
    const svg = $("#timeline svg");
    if (svg) svg.classList.toggle("hide-flows", !e.target.checked);
  });
  window.addEventListener("hashchange", route);
  route();
});
