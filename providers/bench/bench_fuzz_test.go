package bench

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// fuzzInput is the source index the targets decode as; every measurement must carry it.
const fuzzInput = 3

// checkMeasurements checks what every benchmark decoder returns: the source index given,
// a benchmark name, finite values (an integer value a whole number), locations and loop
// counts >= 0 (>= 1 for a non-warmup value), at most MaxMeasurements, and summaries that
// count every measurement once.
func checkMeasurements(t *testing.T, ms []Measurement) {
	t.Helper()
	if len(ms) > MaxMeasurements {
		t.Fatalf("%d measurements > %d", len(ms), MaxMeasurements)
	}
	for i, m := range ms {
		if m.Input != fuzzInput {
			t.Fatalf("measurement %d has input %d", i, m.Input)
		}
		if m.Benchmark == "" {
			t.Fatalf("measurement %d has no benchmark name", i)
		}
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			t.Fatalf("measurement %d (%s) has value %v", i, m.Benchmark, m.Value)
		}
		if m.Integer && m.Value != math.Trunc(m.Value) {
			t.Fatalf("measurement %d is integer with value %v", i, m.Value)
		}
		if m.Run < 0 || m.Index < 0 {
			t.Fatalf("measurement %d at run %d index %d", i, m.Run, m.Index)
		}
		if m.Loops < 0 || !m.Warmup && !m.AdaptiveLoops && m.Loops < 1 {
			t.Fatalf("measurement %d (warmup %v) has %d loops", i, m.Warmup, m.Loops)
		}
	}
	values, warmups := 0, 0
	for _, s := range Summaries(ms) {
		if s.ValueCount < 0 || s.WarmupCount < 0 {
			t.Fatalf("series %s counts %d values, %d warmups", s.Benchmark, s.ValueCount, s.WarmupCount)
		}
		values += s.ValueCount
		warmups += s.WarmupCount
	}
	if values+warmups != len(ms) {
		t.Fatalf("series count %d values + %d warmups of %d measurements", values, warmups, len(ms))
	}
}

// fuzzMeasurements fuzzes one benchmark decoder: under fuzztool's bounds, a typed error
// or measurements that pass checkMeasurements.
func fuzzMeasurements(f *testing.F, decode func(r io.Reader, input int) ([]Measurement, error)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			ms, err := decode(bytes.NewReader(b), fuzzInput)
			fuzztool.CheckError(t, err)
			if err == nil {
				checkMeasurements(t, ms)
			}
		})
	})
}

// FuzzDecodePyperf: go test ./providers/bench -run '^$' -fuzz FuzzDecodePyperf -fuzztime 1m
func FuzzDecodePyperf(f *testing.F) {
	fuzztool.Corpus(f, "pyperf__telco.json", "pyperf__track_memory.json")
	for _, s := range []string{
		`{}`, `{"version":4,"benchmarks":[{"runs":[]}]}`, `{"version":6,"benchmarks":[{"runs":[{"warmups":[[1]]}]}]}`,
		`{"version":5,"metadata":{"name":"old","loops":4},"benchmarks":[{"runs":[{"samples":[0.5,0.25],"warmups":[[4,2.0]]}]}]}`,
		`{"version":6,"metadata":{"name":"n","unit":"integer"},"benchmarks":[{"runs":[{"values":[12,13]}]}]}`,
		`{"version":"1.0","metadata":{"loops":2,"inner_loops":3},"benchmarks":[{"metadata":{"name":"a","unit":"byte"},"runs":[{"metadata":{"loops":5},"warmups":[[5,1e3]],"values":[1.5e3]},{"metadata":{"calibrate_loops":8},"warmups":[[1,2],[2,4]]}]},{"runs":[{"values":[1]}]}]}`,
		`{"version":6,"benchmarks":[{"runs":[{"values":[1e300]}]}]}`,
		`{"version":6,"benchmarks":[{"runs":[{"warmups":[[-1,2],[1e300,1]],"values":[1]}]}]}`,
		`{"version":"1.0","benchmarks":[{"runs":[{"values":[1]}],"extra":{"a":[null,true,"x"]}}],"metadata":null}` + "\n",
	} {
		f.Add([]byte(s))
	}
	fuzzMeasurements(f, DecodePyperf)
}

