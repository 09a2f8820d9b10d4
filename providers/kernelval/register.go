// Package kernelval reads Flameox's own kernel-validation documents
// (flameox.kernel-validation.v2: a kernel's outputs compared with a reference, case by
// case, with error metrics against thresholds and failure witnesses). It lists one
// document's evidence and compares the metrics of several against a baseline.
package kernelval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds inspect_kernel_validation, compare_kernel_validation and the
// kernel-validation detector.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameInspectKernelValidation, inspect))
	r.Analyzer(providers.Analyze(gen.OperationNameCompareKernelValidation, compare))
	// Any flameox.kernel-validation.* version is this format, so that another version is
	// refused as unsupported rather than read as generic JSON.
	r.Detector(providers.Detector{Format: gen.FormatKernelValidation, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return bytes.Contains(head, []byte(`"schema_version"`)) && bytes.Contains(head, []byte(`"flameox.kernel-validation.`))
	}})
}

var provider = gen.Provider{ID: "kernel-validation", Version: SchemaVersion}

// Row kinds.
const (
	kindOutput      = "output"
	kindMeasurement = "measurement"
	kindWitness     = "failure_witness"
)

// entry locates one row: case, output, and the metric or witness index.
type entry struct {
	c, o, k int32
	kind    uint8
}

const (
	entryOutput uint8 = iota
	entryMeasurement
	entryWitness
)

// entries lists the rows of doc in document order, at most limit of them, and their
// total count.
func entries(doc *document, limit int) ([]entry, int) {
	var out []entry
	n := 0
	add := func(e entry) {
		if n < limit {
			out = append(out, e)
		}
		n++
	}
	for ci, c := range doc.Cases {
		for oi, o := range c.Outputs {
			if len(o.Metrics) == 0 && len(o.Failures) == 0 {
				add(entry{c: int32(ci), o: int32(oi), kind: entryOutput})
				continue
			}
			for mi := range o.Metrics {
				add(entry{c: int32(ci), o: int32(oi), k: int32(mi), kind: entryMeasurement})
			}
			for wi := range o.Failures {
				add(entry{c: int32(ci), o: int32(oi), k: int32(wi), kind: entryWitness})
			}
		}
	}
	return out, n
}

func inspect(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	doc, err := read(ctx, req.Inputs[0])
	if err != nil {
		return nil, err
	}
	es, n := entries(doc, providers.MaxProjectionRows)
	a := &providers.Analysis{Provider: provider,
		Metrics: map[string]any{"status": doc.Status, "coverage_complete": doc.CoverageComplete, "case_count": len(doc.Cases),
			"producer": doc.Producer, "producer_version": doc.ProducerVersion},
		Rows:        providers.Project(n, func(i int) gen.KernelValidationRow { return doc.row(es[i]) }),
		Limitations: limitations(doc)}
	return a, nil
}

// limitations are a document's own caveats and an unqualified pass.
func limitations(doc *document) []string {
	var out []string
	if doc.Status == statusPass && !doc.CoverageComplete {
		out = append(out, "The producer reports pass with coverage_complete false: the cases do not cover everything it meant to validate.")
	}
	for _, l := range doc.Limitations {
		if l != "" {
			out = append(out, "Producer limitation: "+l)
		}
	}
	return out
}

func (doc *document) row(e entry) gen.KernelValidationRow {
	c := &doc.Cases[e.c]
	o := &c.Outputs[e.o]
	r := gen.KernelValidationRow{EvidenceKind: kindOutput, CaseID: c.CaseID, CaseStatus: c.Status, Dimensions: dimensions(c),
		Seed: c.seed, Device: c.Device, Output: o.Name, Dtype: o.Dtype, Shape: shape(o), OutputStatus: o.Status}
	switch e.kind {
	case entryMeasurement:
		m := &o.Metrics[e.k]
		r.EvidenceKind = kindMeasurement
		r.Metric, r.Value, r.Comparator, r.Threshold, r.Unit = &m.Name, m.value, m.Comparator, m.Threshold, &m.Unit
		r.MetricStatus, r.Limitation = &m.Status, m.limitation()
	case entryWitness:
		r.EvidenceKind = kindWitness
		i := int64(e.k)
		r.FailureIndex, r.Witness = &i, o.Failures[e.k]
	}
	return r
}

