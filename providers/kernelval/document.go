package kernelval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/flameox/flameox/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/validate"
	"github.com/flameox/flameox/providers"
)

// SchemaVersion is the one document version this reader accepts.
const SchemaVersion = "flameox.kernel-validation.v2"

// Bounds of a document (catalog §1.4). The item counts are also in the published schema.
const (
	MaxDocumentBytes = 64 << 20
	MaxCases         = 100_000
	MaxOutputs       = 128
	MaxMetrics       = 32
	MaxWitnesses     = 32
	MaxDimensions    = 32
)

// Statuses.
const (
	statusPass = "pass"
	statusFail = "fail"
)

// document is a decoded flameox.kernel-validation.v2 document.
type document struct {
	SchemaVersion    string   `json:"schema_version"`
	Producer         string   `json:"producer"`
	ProducerVersion  *string  `json:"producer_version"`
	Status           string   `json:"status"`
	CoverageComplete bool     `json:"coverage_complete"`
	Cases            []kcase  `json:"cases"`
	Limitations      []string `json:"limitations"`
}

type kcase struct {
	CaseID     string         `json:"case_id"`
	Dimensions map[string]any `json:"dimensions"`
	Seed       *json.Number   `json:"seed"`
	Device     string         `json:"device"`
	Status     string         `json:"status"`
	Outputs    []output       `json:"outputs"`
	// seed is Seed as an integer.
	seed *int64
}

type output struct {
	Name     string           `json:"name"`
	Dtype    string           `json:"dtype"`
	Shape    []int64          `json:"shape"`
	Status   string           `json:"status"`
	Metrics  []metric         `json:"metrics"`
	Failures []map[string]any `json:"representative_failures"`
}

type metric struct {
	Name       string          `json:"name"`
	Unit       string          `json:"unit"`
	Value      json.RawMessage `json:"value"`
	Comparator *string         `json:"comparator"`
	Threshold  *float64        `json:"threshold"`
	Status     string          `json:"status"`
	Limitation *string         `json:"limitation"`
	// value is Value as a finite number; nil when null or positive infinity.
	value *float64
	// infinity is the reason of a positive_infinity value.
	infinity string
}

// schemas are the published document schema split for a streaming check (issue 21): the
// document with its cases array unconstrained per item, and one case. Each case is
// validated alone as it is read, so memory holds one case's decoded tree, not the whole
// document's; failure paths are the same as the whole schema's.
var schemas = sync.OnceValue(func() [2]*validate.Schema {
	b, err := fs.ReadFile(contracts.FS, "formats/KernelValidationDocument.json")
	if err != nil {
		panic(err)
	}
	var whole map[string]any
	if err := json.Unmarshal(b, &whole); err != nil {
		panic(err)
	}
	props := whole["properties"].(map[string]any)
	cases := props["cases"].(map[string]any)
	item := cases["items"].(map[string]any)
	item["$schema"] = whole["$schema"]
	delete(cases, "items")
	compile := func(name string, v any) *validate.Schema {
		raw, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		s, err := validate.Compile(name, raw)
		if err != nil {
			panic(err)
		}
		return s
	}
	return [2]*validate.Schema{compile("kernel-validation-head.json", whole), compile("kernel-validation-case.json", item)}
})

// schemaError is the DECODE_FAILURE of a schema check at a document field path.
func schemaError(f *failure.Failure, prefix ...any) error {
	path := append(append([]any{}, prefix...), f.FieldPath...)
	details := map[string]any{"document_field_path": path}
	if len(f.AcceptedValues) > 0 {
		details["accepted_values"] = f.AcceptedValues
	}
	return &providers.DecodeError{Message: "the kernel-validation document does not match its schema: " +
		strings.ReplaceAll(f.Message, "of this tool", "of the document"), Details: details}
}

// decodeError is a DECODE_FAILURE at a document field path.
func decodeError(path []any, format string, args ...any) error {
	return &providers.DecodeError{Message: fmt.Sprintf(format, args...), Details: map[string]any{"document_field_path": path}}
}

