package kernelval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// doc is a realistic document: a GEMM validated against a float64 reference on an H200,
// one failing case with witnesses, an output with neither metrics nor witnesses, a PSNR
// of positive infinity and an unsupported metric.
func doc() map[string]any {
	return map[string]any{
		"schema_version": SchemaVersion, "producer": "gemm-harness", "producer_version": "2.1",
		"reference": map[string]any{"name": "torch.matmul", "version": "2.6", "identity": "float64 cpu"},
		"status":    "fail", "coverage_complete": true,
		"limitations": []any{"TF32 disabled"},
		"cases": []any{
			map[string]any{"case_id": "gemm-128", "dimensions": map[string]any{"m": 128, "n": 128, "k": 64, "layout": "nt"}, "seed": 7,
				"device": "NVIDIA H200", "status": "inconclusive", "outputs": []any{
					map[string]any{"name": "c", "dtype": "float16", "shape": []any{128, 128}, "status": "inconclusive", "metrics": []any{
						map[string]any{"name": "max_abs_error", "unit": "absolute", "value": 0.0009765625, "comparator": "<=", "threshold": 0.002, "status": "pass"},
						map[string]any{"name": "psnr", "unit": "dB", "value": map[string]any{"kind": "positive_infinity", "reason": "zero_mse_exact_agreement"},
							"comparator": ">=", "threshold": 40, "status": "pass", "profile": map[string]any{"data_range": 2}},
						map[string]any{"name": "max_ulp_error", "unit": "ulp", "value": nil, "comparator": nil, "threshold": nil, "status": "unsupported",
							"limitation": "no float16 ULP reference"},
					}},
					map[string]any{"name": "workspace", "dtype": "uint8", "shape": []any{4096}, "status": "unsupported"},
				}},
			map[string]any{"case_id": "gemm-257", "dimensions": map[string]any{"m": 257, "n": 257, "k": 64, "layout": "nt"}, "seed": nil,
				"device": "NVIDIA H200", "status": "fail", "outputs": []any{
					map[string]any{"name": "c", "dtype": "float16", "shape": []any{257, 257}, "status": "fail", "metrics": []any{
						map[string]any{"name": "max_abs_error", "unit": "absolute", "value": map[string]any{"kind": "finite", "value": 3.5}, "comparator": "<=", "threshold": 0.002, "status": "fail"},
					}, "representative_failures": []any{
						map[string]any{"coordinates": []any{256, 0}, "expected": 1.25, "actual": -2.25, "absolute_error": 3.5},
						map[string]any{"coordinates": []any{256, 1}, "detail": "tail row not written"},
					}},
				}},
		},
	}
}

func write(t *testing.T, v any) providers.Input {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "validation.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return providers.Input{Path: p, Format: gen.FormatKernelValidation}
}

// rows is every row of a.
func rows(t *testing.T, a *providers.Analysis) []map[string]any {
	t.Helper()
	return providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
}

