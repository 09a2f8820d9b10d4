package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp"
	"github.com/flameox/flameox/providers/trace/otlp/otlptest"
)

// otlpTablesTruth is python3's own OTLP writer and reader. Mode "gen" writes one trace in
// both encodings, OTLP/JSON (hex ids, int64 as strings, kinds as integers and one as its
// name) and OTLP/protobuf (the wire format written by hand from opentelemetry-proto's
// field numbers), and prints the rows view "tables" must give for both. Mode "json" reads
// an OTLP/JSON file with Python's json and prints its rows. Rows: resources, scopes,
// spans, events, links in that order, each in file order; ids lower-case hex or null,
// Unix nanoseconds null when absent, integers beyond 2^53-1 as strings, infinities as
// "Infinity", bytes base64, attributes objects.
const otlpTablesTruth = `
import sys, json, struct, base64, math
KINDS = ["SPAN_KIND_UNSPECIFIED","SPAN_KIND_INTERNAL","SPAN_KIND_SERVER","SPAN_KIND_CLIENT","SPAN_KIND_PRODUCER","SPAN_KIND_CONSUMER"]
CODES = ["STATUS_CODE_UNSET","STATUS_CODE_OK","STATUS_CODE_ERROR"]
SAFE = 2**53 - 1

def num(v):
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > SAFE:
        return str(v)
    if isinstance(v, float) and math.isinf(v):
        return 'Infinity' if v > 0 else '-Infinity'
    return v

# ---- rows from OTLP/JSON ----
def jany(v):
    if v is None: return None
    if 'stringValue' in v: return v['stringValue']
    if 'boolValue' in v: return v['boolValue']
    if 'intValue' in v: return num(int(v['intValue']))
    if 'doubleValue' in v:
        d = v['doubleValue']
        return num(float(d))
    if 'bytesValue' in v: return v['bytesValue']
    if 'arrayValue' in v: return [jany(e) for e in v['arrayValue'].get('values', [])]
    if 'kvlistValue' in v: return jattrs(v['kvlistValue'].get('values', []))
    return None
def jattrs(kvs):
    out = {}
    for kv in kvs or []:
        out[kv['key']] = jany(kv.get('value'))
    return out
def hexid(s):
    if not s or int(s, 16) == 0: return None
    return s.lower()
def nanos(v):
    v = int(v or 0)
    return None if v == 0 else num(v)
def kind(k):
    if isinstance(k, str): return k
    return KINDS[k or 0]
def rows_of(docs):
    t = {n: [] for n in ['resources','scopes','spans','events','links']}
    ri = si = sp = 0
    for doc in docs:
        for rs in doc.get('resourceSpans', []):
            for ss in rs.get('scopeSpans', []):
                for s in ss.get('spans', []):
                    st = s.get('status') or {}
                    code = st.get('code', 0)
                    t['spans'].append(dict(table='spans', resource_index=ri, scope_index=si, span_index=sp,
                        trace_id=hexid(s.get('traceId')), span_id=hexid(s.get('spanId')), parent_span_id=hexid(s.get('parentSpanId')),
                        trace_state=s.get('traceState', ''), flags=s.get('flags', 0), name=s.get('name', ''), kind=kind(s.get('kind')),
                        start_time_unix_nano=nanos(s.get('startTimeUnixNano')), end_time_unix_nano=nanos(s.get('endTimeUnixNano')),
                        status_code=code if isinstance(code, str) else CODES[code], status_message=st.get('message', ''),
                        attributes=jattrs(s.get('attributes')), dropped_attributes_count=s.get('droppedAttributesCount', 0),
                        dropped_events_count=s.get('droppedEventsCount', 0), dropped_links_count=s.get('droppedLinksCount', 0)))
                    for i, e in enumerate(s.get('events', [])):
                        t['events'].append(dict(table='events', span_index=sp, event_index=i, time_unix_nano=nanos(e.get('timeUnixNano')),
                            name=e.get('name', ''), attributes=jattrs(e.get('attributes')), dropped_attributes_count=e.get('droppedAttributesCount', 0)))
                    for i, l in enumerate(s.get('links', [])):
                        t['links'].append(dict(table='links', span_index=sp, link_index=i, trace_id=hexid(l.get('traceId')),
                            span_id=hexid(l.get('spanId')), trace_state=l.get('traceState', ''), attributes=jattrs(l.get('attributes')),
                            dropped_attributes_count=l.get('droppedAttributesCount', 0), flags=l.get('flags', 0)))
                    sp += 1
                sc = ss.get('scope') or {}
                t['scopes'].append(dict(table='scopes', resource_index=ri, scope_index=si, name=sc.get('name', ''), version=sc.get('version', ''),
                    attributes=jattrs(sc.get('attributes')), dropped_attributes_count=sc.get('droppedAttributesCount', 0)))
                si += 1
            res = rs.get('resource') or {}
            t['resources'].append(dict(table='resources', resource_index=ri, attributes=jattrs(res.get('attributes')),
                dropped_attributes_count=res.get('droppedAttributesCount', 0)))
            ri += 1
    return t['resources'] + t['scopes'] + t['spans'] + t['events'] + t['links']

# ---- protobuf writer ----
def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
def key(f, wt): return varint(f << 3 | wt)
def ld(f, b): return key(f, 2) + varint(len(b)) + b
def st(f, s): return ld(f, s.encode())
def vi(f, n): return key(f, 0) + varint(n)
def fx64(f, n): return key(f, 1) + struct.pack('<Q', n)
def fx32(f, n): return key(f, 5) + struct.pack('<I', n)
def dbl(f, x): return key(f, 1) + struct.pack('<d', x)
def pany(v):
    k, x = v
    if k == 's': return st(1, x)
    if k == 'b': return vi(2, 1 if x else 0)
    if k == 'i': return vi(3, x)
    if k == 'd': return dbl(4, x)
    if k == 'a': return ld(5, b''.join(ld(1, pany(e)) for e in x))
    if k == 'k': return ld(6, b''.join(ld(1, pkv(n, e)) for n, e in x))
    if k == 'y': return ld(7, x)
def pkv(n, v): return st(1, n) + ld(2, pany(v))
def pattrs(f, kvs): return b''.join(ld(f, pkv(n, v)) for n, v in kvs)
def jv(v):
    k, x = v
    if k == 's': return {'stringValue': x}
    if k == 'b': return {'boolValue': x}
    if k == 'i': return {'intValue': str(x)}
    if k == 'd': return {'doubleValue': 'Infinity' if x == math.inf else x}
    if k == 'a': return {'arrayValue': {'values': [jv(e) for e in x]}}
    if k == 'k': return {'kvlistValue': {'values': [{'key': n, 'value': jv(e)} for n, e in x]}}
    if k == 'y': return {'bytesValue': base64.b64encode(x).decode()}
def jattrs_of(kvs): return [{'key': n, 'value': jv(v)} for n, v in kvs]

T1, T2 = bytes.fromhex('0af7651916cd43dd8448eb211c80319c'), bytes.fromhex('4bf92f3577b34da6a3ce929d0e0e4736')
S = [bytes.fromhex(h) for h in ['b7ad6b7169203331', '00f067aa0ba902b7', '53995c3f42cd8ad8']]
ATTRS = [('str', ('s', 'value')), ('yes', ('b', True)), ('no', ('b', False)), ('neg', ('i', -7)), ('wide', ('i', 2**60)),
         ('quarter', ('d', 0.25)), ('inf', ('d', math.inf)), ('list', ('a', [('s', 'x'), ('i', 3)])),
         ('map', ('k', [('inner', ('s', 'v')), ('n', ('i', 1))])), ('raw', ('y', b'\x00\xff'))]
spans = [
    dict(tid=T1, sid=S[0], parent=None, state='k=v', flags=0x301, name='root', kind=2, start=1700000000000000000, end=1700000000500000000,
         attrs=ATTRS, status=(2, 'boom'), dropped=(1, 2, 3),
         events=[(1700000000100000000, 'exception', [('exception.type', ('s', 'ValueError'))]), (0, 'untimed', [])],
         links=[(T2, S[2], 'a=b', [('link.kind', ('s', 'follows'))], 0xFFFFFFFF)]),
    dict(tid=T1, sid=S[1], parent=S[0], state='', flags=0, name='child', kind=3, start=1700000000200000000, end=0,
         attrs=[], status=None, dropped=(0, 0, 0), events=[], links=[]),
]
resources = [
    dict(attrs=[('service.name', ('s', 'svc')), ('service.version', ('s', '1.0'))], dropped=4,
         scopes=[dict(name='lib', version='2.1', attrs=[('scope.attr', ('i', 5))], dropped=0, spans=spans[:1]),
                 dict(name=None, spans=spans[1:])]),
    dict(attrs=None, scopes=[]),
]

def pspan(s):
    b = ld(1, s['tid']) + ld(2, s['sid'])
    if s['state']: b += st(3, s['state'])
    if s['parent']: b += ld(4, s['parent'])
    if s['flags']: b += fx32(16, s['flags'])
    b += st(5, s['name']) + vi(6, s['kind']) + fx64(7, s['start'])
    if s['end']: b += fx64(8, s['end'])
    b += pattrs(9, s['attrs'])
    if s['dropped'][0]: b += vi(10, s['dropped'][0])
    for t, n, a in s['events']:
        e = (fx64(1, t) if t else b'') + st(2, n) + pattrs(3, a)
        b += ld(11, e)
    if s['dropped'][1]: b += vi(12, s['dropped'][1])
    for tid, sid, state, a, flags in s['links']:
        b += ld(13, ld(1, tid) + ld(2, sid) + st(3, state) + pattrs(4, a) + fx32(6, flags))
    if s['dropped'][2]: b += vi(14, s['dropped'][2])
    if s['status']: b += ld(15, st(2, s['status'][1]) + vi(3, s['status'][0]))
    return b
def jspan(s, named):
    o = {'traceId': s['tid'].hex().upper(), 'spanId': s['sid'].hex()}
    if s['state']: o['traceState'] = s['state']
    if s['parent']: o['parentSpanId'] = s['parent'].hex()
    if s['flags']: o['flags'] = s['flags']
    o['name'] = s['name']
    o['kind'] = KINDS[s['kind']] if named else s['kind']
    o['startTimeUnixNano'] = str(s['start'])
    if s['end']: o['endTimeUnixNano'] = str(s['end'])
    o['attributes'] = jattrs_of(s['attrs'])
    if s['dropped'][0]: o['droppedAttributesCount'] = s['dropped'][0]
    o['events'] = [dict(({'timeUnixNano': str(t)} if t else {}), name=n, attributes=jattrs_of(a)) for t, n, a in s['events']]
    if s['dropped'][1]: o['droppedEventsCount'] = s['dropped'][1]
    o['links'] = [{'traceId': tid.hex(), 'spanId': sid.hex(), 'traceState': state, 'attributes': jattrs_of(a), 'flags': flags}
                  for tid, sid, state, a, flags in s['links']]
    if s['dropped'][2]: o['droppedLinksCount'] = s['dropped'][2]
    if s['status']: o['status'] = {'message': s['status'][1], 'code': s['status'][0]}
    o['unknownField'] = {'ignored': True}
    return o

mode = sys.argv[1]
if mode == 'gen':
    pb, js = b'', {'resourceSpans': []}
    for r in resources:
        rb, rj = b'', {}
        if r['attrs'] is not None:
            rb += ld(1, pattrs(1, r['attrs']) + (vi(2, r['dropped']) if r['dropped'] else b''))
            rj['resource'] = {'attributes': jattrs_of(r['attrs']), 'droppedAttributesCount': r['dropped']}
        rj['scopeSpans'] = []
        for sc in r['scopes']:
            sb, sj = b'', {}
            if sc['name'] is not None:
                sb += ld(1, st(1, sc['name']) + st(2, sc['version']) + pattrs(3, sc['attrs']))
                sj['scope'] = {'name': sc['name'], 'version': sc['version'], 'attributes': jattrs_of(sc['attrs'])}
            sj['spans'] = []
            for s in sc['spans']:
                sb += ld(2, pspan(s))
                sj['spans'].append(jspan(s, s['name'] == 'child'))
            rb += ld(2, sb)
            rj['scopeSpans'].append(sj)
        pb += ld(1, rb)
        js['resourceSpans'].append(rj)
    open(sys.argv[2], 'wb').write(pb)
    open(sys.argv[3], 'w').write(json.dumps(js))
    json.dump(rows_of([js]), sys.stdout)
else:
    text = open(sys.argv[2]).read()
    dec, docs, i = json.JSONDecoder(), [], 0
    while i < len(text):
        while i < len(text) and text[i].isspace(): i += 1
        if i == len(text): break
        d, i = dec.raw_decode(text, i)
        docs.append(d)
    json.dump(rows_of(docs), sys.stdout)
`

