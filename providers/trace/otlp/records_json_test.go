package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/flameox/flameox/providers"
)

// The OTLP/JSON record reader against protojson (with unknown fields discarded) reading
// the OpenTelemetry project's generated types, a span's hex ids first rewritten as
// base64 as the reader did before it had its own decoder (oracleSpan): both must refuse
// an input alike, with the same words for a span, or give the same record.

var jsonOracle = protojson.UnmarshalOptions{DiscardUnknown: true}

// oracleSpan is the reader's former way to a span record: its hex ids rewritten as base64
// through encoding/json, then protojson. It returns the record, or the error's words.
func oracleSpan(v []byte) (*tracepb.Span, string) {
	var span map[string]json.RawMessage
	if err := json.Unmarshal(v, &span); err != nil {
		return nil, "a span does not follow the OTLP JSON mapping"
	}
	if msg := oracleBase64IDs(span); msg != "" {
		return nil, msg
	}
	if raw, ok := span["links"]; ok {
		var links []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &links); err != nil {
			return nil, "a span's links do not follow the OTLP JSON mapping"
		}
		for _, l := range links {
			if msg := oracleBase64IDs(l); msg != "" {
				return nil, msg
			}
		}
		span["links"], _ = json.Marshal(links)
	}
	b, _ := json.Marshal(span)
	var out tracepb.Span
	if err := jsonOracle.Unmarshal(b, &out); err != nil {
		return nil, "a span does not follow the OTLP JSON mapping"
	}
	return &out, ""
}

func oracleBase64IDs(m map[string]json.RawMessage) string {
	for _, key := range idNames {
		raw, ok := m[key]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return key + " is not a string"
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return fmt.Sprintf("%s %q is not hex", key, s)
		}
		m[key], _ = json.Marshal(base64.StdEncoding.EncodeToString(b))
	}
	return ""
}

