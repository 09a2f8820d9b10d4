package bench

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/flameox/flameox/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/validate"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonbound"
)

// maxJSONBytes bounds the JSON benchmark documents, which are decoded whole.
const maxJSONBytes = 256 << 20

// readAllBounded reads r (transparently gunzipping) up to maxJSONBytes.
func readAllBounded(r io.Reader) ([]byte, error) {
	jr, err := jsonReader(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(jr)
	if err != nil {
		return nil, readError(err)
	}
	if len(b) > maxJSONBytes {
		return nil, jsonTooLarge()
	}
	return b, nil
}

// jsonBounds bound the shape of a whole-document benchmark format (issue 21): every
// value a measurement at most, a few per series beside it, so that encoding/json and the
// schema validator build structures proportional to MaxMeasurements, not to the millions
// of tiny values (`0,`, `[],`) a document within maxJSONBytes can hold.
func jsonBounds(what string) jsonbound.Bounds {
	return jsonbound.Bounds{What: what, Values: MaxMeasurements + 1<<20, Composites: 1 << 20, StringBytes: 1 << 20}
}

// readBounded is readAllBounded followed by the shape check of the document's first
// value (what follows it stays for the decoder to refuse, as before).
func readBounded(r io.Reader, what string) ([]byte, error) {
	b, err := readAllBounded(r)
	if err != nil {
		return nil, err
	}
	_, err = jsonbound.Check(b, jsonBounds(what))
	var lim *providers.LimitError
	if errors.As(err, &lim) {
		return nil, lim
	}
	// Invalid JSON (err not a limit) is left to the format's decoder, which reports it
	// in its own words.
	return b, nil
}

// jsonReader is r, gunzipped when it is gzip, cut one byte past maxJSONBytes.
func jsonReader(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); sourcefile.IsGzip(head) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &providers.DecodeError{Message: "the gzip stream is not valid"}
		}
		r = zr
	} else {
		r = br
	}
	return io.LimitReader(r, maxJSONBytes+1), nil
}

func jsonTooLarge() error {
	return &providers.LimitError{Message: fmt.Sprintf("the benchmark document is larger than %d bytes", maxJSONBytes), Limit: maxJSONBytes, Unit: "bytes"}
}

// readError is a read error: the bounded reader's limit as itself, anything else a
// DecodeError.
func readError(err error) error {
	var lim *providers.LimitError
	if errors.As(err, &lim) {
		return lim
	}
	return &providers.DecodeError{Message: "the input could not be read (bad compression or I/O error)"}
}

// normalize converts a value of a source unit to Flameox's: seconds become integer
// nanoseconds, byte and integer units exact integers, others kept.
func normalize(v float64, unit string) (float64, string, bool) {
	switch unit {
	case "second", "seconds", "s":
		return math.Round(v * 1e9), "ns", true
	case "ms":
		return math.Round(v * 1e6), "ns", true
	case "us":
		return math.Round(v * 1e3), "ns", true
	case "ns":
		return v, "ns", v == math.Trunc(v)
	case "byte", "bytes":
		return math.Round(v), "bytes", true
	case "integer", "count":
		return math.Round(v), "count", true
	}
	return v, unit, false
}

// finite is nil for a finite value and otherwise the DecodeError of the value named by
// format and args: a value that is not finite as written (Go benchmark text and NVBench
// strings can spell NaN and Inf) or once converted to Flameox's unit (1e300 seconds in
// nanoseconds). Summaries, fits and comparisons need finite values, and JSON has no NaN
// or infinity.
func finite(v float64, format string, args ...any) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &providers.DecodeError{Message: fmt.Sprintf(format, args...) + fmt.Sprintf(" is %v, not a finite number (NaN or infinity as written, or it overflows float64 once converted to the unit): correct or remove that value", v)}
	}
	return nil
}

// samplesSchema is the published schema of the benchmark-samples document.
var samplesSchema = sync.OnceValue(func() *validate.Schema {
	b, err := fs.ReadFile(contracts.FS, "formats/BenchmarkSamplesDocument.json")
	if err != nil {
		panic(err)
	}
	s, err := validate.Compile("benchmark-samples.json", b)
	if err != nil {
		panic(err)
	}
	return s
})

