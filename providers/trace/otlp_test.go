package trace

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/protowalk/protowalktest"
	"github.com/flameox/flameox/providers/trace/perfetto/perfettotest"
)

// truthSpan is one span as an independent reader sees it: Python's json for OTLP/JSON,
// protoc --decode_raw for OTLP/protobuf.
type truthSpan struct {
	Ordinal int64        `json:"ordinal"`
	TraceID string       `json:"trace_id"`
	SpanID  string       `json:"span_id"`
	Parent  string       `json:"parent"`
	Name    string       `json:"name"`
	Kind    int32        `json:"kind"`
	Start   string       `json:"start"`
	End     string       `json:"end"`
	Status  int32        `json:"status"`
	Events  []truthEvent `json:"events"`
	Links   int          `json:"links"`
	Service *string      `json:"service"`
}

type truthEvent struct {
	Time string `json:"time"`
	Name string `json:"name"`
}

type otlpTruth struct {
	Spans      []truthSpan      `json:"spans"`
	Tables     map[string]int64 `json:"tables"`
	Slices     []json.RawMessage
	Operations []json.RawMessage
	Lifecycle  []json.RawMessage
}

// otlpTruthScript reads OTLP/JSON with Python's json (mode "json") or takes the spans
// protoc --decode_raw gave (mode "spans"), and computes the rows of summarize_trace,
// summarize_trace_operations and summarize_trace_lifecycle from them.
const otlpTruthScript = `
import json, sys
from decimal import Decimal, ROUND_HALF_EVEN
path, mode = sys.argv[1], sys.argv[2]
KINDS = ["SPAN_KIND_UNSPECIFIED","SPAN_KIND_INTERNAL","SPAN_KIND_SERVER","SPAN_KIND_CLIENT","SPAN_KIND_PRODUCER","SPAN_KIND_CONSUMER"]
STATUS = ["STATUS_CODE_UNSET","STATUS_CODE_OK","STATUS_CODE_ERROR"]
def enum(v, names):
    if isinstance(v, str): return names.index(v)
    return int(v or 0)
tables = dict(resources_count=0, scopes_count=0, spans_count=0, events_count=0, links_count=0)
if mode == "json":
    text = open(path).read()
    dec = json.JSONDecoder(); pos = 0; docs = []
    while True:
        while pos < len(text) and text[pos].isspace(): pos += 1
        if pos >= len(text): break
        d, pos = dec.raw_decode(text, pos); docs.append(d)
    spans = []
    for d in docs:
        for rs in d.get("resourceSpans") or []:
            tables["resources_count"] += 1
            svc = None
            for kv in (rs.get("resource") or {}).get("attributes") or []:
                if kv["key"] == "service.name" and "stringValue" in kv["value"]: svc = kv["value"]["stringValue"]
            for ss in rs.get("scopeSpans") or []:
                tables["scopes_count"] += 1
                for s in ss.get("spans") or []:
                    spans.append(dict(ordinal=len(spans), trace_id=s.get("traceId","").lower(), span_id=s.get("spanId","").lower(),
                        parent=s.get("parentSpanId","").lower(), name=s.get("name",""), kind=enum(s.get("kind"), KINDS),
                        start=str(int(s.get("startTimeUnixNano") or 0)), end=str(int(s.get("endTimeUnixNano") or 0)),
                        status=enum((s.get("status") or {}).get("code"), STATUS),
                        events=[dict(time=str(int(e.get("timeUnixNano") or 0)), name=e.get("name","")) for e in s.get("events") or []],
                        links=len(s.get("links") or []), service=svc))
else:
    d = json.load(open(path)); spans = d["spans"]; tables.update(d["tables"])
tables["spans_count"] = len(spans)
tables["events_count"] = sum(len(s["events"]) for s in spans)
tables["links_count"] = sum(s["links"] for s in spans)
def ns(v): return v if abs(v) <= 2**53-1 else str(v)
# summarize_trace: timed spans with a positive duration by (start, longer first, ordinal).
first = {}
for s in spans: first.setdefault((s["trace_id"], s["span_id"]), s["ordinal"])
traces = {}
for s in spans: traces.setdefault(s["trace_id"], len(traces))
slices = []
for s in spans:
    st, en = int(s["start"]), int(s["end"])
    if st == 0 or en == 0 or en < st or en - st <= 0: continue
    p = first.get((s["trace_id"], s["parent"])) if s["parent"] and s["parent"] != "0"*16 else None
    slices.append(dict(id=s["ordinal"], parent_id=p, name=s["name"] or "<unnamed>", ts=ns(st), dur=ns(en-st), track_id=traces[s["trace_id"]],
        category=KINDS[s["kind"]], process_name=s["service"]))
slices.sort(key=lambda r: (int(r["ts"]), -int(r["dur"]), r["id"]))
# Self time: a timed span's duration less the union of its timed children's intervals
# (the spans naming it as parent) clipped to it.
def timed(s):
    st, en = int(s["start"]), int(s["end"])
    return not (st == 0 or en == 0 or en < st or en > 2**63-1)
kids = {}
for s in spans:
    if not timed(s) or not s["parent"] or s["parent"] == "0"*16: continue
    p = first.get((s["trace_id"], s["parent"]))
    if p is not None and p != s["ordinal"]:
        kids.setdefault(p, []).append((int(s["start"]), int(s["end"])))
def self_time(s):
    st, en = int(s["start"]), int(s["end"])
    merged = []
    for a, b in sorted((max(a, st), min(b, en)) for a, b in kids.get(s["ordinal"], [])):
        if b <= a: continue
        if merged and a <= merged[-1][1]: merged[-1][1] = max(merged[-1][1], b)
        else: merged.append([a, b])
    return (en - st) - sum(b - a for a, b in merged)
ops = {}
missing = 0
for s in spans:
    k = (s["name"], s["kind"], s["status"])
    o = ops.setdefault(k, dict(calls=0, durs=[], self=0))
    o["calls"] += 1
    if not timed(s): missing += 1; continue
    o["durs"].append(int(s["end"]) - int(s["start"]))
    o["self"] += self_time(s)
operations = []
for (name, kind, status), o in ops.items():
    tot = sum(o["durs"])
    mean = int((Decimal(tot) / Decimal(len(o["durs"]))).to_integral_value(ROUND_HALF_EVEN)) if o["durs"] else None
    operations.append(dict(operation=name or "<unnamed>", span_kind=KINDS[kind], status_code=STATUS[status], call_count=o["calls"],
        total_duration_ns=ns(tot), self_duration_ns=ns(o["self"]), mean_duration_ns=None if mean is None else ns(mean), max_duration_ns=ns(max(o["durs"])) if o["durs"] else None))
kind_total = {}
for r in operations: kind_total[r["span_kind"]] = kind_total.get(r["span_kind"], 0) + int(r["total_duration_ns"])
for r in operations:
    if kind_total[r["span_kind"]]:
        v = round(int(r["total_duration_ns"]) / kind_total[r["span_kind"]], 4)
        r["share_of_kind"] = int(v) if v == int(v) else v
operations.sort(key=lambda r: (-int(r["total_duration_ns"]), -r["call_count"], r["operation"], KINDS.index(r["span_kind"]), STATUS.index(r["status_code"])))
life = []
ORDER = {"span_started": 0, "span_event": 1, "span_ended": 2}
for s in spans:
    base = dict(trace_id=s["trace_id"], span_id=s["span_id"], parent_span_id=s["parent"] if s["parent"] and s["parent"] != "0"*16 else None, operation=s["name"] or "<unnamed>")
    items = [("span_started", int(s["start"]), 0, None)] + [("span_event", int(e["time"]), i, e["name"]) for i, e in enumerate(s["events"])] + [("span_ended", int(s["end"]), 0, None)]
    for tr, t, i, en in items:
        if t == 0: continue
        life.append(((t, s["span_id"], ORDER[tr], i, s["ordinal"]), dict(transition=tr, time_unix_nano=ns(t), **base, event_name=en)))
life.sort(key=lambda x: x[0])
json.dump(dict(spans=spans, tables=tables, slices=slices, operations=operations, lifecycle=[r for _, r in life], missing=missing), sys.stdout)
`