// readableJSON reports whether the file reader takes v as one JSON value.
func readableJSON(v []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadValue(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF
}

// words are the words of a decoder's error, less the source.
func words(err error) string {
	if err == nil {
		return ""
	}
	var de *providers.DecodeError
	if !errors.As(err, &de) {
		return "not a DecodeError: " + err.Error()
	}
	return strings.TrimPrefix(de.Message, "source 0 is not a valid OTLP trace: ")
}

// checkJSONRecords reads v as each record, both ways, and fails the test where they
// differ. v must be JSON the file reader takes.
func checkJSONRecords(t *testing.T, v []byte) {
	t.Helper()
	d := &decoder{}
	{
		want, wmsg := oracleSpan(v)
		gmsg := words(d.jsonFullSpan(v))
		if wmsg != gmsg {
			t.Fatalf("span %s: oracle %q, ours %q", v, wmsg, gmsg)
		}
		if wmsg == "" {
			compareRecords(t, "span", v, nil, nil, func() any { return spanFromPB(want) }, d.full)
		}
	}
	{
		var want resourcepb.Resource
		werr := jsonOracle.Unmarshal(v, &want)
		d.res = Resource{}
		gerr := d.jsonRecord(v, "resource", func(j *jsonRecords) error { return j.resource(&d.res) })
		compareRecords(t, "resource", v, werr, gerr, func() any { return resourceFromPB(&want) }, d.res)
	}
	{
		var want commonpb.InstrumentationScope
		werr := jsonOracle.Unmarshal(v, &want)
		d.scope = Scope{}
		gerr := d.jsonRecord(v, "scope", func(j *jsonRecords) error { return j.scope(&d.scope) })
		compareRecords(t, "scope", v, werr, gerr, func() any { return scopeFromPB(&want) }, d.scope)
	}
}

// A JSON schema of the generator: a message's fields, each with its two names and kind.
type jsField struct {
	camel, snake string
	kind         string // id str u64 u32 i64 i32 kind code f64 bytes bool msg list strs
	msg          *[]jsField
}

var (
	jAnyValue, jKeyValue, jValues, jKvValues = &[]jsField{}, &[]jsField{}, &[]jsField{}, &[]jsField{}
	jEvent, jLink, jStatus, jSpan            = &[]jsField{}, &[]jsField{}, &[]jsField{}, &[]jsField{}
	jEntityRef, jResource, jScope            = &[]jsField{}, &[]jsField{}, &[]jsField{}
)

func init() {
	attrs := func(camel string) jsField { return jsField{camel, camel, "list", jKeyValue} }
	dropped := jsField{"droppedAttributesCount", "dropped_attributes_count", "u32", nil}
	*jAnyValue = []jsField{{"stringValue", "string_value", "str", nil}, {"boolValue", "bool_value", "bool", nil},
		{"intValue", "int_value", "i64", nil}, {"doubleValue", "double_value", "f64", nil}, {"arrayValue", "array_value", "msg", jValues},
		{"kvlistValue", "kvlist_value", "msg", jKvValues}, {"bytesValue", "bytes_value", "bytes", nil},
		{"stringValueStrindex", "string_value_strindex", "i32", nil}}
	*jValues = []jsField{{"values", "values", "list", jAnyValue}}
	*jKvValues = []jsField{attrs("values")}
	*jKeyValue = []jsField{{"key", "key", "str", nil}, {"value", "value", "msg", jAnyValue}, {"keyStrindex", "key_strindex", "i32", nil}}
	*jEvent = []jsField{{"timeUnixNano", "time_unix_nano", "u64", nil}, {"name", "name", "str", nil}, attrs("attributes"), dropped}
	*jLink = []jsField{{"traceId", "trace_id", "id", nil}, {"spanId", "span_id", "id", nil}, {"traceState", "trace_state", "str", nil},
		attrs("attributes"), dropped, {"flags", "flags", "u32", nil}}
	*jStatus = []jsField{{"message", "message", "str", nil}, {"code", "code", "code", nil}}
	*jSpan = []jsField{{"traceId", "trace_id", "id", nil}, {"spanId", "span_id", "id", nil}, {"traceState", "trace_state", "str", nil},
		{"parentSpanId", "parent_span_id", "id", nil}, {"name", "name", "str", nil}, {"kind", "kind", "kind", nil},
		{"startTimeUnixNano", "start_time_unix_nano", "u64", nil}, {"endTimeUnixNano", "end_time_unix_nano", "u64", nil},
		attrs("attributes"), dropped, {"events", "events", "list", jEvent}, {"droppedEventsCount", "dropped_events_count", "u32", nil},
		{"links", "links", "list", jLink}, {"droppedLinksCount", "dropped_links_count", "u32", nil}, {"status", "status", "msg", jStatus},
		{"flags", "flags", "u32", nil}}
	*jEntityRef = []jsField{{"schemaUrl", "schema_url", "str", nil}, {"type", "type", "str", nil}, {"idKeys", "id_keys", "strs", nil},
		{"descriptionKeys", "description_keys", "strs", nil}}
	*jResource = []jsField{attrs("attributes"), dropped, {"entityRefs", "entity_refs", "list", jEntityRef}}
	*jScope = []jsField{{"name", "name", "str", nil}, {"version", "version", "str", nil}, attrs("attributes"), dropped}
}

// jsGen writes random OTLP/JSON records: both spellings of names, numbers as numbers and
// strings, every spelling of doubles and bytes, nulls, unknown members, and with chance
// bad in 1000 a value of the wrong kind or spelling, a field named twice, two members of
// an AnyValue.
type jsGen struct {
	r   *rand.Rand
	bad int
	b   strings.Builder
}

func (g *jsGen) chance(permille int) bool { return g.r.IntN(1000) < permille }

func (g *jsGen) pick(good, bad []string) {
	if len(bad) > 0 && g.chance(g.bad) {
		g.b.WriteString(bad[g.r.IntN(len(bad))])
		return
	}
	g.b.WriteString(good[g.r.IntN(len(good))])
}

var jsScalars = map[string][2][]string{
	"str": {{`""`, `"a"`, `"GET /"`, `"service.name"`, `"\u00e9\"\\"`, `"日本"`, `"\ud83d\ude00"`}, {`1`, `true`, `{}`, `[]`}},
	"u64": {{`0`, `1`, `"123"`, `1e3`, `"1e3"`, `1.0`, `"1.50e1"`, `18446744073709551615`, `"18446744073709551615"`, `-0`, `"-0"`, `100e-2`, `1E+2`, `0.0e5`, `1e19`, `1700000000000000000`},
		{`-1`, `1.5`, `" 1"`, `"0x10"`, `"1e-2"`, `"Infinity"`, `true`, `"1 "`, `1e20`, `"18446744073709551616"`, `"01"`, `"1."`, `"+1"`, `1e99999999999`, `"abc"`, `{}`}},
	"u32": {{`0`, `7`, `"7"`, `4294967295`, `"4294967295"`, `4.2e1`}, {`4294967296`, `-1`, `"x"`, `7.5`, `[]`}},
	"i64": {{`0`, `-7`, `"-7"`, `9223372036854775807`, `"-9223372036854775808"`, `-1e3`, `"-0.0"`}, {`9223372036854775808`, `"1.5"`, `false`, `"-"`}},
	"i32": {{`0`, `3`, `"-3"`, `2147483647`, `-2147483648`}, {`2147483648`, `"3.5"`, `"x"`}},
	"kind": {{`"SPAN_KIND_SERVER"`, `"SPAN_KIND_UNSPECIFIED"`, `2`, `5`, `99`, `-1`, `2.0`, `1e1`, `"SPAN_KIND_NOPE"`, `"2"`, `"span_kind_server"`},
		{`2147483648`, `true`, `2.5`, `{}`}},
	"code": {{`"STATUS_CODE_ERROR"`, `"STATUS_CODE_OK"`, `0`, `2`, `7`, `"STATUS_CODE_BOGUS"`, `"1"`}, {`1.5`, `false`, `[]`}},
	"f64": {{`1.5`, `"NaN"`, `"Infinity"`, `"-Infinity"`, `"1.5"`, `-0`, `"-0.0"`, `0`, `1e-400`, `1e308`, `"2.5e-3"`, `17`},
		{`"nan"`, `1e400`, `"1e400"`, `" 1"`, `true`, `"0x1p3"`, `"inf"`, `"+1"`}},
	"bytes": {{`""`, `"AAEC"`, `"AAE="`, `"AAE"`, `"-_8="`, `"-_8"`, `"+/8="`, `"+/8"`, `"YQ=="`, `"YQ"`, `"YQ\n=="`, `"YWJj"`, `"YW\r\nJj"`, `"A_8="`, `"A_8"`, `"A-8"`},
		{`"a"`, `"!!!"`, `"ab=c"`, `"YQ="`, `"-/8="`, `5`, `"YQ==="`}},
	"bool": {{`true`, `false`}, {`"true"`, `1`, `"false"`}},
	"id":   {{`"0af7651916cd43dd8448eb211c80319c"`, `"00F067AA0BA902B7"`, `""`, `"ab"`, `"00000000000000000000000000000000"`}, {`"zz"`, `"abc"`, `5`, `true`, `{}`}},
}

func (g *jsGen) value(f jsField, depth int) {
	switch f.kind {
	case "msg":
		if g.chance(g.bad) {
			g.pick([]string{`[]`, `"x"`, `1`}, nil)
			return
		}
		g.object(*f.msg, depth+1)
	case "list", "strs":
		if g.chance(g.bad) {
			g.pick([]string{`{}`, `"x"`, `[1]`, `[null]`}, nil)
			return
		}
		g.b.WriteByte('[')
		n := g.r.IntN(3)
		if depth > 4 {
			n = 0
		}
		for i := range n {
			if i > 0 {
				g.b.WriteByte(',')
			}
			switch {
			case f.kind == "strs":
				g.pick(jsScalars["str"][0], jsScalars["str"][1])
			case g.chance(g.bad / 2):
				g.b.WriteString("null")
			default:
				g.object(*f.msg, depth+1)
			}
		}
		g.b.WriteByte(']')
	default:
		s := jsScalars[f.kind]
		g.pick(s[0], s[1])
	}
}

func (g *jsGen) object(fields []jsField, depth int) {
	g.b.WriteByte('{')
	n := 1 + g.r.IntN(4)
	if depth > 4 {
		n = g.r.IntN(2)
	}
	oneof := len(fields) == 8 // AnyValue: one member, but when bad
	if oneof && !g.chance(g.bad*3) {
		n = 1
	}
	used := map[string]bool{}
	written := 0
	for i := 0; i < n; i++ {
		var f jsField
		name := ""
		switch {
		case g.chance(60):
			name = []string{"foo", "[a.b]", "Name", "trace-id", "schemaUrl", "@type"}[g.r.IntN(6)]
			f = jsField{kind: []string{"str", "u64", "msg", "list"}[g.r.IntN(4)], msg: jScope}
		default:
			f = fields[g.r.IntN(len(fields))]
			name = f.camel
			if g.r.IntN(2) == 0 {
				name = f.snake
			}
			if used[f.camel] && !g.chance(g.bad) {
				continue // named twice only when bad
			}
		}
		if used[name] {
			continue // the same name twice is not JSON the file reader takes
		}
		used[name], used[f.camel] = true, true
		if written > 0 {
			g.b.WriteByte(',')
		}
		written++
		g.b.WriteString(`"` + name + `":`)
		if g.chance(80) {
			g.b.WriteString("null")
			continue
		}
		g.value(f, depth)
	}
	g.b.WriteByte('}')
}

// record writes one record of schema fields (now and then not an object at all).
func (g *jsGen) record(fields []jsField) []byte {
	g.b.Reset()
	if g.chance(g.bad / 3) {
		g.pick([]string{`null`, `[]`, `"span"`, `7`}, nil)
	} else {
		g.object(fields, 1)
	}
	return []byte(g.b.String())
}

// TestJSONRecordsMatchProtojson compares the record reader with protojson on generated
// records of each schema.
func TestJSONRecordsMatchProtojson(t *testing.T) {
	n := 15000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(11, 12))
	refused, taken := 0, 0
	for i := range n {
		g := &jsGen{r: r, bad: []int{0, 20, 120}[i%3]}
		for _, s := range []*[]jsField{jSpan, jResource, jScope} {
			v := g.record(*s)
			if !readableJSON(v) {
				t.Fatalf("generated %s is not JSON the file reader takes", v)
			}
			checkJSONRecords(t, v)
			if _, msg := oracleSpan(v); msg == "" {
				taken++
			} else {
				refused++
			}
		}
	}
	t.Logf("%d spans taken, %d refused", taken, refused)
}