func TestInspect(t *testing.T) {
	a, err := providerstest.Analyze(t, inspect, &gen.NoFields{}, write(t, doc()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"status": "fail", "coverage_complete": true, "case_count": 2, "producer": "gemm-harness", "producer_version": ptr("2.1")}, a.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Producer limitation: TF32 disabled"}, a.Limitations); diff != "" {
		t.Errorf("limitations (-want +got):\n%s", diff)
	}
	base := func(caseID, caseStatus string, dims map[string]any, seed any, output, dtype string, shape []any, status string) map[string]any {
		return map[string]any{"case_id": caseID, "case_status": caseStatus, "dimensions": dims, "seed": seed, "device": "NVIDIA H200",
			"output": output, "dtype": dtype, "shape": shape, "output_status": status,
			"metric": nil, "value": nil, "comparator": nil, "threshold": nil, "unit": nil, "metric_status": nil, "limitation": nil,
			"failure_index": nil, "witness": nil}
	}
	with := func(r map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range r {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	d128 := map[string]any{"m": 128.0, "n": 128.0, "k": 64.0, "layout": "nt"}
	d257 := map[string]any{"m": 257.0, "n": 257.0, "k": 64.0, "layout": "nt"}
	c128 := base("gemm-128", "inconclusive", d128, 7.0, "c", "float16", []any{128.0, 128.0}, "inconclusive")
	c257 := base("gemm-257", "fail", d257, nil, "c", "float16", []any{257.0, 257.0}, "fail")
	want := []map[string]any{
		with(c128, "evidence_kind", "measurement", "metric", "max_abs_error", "value", 0.0009765625, "comparator", "<=", "threshold", 0.002, "unit", "absolute", "metric_status", "pass"),
		with(c128, "evidence_kind", "measurement", "metric", "psnr", "comparator", ">=", "threshold", 40.0, "unit", "dB", "metric_status", "pass",
			"limitation", "value is positive infinity (zero_mse_exact_agreement)"),
		with(c128, "evidence_kind", "measurement", "metric", "max_ulp_error", "unit", "ulp", "metric_status", "unsupported", "limitation", "no float16 ULP reference"),
		with(base("gemm-128", "inconclusive", d128, 7.0, "workspace", "uint8", []any{4096.0}, "unsupported"), "evidence_kind", "output"),
		with(c257, "evidence_kind", "measurement", "metric", "max_abs_error", "value", 3.5, "comparator", "<=", "threshold", 0.002, "unit", "absolute", "metric_status", "fail"),
		with(c257, "evidence_kind", "failure_witness", "failure_index", 0.0,
			"witness", map[string]any{"coordinates": []any{256.0, 0.0}, "expected": 1.25, "actual": -2.25, "absolute_error": 3.5}),
		with(c257, "evidence_kind", "failure_witness", "failure_index", 1.0,
			"witness", map[string]any{"coordinates": []any{256.0, 1.0}, "detail": "tail row not written"}),
	}
	if diff := cmp.Diff(want, rows(t, a)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }

// set returns a copy of d with the value at path (keys and indices) replaced; a nil
// value with del removes the key.
func set(d map[string]any, path []any, v any, del bool) map[string]any {
	b, _ := json.Marshal(d)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	var cur any = c
	for i, p := range path {
		last := i == len(path)-1
		switch x := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(x, p.(string))
				} else {
					x[p.(string)] = v
				}
				return c
			}
			cur = x[p.(string)]
		case []any:
			if last {
				x[p.(int)] = v
				return c
			}
			cur = x[p.(int)]
		}
	}
	return c
}