// FuzzDecodeGoBench: go test ./providers/bench -run '^$' -fuzz FuzzDecodeGoBench -fuzztime 1m
func FuzzDecodeGoBench(f *testing.F) {
	for _, s := range []string{
		"", "PASS\nok\n", "BenchmarkA 10 5\n",
		"goos: linux\npkg: example.com/x\nBenchmarkSort/n=100-8   \t  5000\t    2400 ns/op\t  512 B/op\t  3 allocs/op\n" +
			"BenchmarkSort/n=100-8   \t  5000\t    2600 ns/op\t  512 B/op\t  3 allocs/op\nPASS\n",
		"BenchmarkNaN-2 1 NaN ns/op\nBenchmarkInf-2 1 1 ns/op +Inf B/op\n",
		"pkg: a b\r\nBenchmarkX/=1/k=v/-2 1 0.5 MB/s 1e3 custom-unit\r\nBenchmark 99999999999999999999 1 ns/op",
	} {
		f.Add([]byte(s))
	}
	fuzzMeasurements(f, DecodeGoBench)
}

// FuzzDecodeHyperfine: go test ./providers/bench -run '^$' -fuzz FuzzDecodeHyperfine -fuzztime 1m
func FuzzDecodeHyperfine(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"results":[]}`, `{"results":[{"command":"","times":[1]}]}`,
		`{"results":[{"command":"fast","times":[0.1,0.3],"parameters":{"n":"4"}}]}`,
		`{"results":[{"command":"sleep 0.1","mean":0.1,"stddev":null,"times":[0.1001,0.0999],"exit_codes":[0,0],"parameters":{"n":4,"m":[1]}},{"command":"b","times":[0]}]}`,
		`{"results":[{"command":"huge","times":[1e300]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Add(gzipBytes([]byte(`{"results":[{"command":"z","times":[2e-9]}]}`)))
	fuzzMeasurements(f, DecodeHyperfine)
}

// FuzzDecodeSamples: go test ./providers/bench -run '^$' -fuzz FuzzDecodeSamples -fuzztime 1m
func FuzzDecodeSamples(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"schema":"x","benchmarks":[{"name":"a","unit":"ns","samples":[1]}]}`,
		`{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"a","unit":"ns","samples":["1"]}]}`,
		`{"schema":"flameox.benchmark-samples.v1","producer":{"name":"harness","version":"2"},` +
			`"benchmarks":[{"name":"sort","unit":"ms","dimensions":{"n":1000},"loops":10,"warmup_samples":[3],"samples":[1.5,2.5],"trial":"t1","block":"b1"}]}`,
		`{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"m","unit":"bytes","samples":[1e3,2]},{"name":"c","unit":"widgets","scope":"s","phase":"p","worker":"w","variant":"v","samples":[0.1]}]}`,
	} {
		f.Add([]byte(s))
	}
	fuzzMeasurements(f, func(r io.Reader, input int) ([]Measurement, error) {
		ms, _, err := DecodeSamples(r, input)
		return ms, err
	})
}

// FuzzDecodeNVBench: go test ./providers/bench -run '^$' -fuzz FuzzDecodeNVBench -fuzztime 1m
func FuzzDecodeNVBench(f *testing.F) {
	// nvbench__test_ref.json (541 KB) is over fuzztool.MaxSeedBytes; its shape is below.
	fuzztool.Corpus(f, "nvbench__test_ref.json")
	for _, s := range []string{
		`{}`, `{"benchmarks":[]}`,
		`{"benchmarks":[{"name":"copy","states":[{"name":"T=I32","axis_values":[{"name":"T","value":"I32"}],` +
			`"summaries":[{"tag":"nv/cold/time/gpu/mean","hint":"duration","data":[{"name":"value","type":"float64","value":"0.000125"}]}]},` +
			`{"name":"skip","is_skipped":true}]}]}`,
		`{"meta":{"version":{"json":{"string":"1.0.0"}}},"benchmarks":[{"name":"axes","index":0,"devices":[0],"states":[{"name":"Device=0 N=2^10","device":0,` +
			`"axis_values":[{"name":"N","type":"int64","value":"1024"},{"name":"F","type":"float64","value":0.5}],"summaries":[` +
			`{"tag":"nv/cold/sample_size","name":"Samples","hint":"sample_size","data":[{"name":"value","type":"int64","value":"1000"}]},` +
			`{"tag":"nv/batch/bw/global/bytes_per_second","hint":"byte_rate","data":[{"name":"value","type":"float64","value":1.5e11}]},` +
			`{"tag":"nv/cold/time/cpu/stdev/relative","hint":"percentage","data":[{"name":"value","type":"float64","value":"nan"}]}]}]}]}`,
	} {
		f.Add([]byte(s))
	}
	fuzzMeasurements(f, DecodeNVBench)
}

// gzipBytes is b in one gzip layer.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
