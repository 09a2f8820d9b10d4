package trace

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// fuzzSink checks what a decoder delivers: every slice has Dur >= 0 and lies on a track
// announced before it.
type fuzzSink struct {
	t      *testing.T
	tracks map[int64]bool
	slices int64
}

func (s *fuzzSink) Slice(e *Event) error {
	if e.Dur < 0 {
		s.t.Fatalf("slice %d has Dur %d < 0", e.ID, e.Dur)
	}
	if e.ID < 0 {
		s.t.Fatalf("slice ID %d < 0", e.ID)
	}
	if !s.tracks[e.Track] {
		s.t.Fatalf("slice %d on unannounced track %d", e.ID, e.Track)
	}
	s.slices++
	return nil
}
func (s *fuzzSink) Track(t Track)                          { s.tracks[t.ID] = true }
func (s *fuzzSink) ThreadName(pid, tid int64, name string) {}
func (s *fuzzSink) ProcessName(pid int64, name string)     {}

func checkStats(t *testing.T, st *Stats, delivered int64) {
	t.Helper()
	for what, n := range map[string]int64{"Events": st.Events, "Slices": st.Slices, "UnmatchedEnds": st.UnmatchedEnds,
		"UnfinishedBegins": st.UnfinishedBegins, "Instants": st.Instants, "Counters": st.Counters,
		"Flows": st.Flows, "Metadata": st.Metadata, "Ignored": st.Ignored} {
		fuzztool.NonNegative(t, what, n)
	}
	if st.Slices != delivered {
		t.Fatalf("Stats.Slices = %d, sink received %d", st.Slices, delivered)
	}
}

