// Package otlptest holds what the tests of the OTLP reader and of the trace family share:
// an independent truth for an OTLP file (Python's json for OTLP/JSON, protoc --decode_raw
// for OTLP/protobuf, and the rows the family's OTLP analyses must give, computed by a
// Python script: RunTruth, ProtocSpans, TruthFor), generated exports (GeneratedJSON,
// GeneratedProto), the files the tests compare (Cases) and the fuzz targets' seeds
// (FuzzSeeds). It is imported by tests only.
package otlptest

import (
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

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/internal/protowalk/protowalktest"
)

// TruthSpan is one span as an independent reader sees it: Python's json for OTLP/JSON,
// protoc --decode_raw for OTLP/protobuf.
type TruthSpan struct {
	Ordinal int64        `json:"ordinal"`
	TraceID string       `json:"trace_id"`
	SpanID  string       `json:"span_id"`
	Parent  string       `json:"parent"`
	Name    string       `json:"name"`
	Kind    int32        `json:"kind"`
	Start   string       `json:"start"`
	End     string       `json:"end"`
	Status  int32        `json:"status"`
	Events  []TruthEvent `json:"events"`
	Links   int          `json:"links"`
	Service *string      `json:"service"`
}

type TruthEvent struct {
	Time string `json:"time"`
	Name string `json:"name"`
}

// Truth is what the truth script gives: the spans and table counts, and the rows of
// summarize_trace, summarize_trace_operations and summarize_trace_lifecycle.
type Truth struct {
	Spans      []TruthSpan      `json:"spans"`
	Tables     map[string]int64 `json:"tables"`
	Slices     []json.RawMessage
	Operations []json.RawMessage
	Lifecycle  []json.RawMessage
}

// truthScript reads OTLP/JSON with Python's json (mode "json") or takes the spans
// protoc --decode_raw gave (mode "spans"), and computes the rows of summarize_trace,
// summarize_trace_operations and summarize_trace_lifecycle from them.
const truthScript = `
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

// RunTruth runs the truth script on path in mode ("json" or "spans"), skipping the test
// when python3 is not installed.
func RunTruth(t *testing.T, path, mode string) Truth {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", truthScript, path, mode).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("python3: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var tr Truth
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

// ProtocSpans reads an OTLP/protobuf file with protoc --decode_raw (field numbers from
// opentelemetry-proto trace.proto) into the truth script's "spans" input, a file whose
// path it returns.
func ProtocSpans(t *testing.T, path string) string {
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
	var spans []TruthSpan
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
				ts := TruthSpan{Ordinal: int64(len(spans)), TraceID: hexOf(s.One(1)), SpanID: hexOf(s.One(2)), Parent: hexOf(s.One(4)),
					Name: str(s.One(5)), Kind: int32(kind), Start: fixed(s.One(7)), End: fixed(s.One(8)), Status: int32(status),
					Links: len(s.All(13)), Service: svc, Events: []TruthEvent{}}
				for _, e := range s.All(11) {
					ts.Events = append(ts.Events, TruthEvent{Time: fixed(e.One(1)), Name: str(e.One(2))})
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

// Case is an OTLP file of the tests, with how its truth is read: "json" (Python's json)
// or "protoc" (protoc --decode_raw).
type Case struct {
	Name, Path, Mode string
}

// Cases are the corpus OTLP traces (JSON and protobuf) and the generated exports,
// GeneratedJSON and GeneratedProto, written to temporary files.

func Cases(t *testing.T) []Case {
	gen := filepath.Join(t.TempDir(), "generated.json")
	if err := os.WriteFile(gen, GeneratedJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	genpb := filepath.Join(t.TempDir(), "generated.binpb")
	if err := os.WriteFile(genpb, GeneratedProto(), 0o644); err != nil {
		t.Fatal(err)
	}
	return []Case{
		{"spec example json", testtool.Corpus(t, "otlp__trace.json"), "json"},
		{"otel-js json", testtool.Corpus(t, "local__otel_js_otlp_http_json_trace.json"), "json"},
		{"otel-js protobuf", testtool.Corpus(t, "local__otel_js_otlp_protobuf_trace.binpb"), "protoc"},
		{"generated json (parents, enum names, two objects)", gen, "json"},
		{"generated protobuf (parents)", genpb, "protoc"},
	}
}

// TruthFor is the truth of a case, read as its Mode says.
func TruthFor(t *testing.T, c Case) Truth {
	if c.Mode == "protoc" {
		return RunTruth(t, ProtocSpans(t, c.Path), "spans")
	}
	return RunTruth(t, c.Path, "json")
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

// GeneratedJSON writes generatedSpans as two concatenated ExportTraceServiceRequest
// objects (the file exporter's JSON Lines), with kinds as enum names in the second, IDs
// in upper case, unknown fields and integers as numbers in places.
func GeneratedJSON() []byte {
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

// GeneratedProto writes generatedSpans as an ExportTraceServiceRequest with
// protowire (trace.proto field numbers), unknown fields included.
func GeneratedProto() []byte {
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

// FuzzSeeds are the seeds of the decoder's fuzz targets for one encoding: the corpus
// files of that encoding (those present) and hand-written exports.
func FuzzSeeds(proto bool) [][]byte {
	var out [][]byte
	add := func(b []byte) {
		if b != nil {
			out = append(out, b)
		}
	}
	if !proto {
		add(fuzztool.File("local__otel_js_otlp_http_json_trace.json"))
		add(fuzztool.File("otlp__trace.json"))
		for _, s := range []string{
			`{}`, `{"resourceSpans":[]}`,
			`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"a","kind":2,"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000","events":[{"timeUnixNano":"1544712660500000000","name":"e"}],"links":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b172"}],"status":{"code":2}}]}]}]}`,
			`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"b","startTimeUnixNano":2,"endTimeUnixNano":1}]}]}]}{"resourceSpans":[]}`,
		} {
			add([]byte(s))
		}
		return out
	}
	add(fuzztool.File("local__otel_js_otlp_protobuf_trace.binpb"))
	for _, h := range []string{
		"",
		// ResourceSpans{ScopeSpans{Span{trace_id, span_id, name:"a", start:1, end:2}}}
		"0a2a" + "1228" + "1226" + "0a1000112233445566778899aabbccddeeff" + "12080011223344556677" + "2a0161" + "3901000000000000004102000000000000" + "00",
		"0a00", "0a021200", "0aff01",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}