// limitation is the metric's limitation, saying so when the value is positive infinity.
func (m *metric) limitation() *string {
	if m.infinity == "" {
		if m.Limitation != nil && *m.Limitation == "" {
			return nil
		}
		return m.Limitation
	}
	s := "value is positive infinity (" + m.infinity + ")"
	if m.Limitation != nil && *m.Limitation != "" {
		s += "; " + *m.Limitation
	}
	return &s
}

func dimensions(c *kcase) map[string]any {
	if c.Dimensions == nil {
		return map[string]any{}
	}
	return c.Dimensions
}

func shape(o *output) []int64 {
	if o.Shape == nil {
		return []int64{}
	}
	return o.Shape
}

// identity is the comparison identity of one metric of one case output: case id,
// dimensions (numbers canonical, keys sorted), output, dtype, shape, metric and unit.
func identity(c *kcase, o *output, m *metric) string {
	var b strings.Builder
	b.WriteString(c.CaseID)
	b.WriteByte(0)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.Dimensions {
			if !yield(k) {
				return
			}
		}
	}) {
		b.WriteString(k)
		b.WriteByte('=')
		switch v := c.Dimensions[k].(type) {
		case json.Number:
			if f, err := strconv.ParseFloat(string(v), 64); err == nil {
				b.WriteString("n:" + strconv.FormatFloat(f, 'g', -1, 64))
			} else {
				b.WriteString("n:" + string(v))
			}
		case string:
			b.WriteString("s:" + strconv.Quote(v))
		default:
			fmt.Fprintf(&b, "b:%v", v)
		}
		b.WriteByte(1)
	}
	b.WriteByte(0)
	fmt.Fprintf(&b, "%s\x00%s\x00%v\x00%s\x00%s", o.Name, o.Dtype, o.Shape, m.Name, m.Unit)
	return b.String()
}

// ref locates one metric in a document.
type ref struct{ c, o, m int32 }

func (doc *document) at(r ref) (*kcase, *output, *metric) {
	c := &doc.Cases[r.c]
	o := &c.Outputs[r.o]
	return c, o, &o.Metrics[r.m]
}

// index lists the metrics of doc named metric (all when empty) by identity, in document order.
func index(doc *document, name string) ([]string, map[string]ref) {
	var keys []string
	refs := map[string]ref{}
	for ci := range doc.Cases {
		c := &doc.Cases[ci]
		for oi := range c.Outputs {
			o := &c.Outputs[oi]
			for mi := range o.Metrics {
				m := &o.Metrics[mi]
				if name != "" && m.Name != name {
					continue
				}
				k := identity(c, o, m)
				keys = append(keys, k)
				refs[k] = ref{int32(ci), int32(oi), int32(mi)}
			}
		}
	}
	return keys, refs
}

// maxAccepted bounds the metric names a field error lists.
const maxAccepted = 100