// FuzzDecodeChrome: go test ./providers/trace -run '^$' -fuzz FuzzDecodeChrome -fuzztime 1m
// checks typed failures and counts, and that decodeChromeStaged reads as DecodeChrome.
func FuzzDecodeChrome(f *testing.F) {
	fuzztool.Corpus(f, "speedscope__trace-event-simple-partial.json", "speedscope__trace_event_multiprocess.json",
		"speedscope__trace_event_partial_trailing_comma.json", "speedscope__chrome116-devtools-trace.json")
	for _, s := range []string{
		`[]`, `{"traceEvents":[]}`,
		`[{"ph":"X","name":"a","pid":1,"tid":2,"ts":1.5,"dur":3}]`,
		`{"traceEvents":[{"ph":"B","name":"a","pid":1,"tid":1,"ts":0},{"ph":"E","pid":1,"tid":1,"ts":10}],"displayTimeUnit":"ns"}`,
		`[{"ph":"b","cat":"c","id":"0x1","name":"x","pid":"p","tid":"t","ts":1},{"ph":"e","cat":"c","id":"0x1","pid":"p","tid":"t","ts":2}]`,
		`[{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},{"ph":"X","ts":1e3,"dur":0,"pid":1,"tid":1,"args":{"Input Dims":[[1,2]],"correlation":7}}]`,
		`[{"ph":"E","pid":1,"tid":1,"ts":5},{"ph":"C","ts":1},{"ph":"i","ts":2},{"ph":"s","ts":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := ChromeLimits{MaxOpenPerTrack: 64, MaxTracks: 64, MaxEvents: 1 << 16}
		sink := &fuzzSink{t: t, tracks: map[int64]bool{}}
		st, err := DecodeChrome(context.Background(), bytes.NewReader(b), 0, lim, sink)
		fuzztool.CheckError(t, err)
		if err == nil {
			checkStats(t, st, sink.slices)
		}
		// The staged read (parsing and dispatching on two goroutines) is the same read.
		decodeChromeBoth(t, b, 0, lim)
	})
}

// FuzzChromeFastPath: go test ./providers/trace -run '^$' -fuzz FuzzChromeFastPath -fuzztime 1m
// decodes each input with and without the fast event path, and with a 7-byte first buffer,
// and requires the same result.
func FuzzChromeFastPath(f *testing.F) {
	fuzztool.Corpus(f, "speedscope__trace_event_multiprocess.json", "speedscope__chrome116-devtools-trace.json")
	for _, s := range []string{
		`[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":1700000000000000.125,"dur":8.5,"args":{"External id":3,"Input Dims":[[8, 16], []],"File":"a.py","line":4}}]`,
		`[{"ph":"b","cat":"c","id":"0x1","name":"x","pid":"p","tid":"t","ts":1,"scope":"s"},{"ph":"e","cat":"c","id":"0x1","pid":"p","tid":"t","ts":2}]`,
		`[{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main","x":[true,false,null,{"y":-1.5e3}]}}]`,
		// A number a few digits short of maxNumberBytes, for mutations across the bound.
		`[{"ph":"b","cat":"c","ts":1,"id":` + strings.Repeat("9", maxNumberBytes-2) + `,"args":{"a":[1]}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			decodeBothPaths(t, b, ChromeLimits{MaxOpenPerTrack: 64, MaxTracks: 64, MaxEvents: 1 << 16})
			decodeBothPaths(t, b, ChromeLimits{MaxDepth: 5, MaxStringBytes: 16, MaxEvents: 1 << 16})
			// And where the reads end must not matter (TestDecodeAnyBufferSize).
			lim := ChromeLimits{MaxDepth: 5, MaxEvents: 1 << 16}
			want := decodeWith(b, lim, true)
			defer func(old int) { scanBufSize = old }(scanBufSize)
			scanBufSize = 7
			sameDecoding(t, "7-byte buffer", want, decodeWith(b, lim, true))
		})
	})
}

// FuzzDecodePerfetto: go test ./providers/trace -run '^$' -fuzz FuzzDecodePerfetto -fuzztime 1m
func FuzzDecodePerfetto(f *testing.F) {
	fuzztool.Corpus(f, "perfetto-mcp-rs__basic.perfetto-trace", "local__chromium156_trace_startup_proto.pftrace")
	for _, h := range []string{
		"",
		// packet{timestamp:1, trusted_packet_sequence_id:1, track_event{type:SLICE_BEGIN, name:"a", track_uuid:5}}
		"0a100808ba01010a0b0801120161" + "2805",
		// packet{track_descriptor{uuid:5, name:"t"}}
		"0a07" + "a2060408051201" + "74",
		"0a0210", "0aff", "0a",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sink := &fuzzSink{t: t, tracks: map[int64]bool{}}
		st, info, err := DecodePerfetto(context.Background(), bytes.NewReader(b), 0,
			PerfettoLimits{MaxPacketBytes: 1 << 20, MaxOpenSlices: 64, MaxTracks: 256, MaxInterned: 1024, MaxSequences: 64, MaxStringBytes: 4096}, sink)
		fuzztool.CheckError(t, err)
		if err != nil {
			return
		}
		checkStats(t, st, sink.slices)
		fuzztool.NonNegative(t, "Packets", info.Packets)
		if info.TrackEventPackets+info.TrackDescriptors > info.Packets {
			t.Fatalf("TrackEventPackets %d + TrackDescriptors %d > Packets %d", info.TrackEventPackets, info.TrackDescriptors, info.Packets)
		}
		for k, n := range info.Unread {
			if n <= 0 {
				t.Fatalf("Unread[%d] = %d", k, n)
			}
		}
	})
}

func fuzzOTLP(t *testing.T, b []byte, proto bool) {
	var spans, events int64
	last := int64(-1)
	st, err := DecodeOTLP(context.Background(), bytes.NewReader(b), 0, proto, func(s *OTLPSpan) error {
		if s.Ordinal <= last {
			t.Fatalf("span ordinal %d after %d", s.Ordinal, last)
		}
		if s.Links < 0 {
			t.Fatalf("span %d has %d links", s.Ordinal, s.Links)
		}
		last = s.Ordinal
		spans++
		events += int64(len(s.Events))
		return nil
	})
	fuzztool.CheckError(t, err)
	if err != nil {
		return
	}
	for what, n := range map[string]int64{"Resources": st.Resources, "Scopes": st.Scopes, "Spans": st.Spans,
		"Events": st.Events, "Links": st.Links, "SpansBeforeResource": st.SpansBeforeResource} {
		fuzztool.NonNegative(t, what, n)
	}
	if st.Spans != spans {
		t.Fatalf("Stats.Spans = %d, visited %d", st.Spans, spans)
	}
	if st.SpansBeforeResource > st.Spans {
		t.Fatalf("SpansBeforeResource %d > Spans %d", st.SpansBeforeResource, st.Spans)
	}
	// View "tables" decodes every record whole (stricter: attributes are read): when it
	// succeeds, each table has one valid JSON row per record it counted.
	rg := &otlpRange{need: -1}
	for i := range rg.last {
		rg.last[i] = math.MaxInt64
	}
	st, err = decodeOTLP(context.Background(), bytes.NewReader(b), 0, proto, func(*OTLPSpan) error { return nil }, rg)
	fuzztool.CheckError(t, err)
	if err != nil {
		return
	}
	for i, n := range [...]int64{st.Resources, st.Scopes, st.Spans, st.Events, st.Links} {
		if int64(len(rg.rows[i])) != n {
			t.Fatalf("%d %s rows, counted %d", len(rg.rows[i]), otlpTableNames[i], n)
		}
		for _, r := range rg.rows[i] {
			if !json.Valid(r) {
				t.Fatalf("invalid %s row %s", otlpTableNames[i], r)
			}
		}
	}
}

// FuzzDecodeOTLPJSON: go test ./providers/trace -run '^$' -fuzz FuzzDecodeOTLPJSON -fuzztime 1m
func FuzzDecodeOTLPJSON(f *testing.F) {
	fuzztool.Corpus(f, "local__otel_js_otlp_http_json_trace.json", "otlp__trace.json")
	for _, s := range []string{
		`{}`, `{"resourceSpans":[]}`,
		`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"scope":{"name":"x"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"a","kind":2,"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000","events":[{"timeUnixNano":"1544712660500000000","name":"e"}],"links":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b172"}],"status":{"code":2}}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"b","startTimeUnixNano":2,"endTimeUnixNano":1}]}]}]}{"resourceSpans":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzztool.Bounded(t, func() { fuzzOTLP(t, b, false) }) })
}

// FuzzDecodeOTLPProto: go test ./providers/trace -run '^$' -fuzz FuzzDecodeOTLPProto -fuzztime 1m
func FuzzDecodeOTLPProto(f *testing.F) {
	fuzztool.Corpus(f, "local__otel_js_otlp_protobuf_trace.binpb")
	for _, h := range []string{
		"",
		// ResourceSpans{ScopeSpans{Span{trace_id, span_id, name:"a", start:1, end:2}}}
		"0a2a" + "1228" + "1226" + "0a1000112233445566778899aabbccddeeff" + "12080011223344556677" + "2a0161" + "3901000000000000004102000000000000" + "00",
		"0a00", "0a021200", "0aff01",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzztool.Bounded(t, func() { fuzzOTLP(t, b, true) }) })
}
