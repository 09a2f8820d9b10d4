package validate

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/contracts"
)

func previewSchema(t *testing.T) *Schema {
	t.Helper()
	b, err := fs.ReadFile(contracts.FS, "tools/preview_artifact.input.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile("preview_artifact.input.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidateFailures(t *testing.T) {
	s := previewSchema(t)
	src := `{"kind":"path","path":"/tmp/x.txt"}`
	sha := strings.Repeat("a", 64)
	tests := []struct {
		name     string
		args     string
		path     []any
		accepted []string
	}{
		{"missing sources", `{}`, []any{"sources"}, nil},
		{"unknown top-level field", `{"sources":[` + src + `],"bogus":1}`, []any{"bogus"},
			[]string{"continuation", "limits", "offset", "page_size", "sources", "text_fragment_chars"}},
		{"format outside the operation", `{"sources":[{"kind":"path","path":"/x","format":"pyperf"}]}`,
			[]any{"sources", 0, "format"}, []string{"json", "jsonl", "csv", "text", "parquet", "directory", "pstats", "pprof", "perf-data",
				"memray", "perfetto", "rocprof-pftrace", "nsys-rep", "nsys-sqlite", "xctrace", "nsight-compute", "coverage"}},
		{"unknown kind", `{"sources":[{"kind":"blob","path":"/x"}]}`, []any{"sources", 0, "kind"}, []string{"path", "evidence"}},
		{"unknown source field", `{"sources":[{"kind":"path","path":"/x","bogus":true}]}`, []any{"sources", 0, "bogus"},
			[]string{"expected_sha256", "format", "kind", "path", "producer"}},
		{"relative path", `{"sources":[{"kind":"path","path":"x.txt"}]}`, []any{"sources", 0, "path"}, []string{"pattern ^/"}},
		{"page size too large", `{"sources":[` + src + `],"page_size":5000}`, []any{"page_size"}, []string{">=1", "<=1000"}},
		{"page size numeric string", `{"sources":[` + src + `],"page_size":"5"}`, []any{"page_size"}, []string{"integer"}},
		{"page size boolean", `{"sources":[` + src + `],"page_size":true}`, []any{"page_size"}, []string{"integer"}},
		{"fraction", `{"sources":[` + src + `],"page_size":1.5}`, []any{"page_size"}, []string{"integer"}},
		{"fragment chars zero", `{"sources":[` + src + `],"text_fragment_chars":0}`, []any{"text_fragment_chars"}, []string{">=1", "<=4096"}},
		{"limit below floor", `{"sources":[` + src + `],"limits":{"max_input_bytes":1}}`, []any{"limits", "max_input_bytes"}, []string{">=1024", "<=1073741824"}},
		{"too many sources", `{"sources":[` + repeat(src, 33) + `]}`, []any{"sources"}, nil},
		{"bad digest", `{"sources":[{"kind":"path","path":"/x","expected_sha256":"ZZ"}]}`, []any{"sources", 0, "expected_sha256"}, []string{"pattern ^[a-f0-9]{64}$"}},
		{"not an object", `[1]`, []any{}, []string{"object"}},
		// Catalog 4.2: "`kind` may be omitted: it defaults to [...] `path`". An object that
		// is neither source needs a path; one with evidence_id and no kind is an evidence
		// source that omitted kind; unknown fields and bad values of a kind-less path
		// source are named as in a path source.
		{"neither path nor evidence_id", `{"sources":[{}]}`, []any{"sources", 0, "path"}, nil},
		{"evidence without kind", `{"sources":[{"evidence_id":"` + sha + `"}]}`, []any{"sources", 0, "kind"}, []string{"evidence"}},
		{"evidence without kind, bad selector", `{"sources":[{"evidence_id":"` + sha + `","artifact_selector":"x"}]}`,
			[]any{"sources", 0, "kind"}, []string{"evidence"}},
		{"path and evidence_id without kind", `{"sources":[{"path":"/x","evidence_id":"` + sha + `"}]}`, []any{"sources", 0, "evidence_id"},
			[]string{"expected_sha256", "format", "kind", "path", "producer"}},
		{"kind-less relative path", `{"sources":[{"path":"x.txt"}]}`, []any{"sources", 0, "path"}, []string{"pattern ^/"}},
		{"kind-less unknown field", `{"sources":[{"path":"/x","bogus":true}]}`, []any{"sources", 0, "bogus"},
			[]string{"expected_sha256", "format", "kind", "path", "producer"}},
		// A misspelt field is named even though the required one is missing too.
		{"misspelt sources", `{"source":[` + src + `]}`, []any{"source"},
			[]string{"continuation", "limits", "offset", "page_size", "sources", "text_fragment_chars"}},
		// null is dropped only where the field is optional; a required null is refused.
		{"required null", `{"sources":null}`, []any{"sources"}, []string{"array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f := s.Validate([]byte(tt.args))
			if f == nil {
				t.Fatal("no failure")
			}
			if f.Code != "INVALID_INPUT" {
				t.Errorf("code = %s", f.Code)
			}
			if diff := cmp.Diff(tt.path, f.FieldPath); diff != "" {
				t.Errorf("field path (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.accepted, f.AcceptedValues); diff != "" {
				t.Errorf("accepted (-want +got):\n%s\nmessage: %s", diff, f.Message)
			}
		})
	}
}

func TestValidateAcceptsIntegralFloats(t *testing.T) {
	s := previewSchema(t)
	if _, f := s.Validate([]byte(`{"sources":[{"kind":"path","path":"/x"}],"page_size":2.0}`)); f != nil {
		t.Fatalf("2.0 refused: %v", f)
	}
}

func repeat(s string, n int) string {
	out := s
	for i := 1; i < n; i++ {
		out += "," + s
	}
	return out
}

func TestValidateAcceptsNullForOptionalFields(t *testing.T) {
	s := previewSchema(t)
	inst, f := s.Validate([]byte(`{"sources":[{"kind":"path","path":"/x","format":null,"producer":null}],"page_size":null,"limits":null,"offset":null,"continuation":null}`))
	if f != nil {
		t.Fatalf("nulls refused: %v", f)
	}
	want := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": "/x"}}}
	if diff := cmp.Diff(want, inst); diff != "" {
		t.Errorf("instance (-want +got):\n%s", diff)
	}
}

// TestValidateSourceWithoutKind: catalog 4.2, "`kind` may be omitted: it defaults to
// [...] `path`". A kind-less path source validates, and its optional nulls are dropped as
// in a source that names its kind.
func TestValidateSourceWithoutKind(t *testing.T) {
	s := previewSchema(t)
	inst, f := s.Validate([]byte(`{"sources":[{"path":"/x","format":null,"producer":"p"}]}`))
	if f != nil {
		t.Fatalf("kind-less path source refused: %v", f)
	}
	want := map[string]any{"sources": []any{map[string]any{"path": "/x", "producer": "p"}}}
	if diff := cmp.Diff(want, inst); diff != "" {
		t.Errorf("instance (-want +got):\n%s", diff)
	}
	_, f = s.Validate([]byte(`{"sources":[{"path":"/x","format":"pyperf"}]}`))
	if f == nil || !cmp.Equal(f.FieldPath, []any{"sources", 0, "format"}) || !slices.Contains(f.AcceptedValues, "text") {
		t.Errorf("kind-less source with a format outside the operation: %+v", f)
	}
}

func TestValidateSuggestsTheNearestField(t *testing.T) {
	s := previewSchema(t)
	_, f := s.Validate([]byte(`{"source":[{"kind":"path","path":"/x"}]}`))
	if f == nil || f.Details["did_you_mean"] != "sources" {
		t.Fatalf("failure = %+v", f)
	}
}

// TestValidateUnionForms: a value that no arm of a union accepts at its own place is
// answered with every form the union accepts (not the first arm's type); a refused item of
// an enum list with every accepted item; an int64 bound exactly.
func TestValidateUnionForms(t *testing.T) {
	load := func(name string) *Schema {
		b, err := fs.ReadFile(contracts.FS, "tools/"+name+".input.json")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Compile(name, b)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	window, torch, trace := load("inspect_trace_window"), load("capture_and_summarize_pytorch_trace"), load("capture_and_summarize_trace")
	src := `"sources":[{"kind":"path","path":"/x.json"}]`
	bound := []string{"an integer from 0 to 9223372036854775807", "a string matching ^(0|[1-9][0-9]{0,18})$"}
	target := `"target":{"argv":["python3","w.py"],"cwd":"/tmp"}`
	for _, tt := range []struct {
		name     string
		s        *Schema
		args     string
		path     []any
		accepted []string
	}{
		{"non-canonical string", window, `{` + src + `,"start_ns":"01","end_ns":5}`, []any{"start_ns"}, bound},
		{"exponent string", window, `{` + src + `,"start_ns":0,"end_ns":"1e3"}`, []any{"end_ns"}, bound},
		{"past int64", window, `{` + src + `,"start_ns":0,"end_ns":9223372036854775808}`, []any{"end_ns"}, bound},
		{"negative", window, `{` + src + `,"start_ns":-1,"end_ns":5}`, []any{"start_ns"}, bound},
		{"boolean", window, `{` + src + `,"start_ns":true,"end_ns":5}`, []any{"start_ns"}, bound},
		{"unknown activity", torch, `{` + target + `,"provider":{"kind":"torch-profiler","activities":["gpu"]}}`,
			[]any{"provider", "activities", 0}, []string{"cpu", "cuda", "cuda_if_available"}},
		{"no activities", torch, `{` + target + `,"provider":{"kind":"torch-profiler","activities":[]}}`,
			[]any{"provider", "activities"}, nil},
		// A union of objects (the providers) answers one form, once.
		{"provider not an object", trace, `{` + target + `,"provider":"perf"}`, []any{"provider"}, []string{"an object"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, f := tt.s.Validate([]byte(tt.args))
			if f == nil {
				t.Fatal("no failure")
			}
			if diff := cmp.Diff(tt.path, f.FieldPath); diff != "" {
				t.Errorf("field path (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.accepted, f.AcceptedValues); diff != "" {
				t.Errorf("accepted (-want +got):\n%s\nmessage: %s", diff, f.Message)
			}
		})
	}
	// The largest bound is admitted.
	if _, f := window.Validate([]byte(`{` + src + `,"start_ns":0,"end_ns":9223372036854775807}`)); f != nil {
		t.Errorf("end_ns 9223372036854775807: %v", f)
	}
}

// TestPatternPropertiesFailuresNameTheAcceptedValues: the schema of a value under a
// patternProperties key whose pattern URL-escapes (^, [, space) is found, so its failure
// names the range, as a failure under properties does.
func TestPatternPropertiesFailuresNameTheAcceptedValues(t *testing.T) {
	s, err := Compile("env.json", []byte(`{"type":"object","properties":{"env":{"type":"object",
		"patternProperties":{"^[A-Z_][A-Z0-9_ ]*$":{"type":"integer","minimum":0,"maximum":9}},"additionalProperties":false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, f := s.Validate([]byte(`{"env":{"HOME":12}}`))
	if f == nil {
		t.Fatal("12 passed maximum 9")
	}
	if diff := cmp.Diff([]any{"env", "HOME"}, f.FieldPath); diff != "" {
		t.Errorf("field path (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{">=0", "<=9"}, f.AcceptedValues); diff != "" {
		t.Errorf("accepted (-want +got):\n%s\nmessage: %s", diff, f.Message)
	}
}
