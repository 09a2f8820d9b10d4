package validate

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCompileRefuses: a schema using a keyword outside the supported set, or a supported
// keyword in a form this validator does not implement, is refused with an error naming
// the keyword and where it stands, never silently ignored.
func TestCompileRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, schema string
		want         []string // substrings of the error
	}{
		{"unknown keyword", `{"type":"object","properties":{"a":{"type":"array","contains":{"type":"string"}}}}`,
			[]string{`keyword "contains"`, "#/properties/a", "not supported"}},
		{"unevaluatedProperties", `{"unevaluatedProperties":false}`, []string{`"unevaluatedProperties"`, "at #:"}},
		{"uniqueItems", `{"items":{"uniqueItems":true}}`, []string{`"uniqueItems"`, "#/items"}},
		{"multipleOf", `{"$defs":{"N":{"multipleOf":2}}}`, []string{`"multipleOf"`, "#/$defs/N"}},
		{"dependentRequired", `{"anyOf":[{"dependentRequired":{}}]}`, []string{`"dependentRequired"`, "#/anyOf/0"}},
		{"draft-07 definitions", `{"definitions":{}}`, []string{`"definitions"`}},
		{"misspelt keyword", `{"properties":{"a/b":{"maxLenght":3}}}`, []string{`"maxLenght"`, "#/properties/a~1b"}},
		{"other dialect", `{"$schema":"http://json-schema.org/draft-07/schema#"}`, []string{"2020-12", "#/$schema"}},
		{"remote $ref", `{"$ref":"other.json#/x"}`, []string{"only references within the document"}},
		{"anchor $ref", `{"$ref":"#node"}`, []string{"only JSON pointer references"}},
		{"dangling $ref", `{"$ref":"#/$defs/Missing"}`, []string{"names no schema"}},
		{"$ref cycle", `{"$defs":{"A":{"anyOf":[{"$ref":"#/$defs/B"}]},"B":{"$ref":"#/$defs/A"}},"$ref":"#/$defs/A"}`,
			[]string{"reaches itself"}},
		{"$id in a subschema", `{"properties":{"a":{"$id":"x"}}}`, []string{"$id", "#/properties/a/$id"}},
		{"bad pattern", `{"pattern":"("}`, []string{"invalid pattern", "#/pattern"}},
		{"bad patternProperties name", `{"patternProperties":{"[":{}}}`, []string{"invalid pattern", "#/patternProperties/["}},
		{"bad type", `{"type":"int"}`, []string{"int", "#/type"}},
		{"empty type list", `{"type":[]}`, []string{"#/type"}},
		{"negative length", `{"minLength":-1}`, []string{"non-negative integer", "#/minLength"}},
		{"fractional count", `{"maxItems":1.5}`, []string{"non-negative integer"}},
		{"string bound", `{"minimum":"3"}`, []string{"not a number", "#/minimum"}},
		{"required not names", `{"required":[1]}`, []string{"required"}},
		{"empty anyOf", `{"anyOf":[]}`, []string{"non-empty array", "#/anyOf"}},
		{"schema not an object", `{"items":3}`, []string{"object or a boolean", "#/items"}},
		{"then without if", `{"then":{}}`, []string{"without if"}},
		{"not JSON", `{"type":`, nil},
		{"trailing data", `{} {}`, []string{"after top-level value"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile("test.json", []byte(tt.schema))
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestCompileAccepts: the annotations and every supported keyword compile.
func TestCompileAccepts(t *testing.T) {
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema#","$id":"https://flameox.dev/x","$comment":"c",
		"title":"t","description":"d","default":{},"examples":[{}],"deprecated":false,"readOnly":false,"writeOnly":false,
		"$defs":{"S":{"type":"string","format":"email","minLength":1,"maxLength":2,"pattern":"^a"}},
		"type":["object","null"],"minProperties":0,"maxProperties":9,"required":["a"],
		"properties":{"a":{"$ref":"#/$defs/S"},"n":{"type":"number","minimum":0,"maximum":1,"exclusiveMinimum":-1,"exclusiveMaximum":2.5},
			"l":{"type":"array","prefixItems":[true],"items":false,"minItems":0,"maxItems":1},
			"e":{"enum":[1,"x",null]},"c":{"const":{"k":[1]}},
			"u":{"allOf":[{}],"anyOf":[{}],"oneOf":[{}],"not":false,"if":true,"then":{},"else":{}}},
		"patternProperties":{"^x-":{}},"additionalProperties":{"type":"string"}}`
	s, err := Compile("all.json", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if _, f := s.Validate([]byte(`{"a":"a","n":0.5,"l":[1],"e":null,"c":{"k":[1.0]},"u":3,"x-y":1,"z":"s"}`)); f != nil {
		t.Errorf("refused: %+v", f)
	}
}

// TestValidateDepth: an instance nesting deeper than maxDepth is refused as malformed
// input; one at the limit is checked.
func TestValidateDepth(t *testing.T) {
	s, err := Compile("open.json", []byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	nested := func(depth int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", depth-1) + `"[{\""` + strings.Repeat("]", depth-1) + `}`)
	}
	if _, f := s.Validate(nested(maxDepth)); f != nil {
		t.Errorf("depth %d refused: %+v", maxDepth, f)
	}
	_, f := s.Validate(nested(maxDepth + 1))
	if f == nil || f.Message != "arguments must be one JSON object" || len(f.FieldPath) != 0 {
		t.Errorf("depth %d: %+v", maxDepth+1, f)
	}
}

// TestValidateIsDeterministic: with errors at several members of one object, the failure
// names the same one every time (v6 visited members in map order).
func TestValidateIsDeterministic(t *testing.T) {
	s := previewSchema(t)
	raw := []byte(`{"sources":[{"kind":"path","path":"/x"}],"page_size":5000,"text_fragment_chars":0,"offset":-1}`)
	_, first := s.Validate(raw)
	if first == nil {
		t.Fatal("accepted")
	}
	for range 50 {
		if _, f := s.Validate(raw); f.Message != first.Message {
			t.Fatalf("%q, then %q", first.Message, f.Message)
		}
	}
	if first.FieldPath[0] != "offset" {
		t.Errorf("failure at %v, want the first member by name, offset", first.FieldPath)
	}
}

// TestValidateHugeExponent: a number too large for math/big to expand fails its bounds
// (v6 panicked on it) and is not an integer.
func TestValidateHugeExponent(t *testing.T) {
	s, err := Compile("n.json", []byte(`{"properties":{"n":{"type":"number","maximum":10},"i":{"type":"integer"},"c":{"const":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for raw, keyword := range map[string]string{
		`{"n":1e99999999}`: "schema_maximum",
		`{"i":1e99999999}`: "schema_type",
		`{"c":1e99999999}`: "schema_const",
	} {
		_, f := s.Validate([]byte(raw))
		if f == nil || f.Details["error_type"] != keyword {
			t.Errorf("%s: %+v", raw, f)
		}
	}
}

// TestValidateConcurrently: one compiled schema serves many goroutines (the runtime
// shares each tool's).
func TestValidateConcurrently(t *testing.T) {
	s := previewSchema(t)
	inputs := []string{`{"sources":[{"kind":"path","path":"/x"}],"page_size":3}`, `{"sources":[{"kind":"blob"}]}`,
		`{"sources":[{"path":"x"}],"bogus":1}`, `{"sources":[{"evidence_id":"x"}]}`}
	want := make([]string, len(inputs))
	for i, in := range inputs {
		_, f := s.Validate([]byte(in))
		want[i] = fmt.Sprint(f)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 200 {
				if _, f := s.Validate([]byte(inputs[i%len(inputs)])); fmt.Sprint(f) != want[i%len(inputs)] {
					t.Errorf("%s: %v", inputs[i%len(inputs)], f)
				}
			}
		})
	}
	wg.Wait()
}

// TestPatternsAreShared: schemas that state the same pattern share one compiled pattern,
// which matches as regexp does; a source that does not parse is refused.
func TestPatternsAreShared(t *testing.T) {
	a, err := newPattern(`^[a-z][a-z0-9_]{0,63}$`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newPattern(`^[a-z][a-z0-9_]{0,63}$`)
	if err != nil || a != b {
		t.Fatalf("the same source gave %p and %p (%v)", a, b, err)
	}
	for s, want := range map[string]bool{"rank_cpu": true, "Rank": false, "a" + strings.Repeat("b", 63): true, "a" + strings.Repeat("b", 64): false} {
		if got := a.MatchString(s); got != want {
			t.Errorf("%q: match %v, want %v", s, got, want)
		}
	}
	if a.String() != `^[a-z][a-z0-9_]{0,63}$` {
		t.Errorf("String() = %q", a.String())
	}
	if _, err := newPattern(`(`); err == nil {
		t.Error("an unbalanced pattern parsed")
	}
}