func runOTLPTruth(t *testing.T, path, mode string) otlpTruth {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", otlpTruthScript, path, mode).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("python3: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var tr otlpTruth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("python3 output: %v", err)
	}
	return tr
}

// cUnescape reverses protoc's C escaping of a quoted bytes or string field.
func cUnescape(t *testing.T, q string) []byte {
	t.Helper()
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		t.Fatalf("decode_raw value %q is not quoted", q)
	}
	s := q[1 : len(q)-1]
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch e := s[i]; {
		case e >= '0' && e <= '7':
			j := i
			v := 0
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				v = v*8 + int(s[j]-'0')
				j++
			}
			out = append(out, byte(v))
			i = j - 1
		case e == 'x':
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, byte(v))
			i += 2
		default:
			out = append(out, map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '"': '"', '\'': '\''}[e])
		}
	}
	return out
}

// protocSpans reads an OTLP/protobuf file with protoc --decode_raw (field numbers from
// opentelemetry-proto trace.proto) into the truth script's "spans" input.
func protocSpans(t *testing.T, path string) string {
	t.Helper()
	root := protowalktest.DecodeRaw(t, path)
	hexOf := func(n *protowalktest.Raw) string {
		if n == nil {
			return ""
		}
		return hex.EncodeToString(cUnescape(t, n.Val))
	}
	str := func(n *protowalktest.Raw) string {
		if n == nil {
			return ""
		}
		return string(cUnescape(t, n.Val))
	}
	fixed := func(n *protowalktest.Raw) string {
		if n == nil {
			return "0"
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(n.Val, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("fixed64 %q", n.Val)
		}
		return strconv.FormatUint(v, 10)
	}
	var spans []truthSpan
	tables := map[string]int64{}
	for _, rs := range root.All(1) {
		tables["resources_count"]++
		var svc *string
		if res := rs.One(1); res != nil {
			for _, kv := range res.All(1) {
				if str(kv.One(1)) == "service.name" && kv.One(2) != nil && kv.One(2).One(1) != nil {
					s := str(kv.One(2).One(1))
					svc = &s
				}
			}
		}
		for _, ss := range rs.All(2) {
			tables["scopes_count"]++
			for _, s := range ss.All(2) {
				kind, _ := s.Uint(6)
				var status uint64
				if st := s.One(15); st != nil {
					status, _ = st.Uint(3)
				}
				ts := truthSpan{Ordinal: int64(len(spans)), TraceID: hexOf(s.One(1)), SpanID: hexOf(s.One(2)), Parent: hexOf(s.One(4)),
					Name: str(s.One(5)), Kind: int32(kind), Start: fixed(s.One(7)), End: fixed(s.One(8)), Status: int32(status),
					Links: len(s.All(13)), Service: svc, Events: []truthEvent{}}
				for _, e := range s.All(11) {
					ts.Events = append(ts.Events, truthEvent{Time: fixed(e.One(1)), Name: str(e.One(2))})
				}
				spans = append(spans, ts)
			}
		}
	}
	b, err := json.Marshal(map[string]any{"spans": spans, "tables": tables})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "spans.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// decodedSpans reads a file with DecodeOTLP into truth spans.
func decodedSpans(t *testing.T, path string) ([]truthSpan, *OTLPStats) {
	t.Helper()
	var got []truthSpan
	in := providers.Input{Path: path, Format: gen.FormatOtlp}
	st, err := readOTLP(context.Background(), in, func(s *OTLPSpan) error {
		ts := truthSpan{Ordinal: s.Ordinal, TraceID: hex.EncodeToString(s.TraceID[:]), SpanID: hex.EncodeToString(s.SpanID[:]),
			Name: s.Name, Kind: s.Kind, Start: strconv.FormatUint(s.Start, 10), End: strconv.FormatUint(s.End, 10),
			Status: s.StatusCode, Links: s.Links, Service: s.Service, Events: []truthEvent{}}
		if s.HasParent {
			ts.Parent = hex.EncodeToString(s.ParentSpanID[:])
		}
		for _, e := range s.Events {
			ts.Events = append(ts.Events, truthEvent{Time: strconv.FormatUint(e.Time, 10), Name: e.Name})
		}
		got = append(got, ts)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return got, st
}

type otlpCase struct {
	name, path, mode string
}

func otlpCases(t *testing.T) []otlpCase {
	gen := filepath.Join(t.TempDir(), "generated.json")
	if err := os.WriteFile(gen, generatedOTLPJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	genpb := filepath.Join(t.TempDir(), "generated.binpb")
	if err := os.WriteFile(genpb, generatedOTLPProto(), 0o644); err != nil {
		t.Fatal(err)
	}
	return []otlpCase{
		{"spec example json", testtool.Corpus(t, "otlp__trace.json"), "json"},
		{"otel-js json", testtool.Corpus(t, "local__otel_js_otlp_http_json_trace.json"), "json"},
		{"otel-js protobuf", testtool.Corpus(t, "local__otel_js_otlp_protobuf_trace.binpb"), "protoc"},
		{"generated json (parents, enum names, two objects)", gen, "json"},
		{"generated protobuf (parents)", genpb, "protoc"},
	}
}

func truthFor(t *testing.T, c otlpCase) otlpTruth {
	if c.mode == "protoc" {
		return runOTLPTruth(t, protocSpans(t, c.path), "spans")
	}
	return runOTLPTruth(t, c.path, "json")
}

// TestDecodeOTLPAgainstIndependentReaders compares every span and table count with
// Python's json (OTLP/JSON) and protoc --decode_raw (OTLP/protobuf).
func TestDecodeOTLPAgainstIndependentReaders(t *testing.T) {
	for _, c := range otlpCases(t) {
		t.Run(c.name, func(t *testing.T) {
			tr := truthFor(t, c)
			got, st := decodedSpans(t, c.path)
			if d := cmp.Diff(tr.Spans, got); d != "" {
				t.Errorf("spans (-truth +decoded):\n%s", d)
			}
			gotTables := map[string]int64{"resources_count": st.Resources, "scopes_count": st.Scopes, "spans_count": st.Spans,
				"events_count": st.Events, "links_count": st.Links}
			if d := cmp.Diff(tr.Tables, gotTables); d != "" {
				t.Errorf("tables (-truth +decoded):\n%s", d)
			}
		})
	}
}

// TestOTLPOperationsAgainstPython pages the three OTLP analyses and compares their rows
// with the truth script's.
func TestOTLPOperationsAgainstPython(t *testing.T) {
	for _, c := range otlpCases(t) {
		t.Run(c.name, func(t *testing.T) {
			tr := truthFor(t, c)
			in := providers.Input{Path: c.path, Format: gen.FormatOtlp}
			req := &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{in}}

			a, err := summarize(context.Background(), sliceReq(req))
			if err != nil {
				t.Fatal(err)
			}
			type sliceCols struct {
				ID          int64   `json:"id"`
				ParentID    *int64  `json:"parent_id"`
				Name        string  `json:"name"`
				Ts          any     `json:"ts"`
				Dur         any     `json:"dur"`
				TrackID     int64   `json:"track_id"`
				Category    string  `json:"category"`
				ProcessName *string `json:"process_name"`
			}
			got, _ := pageAll[sliceCols](t, a.Rows, 2)
			compareRows(t, "summarize_trace", tr.Slices, got)

			a, err = summarizeOperations(context.Background(), sliceReq(req))
			if err != nil {
				t.Fatal(err)
			}
			ops, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 3)
			compareRows(t, "summarize_trace_operations", tr.Operations, ops)
			if a.Metrics["operation_count"] != len(tr.Operations) {
				t.Errorf("operation_count %v, want %d", a.Metrics["operation_count"], len(tr.Operations))
			}

			a, err = summarizeLifecycle(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			life, m := pageAll[gen.TraceLifecycleRow](t, a.Rows, 3)
			compareRows(t, "summarize_trace_lifecycle", tr.Lifecycle, life)
			if m["transition_count"] != int64(len(tr.Lifecycle)) || m["span_count"] != tr.Tables["spans_count"] || m["event_count"] != tr.Tables["events_count"] {
				t.Errorf("lifecycle metrics %v", m)
			}
		})
	}
}

// compareRows compares rows as JSON values (numbers as json.Number on both sides).
func compareRows[T any](t *testing.T, what string, want []json.RawMessage, got []T) {
	t.Helper()
	norm := func(b []byte) any {
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var w, g []any
	for _, r := range want {
		w = append(w, norm(r))
	}
	for i := range got {
		b, err := json.Marshal(got[i])
		if err != nil {
			t.Fatal(err)
		}
		g = append(g, norm(b))
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s rows (-python +flameox):\n%s", what, d)
	}
}

// genSpan is one span of the generated exports.
type genSpan struct {
	trace, span, parent string
	name                string
	kind, status        int
	start, end          uint64
	events              []uint64
}

// generatedSpans: parents before and after their children, a parent in another trace
// with the same span id, a parent that is not in the file, an untimed span, a span ending
// before it starts, equal starts, epoch nanoseconds beyond 2^53 and same-named
// operations of different status.
var generatedSpans = []genSpan{
	{"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "00f067aa0ba902b7", "child", 3, 0, 1700000000000000100, 1700000000000000900, []uint64{1700000000000000500, 1700000000000000100}},
	{"0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7", "", "root", 2, 1, 1700000000000000000, 1700000000000001000, nil},
	{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "", "root", 2, 2, 1700000000000000000, 1700000000000000400, []uint64{1700000000000000400}},
	{"4bf92f3577b34da6a3ce929d0e0e4736", "a000000000000001", "00f067aa0ba902b7", "child", 3, 0, 1700000000000000000, 1700000000000000400, nil},
	{"4bf92f3577b34da6a3ce929d0e0e4736", "a000000000000002", "ffffffffffffffff", "orphan", 1, 0, 1700000000000000050, 1700000000000000060, nil},
	{"4bf92f3577b34da6a3ce929d0e0e4736", "a000000000000003", "", "untimed", 0, 0, 0, 0, nil},
	{"4bf92f3577b34da6a3ce929d0e0e4736", "a000000000000004", "", "backwards", 5, 0, 1700000000000000200, 1700000000000000100, nil},
	{"4bf92f3577b34da6a3ce929d0e0e4736", "a000000000000005", "", "", 4, 1, 1000, 1001, nil},
}

var kindEnumNames = []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}

// generatedOTLPJSON writes generatedSpans as two concatenated ExportTraceServiceRequest
// objects (the file exporter's JSON Lines), with kinds as enum names in the second, IDs
// in upper case, unknown fields and integers as numbers in places.
func generatedOTLPJSON() []byte {
	var b strings.Builder
	for half := 0; half < 2; half++ {
		b.WriteString(`{"unknownTop":{"x":[1,2]},"resourceSpans":[{"scopeSpans":[],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc-`)
		b.WriteString(strconv.Itoa(half))
		b.WriteString(`"}}]}},{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"gen"}}]},"scopeSpans":[{"scope":{"name":"s"},"spans":[`)
		part := generatedSpans[half*4 : half*4+4]
		for i, s := range part {
			if i > 0 {
				b.WriteString(",")
			}
			kind := strconv.Itoa(s.kind)
			if half == 1 {
				kind = strconv.Quote(kindEnumNames[s.kind])
			}
			fmt.Fprintf(&b, `{"traceId":%q,"spanId":%q,"parentSpanId":%q,"name":%q,"kind":%s,"startTimeUnixNano":"%d","endTimeUnixNano":%d,"status":{"code":%d,"futureField":true},"events":[`,
				strings.ToUpper(s.trace), s.span, s.parent, s.name, kind, s.start, s.end, s.status)
			for j, e := range s.events {
				if j > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"timeUnixNano":"%d","name":"e%d"}`, e, j)
			}
			b.WriteString(`],"links":[{"traceId":"00000000000000000000000000000001","spanId":"0000000000000001"}],"newField":{"a":null}}`)
		}
		b.WriteString("]}]}]}\n")
	}
	return []byte(b.String())
}

// generatedOTLPProto writes generatedSpans as an ExportTraceServiceRequest with
// protowire (trace.proto field numbers), unknown fields included.
func generatedOTLPProto() []byte {
	msg := func(b []byte, num protowire.Number, body []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, body)
	}
	id := func(h string) []byte { x, _ := hex.DecodeString(h); return x }
	var kv []byte
	kv = msg(kv, 1, []byte("service.name"))
	kv = msg(kv, 2, msg(nil, 1, []byte("gen")))
	res := msg(nil, 1, kv)
	var ss []byte
	ss = msg(ss, 1, msg(nil, 1, []byte("scope")))
	for _, s := range generatedSpans {
		var sp []byte
		sp = msg(sp, 1, id(s.trace))
		sp = msg(sp, 2, id(s.span))
		if s.parent != "" {
			sp = msg(sp, 4, id(s.parent))
		}
		sp = msg(sp, 5, []byte(s.name))
		sp = protowire.AppendTag(sp, 6, protowire.VarintType)
		sp = protowire.AppendVarint(sp, uint64(s.kind))
		if s.start != 0 {
			sp = protowire.AppendTag(sp, 7, protowire.Fixed64Type)
			sp = protowire.AppendFixed64(sp, s.start)
		}
		if s.end != 0 {
			sp = protowire.AppendTag(sp, 8, protowire.Fixed64Type)
			sp = protowire.AppendFixed64(sp, s.end)
		}
		for j, e := range s.events {
			var ev []byte
			ev = protowire.AppendTag(ev, 1, protowire.Fixed64Type)
			ev = protowire.AppendFixed64(ev, e)
			ev = msg(ev, 2, []byte(fmt.Sprintf("e%d", j)))
			sp = msg(sp, 11, ev)
		}
		sp = msg(sp, 13, msg(nil, 1, id("00000000000000000000000000000001")))
		var st []byte
		st = protowire.AppendTag(st, 3, protowire.VarintType)
		st = protowire.AppendVarint(st, uint64(s.status))
		sp = msg(sp, 15, st)
		sp = protowire.AppendTag(sp, 99, protowire.VarintType) // a field from the future
		sp = protowire.AppendVarint(sp, 1)
		ss = msg(ss, 2, sp)
	}
	var rs []byte
	rs = msg(rs, 1, res)
	rs = msg(rs, 2, ss)
	return msg(nil, 1, rs)
}

// TestOTLPMalformed checks that broken exports fail with typed errors that name the
// source and no host path.
func TestOTLPMalformed(t *testing.T) {
	pb := generatedOTLPProto()
	msg := func(num protowire.Number, body []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	// request wraps a Resource and a Span body in ResourceSpans{resource, ScopeSpans{span}}.
	request := func(res, span []byte) []byte {
		return msg(1, append(msg(1, res), msg(2, msg(2, span))...))
	}
	traceID := msg(1, bytes.Repeat([]byte{1}, 16))
	cases := []struct {
		name, file string
		data       []byte
	}{
		{"truncated protobuf", "t.binpb", pb[:len(pb)-7]},
		// proto.Unmarshal rejects these; the generated types decode each message.
		{"protobuf span id of 5 bytes", "t.binpb", request(nil, append(traceID, msg(2, []byte{1, 2, 3, 4, 5})...))},
		{"protobuf span name not UTF-8", "t.binpb", request(nil, append(traceID, msg(5, []byte{0xff, 0xfe})...))},
		{"protobuf span truncated inside", "t.binpb", request(nil, append(traceID, msg(11, []byte{0x12, 0x05, 'a'})...))},
		{"protobuf resource attribute truncated", "t.binpb", request(msg(1, []byte{0x0a, 0x09, 's'}), traceID)},
		{"bad hex id", "t.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"00f067aa0ba902b7"}]}]}]}`)},
		{"short id", "t.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7","spanId":"00f067aa0ba902b7"}]}]}]}`)},
		{"bad kind name", "t.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SPAN_KIND_NOPE"}]}]}]}`)},
		{"negative time", "t.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"-1"}]}]}]}`)},
		{"spans not an array", "t.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":{}}]}]}`)},
		{"truncated json", "t.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"`)},
		{"not json", "t.json", []byte(`{"resourceSpans": nope}`)},
		{"empty", "t.json", nil},
	}
	dir := t.TempDir()
	for _, c := range cases {
		p := filepath.Join(dir, c.file)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readOTLP(context.Background(), providers.Input{Index: 3, Path: p, Format: gen.FormatOtlp}, func(*OTLPSpan) error { return nil })
		var de *providers.DecodeError
		if !errors.As(err, &de) || de.Source != 3 || strings.Contains(de.Message, dir) {
			t.Errorf("%s: got %v, want a DecodeError for source 3", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestIsOTLPProto keeps OTLP/protobuf detection apart from Perfetto, XPlane and JSON.
func TestIsOTLPProto(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(testtool.Corpus(t, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		head []byte
		want bool
	}{
		{"otel-js protobuf", read("local__otel_js_otlp_protobuf_trace.binpb"), true},
		{"generated protobuf", generatedOTLPProto(), true},
		{"perfetto basic", read("perfetto-mcp-rs__basic.perfetto-trace"), false},
		{"chromium perfetto", read("local__chromium156_trace_startup_proto.pftrace"), false},
		{"generated perfetto", perfettotest.Generate(4, 10, 3), false},
		{"xplane", read("local-h200__jax0.11.2_profile.xplane.pb"), false},
		{"otlp json", read("local__otel_js_otlp_http_json_trace.json"), false},
		{"empty", nil, false},
	} {
		head := c.head[:min(len(c.head), 4096)]
		if got := IsOTLPProto(head); got != c.want {
			t.Errorf("%s: IsOTLPProto = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestWithoutAttributes checks the span filter against the generated code itself: a Span
// marshalled by go.opentelemetry.io/proto/otlp with attributes in, then read back after
// withoutField drops field 9, equals the same Span with no attributes, every other field
// (events and links with their own attributes, status, unknown fields) intact.
func TestWithoutAttributes(t *testing.T) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	full := &tracepb.Span{
		TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), ParentSpanId: bytes.Repeat([]byte{3}, 8),
		TraceState: "a=b", Name: "GET /", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1, EndTimeUnixNano: 1 << 63,
		Attributes:             []*commonpb.KeyValue{str("http.method", "GET"), str("http.target", "/")},
		DroppedAttributesCount: 4,
		Events:                 []*tracepb.Span_Event{{TimeUnixNano: 5, Name: "e", Attributes: []*commonpb.KeyValue{str("k", "v")}}},
		Links:                  []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{4}, 16), SpanId: bytes.Repeat([]byte{5}, 8), Attributes: []*commonpb.KeyValue{str("l", "w")}}},
		Status:                 &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
		Flags:                  0x301,
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	// An attribute after the other fields, and a field from the future, kept.
	b = protowire.AppendBytes(protowire.AppendTag(b, 9, protowire.BytesType), []byte{0x0a, 0x01, 'x'})
	b = protowire.AppendVarint(protowire.AppendTag(b, 99, protowire.VarintType), 7)
	var got tracepb.Span
	if err := proto.Unmarshal(withoutField(nil, b, 9), &got); err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(full).(*tracepb.Span)
	want.Attributes = nil
	want.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	if diff := cmp.Diff(want, &got, protocmp.Transform()); diff != "" {
		t.Errorf("span less attributes (-want +got):\n%s", diff)
	}
	// Malformed data is passed on for Unmarshal to reject.
	bad := []byte{0x4a, 0x05, 'x'}
	if err := proto.Unmarshal(withoutField(nil, bad, 9), &got); err == nil {
		t.Error("a truncated attribute was accepted")
	}
}

// TestOTLPProtoDeclared: a protobuf export that detection's sniffing does not recognise
// (a first resource larger than the sniffed head; a span that writes its name before its
// trace id, as the wire format allows) is read as protobuf once declared OTLP, not as
// JSON.
func TestOTLPProtoDeclared(t *testing.T) {
	msg := func(num protowire.Number, body []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	attr := func(k, v string) []byte { return msg(1, append(str(1, k), msg(2, str(1, v))...)) }
	fixed := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
	}
	export := func(resource, span []byte) []byte {
		return msg(1, append(msg(1, resource), msg(2, msg(2, span))...))
	}
	ids := append(msg(1, bytes.Repeat([]byte{1}, 16)), msg(2, bytes.Repeat([]byte{2}, 8))...)
	times := append(fixed(7, 1000), fixed(8, 1010)...)
	inOrder := append(append(append([]byte{}, ids...), str(5, "a")...), times...)
	nameFirst := append(append(str(5, "a"), ids...), times...)
	service := attr("service.name", "svc")
	big := append(append([]byte{}, service...), attr("process.command_args", strings.Repeat("x", 5000))...)
	// A first ResourceSpans of 123 bytes starts the file 0x0a 0x7b: a newline, then '{'.
	var pad []byte
	for n := 0; ; n++ {
		r := append(append([]byte{}, service...), attr("k", strings.Repeat("x", n))...)
		if rs := append(msg(1, r), msg(2, msg(2, inOrder))...); len(rs) == 123 {
			pad = r
			break
		} else if len(rs) > 123 {
			t.Fatal("no padding gives a 123-byte ResourceSpans")
		}
	}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"large first resource", export(big, inOrder)},
		{"name before trace id", export(service, nameFirst)},
		{"starts like a newline and a brace", export(pad, inOrder)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "starts like a newline and a brace" && !bytes.HasPrefix(c.file, []byte("\n{")) {
				t.Fatalf("the file starts % x", c.file[:2])
			}
			rows := summarizeOTLPFile[map[string]any](t, "trace.binpb", c.file)
			if len(rows) != 1 || rows[0]["name"] != "a" || fmt.Sprint(rows[0]["dur"]) != "10" || rows[0]["process_name"] != "svc" {
				t.Errorf("rows %v", rows)
			}
		})
	}
}

// TestOTLPJSONWithBOM: an OTLP JSON file written with a UTF-8 byte order mark is read,
// under a .json name or another.
func TestOTLPJSONWithBOM(t *testing.T) {
	doc := "\xef\xbb\xbf" + `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
		`"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"a",` +
		`"startTimeUnixNano":"1000","endTimeUnixNano":"1010"}]}]}]}`
	for _, name := range []string{"trace.json", "trace.otlp"} {
		rows := summarizeOTLPFile[map[string]any](t, name, []byte(doc))
		if len(rows) != 1 || rows[0]["name"] != "a" || rows[0]["process_name"] != "svc" {
			t.Errorf("%s: rows %v", name, rows)
		}
	}
}

// TestOTLPSelfParent: a span whose parent span id is its own span id has no parent (it
// was listed as its own parent).
func TestOTLPSelfParent(t *testing.T) {
	doc := `{"resourceSpans":[{"scopeSpans":[{"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","parentSpanId":"0102030405060708","name":"self","startTimeUnixNano":"1000","endTimeUnixNano":"1010"},` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","parentSpanId":"0102030405060708","name":"child","startTimeUnixNano":"1001","endTimeUnixNano":"1002"}]}]}]}`
	rows := summarizeOTLPFile[idRow](t, "trace.json", []byte(doc))
	if len(rows) != 2 || rows[0].ID != 0 || rows[0].ParentID != nil || rows[1].ID != 1 || rows[1].ParentID == nil || *rows[1].ParentID != 0 {
		t.Errorf("rows %+v", rows)
	}
}

// summarizeOTLPFile writes b as a file named name, declared OTLP, and returns every row
// of summarize_trace over it.
func summarizeOTLPFile[T any](t *testing.T, name string, b []byte) []T {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Path: path, Format: gen.FormatOtlp}
	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := pageAll[T](t, a.Rows, 10)
	return rows
}