// DecodeSamples reads a Flameox benchmark-samples document, validated against its
// published schema (contracts/formats/BenchmarkSamplesDocument.json).
func DecodeSamples(r io.Reader, input int) ([]Measurement, []string, error) {
	b, err := readBounded(r, "the benchmark-samples document")
	if err != nil {
		return nil, nil, err
	}
	if _, f := samplesSchema().Validate(b); f != nil {
		return nil, nil, &providers.DecodeError{Message: "the benchmark-samples document does not match its schema: " + f.Message,
			Details: map[string]any{"document_field_path": f.FieldPath}}
	}
	var doc struct {
		Producer *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"producer"`
		Benchmarks []struct {
			Name          string         `json:"name"`
			Unit          string         `json:"unit"`
			Dimensions    map[string]any `json:"dimensions"`
			Scope         string         `json:"scope"`
			Phase         string         `json:"phase"`
			Worker        string         `json:"worker"`
			Variant       string         `json:"variant"`
			Trial         string         `json:"trial"`
			Block         string         `json:"block"`
			Loops         int64          `json:"loops"`
			WarmupSamples []float64      `json:"warmup_samples"`
			Samples       []float64      `json:"samples"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, &providers.DecodeError{Message: "the benchmark-samples document cannot be decoded"}
	}
	var producers []string
	if doc.Producer != nil {
		p := doc.Producer.Name
		if doc.Producer.Version != "" {
			p += "@" + doc.Producer.Version
		}
		producers = append(producers, p)
	}
	var out []Measurement
	for _, s := range doc.Benchmarks {
		dims := map[string]string{}
		for k, v := range s.Dimensions {
			dims[k] = fmt.Sprint(v)
		}
		loops := s.Loops
		if loops <= 0 {
			loops = 1
		}
		add := func(vals []float64, warmup bool) error {
			for i, v := range vals {
				nv, nu, isInt := normalize(v, s.Unit)
				if err := finite(nv, "benchmark %q value %d in %s", s.Name, i, nu); err != nil {
					return err
				}
				out = append(out, Measurement{Input: input, Benchmark: s.Name, Unit: nu, Value: nv, Integer: isInt,
					Index: i, Loops: loops, Warmup: warmup, Dimensions: dims, Scope: s.Scope, Phase: s.Phase,
					Worker: s.Worker, Variant: s.Variant, Trial: s.Trial, Block: s.Block})
			}
			return nil
		}
		if err := add(s.WarmupSamples, true); err != nil {
			return nil, nil, err
		}
		if err := add(s.Samples, false); err != nil {
			return nil, nil, err
		}
		if len(out) > MaxMeasurements {
			return nil, nil, &providers.LimitError{Message: fmt.Sprintf("more than %d measurements", MaxMeasurements), Limit: MaxMeasurements}
		}
	}
	return out, producers, nil
}

// DecodeHyperfine reads a hyperfine --export-json document: one series per command (its
// --command-name when given), times in seconds as nanoseconds, parameter-scan values as
// dimensions.
func DecodeHyperfine(r io.Reader, input int) ([]Measurement, error) {
	b, err := readBounded(r, "the hyperfine document")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Results []struct {
			Command    string         `json:"command"`
			Times      []float64      `json:"times"`
			Parameters map[string]any `json:"parameters"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Results == nil {
		return nil, &providers.DecodeError{Message: "the input is not a hyperfine JSON export (no results)"}
	}
	var out []Measurement
	for ri, res := range doc.Results {
		if res.Command == "" || len(res.Times) == 0 {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("hyperfine result %d has no command or no times", ri)}
		}
		dims := map[string]string{}
		for k, v := range res.Parameters {
			dims[k] = fmt.Sprint(v)
		}
		for i, t := range res.Times {
			nv, nu, isInt := normalize(t, "seconds")
			if err := finite(nv, "hyperfine result %d time %d in ns", ri, i); err != nil {
				return nil, err
			}
			out = append(out, Measurement{Input: input, Benchmark: res.Command, Unit: nu, Value: nv, Integer: isInt,
				Run: ri, Index: i, Loops: 1, Dimensions: dims})
		}
	}
	return out, nil
}

var goBenchLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(Benchmark\S*)\s+(\d+)\s+(.+)$`) })

