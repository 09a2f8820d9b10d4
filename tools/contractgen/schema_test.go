package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func parse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNormalize covers the rewrites contractgen applies to encoding/jsonschema output.
func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bounded integer",
			`{"allOf":[{"type":"number"},{"type":"integer","minimum":1,"maximum":9}]}`,
			`{"type":"integer","minimum":1,"maximum":9}`},
		{"open struct",
			`{"const":{}}`,
			`{"type":"object"}`},
		{"closed struct of concrete fields",
			`{"const":{"kind":"direct"}}`,
			`{"type":"object","properties":{"kind":{"const":"direct"}},"required":["kind"],"additionalProperties":false}`},
		{"first element like the rest",
			`{"type":"array","minItems":1,"prefixItems":[{"type":"string"}],"items":{"type":"string"}}`,
			`{"type":"array","minItems":1,"items":{"type":"string"}}`},
		{"first element stricter than the rest",
			`{"type":"array","prefixItems":[{"type":"string","minLength":1}],"items":{"type":"string"}}`,
			`{"type":"array","prefixItems":[{"type":"string","minLength":1}],"items":{"type":"string"}}`},
		{"definition names in descriptions",
			`{"description":"#Source is one input"}`,
			`{"description":"Source is one input"}`},
		{"nested",
			`{"properties":{"n":{"allOf":[{"type":"number"},{"type":"integer"}]}}}`,
			`{"properties":{"n":{"type":"integer"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := normalize(parse(t, tt.in))
			if diff := cmp.Diff(parse(t, tt.want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInlineAppliesPatches(t *testing.T) {
	defs := map[string]any{"Environment": parse(t, `{"type":"object","additionalProperties":false}`)}
	b, _ := json.Marshal(inline(parse(t, `{"properties":{"env":{"$ref":"#/$defs/Environment","description":"overrides"}}}`), defs))
	got := parse(t, string(b))
	want := parse(t, `{"properties":{"env":{"type":"object","additionalProperties":false,"maxProperties":32,"description":"overrides"}}}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