// keysInOrder lists the member names of each JSON object row in order.
func keysInOrder(t *testing.T, rows []json.RawMessage) [][]string {
	t.Helper()
	out := make([][]string, len(rows))
	for i, r := range rows {
		dec := jsontext.NewDecoder(bytes.NewReader(r))
		if _, err := dec.ReadToken(); err != nil {
			t.Fatal(err)
		}
		for dec.PeekKind() != '}' {
			k, err := dec.ReadToken()
			if err != nil {
				t.Fatal(err)
			}
			out[i] = append(out[i], k.String())
			if err := dec.SkipValue(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// allRows pages rows to the end with a new analysis per page, as continuations do.
func allRows(t *testing.T, analyze func() (*providers.Analysis, error), limit int64) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for offset := int64(0); ; {
		a, err := analyze()
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.Rows.Page(context.Background(), offset, limit, nil)
		if err != nil {
			t.Fatalf("page at %d: %v", offset, err)
		}
		out = append(out, p.Rows...)
		offset += int64(len(p.Rows))
		if !p.More {
			return out
		}
	}
}

// TestOTLPTablesAgainstPython: view "tables" of an OTLP trace gives python3's rows, in
// its column order, for a trace python3 wrote in both encodings (every AnyValue kind,
// wide integers, infinities, bytes, absent ids and times, dropped counts, a resource and
// a scope without their messages, unknown fields), and for the corpus OTLP/JSON files.
func TestOTLPTablesAgainstPython(t *testing.T) {
	dir := t.TempDir()
	pb, js := filepath.Join(dir, "gen.binpb"), filepath.Join(dir, "gen.json")
	var want []json.RawMessage
	if err := json.Unmarshal(python3(t, otlpTablesTruth, "gen", pb, js), &want); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		want       []json.RawMessage
	}{{"generated protobuf", pb, want}, {"generated json", js, want}}
	for _, f := range []string{"otlp__trace.json", "local__otel_js_otlp_http_json_trace.json"} {
		p := testtool.Corpus(t, f)
		var rows []json.RawMessage
		if err := json.Unmarshal(python3(t, otlpTablesTruth, "json", p), &rows); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name, path string
			want       []json.RawMessage
		}{f, p, rows})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := providers.Input{Path: c.path, Format: gen.FormatOtlp}
			for _, limit := range []int64{1000, 3} {
				got := allRows(t, func() (*providers.Analysis, error) { return summarize(context.Background(), sliceReq(tablesReq(in))) }, limit)
				if diff := cmp.Diff(testtool.JSONValue(t, c.want), testtool.JSONValue(t, got)); diff != "" {
					t.Fatalf("rows by %d (-python +flameox):\n%s", limit, diff)
				}
				if diff := cmp.Diff(keysInOrder(t, c.want), keysInOrder(t, got)); diff != "" {
					t.Fatalf("column order (-python +flameox):\n%s", diff)
				}
			}
			// Prefixes select tables by name, in any case.
			a, err := summarize(context.Background(), sliceReq(tablesReq(in, "EVENTS", "li")))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := pageAll[map[string]any](t, a.Rows, 100)
			var wantSel []any
			for _, r := range testtool.JSONValue(t, c.want).([]any) {
				if tb := r.(map[string]any)["table"]; tb == "events" || tb == "links" {
					wantSel = append(wantSel, r)
				}
			}
			if diff := cmp.Diff(testtool.JSONValue(t, wantSel), testtool.JSONValue(t, got)); diff != "" {
				t.Fatalf("events and links (-python +flameox):\n%s", diff)
			}
			if a.Metrics["table_count"] != int64(2) || a.Metrics["row_count"] != int64(len(wantSel)) {
				t.Fatalf("metrics %v", a.Metrics)
			}
		})
	}
}