// goBenchUnits normalizes the standard Go benchmark units.
var goBenchUnits = map[string]string{"ns/op": "ns", "B/op": "bytes", "allocs/op": "count"}

// DecodeGoBench reads `go test -bench` output (the benchstat input format): a result
// line per benchmark run with value/unit pairs. Sub-benchmark name parts of the form
// key=value become dimensions, the -N GOMAXPROCS suffix the gomaxprocs dimension, and
// the pkg configuration line the scope.
func DecodeGoBench(r io.Reader, input int) ([]Measurement, error) {
	var out []Measurement
	if err := decodeGoBench(r, input, func(m *Measurement) error {
		out = append(out, *m)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeGoBench reads `go test -bench` output (see DecodeGoBench), handing each
// measurement to emit as its line is read: MaxMeasurements applies while reading, and
// nothing but what emit keeps is retained.
func decodeGoBench(r io.Reader, input int, emit emitter) error {
	br := bufio.NewReaderSize(r, 1<<16)
	scope := ""
	runs := map[string]int{}
	count := 0
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if len(line) > 1<<20 {
			return &providers.LimitError{Message: fmt.Sprintf("line %d is longer than 1 MiB", lineNo), Limit: 1 << 20}
		}
		line = strings.TrimRight(line, "\r\n")
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.ContainsAny(k, " \t") && k == "pkg" {
			scope = strings.TrimSpace(v)
		}
		if m := goBenchLine().FindStringSubmatch(line); m != nil {
			name, dims := splitBenchName(m[1])
			n, _ := strconv.ParseInt(m[2], 10, 64)
			fields := strings.Fields(m[3])
			if len(fields)%2 != 0 {
				return &providers.DecodeError{Message: fmt.Sprintf("line %d has a value without a unit", lineNo)}
			}
			run := runs[m[1]]
			runs[m[1]]++
			for i := 0; i < len(fields); i += 2 {
				v, perr := strconv.ParseFloat(fields[i], 64)
				if perr != nil {
					return &providers.DecodeError{Message: fmt.Sprintf("line %d has a non-numeric value %q", lineNo, fields[i])}
				}
				if err := finite(v, "line %d value %d", lineNo, i/2+1); err != nil {
					return err
				}
				unit := fields[i+1]
				if u, ok := goBenchUnits[unit]; ok {
					unit = u
				}
				if count++; count > MaxMeasurements {
					return &providers.LimitError{Message: fmt.Sprintf("more than %d measurements", MaxMeasurements), Limit: MaxMeasurements, Unit: "measurements"}
				}
				m := Measurement{Input: input, Benchmark: name, Unit: unit, Value: v, Integer: v == math.Trunc(v),
					Run: run, Loops: n, AdaptiveLoops: true, Dimensions: dims, Scope: scope}
				if err := emit(&m); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			break
		}
		var lim *providers.LimitError
		if errors.As(err, &lim) {
			return lim
		}
		if err != nil {
			return &providers.DecodeError{Message: "the benchmark output could not be read"}
		}
	}
	if count == 0 {
		return &providers.DecodeError{Message: "the input holds no Go benchmark result lines"}
	}
	return nil
}

var procsSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-(\d+)$`) })

// splitBenchName splits BenchmarkX/n=100/fast-8 into the name BenchmarkX/fast and the
// dimensions n=100, gomaxprocs=8.
func splitBenchName(full string) (string, map[string]string) {
	dims := map[string]string{}
	if m := procsSuffix().FindStringSubmatch(full); m != nil {
		dims["gomaxprocs"] = m[1]
		full = strings.TrimSuffix(full, m[0])
	}
	var parts []string
	for i, p := range strings.Split(full, "/") {
		// The first part is the benchmark function's name (Benchmark=1 names no
		// dimension), so that a measurement always has a name.
		if k, v, ok := strings.Cut(p, "="); ok && k != "" && i > 0 {
			dims[k] = v
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/"), dims
}
