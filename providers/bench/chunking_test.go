package bench

import (
	"io"
	"os"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// measurements is a decoder of measurements as CheckAnyChunking calls it.
func measurements(decode func(io.Reader, int) ([]Measurement, error)) func(io.Reader, func() io.Reader) testtool.ChunkResult {
	return func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		ms, err := decode(r, 3)
		return testtool.Result(ms, err)
	}
}

// TestDecodeSamplesAnyChunking requires DecodeSamples to read benchmark-samples
// documents (the corpus has none, so TestSamplesDocument's and FuzzDecodeSamples's),
// gzipped or not, and their malformed copies the same however the reader splits them.
func TestDecodeSamplesAnyChunking(t *testing.T) {
	doc := []byte(`{"schema":"flameox.benchmark-samples.v1","producer":{"name":"harness","version":"2"},
"benchmarks":[{"name":"sort","unit":"ms","dimensions":{"n":1000},"loops":10,"warmup_samples":[3],"samples":[1.5,2.5],"trial":"t1","block":"b1"}]}`)
	inputs := testtool.WithMalformed("samples", doc)
	inputs = append(inputs, testtool.WithMalformed("samples-units", []byte(`{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"m","unit":"bytes","samples":[1e3,2]},{"name":"c","unit":"widgets","scope":"s","phase":"p","worker":"w","variant":"v","samples":[0.1]}]}`))...)
	inputs = append(inputs, testtool.WithMalformed("samples.gz", gzipBytes(doc))...)
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		ms, producers, err := DecodeSamples(r, 3)
		return testtool.Result(struct {
			Measurements []Measurement
			Producers    []string
		}{ms, producers}, err)
	})
}

// TestDecodeHyperfineAnyChunking requires DecodeHyperfine to read hyperfine exports
// (the corpus has none, so FuzzDecodeHyperfine's), gzipped or not, and their malformed
// copies the same however the reader splits them.
func TestDecodeHyperfineAnyChunking(t *testing.T) {
	doc := []byte(`{"results":[{"command":"sleep 0.1","mean":0.1,"stddev":null,"times":[0.1001,0.0999],"exit_codes":[0,0],"parameters":{"n":4,"m":[1]}},{"command":"b","times":[0]}]}`)
	inputs := testtool.WithMalformed("hyperfine", doc)
	inputs = append(inputs, testtool.WithMalformed("hyperfine.gz", gzipBytes(doc))...)
	testtool.CheckAnyChunking(t, inputs, measurements(DecodeHyperfine))
}

// TestDecodeNVBenchAnyChunking requires DecodeNVBench to read the corpus NVBench
// document and its malformed copies the same however the reader splits them.
func TestDecodeNVBenchAnyChunking(t *testing.T) {
	testtool.CheckAnyChunking(t, testtool.CorpusInputs(t, "nvbench__test_ref.json"), measurements(DecodeNVBench))
}

// TestDecodeGoBenchAnyChunking requires DecodeGoBench to read go test -bench output
// (the corpus has none, so FuzzDecodeGoBench's) and its malformed copies the same
// however the reader splits them.
func TestDecodeGoBenchAnyChunking(t *testing.T) {
	inputs := testtool.WithMalformed("gobench", []byte("goos: linux\npkg: example.com/x\nBenchmarkSort/n=100-8   \t  5000\t    2400 ns/op\t  512 B/op\t  3 allocs/op\n"+
		"BenchmarkSort/n=100-8   \t  5000\t    2600 ns/op\t  512 B/op\t  3 allocs/op\nPASS\n"))
	inputs = append(inputs, testtool.WithMalformed("gobench-crlf", []byte("pkg: a b\r\nBenchmarkX/=1/k=v/-2 1 0.5 MB/s 1e3 custom-unit\r\nBenchmark 99999999999999999999 1 ns/op"))...)
	testtool.CheckAnyChunking(t, inputs, measurements(DecodeGoBench))
}

// TestDecodePyperfAnyChunking requires DecodePyperf to read the corpus pyperf suites,
// gzipped or not, and their malformed copies the same however the reader splits them.
func TestDecodePyperfAnyChunking(t *testing.T) {
	inputs := testtool.CorpusInputs(t, "pyperf__telco.json", "pyperf__track_memory.json")
	b, err := os.ReadFile(corpus(t, "pyperf__track_memory.json"))
	if err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, testtool.WithMalformed("pyperf__track_memory.json.gz", gzipBytes(b))...)
	testtool.CheckAnyChunking(t, inputs, measurements(DecodePyperf))
}