// TestOTLPTablesProtobufCorpus: the OpenTelemetry JS SDK's protobuf export gives the
// spans protoc --decode_raw reads (ids, names, kinds, times, parents) and its table counts.
func TestOTLPTablesProtobufCorpus(t *testing.T) {
	path := testtool.Corpus(t, "local__otel_js_otlp_protobuf_trace.binpb")
	tr := otlptest.RunTruth(t, otlptest.ProtocSpans(t, path), "spans")
	a, err := summarize(context.Background(), sliceReq(tablesReq(providers.Input{Path: path, Format: gen.FormatOtlp}, "spans")))
	if err != nil {
		t.Fatal(err)
	}
	type spanCols struct {
		SpanIndex int64   `json:"span_index"`
		TraceID   string  `json:"trace_id"`
		SpanID    string  `json:"span_id"`
		Parent    *string `json:"parent_span_id"`
		Name      string  `json:"name"`
		Kind      string  `json:"kind"`
		Start     string  `json:"start_time_unix_nano"`
		End       string  `json:"end_time_unix_nano"`
	}
	got, _ := pageAll[spanCols](t, a.Rows, 100)
	if len(got) != len(tr.Spans) || len(got) == 0 {
		t.Fatalf("%d spans, protoc %d", len(got), len(tr.Spans))
	}
	for i, s := range tr.Spans {
		parent := ""
		if got[i].Parent != nil {
			parent = *got[i].Parent
		}
		g := got[i]
		if g.SpanIndex != s.Ordinal || g.TraceID != s.TraceID || g.SpanID != s.SpanID || parent != s.Parent || g.Name != s.Name ||
			g.Kind != otlp.KindName(s.Kind) || g.Start != s.Start || g.End != s.End {
			t.Fatalf("span %d: %+v, protoc %+v", i, g, s)
		}
	}
	for _, k := range []string{"resources_count", "scopes_count", "spans_count", "events_count", "links_count"} {
		if a.Metrics[k] != tr.Tables[k] {
			t.Fatalf("%s = %v, protoc %v", k, a.Metrics[k], tr.Tables[k])
		}
	}
}

// TestOTLPTablesNoMatch: prefixes that match no OTLP table give an empty, complete page,
// an empty tables list and a limitation naming the five tables.
func TestOTLPTablesNoMatch(t *testing.T) {
	a, err := summarize(context.Background(), sliceReq(tablesReq(providers.Input{Path: testtool.Corpus(t, "otlp__trace.json"), Format: gen.FormatOtlp}, "nothing")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Rows.Page(context.Background(), 0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(a.Metrics["tables"])
	if len(p.Rows) != 0 || p.More || string(b) != "[]" || a.Metrics["row_count"] != int64(0) ||
		!strings.Contains(a.Limitations[len(a.Limitations)-1], "resources, scopes, spans, events, links") {
		t.Fatalf("page %+v, tables %s, metrics %v, limitations %q", p, b, a.Metrics, a.Limitations)
	}
}
