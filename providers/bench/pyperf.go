package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/flameox/flameox/providers"
)

// decodePyperf reads a pyperf suite (JSON versions 5, 6 and "1.0", gzip allowed),
// handing each measurement to emit. Values are per loop iteration; version 5 and 6
// warmups are raw totals and are divided by their loop count. Calibration-only runs
// contribute warmups only.
func decodePyperf(r io.Reader, input int, emit emitter) error {
	jr, err := jsonReader(r)
	if err != nil {
		return err
	}
	// The streaming reader reads as the bytes come, so that the measurement bound stops
	// it early; what it has read is kept for encoding/json, should it leave the suite.
	var b bytes.Buffer
	doc, err := streamPyperfFrom(io.TeeReader(jr, &b))
	if errors.Is(err, errNotStreamed) {
		if _, err := b.ReadFrom(jr); err != nil {
			return readError(err)
		}
		if b.Len() > maxJSONBytes {
			return jsonTooLarge()
		}
		if err := countNumbers(b.Bytes()); err != nil {
			return err
		}
		doc, err = wholePyperf(b.Bytes())
	} else if err == nil && b.Len() > maxJSONBytes {
		err = jsonTooLarge()
	}
	if err != nil {
		return err
	}
	return doc.emit(input, emit)
}

// DecodePyperf reads a pyperf suite into measurements (see decodePyperf).
func DecodePyperf(r io.Reader, input int) ([]Measurement, error) {
	var out []Measurement
	if err := decodePyperf(r, input, func(m *Measurement) error {
		out = append(out, *m)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// pyperfDoc is what a pyperf suite holds for Flameox: the version as written, the
// metadata that names benchmarks and sets units and loop counts, and per run its values
// and warmups, packed.
type pyperfDoc struct {
	version string
	meta    pyperfMeta
	benches []pyperfBench
	runs    []pyperfRun
	values  []float64
	// warmups spans each warmup's numbers in wvalues.
	warmups [][2]int
	wvalues []float64
}

// pyperfMeta is what a metadata map holds for Flameox: the name and unit when they are
// strings, loops and inner_loops when they are numbers.
type pyperfMeta struct {
	name, unit         string
	loops, inner       float64
	hasLoops, hasInner bool
}

type pyperfBench struct {
	meta pyperfMeta
	runs int // its first run in pyperfDoc.runs; its runs end where the next one's start
}

// pyperfRun spans its values, samples and warmups in the document's lists; valuesSet
// is false when it has no values (absent or null), and then its samples (version 5)
// stand for them.
type pyperfRun struct {
	meta                     pyperfMeta
	values, samples, warmups [2]int
	valuesSet                bool
}

func metaOf(m map[string]any) pyperfMeta {
	var p pyperfMeta
	p.name, _ = m["name"].(string)
	p.unit, _ = m["unit"].(string)
	p.loops, p.hasLoops = m["loops"].(float64)
	p.inner, p.hasInner = m["inner_loops"].(float64)
	return p
}

// wholePyperf decodes a suite with encoding/json: what reads a suite streamPyperf does
// not take, and the reference it is tested against.
func wholePyperf(b []byte) (*pyperfDoc, error) {
	var suite struct {
		Version    json.RawMessage `json:"version"`
		Metadata   map[string]any  `json:"metadata"`
		Benchmarks []struct {
			Metadata map[string]any `json:"metadata"`
			Runs     []struct {
				Metadata map[string]any `json:"metadata"`
				Values   []float64      `json:"values"`
				Samples  []float64      `json:"samples"`
				Warmups  [][]float64    `json:"warmups"`
			} `json:"runs"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(b, &suite); err != nil {
		return nil, &providers.DecodeError{Message: "the input is not a pyperf JSON suite"}
	}
	doc := &pyperfDoc{version: string(suite.Version), meta: metaOf(suite.Metadata)}
	for _, bench := range suite.Benchmarks {
		doc.benches = append(doc.benches, pyperfBench{meta: metaOf(bench.Metadata), runs: len(doc.runs)})
		for _, run := range bench.Runs {
			r := pyperfRun{meta: metaOf(run.Metadata), values: doc.addValues(run.Values), samples: doc.addValues(run.Samples),
				valuesSet: run.Values != nil}
			for _, w := range run.Warmups {
				doc.wvalues = append(doc.wvalues, w...)
				doc.warmups = append(doc.warmups, [2]int{len(doc.wvalues) - len(w), len(doc.wvalues)})
			}
			r.warmups = [2]int{len(doc.warmups) - len(run.Warmups), len(doc.warmups)}
			doc.runs = append(doc.runs, r)
		}
	}
	return doc, nil
}

// addValues appends v to the document's values and returns its span.
func (doc *pyperfDoc) addValues(v []float64) [2]int {
	doc.values = append(doc.values, v...)
	return [2]int{len(doc.values) - len(v), len(doc.values)}
}

// emit hands the suite's measurements to emit, in order: per run its warmups, then its
// values.
func (doc *pyperfDoc) emit(input int, emit emitter) error {
	perLoopWarmups := false
	switch strings.TrimSpace(doc.version) {
	case `"1.0"`:
		perLoopWarmups = true
	case "5", "6":
	default:
		return &providers.DecodeError{Message: fmt.Sprintf("pyperf JSON version %s is not read; versions 5, 6 and \"1.0\" are", doc.version)}
	}
	if len(doc.benches) == 0 {
		return &providers.DecodeError{Message: "the pyperf suite holds no benchmarks"}
	}
	count := 0
	for bi := range doc.benches {
		bench := &doc.benches[bi]
		name := firstString(func(m *pyperfMeta) string { return m.name }, &bench.meta, &doc.meta)
		if name == "" {
			name = fmt.Sprintf("benchmark-%d", bi+1)
		}
		end := len(doc.runs)
		if bi+1 < len(doc.benches) {
			end = doc.benches[bi+1].runs
		}
		for ri := range doc.runs[bench.runs:end] {
			run := &doc.runs[bench.runs+ri]
			metas := []*pyperfMeta{&run.meta, &bench.meta, &doc.meta}
			unit := firstString(func(m *pyperfMeta) string { return m.unit }, metas...)
			if unit == "" {
				unit = "second"
			}
			loops := firstInt(func(m *pyperfMeta) (float64, bool) { return m.loops, m.hasLoops }, metas...)
			inner := firstInt(func(m *pyperfMeta) (float64, bool) { return m.inner, m.hasInner }, metas...)
			if loops <= 0 {
				loops = 1
			}
			if inner <= 0 {
				inner = 1
			}
			values := run.values
			if !run.valuesSet {
				values = run.samples // version 5
			}
			m := Measurement{Input: input, Benchmark: name, Run: ri, Warmup: true}
			for wi, span := range doc.warmups[run.warmups[0]:run.warmups[1]] {
				w := doc.wvalues[span[0]:span[1]]
				if len(w) != 2 {
					return &providers.DecodeError{Message: fmt.Sprintf("benchmark %q run %d warmup %d is not [loops, value]", name, ri, wi)}
				}
				if !(w[0] >= 0 && w[0] <= 1<<53 && w[0] == math.Trunc(w[0])) {
					return &providers.DecodeError{Message: fmt.Sprintf("benchmark %q run %d warmup %d has loop count %v, not a whole number >= 0", name, ri, wi, w[0])}
				}
				v := w[1]
				if !perLoopWarmups && w[0] > 0 {
					v /= w[0] * float64(inner)
				}
				m.Value, m.Unit, m.Integer = normalize(v, unit)
				if err := finite(m.Value, "benchmark %q run %d warmup %d in %s", name, ri, wi, m.Unit); err != nil {
					return err
				}
				m.Index, m.Loops = wi, int64(w[0])
				if err := emit(&m); err != nil {
					return err
				}
			}
			m.Warmup, m.Loops = false, loops*inner
			for vi, v := range doc.values[values[0]:values[1]] {
				m.Value, m.Unit, m.Integer = normalize(v, unit)
				if err := finite(m.Value, "benchmark %q run %d value %d in %s", name, ri, vi, m.Unit); err != nil {
					return err
				}
				m.Index = vi
				if err := emit(&m); err != nil {
					return err
				}
			}
			if count += run.warmups[1] - run.warmups[0] + values[1] - values[0]; count > MaxMeasurements {
				return &providers.LimitError{Message: fmt.Sprintf("more than %d measurements", MaxMeasurements), Limit: MaxMeasurements}
			}
		}
	}
	return nil
}

// firstString is the first non-empty string of the metadata, in order.
func firstString(get func(*pyperfMeta) string, metas ...*pyperfMeta) string {
	for _, m := range metas {
		if s := get(m); s != "" {
			return s
		}
	}
	return ""
}

// firstInt is the first number of the metadata, in order, truncated.
func firstInt(get func(*pyperfMeta) (float64, bool), metas ...*pyperfMeta) int64 {
	for _, m := range metas {
		if f, ok := get(m); ok {
			return int64(f)
		}
	}
	return 0
}

// errNotStreamed is a suite the streaming reader leaves to encoding/json.
var errNotStreamed = errors.New("not a suite the streaming reader takes")

// streamPyperf reads a suite with the jsontext tokenizer into a pyperfDoc, as
// wholePyperf would. It leaves to wholePyperf (errNotStreamed) what encoding/json reads
// in ways of its own: names that match a field only case-insensitively, duplicate names,
// invalid UTF-8, and anything encoding/json refuses (wrong kinds, numbers outside
// float64, data after the suite).
func streamPyperf(b []byte) (*pyperfDoc, error) { return streamPyperfFrom(bytes.NewReader(b)) }

// streamPyperfFrom is streamPyperf reading r. A suite of more than MaxMeasurements
// numbers (values, samples and warmups) is a LimitError as soon as they are read.
func streamPyperfFrom(r io.Reader) (*pyperfDoc, error) {
	s := &pyperfStream{dec: jsontext.NewDecoder(r), doc: &pyperfDoc{}}
	if s.dec.PeekKind() != '{' || !s.suite() {
		if s.limit != nil {
			return nil, s.limit
		}
		return nil, errNotStreamed
	}
	if _, err := s.dec.ReadToken(); err != io.EOF {
		return nil, errNotStreamed
	}
	return s.doc, nil
}

type pyperfStream struct {
	dec   *jsontext.Decoder
	doc   *pyperfDoc
	name  []byte
	limit error
}

// measurementsLimit is the LimitError of a suite of more than MaxMeasurements numbers.
func measurementsLimit() error {
	return &providers.LimitError{Message: fmt.Sprintf("the pyperf suite holds more than %d measurements", MaxMeasurements),
		Limit: MaxMeasurements, Unit: "measurements"}
}

// countNumbers refuses, before encoding/json decodes it, a suite of more than
// MaxMeasurements numbers; it tokenizes without keeping anything.
func countNumbers(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil // encoding/json judges invalid JSON
		}
		if tok.Kind() == '0' {
			if n++; n > MaxMeasurements {
				return measurementsLimit()
			}
		}
	}
}

// object reads an object, calling field with each name (valid until the next read) to
// read its value.
func (s *pyperfStream) object(field func(name []byte) bool) bool {
	if _, err := s.dec.ReadToken(); err != nil { // {
		return false
	}
	for s.dec.PeekKind() != '}' {
		raw, err := s.dec.ReadValue()
		if err != nil {
			return false
		}
		if s.name, err = jsontext.AppendUnquote(s.name[:0], raw); err != nil || !field(s.name) {
			return false
		}
	}
	_, err := s.dec.ReadToken() // }
	return err == nil
}

// array reads an array, calling elem to read each element.
func (s *pyperfStream) array(elem func() bool) bool {
	if _, err := s.dec.ReadToken(); err != nil { // [
		return false
	}
	for s.dec.PeekKind() != ']' {
		if !elem() {
			return false
		}
	}
	_, err := s.dec.ReadToken() // ]
	return err == nil
}

// null consumes a null, if one comes next.
func (s *pyperfStream) null() bool {
	if s.dec.PeekKind() != 'n' {
		return false
	}
	_, err := s.dec.ReadToken()
	return err == nil
}

// other skips the value of a name that is no field: one that matches a field
// case-insensitively is encoding/json's to read.
func (s *pyperfStream) other(name []byte, fields ...string) bool {
	for _, f := range fields {
		if bytes.EqualFold(name, []byte(f)) {
			return false
		}
	}
	return s.dec.SkipValue() == nil
}

// any reads a value decoded into an any: its numbers must be float64s.
func (s *pyperfStream) any() bool {
	for depth := 0; ; {
		tok, err := s.dec.ReadToken()
		if err != nil {
			return false
		}
		switch tok.Kind() {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '0':
			if _, err := tok.Float(); err != nil {
				return false
			}
		}
		if depth == 0 {
			return true
		}
	}
}

// number reads a float64; null leaves 0, as encoding/json does.
func (s *pyperfStream) number() (float64, bool) {
	if s.null() {
		return 0, true
	}
	if s.dec.PeekKind() != '0' {
		return 0, false
	}
	tok, err := s.dec.ReadToken()
	if err != nil {
		return 0, false
	}
	f, err := tok.Float()
	return f, err == nil
}

// numbers reads an array of numbers into list; set is false for null.
func (s *pyperfStream) numbers(list *[]float64) (span [2]int, set, ok bool) {
	start := len(*list)
	if s.null() {
		return [2]int{start, start}, false, true
	}
	if s.dec.PeekKind() != '[' {
		return span, false, false
	}
	ok = s.array(func() bool {
		if len(s.doc.values)+len(s.doc.wvalues) >= MaxMeasurements {
			s.limit = measurementsLimit()
			return false
		}
		f, ok := s.number()
		*list = append(*list, f)
		return ok
	})
	return [2]int{start, len(*list)}, true, ok
}

// meta reads a metadata map (or null).
func (s *pyperfStream) meta(m *pyperfMeta) bool {
	if s.null() {
		return true
	}
	if s.dec.PeekKind() != '{' {
		return false
	}
	return s.object(func(name []byte) bool {
		switch k := s.dec.PeekKind(); {
		case k == '"' && (string(name) == "name" || string(name) == "unit"):
			tok, err := s.dec.ReadToken()
			if err != nil {
				return false
			}
			if string(name) == "name" {
				m.name = tok.String()
			} else {
				m.unit = tok.String()
			}
			return true
		case k == '0' && (string(name) == "loops" || string(name) == "inner_loops"):
			f, ok := s.number()
			if string(name) == "loops" {
				m.loops, m.hasLoops = f, true
			} else {
				m.inner, m.hasInner = f, true
			}
			return ok
		}
		return s.any()
	})
}

func (s *pyperfStream) suite() bool {
	doc := s.doc
	return s.object(func(name []byte) bool {
		switch string(name) {
		case "version":
			v, err := s.dec.ReadValue()
			doc.version = string(v)
			return err == nil
		case "metadata":
			return s.meta(&doc.meta)
		case "benchmarks":
			if s.null() {
				return true
			}
			return s.dec.PeekKind() == '[' && s.array(s.benchmark)
		}
		return s.other(name, "version", "metadata", "benchmarks")
	})
}

func (s *pyperfStream) benchmark() bool {
	doc := s.doc
	b := pyperfBench{runs: len(doc.runs)}
	ok := s.null() || s.dec.PeekKind() == '{' && s.object(func(name []byte) bool {
		switch string(name) {
		case "metadata":
			return s.meta(&b.meta)
		case "runs":
			if s.null() {
				return true
			}
			return s.dec.PeekKind() == '[' && s.array(s.run)
		}
		return s.other(name, "metadata", "runs")
	})
	doc.benches = append(doc.benches, b)
	return ok
}

func (s *pyperfStream) run() bool {
	doc := s.doc
	r := pyperfRun{values: [2]int{len(doc.values), len(doc.values)}, samples: [2]int{len(doc.values), len(doc.values)},
		warmups: [2]int{len(doc.warmups), len(doc.warmups)}}
	ok := s.null() || s.dec.PeekKind() == '{' && s.object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "metadata":
			return s.meta(&r.meta)
		case "values":
			r.values, r.valuesSet, ok = s.numbers(&doc.values)
		case "samples":
			r.samples, _, ok = s.numbers(&doc.values)
		case "warmups":
			if s.null() {
				return true
			}
			start := len(doc.warmups)
			ok = s.dec.PeekKind() == '[' && s.array(func() bool {
				span, _, ok := s.numbers(&doc.wvalues)
				doc.warmups = append(doc.warmups, span)
				return ok
			})
			r.warmups = [2]int{start, len(doc.warmups)}
		default:
			return s.other(name, "metadata", "values", "samples", "warmups")
		}
		return ok
	})
	doc.runs = append(doc.runs, r)
	return ok
}