// TestJSONRecordsEdges compares the record reader with protojson on chosen records.
func TestJSONRecordsEdges(t *testing.T) {
	for _, v := range []string{
		`{}`, `null`, `[]`, `{"traceId":null}`, `{"traceId":"AB","trace_id":null}`, `{"name":"a","Name":"b"}`,
		`{"links":[null]}`, `{"links":[1]}`, `{"links":{}}`, `{"links":null}`, `{"links":[{"parentSpanId":5}]}`,
		`{"links":[{"parent_span_id":"zz"}],"traceId":7}`, `{"links":5,"traceId":"zz"}`, `{"kind":true,"trace_id":"zz"}`,
		`{"attributes":[{"value":{"stringValue":"a","intValue":"1"}}]}`, `{"attributes":[{"value":{"stringValue":null,"intValue":"1"}}]}`,
		`{"attributes":[{"value":{"arrayValue":{}}}]}`, `{"attributes":[{"value":{"arrayValue":null}}]}`,
		`{"attributes":[{"value":{"kvlistValue":{"values":[{"key":"k"}]}}}]}`, `{"attributes":[{"value":{}}]}`,
		`{"attributes":[{"value":{"doubleValue":"-Infinity"}}]}`, `{"attributes":[{"value":{"bytesValue":"_-8"}}]}`,
		`{"status":{"code":"1"}}`, `{"status":{"code":1e0}}`, `{"status":{"code":"STATUS_CODE_NOPE","message":"m"}}`,
		`{"[opentelemetry.proto.trace.v1.x]":1}`, `{"startTimeUnixNano":"1e19"}`, `{"startTimeUnixNano":"1e20"}`,
		`{"startTimeUnixNano":0.1e1}`, `{"startTimeUnixNano":10e-1}`, `{"startTimeUnixNano":1e-1}`, `{"flags":"0"}`,
		`{"name":"\u0000"}`, `{"droppedAttributesCount":1e2147483648}`, `{"droppedAttributesCount":0e2147483648}`,
		`{"entityRefs":[{"idKeys":["a",null]}]}`, `{"status":{"":"STATUS_CODE_OK"}}`, `{"":1}`, `{"attributes":[{"":{"intValue":1}}]}`, `{"entityRefs":[{"idKeys":["a","b"],"type":"t"}]}`,
	} {
		if !readableJSON([]byte(v)) {
			t.Errorf("%s: not JSON the file reader takes, so this case tests nothing", v)
			continue
		}
		checkJSONRecords(t, []byte(v))
	}
}

// FuzzJSONRecords: go test ./providers/trace/otlp -run '^$' -fuzz FuzzJSONRecords -fuzztime 45s
func FuzzJSONRecords(f *testing.F) {
	r := rand.New(rand.NewPCG(13, 14))
	for i := range 60 {
		g := &jsGen{r: r, bad: []int{0, 20, 120}[i%3]}
		f.Add(g.record(*[]*[]jsField{jSpan, jResource, jScope}[i%3]))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if readableJSON(v) {
			checkJSONRecords(t, v)
		}
	})
}

// The generated types the oracle reads into are proto messages.
var _ = []proto.Message{(*tracepb.Span)(nil), (*resourcepb.Resource)(nil), (*commonpb.InstrumentationScope)(nil)}
