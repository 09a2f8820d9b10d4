package chrome

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// FuzzDecodeChrome: go test ./providers/trace/chrome -run '^$' -fuzz FuzzDecodeChrome -fuzztime 1m
// checks typed failures and counts, and that DecodeStaged reads as Decode.
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
		lim := Limits{MaxOpenPerTrack: 64, MaxTracks: 64, MaxEvents: 1 << 16}
		sink := &tracemodeltest.Checker{T: t, Tracks: map[int64]bool{}}
		st, err := Decode(context.Background(), bytes.NewReader(b), 0, lim, sink)
		fuzztool.CheckError(t, err)
		if err == nil {
			tracemodeltest.CheckStats(t, st, sink.Slices)
		}
		// The staged read (parsing and dispatching on two goroutines) is the same read.
		decodeBoth(t, b, 0, lim)
	})
}

// FuzzChromeFastPath: go test ./providers/trace/chrome -run '^$' -fuzz FuzzChromeFastPath -fuzztime 1m
// decodes each input with and without the fast event path, and with a 7-byte first buffer,
// and requires the same result.
func FuzzChromeFastPath(f *testing.F) {
	fuzztool.Corpus(f, "speedscope__trace_event_multiprocess.json", "speedscope__chrome116-devtools-trace.json")
	for _, s := range []string{
		`[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":1700000000000000.125,"dur":8.5,"args":{"External id":3,"Input Dims":[[8, 16], []],"File":"a.py","line":4}}]`,
		`[{"ph":"b","cat":"c","id":"0x1","name":"x","pid":"p","tid":"t","ts":1,"scope":"s"},{"ph":"e","cat":"c","id":"0x1","pid":"p","tid":"t","ts":2}]`,
		`[{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main","x":[true,false,null,{"y":-1.5e3}]}}]`,
		// Indented as torch writes it.
		"{\n  \"traceEvents\": [\n  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mul_\", \"pid\": 486, \"tid\": 486,\n    \"ts\": 5202328581229.735, \"dur\": 64.816,\n    \"args\": {\n      \"External id\": 1,\"Record function id\": 0, \"Concrete Inputs\": [\"\", \"0.001\"], \"Input Strides\": [[1024, 1], []], \"Input Dims\": [[64, 1024], []], \"Ev Idx\": 0\n    }\n  }\n  ]\n}",
		// A number a few digits short of maxNumberBytes, for mutations across the bound.
		`[{"ph":"b","cat":"c","ts":1,"id":` + strings.Repeat("9", maxNumberBytes-2) + `,"args":{"a":[1]}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			decodeBothPaths(t, b, Limits{MaxOpenPerTrack: 64, MaxTracks: 64, MaxEvents: 1 << 16})
			decodeBothPaths(t, b, Limits{MaxDepth: 5, MaxStringBytes: 16, MaxEvents: 1 << 16})
			// And where the reads end must not matter (TestDecodeAnyBufferSize).
			lim := Limits{MaxDepth: 5, MaxEvents: 1 << 16}
			want := decodeWith(b, lim, true)
			defer func(old int) { scanBufSize = old }(scanBufSize)
			scanBufSize = 7
			sameDecoding(t, "7-byte buffer", want, decodeWith(b, lim, true))
		})
	})
}
