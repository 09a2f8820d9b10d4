package otlp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/otlp"
	"github.com/flameox/flameox/providers/trace/otlp/otlptest"
	"github.com/flameox/flameox/providers/trace/perfetto/perfettotest"
)

// decodeFile decodes the file at path as source, in the encoding ReadAsProto chooses
// from its name and first 4096 bytes, as the trace family reads a source.
func decodeFile(t *testing.T, path string, source int, visit func(*otlp.Span) error) (*otlp.Stats, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(4096)
	return otlp.Decode(context.Background(), br, source, otlp.ReadAsProto(path, head), visit, nil)
}

// decodedSpans reads a file with Decode into truth spans.
func decodedSpans(t *testing.T, path string) ([]otlptest.TruthSpan, *otlp.Stats) {
	t.Helper()
	var got []otlptest.TruthSpan
	st, err := decodeFile(t, path, 0, func(s *otlp.Span) error {
		ts := otlptest.TruthSpan{Ordinal: s.Ordinal, TraceID: hex.EncodeToString(s.TraceID[:]), SpanID: hex.EncodeToString(s.SpanID[:]),
			Name: s.Name, Kind: s.Kind, Start: strconv.FormatUint(s.Start, 10), End: strconv.FormatUint(s.End, 10),
			Status: s.StatusCode, Links: s.Links, Service: s.Service, Events: []otlptest.TruthEvent{}}
		if s.HasParent {
			ts.Parent = hex.EncodeToString(s.ParentSpanID[:])
		}
		for _, e := range s.Events {
			ts.Events = append(ts.Events, otlptest.TruthEvent{Time: strconv.FormatUint(e.Time, 10), Name: e.Name})
		}
		got = append(got, ts)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return got, st
}

// TestDecodeAgainstIndependentReaders compares every span and table count with Python's
// json (OTLP/JSON) and protoc --decode_raw (OTLP/protobuf).
func TestDecodeAgainstIndependentReaders(t *testing.T) {
	for _, c := range otlptest.Cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			tr := otlptest.TruthFor(t, c)
			got, st := decodedSpans(t, c.Path)
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

// TestDecodeAnyChunking requires Decode to read the corpus OTLP traces (JSON and
// protobuf) and their malformed copies the same however the reader splits them.
func TestDecodeAnyChunking(t *testing.T) {
	for _, c := range []struct {
		proto bool
		files []string
	}{
		{false, []string{"otlp__trace.json", "local__otel_js_otlp_http_json_trace.json"}},
		{true, []string{"local__otel_js_otlp_protobuf_trace.binpb"}},
	} {
		testtool.CheckAnyChunking(t, testtool.CorpusInputs(t, c.files...), func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
			var spans []otlp.Span
			st, err := otlp.Decode(context.Background(), r, 5, c.proto, func(s *otlp.Span) error {
				k := *s // the decoder reuses the span and its events
				k.Events = slices.Clone(s.Events)
				spans = append(spans, k)
				return nil
			}, nil)
			return testtool.Result(struct {
				Spans []otlp.Span
				Stats *otlp.Stats
			}{spans, st}, err)
		})
	}
}

// TestMalformed checks that broken exports fail with typed errors that name the
// source and no host path.
func TestMalformed(t *testing.T) {
	pb := otlptest.GeneratedProto()
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
		// proto.Unmarshal rejects these, and so does the record decoder.
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
		_, err := decodeFile(t, p, 3, func(*otlp.Span) error { return nil })
		var de *providers.DecodeError
		if !errors.As(err, &de) || de.Source != 3 || strings.Contains(de.Message, dir) {
			t.Errorf("%s: got %v, want a DecodeError for source 3", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestIsProto keeps OTLP/protobuf detection apart from Perfetto, XPlane and JSON.
func TestIsProto(t *testing.T) {
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
		{"generated protobuf", otlptest.GeneratedProto(), true},
		{"perfetto basic", read("perfetto-mcp-rs__basic.perfetto-trace"), false},
		{"chromium perfetto", read("local__chromium156_trace_startup_proto.pftrace"), false},
		{"generated perfetto", perfettotest.Generate(4, 10, 3), false},
		{"xplane", read("local-h200__jax0.11.2_profile.xplane.pb"), false},
		{"otlp json", read("local__otel_js_otlp_http_json_trace.json"), false},
		{"empty", nil, false},
	} {
		head := c.head[:min(len(c.head), 4096)]
		if got := otlp.IsProto(head); got != c.want {
			t.Errorf("%s: IsProto = %v, want %v", c.name, got, c.want)
		}
	}
}

// stopAt is a TableSink that wants every span and returns err at its first record of
// table ("resource", "scope" or "span").
type stopAt struct {
	table string
	err   error
}

func (s *stopAt) at(table string) error {
	if table == s.table {
		return s.err
	}
	return nil
}
func (s *stopAt) Resource(int64, *otlp.Resource) error         { return s.at("resource") }
func (s *stopAt) Scope(_, _ int64, _ *otlp.Scope) error        { return s.at("scope") }
func (s *stopAt) Wants(int, int) bool                          { return true }
func (s *stopAt) Span(_, _, _ int64, _ *otlp.SpanRecord) error { return s.at("span") }
func (s *stopAt) Skip(int, int)                                {}

// TestCallerErrorsPass: an error visit or the table sink returns ends the read and is
// what Decode returns, as it is, in either encoding; the decoder neither words it nor
// wraps it.
func TestCallerErrorsPass(t *testing.T) {
	mine := errors.New("mine")
	limit := &providers.LimitError{Source: 9, Limit: 1, Unit: "traces", Message: "the caller's limit"}
	for _, enc := range []struct {
		name  string
		proto bool
		b     []byte
	}{{"json", false, otlptest.GeneratedJSON()}, {"protobuf", true, otlptest.GeneratedProto()}} {
		for _, want := range []error{mine, limit} {
			_, err := otlp.Decode(context.Background(), bytes.NewReader(enc.b), 3, enc.proto, func(*otlp.Span) error { return want }, nil)
			if err != want {
				t.Errorf("%s: visit's error %v came back as %#v", enc.name, want, err)
			}
			for _, table := range []string{"resource", "scope", "span"} {
				sink := &stopAt{table: table, err: want}
				_, err := otlp.Decode(context.Background(), bytes.NewReader(enc.b), 3, enc.proto, func(*otlp.Span) error { return nil }, sink)
				if err != want {
					t.Errorf("%s: the sink's error %v at a %s came back as %#v", enc.name, want, table, err)
				}
			}
		}
	}
}