func compare(ctx context.Context, req *providers.Request[gen.CompareFields]) (*providers.Analysis, error) {
	in, fields := req.Inputs, req.Fields
	base := int(fields.BaselineIndex)
	if base >= len(in) {
		return nil, &providers.FieldError{Field: []any{"baseline_index"},
			Message: fmt.Sprintf("baseline_index does not select an input: %d names no source; there are %d sources", base, len(in)),
			Details: map[string]any{"source_count": len(in)}}
	}
	docs := make([]*document, len(in))
	for i, s := range in {
		d, err := read(ctx, s)
		if err != nil {
			return nil, providers.AtSource(err, s.Index)
		}
		docs[i] = d
	}
	name := ""
	if fields.Metric != nil {
		name = *fields.Metric
		found := false
		names := map[string]bool{}
		for _, d := range docs {
			for _, c := range d.Cases {
				for _, o := range c.Outputs {
					for _, m := range o.Metrics {
						found = found || m.Name == name
						names[m.Name] = true
					}
				}
			}
		}
		if !found {
			accepted := slices.Sorted(func(yield func(string) bool) {
				for n := range names {
					if !yield(n) {
						return
					}
				}
			})
			if len(accepted) > maxAccepted {
				accepted = accepted[:maxAccepted]
			}
			return nil, &providers.FieldError{Field: []any{"metric"}, Accepted: accepted,
				Message: fmt.Sprintf("no source holds a metric named %q", name)}
		}
	}
	refs := make([]map[string]ref, len(docs))
	var baseKeys []string
	union := map[string]bool{}
	for i, d := range docs {
		keys, r := index(d, name)
		refs[i] = r
		if i == base {
			baseKeys = keys
		}
		for _, k := range keys {
			union[k] = true
		}
	}
	var matched []ref
	for _, k := range baseKeys {
		ok := true
		for i := range refs {
			if _, in := refs[i][k]; !in {
				ok = false
				break
			}
		}
		if ok {
			matched = append(matched, refs[base][k])
		}
	}
	// candidates are the non-baseline inputs in request order.
	var candidates []int
	for i := range docs {
		if i != base {
			candidates = append(candidates, i)
		}
	}
	matchedKeys := make([]string, len(matched))
	for i, r := range matched {
		c, o, m := docs[base].at(r)
		matchedKeys[i] = identity(c, o, m)
	}
	// Every delta and ratio is checked before paging: a non-finite one fails the request
	// instead of appearing on some later page.
	for i, r := range matched {
		_, _, bm := docs[base].at(r)
		for _, ci := range candidates {
			_, _, cm := docs[ci].at(refs[ci][matchedKeys[i]])
			if _, _, err := arithmetic(bm.value, cm.value); err != nil {
				return nil, &providers.LimitError{Source: ci, Message: fmt.Sprintf("source %d: the %s of metric %q against the baseline is not finite", ci, err.Error(), cm.Name)}
			}
		}
	}
	n := len(matched) * len(candidates)
	row := func(i int) gen.KernelComparisonRow {
		r, ci := matched[i/len(candidates)], candidates[i%len(candidates)]
		c, o, bm := docs[base].at(r)
		_, _, cm := docs[ci].at(refs[ci][matchedKeys[i/len(candidates)]])
		delta, ratio, _ := arithmetic(bm.value, cm.value)
		return gen.KernelComparisonRow{CaseID: c.CaseID, Dimensions: dimensions(c), Output: o.Name, Dtype: o.Dtype, Shape: shape(o),
			Metric: bm.Name, Unit: bm.Unit, BaselineIndex: int64(base), CandidateIndex: int64(ci),
			BaselineValue: bm.value, CandidateValue: cm.value, Delta: delta, Ratio: ratio,
			BaselineStatus: bm.Status, CandidateStatus: cm.Status}
	}
	var metric any
	if name != "" {
		metric = name
	}
	return &providers.Analysis{Provider: provider, Rows: providers.Project(n, row),
		Metrics: map[string]any{"input_count": len(in), "compatible_metric_count": len(matched),
			"unmatched_identity_count": len(union) - len(matched), "metric": metric, "baseline_index": base}}, nil
}

// arithmetic is candidate - baseline and candidate / baseline (nil when either value is
// absent, and the ratio when the baseline is 0); an error names a non-finite result.
func arithmetic(b, c *float64) (*float64, *float64, error) {
	if b == nil || c == nil {
		return nil, nil, nil
	}
	d := *c - *b
	if math.IsInf(d, 0) || math.IsNaN(d) {
		return nil, nil, fmt.Errorf("delta")
	}
	if *b == 0 {
		return &d, nil, nil
	}
	r := *c / *b
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return nil, nil, fmt.Errorf("ratio")
	}
	return &d, &r, nil
}