// read decodes and checks the kernel-validation document of in.
func read(ctx context.Context, in providers.Input) (*document, error) {
	r, err := providers.OpenBounded(ctx, in, MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		if _, ok := err.(*providers.LimitError); ok {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &providers.InputError{Source: in.Index, Message: fmt.Sprintf("source %d could not be read", in.Index), Err: err}
	}
	return decode(b)
}

// decode checks b against the published schema and the rules a schema cannot say:
// unique case ids, output and metric names, and statuses that agree with each other.
func decode(b []byte) (*document, error) {
	var head struct {
		SchemaVersion any `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, &providers.DecodeError{Message: "the kernel-validation document is not a JSON object"}
	}
	if head.SchemaVersion != SchemaVersion {
		return nil, &providers.UnsupportedError{
			Message: fmt.Sprintf("the kernel-validation document's schema_version is %s; this reader accepts %s only", describe(head.SchemaVersion), SchemaVersion),
			Details: map[string]any{"document_field_path": []any{"schema_version"}, "accepted_values": []string{SchemaVersion}}}
	}
	doc, err := stream(b)
	if err != nil {
		return nil, err
	}
	if err := check(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// stream reads the document's top-level members, validating and decoding each case as it
// comes and the rest against the head schema at the end.
func stream(b []byte) (*document, error) {
	notObject := &providers.DecodeError{Message: "the kernel-validation document is not a JSON object"}
	undecodable := &providers.DecodeError{Message: "the kernel-validation document cannot be decoded"}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notObject
	}
	s := schemas()
	head := map[string]json.RawMessage{}
	var cases []kcase
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, undecodable
		}
		key, _ := t.(string)
		if key != "cases" {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, undecodable
			}
			head[key] = v
			continue
		}
		t, err = dec.Token()
		if err != nil {
			return nil, undecodable
		}
		if t != json.Delim('[') {
			// Not an array: the head schema names the type; skip what is left of it.
			head[key] = json.RawMessage(`{}`)
			if d, ok := t.(json.Delim); ok && d == '{' {
				for depth := 1; depth > 0; {
					t, err := dec.Token()
					if err != nil {
						return nil, undecodable
					}
					switch t {
					case json.Delim('{'), json.Delim('['):
						depth++
					case json.Delim('}'), json.Delim(']'):
						depth--
					}
				}
			} else if raw, err := json.Marshal(t); err == nil {
				head[key] = raw
			}
			continue
		}
		n := 0
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, undecodable
			}
			n++
			if n > MaxCases {
				continue // the head schema's maxItems reports it; nothing more is kept
			}
			if _, f := s[1].Validate(raw); f != nil {
				return nil, schemaError(f, "cases", n-1)
			}
			var c kcase
			cd := json.NewDecoder(bytes.NewReader(raw))
			cd.UseNumber()
			if err := cd.Decode(&c); err != nil {
				return nil, undecodable
			}
			cases = append(cases, c)
		}
		if _, err := dec.Token(); err != nil {
			return nil, undecodable
		}
		// Items stand in for the cases, already checked, so the head schema counts them.
		head[key] = json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("0,", min(n, MaxCases+1)), ",") + "]")
	}
	if _, err := dec.Token(); err != nil {
		return nil, undecodable
	}
	if dec.More() {
		return nil, notObject
	}
	raw, err := json.Marshal(head)
	if err != nil {
		return nil, undecodable
	}
	if _, f := s[0].Validate(raw); f != nil {
		return nil, schemaError(f)
	}
	delete(head, "cases")
	raw, _ = json.Marshal(head)
	hd := json.NewDecoder(bytes.NewReader(raw))
	hd.UseNumber()
	var doc document
	if err := hd.Decode(&doc); err != nil {
		return nil, undecodable
	}
	doc.Cases = cases
	return &doc, nil
}

// describe names a schema_version value in a message, bounded.
func describe(v any) string {
	s, ok := v.(string)
	if !ok {
		if v == nil {
			return "missing"
		}
		return "not a string"
	}
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}

// check applies the document rules the schema cannot express.
func check(doc *document) error {
	cases := make(map[string]int, len(doc.Cases))
	var caseStatuses []string
	for ci := range doc.Cases {
		c := &doc.Cases[ci]
		at := []any{"cases", ci}
		if first, dup := cases[c.CaseID]; dup {
			return decodeError(append(at, "case_id"), "case_id %q of case %d repeats case %d's; case ids are unique", c.CaseID, ci, first)
		}
		cases[c.CaseID] = ci
		if len(c.Dimensions) > MaxDimensions {
			return decodeError(append(at, "dimensions"), "case %d has %d dimensions; at most %d are accepted", ci, len(c.Dimensions), MaxDimensions)
		}
		if c.Seed != nil {
			s, err := strconv.ParseInt(string(*c.Seed), 10, 64)
			if err != nil {
				return decodeError(append(at, "seed"), "the seed of case %d is not a 64-bit integer", ci)
			}
			c.seed = &s
		}
		outputs := make(map[string]int, len(c.Outputs))
		var outputStatuses []string
		for oi := range c.Outputs {
			o := &c.Outputs[oi]
			oat := append(append([]any{}, at...), "outputs", oi)
			if first, dup := outputs[o.Name]; dup {
				return decodeError(append(oat, "name"), "output %q of case %q repeats output %d's; output names are unique within a case", o.Name, c.CaseID, first)
			}
			outputs[o.Name] = oi
			names := make(map[string]int, len(o.Metrics))
			var metricStatuses []string
			for mi := range o.Metrics {
				m := &o.Metrics[mi]
				mat := append(append([]any{}, oat...), "metrics", mi)
				if first, dup := names[m.Name]; dup {
					return decodeError(append(mat, "name"), "metric %q of case %q output %q repeats metric %d's; metric names are unique within an output", m.Name, c.CaseID, o.Name, first)
				}
				names[m.Name] = mi
				if err := m.decodeValue(mat); err != nil {
					return err
				}
				if err := m.checkVerdict(mat); err != nil {
					return err
				}
				metricStatuses = append(metricStatuses, m.Status)
			}
			if err := agree(oat, fmt.Sprintf("output %q of case %q", o.Name, c.CaseID), o.Status, "metric", metricStatuses); err != nil {
				return err
			}
			outputStatuses = append(outputStatuses, o.Status)
		}
		if err := agree(at, fmt.Sprintf("case %q", c.CaseID), c.Status, "output", outputStatuses); err != nil {
			return err
		}
		caseStatuses = append(caseStatuses, c.Status)
	}
	return agree(nil, "the document", doc.Status, "case", caseStatuses)
}

// agree checks a verdict against its children's: a failing child fails its parent, and
// a parent passes only when every child passes. Other combinations (an inconclusive
// parent of unsupported children) are the producer's to aggregate.
func agree(at []any, what, status, child string, children []string) error {
	path := append(append([]any{}, at...), "status")
	for i, s := range children {
		if s == statusFail && status != statusFail {
			return decodeError(path, "%s is %s although its %s %d fails; a failing %s fails its parent", what, status, child, i, child)
		}
		if status == statusPass && s != statusPass {
			return decodeError(path, "%s is pass although its %s %d is %s; pass needs every %s to pass", what, child, i, s, child)
		}
	}
	return nil
}

// decodeValue reads the metric value: a number, {kind: finite, value},
// {kind: positive_infinity, reason} or null (shapes the schema has checked).
func (m *metric) decodeValue(at []any) error {
	raw := bytes.TrimSpace(m.Value)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case raw[0] == '{':
		var v struct {
			Kind   string   `json:"kind"`
			Value  *float64 `json:"value"`
			Reason string   `json:"reason"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return decodeError(append(at, "value"), "the metric value cannot be decoded")
		}
		if v.Kind == "positive_infinity" {
			m.infinity = v.Reason
			return nil
		}
		m.value = v.Value
		return nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) {
		return decodeError(append(at, "value"), "the metric value is not a finite 64-bit number")
	}
	m.value = &f
	return nil
}

// checkVerdict checks that an evaluated metric's pass or fail follows from its value,
// comparator and threshold.
func (m *metric) checkVerdict(at []any) error {
	if m.Status != statusPass && m.Status != statusFail {
		return nil
	}
	if m.Comparator == nil || m.Threshold == nil || (m.value == nil && m.infinity == "") {
		return decodeError(append(at, "status"), "metric %q is %s but has no value, comparator and threshold to decide it; an unevaluated metric is inconclusive or unsupported", m.Name, m.Status)
	}
	var passed bool
	switch {
	case m.infinity != "":
		passed = *m.Comparator == ">="
	case *m.Comparator == "<=":
		passed = *m.value <= *m.Threshold
	default:
		passed = *m.value >= *m.Threshold
	}
	want := statusFail
	if passed {
		want = statusPass
	}
	if m.Status != want {
		return decodeError(append(at, "status"), "metric %q is %s but value %s %s threshold %v is %v, which is %s", m.Name, m.Status, m.valueText(), *m.Comparator, *m.Threshold, passed, want)
	}
	return nil
}

func (m *metric) valueText() string {
	if m.infinity != "" {
		return "+Inf"
	}
	return strconv.FormatFloat(*m.value, 'g', -1, 64)
}