func TestDecodeFailures(t *testing.T) {
	metric0 := []any{"cases", 0, "outputs", 0, "metrics", 0}
	dupCase := doc()
	dupCase["cases"] = append(dupCase["cases"].([]any), dupCase["cases"].([]any)[1])
	many := doc()
	var metrics []any
	for i := range 33 {
		metrics = append(metrics, map[string]any{"name": "m" + string(rune('a'+i%26)) + strings.Repeat("x", i), "unit": "absolute", "value": 0, "comparator": "<=", "threshold": 1, "status": "pass"})
	}
	many = set(many, []any{"cases", 0, "outputs", 0, "metrics"}, metrics, false)
	dupMetric := set(doc(), append(append([]any{}, metric0[:5]...), 1, "name"), "max_abs_error", false)
	for _, c := range []struct {
		name        string
		doc         any
		raw         string
		unsupported bool
		path        []any
		message     string
	}{
		{name: "duplicate case_id", doc: dupCase, path: []any{"cases", 2, "case_id"}, message: `case_id "gemm-257" of case 2 repeats case 1's`},
		{name: "older version", doc: set(doc(), []any{"schema_version"}, "flameox.kernel-validation.v1", false), unsupported: true, path: []any{"schema_version"}, message: `"flameox.kernel-validation.v1"`},
		{name: "no version", doc: set(doc(), []any{"schema_version"}, nil, true), unsupported: true, path: []any{"schema_version"}, message: "schema_version is missing"},
		{name: "not JSON", raw: `{"schema_version": "flameox.kernel-validation.v2", `, message: "not a JSON object"},
		{name: "comparator", doc: set(doc(), append(append([]any{}, metric0...), "comparator"), "<", false), path: append(append([]any{}, metric0...), "comparator")},
		{name: "unknown field", doc: set(doc(), []any{"cases", 0, "colour"}, "red", false), path: []any{"cases", 0, "colour"}, message: "not a field of the document"},
		{name: "status", doc: set(doc(), []any{"status"}, "passed", false), path: []any{"status"}},
		{name: "missing device", doc: set(doc(), []any{"cases", 1, "device"}, nil, true), path: []any{"cases", 1, "device"}},
		{name: "33 metrics", doc: many, path: []any{"cases", 0, "outputs", 0, "metrics"}, message: "at most 32 items"},
		{name: "negative shape", doc: set(doc(), []any{"cases", 0, "outputs", 0, "shape", 0}, -1, false), path: []any{"cases", 0, "outputs", 0, "shape", 0}},
		{name: "duplicate metric", doc: dupMetric, path: append(append([]any{}, metric0[:5]...), 1, "name"), message: "metric names are unique"},
		{name: "pass over a failing case", doc: set(doc(), []any{"status"}, "pass", false), path: []any{"status"}, message: "the document is pass although its case 0 is inconclusive"},
		{name: "inconclusive over a failing case", doc: set(doc(), []any{"status"}, "inconclusive", false), path: []any{"status"}, message: "a failing case fails its parent"},
		{name: "case passes over an inconclusive output", doc: set(doc(), []any{"cases", 0, "status"}, "pass", false), path: []any{"cases", 0, "status"}, message: "pass needs every output to pass"},
		{name: "metric verdict", doc: set(doc(), append(append([]any{}, metric0...), "threshold"), 0.0001, false), path: append(append([]any{}, metric0...), "status"), message: "threshold 0.0001 is false, which is fail"},
		{name: "evaluated without threshold", doc: set(doc(), append(append([]any{}, metric0...), "threshold"), nil, false), path: append(append([]any{}, metric0...), "status")},
		{name: "seed beyond int64", raw: strings.Replace(mustJSON(doc()), `"seed":7`, `"seed":9223372036854775808`, 1), path: []any{"cases", 0, "seed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := write(t, c.doc)
			if c.raw != "" {
				if err := os.WriteFile(in.Path, []byte(c.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := providerstest.Analyze(t, inspect, &gen.NoFields{}, in)
			var details map[string]any
			var de *providers.DecodeError
			var ue *providers.UnsupportedError
			switch {
			case c.unsupported && errors.As(err, &ue):
				details = ue.Details
			case !c.unsupported && errors.As(err, &de):
				details = de.Details
			default:
				t.Fatalf("error %T %v, want unsupported=%v", err, err, c.unsupported)
			}
			if !strings.Contains(err.Error(), c.message) {
				t.Errorf("message %q lacks %q", err.Error(), c.message)
			}
			if c.path != nil {
				if diff := cmp.Diff(c.path, details["document_field_path"]); diff != "" {
					t.Errorf("path (-want +got):\n%s\n%s", diff, err)
				}
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestDocumentTooLarge(t *testing.T) {
	in := write(t, doc())
	f, err := os.OpenFile(in.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, MaxDocumentBytes)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = read(context.Background(), in)
	var le *providers.LimitError
	if !errors.As(err, &le) || le.Limit != MaxDocumentBytes {
		t.Fatalf("error %T %v, want a LimitError at %d bytes", err, err, MaxDocumentBytes)
	}
}

func runCompare(t *testing.T, f gen.CompareFields, docs ...map[string]any) (*providers.Analysis, error) {
	t.Helper()
	var in []providers.Input
	for _, d := range docs {
		in = append(in, write(t, d))
	}
	return providerstest.Analyze(t, compare, &f, in...)
}

func TestCompare(t *testing.T) {
	base := doc()
	// The candidate: gemm-257 fixed, measured on another device with dimensions written as
	// floats (128.0 is 128), the PSNR now finite, and a case the baseline lacks.
	cand := set(doc(), []any{"cases", 1, "outputs", 0, "metrics", 0}, map[string]any{"name": "max_abs_error", "unit": "absolute", "value": 0.001953125, "comparator": "<=", "threshold": 0.002, "status": "pass"}, false)
	cand = set(cand, []any{"cases", 1, "outputs", 0, "status"}, "pass", false)
	cand = set(cand, []any{"cases", 1, "outputs", 0, "representative_failures"}, nil, true)
	cand = set(cand, []any{"cases", 1, "status"}, "pass", false)
	cand = set(cand, []any{"cases", 0, "device"}, "NVIDIA A100", false)
	cand["status"] = "inconclusive"
	b, _ := json.Marshal(cand)
	cand = nil
	_ = json.Unmarshal([]byte(strings.Replace(string(b), `"m":128,`, `"m":128.0,`, 1)), &cand)
	cand = set(cand, []any{"cases", 0, "outputs", 0, "metrics", 1, "value"}, 52.5, false)
	cases := cand["cases"].([]any)
	extra := set(map[string]any{"c": cases[1]}, []any{"c", "case_id"}, "gemm-512", false)["c"]
	cand["cases"] = append(cases, extra)
	// A zero baseline value: the ratio is null, the delta is not.
	zero := set(base, []any{"cases", 0, "outputs", 0, "metrics", 0, "value"}, 0, false)

	a, err := runCompare(t, gen.CompareFields{BaselineIndex: 1}, cand, zero, cand)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"input_count": 3, "compatible_metric_count": 4, "unmatched_identity_count": 1, "metric": nil, "baseline_index": 1}, a.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	got := rows(t, a)
	type brief struct {
		Case, Metric       string
		Cand               float64
		BV, CV, Delta, Rat any
		BS, CS             string
	}
	var gotBrief []brief
	for _, r := range got {
		gotBrief = append(gotBrief, brief{r["case_id"].(string), r["metric"].(string), r["candidate_index"].(float64),
			r["baseline_value"], r["candidate_value"], r["delta"], r["ratio"], r["baseline_status"].(string), r["candidate_status"].(string)})
	}
	want := []brief{
		{"gemm-128", "max_abs_error", 0, 0.0, 0.0009765625, 0.0009765625, nil, "pass", "pass"},
		{"gemm-128", "max_abs_error", 2, 0.0, 0.0009765625, 0.0009765625, nil, "pass", "pass"},
		{"gemm-128", "psnr", 0, nil, 52.5, nil, nil, "pass", "pass"},
		{"gemm-128", "psnr", 2, nil, 52.5, nil, nil, "pass", "pass"},
		{"gemm-128", "max_ulp_error", 0, nil, nil, nil, nil, "unsupported", "unsupported"},
		{"gemm-128", "max_ulp_error", 2, nil, nil, nil, nil, "unsupported", "unsupported"},
		{"gemm-257", "max_abs_error", 0, 3.5, 0.001953125, 0.001953125 - 3.5, 0.001953125 / 3.5, "fail", "pass"},
		{"gemm-257", "max_abs_error", 2, 3.5, 0.001953125, 0.001953125 - 3.5, 0.001953125 / 3.5, "fail", "pass"},
	}
	if diff := cmp.Diff(want, gotBrief); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"k": 64.0, "layout": "nt", "m": 128.0, "n": 128.0}, got[0]["dimensions"]); diff != "" {
		t.Errorf("dimensions (-want +got):\n%s", diff)
	}

	// metric narrows the comparison to one metric; an absent one lists the present ones.
	a, err = runCompare(t, gen.CompareFields{Metric: ptr("max_abs_error")}, base, cand)
	if err != nil {
		t.Fatal(err)
	}
	if a.Metrics["compatible_metric_count"] != 2 || a.Metrics["unmatched_identity_count"] != 1 || len(rows(t, a)) != 2 {
		t.Errorf("metric max_abs_error: %v, %d rows", a.Metrics, len(rows(t, a)))
	}
	_, err = runCompare(t, gen.CompareFields{Metric: ptr("mse")}, base, cand)
	var fe *providers.FieldError
	if !errors.As(err, &fe) || !cmp.Equal(fe.Field, []any{"metric"}) || !cmp.Equal(fe.Accepted, []string{"max_abs_error", "max_ulp_error", "psnr"}) {
		t.Errorf("absent metric: %#v", err)
	}
	_, err = runCompare(t, gen.CompareFields{BaselineIndex: 2}, base, cand)
	if !errors.As(err, &fe) || !cmp.Equal(fe.Field, []any{"baseline_index"}) {
		t.Errorf("baseline_index 2 of 2 sources: %#v", err)
	}
	// A bad document is attributed to its source.
	_, err = runCompare(t, gen.CompareFields{}, base, set(base, []any{"status"}, "pass", false))
	var de *providers.DecodeError
	if !errors.As(err, &de) || de.Source != 1 || !strings.HasPrefix(de.Message, "source 1: ") {
		t.Errorf("bad candidate: %#v", err)
	}
	// A ratio beyond float64 fails instead of reporting infinity.
	tiny := set(base, []any{"cases", 1, "outputs", 0, "metrics", 0, "value"}, 1e-300, false)
	tiny = set(tiny, []any{"cases", 1, "outputs", 0, "metrics", 0, "threshold"}, 0, false)
	huge := set(base, []any{"cases", 1, "outputs", 0, "metrics", 0, "value"}, 1e300, false)
	_, err = runCompare(t, gen.CompareFields{}, tiny, huge)
	var le *providers.LimitError
	if !errors.As(err, &le) || !strings.Contains(le.Message, "ratio") {
		t.Errorf("non-finite ratio: %#v", err)
	}
}

func TestDetect(t *testing.T) {
	for head, want := range map[string]bool{
		`{"schema_version": "flameox.kernel-validation.v2", "producer": "x"`: true,
		`{"schema_version":"flameox.kernel-validation.v1"`:                   true,
		`{"schema": "flameox.benchmark-samples.v1"`:                          false,
	} {
		r := providers.NewRegistry()
		Register(r)
		got := r.Detect("v.json", []byte(head))
		if (len(got) > 0 && got[0] == gen.FormatKernelValidation) != want {
			t.Errorf("Detect(%s) = %v", head, got)
		}
	}
}

// TestLargeDocumentMemory (issue 21): a 45,000-case document (about 30 MB) is checked
// case by case, so the peak heap stays near the document and its typed cases rather than
// the whole document's schema tree (580 MiB before). The bound is generous: it catches a
// return to whole-document validation, not a regression of a few percent.
func TestLargeDocumentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 30 MB document")
	}
	d := doc()
	one := d["cases"].([]any)[0].(map[string]any)
	cases := make([]any, 45_000)
	for i := range cases {
		c := map[string]any{}
		for k, v := range one {
			c[k] = v
		}
		c["case_id"] = fmt.Sprintf("case-%06d", i)
		cases[i] = c
	}
	d["cases"], d["status"] = cases, "inconclusive"
	in := write(t, d)
	st, _ := os.Stat(in.Path)
	in.Size = st.Size()
	d, cases = nil, nil
	var err error
	peak := testtool.PeakHeap(func() {
		_, err = read(context.Background(), in)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d MB document: peak heap %d MiB", st.Size()>>20, peak>>20)
	if !testtool.Race && peak > 400<<20 {
		t.Errorf("peak heap %d MiB for a %d MB document", peak>>20, st.Size()>>20)
	}
}
