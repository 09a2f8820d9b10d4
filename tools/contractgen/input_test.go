package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShare covers the sharing of repeated input subschemas: exact copies keep their own
// descriptions beside the $ref, a node that only adds assertions refers to the shared body,
// a keyword that depends on its siblings is never split off, and a short body stays inline.
func TestShare(t *testing.T) {
	argv := `{"type":"array","minItems":1,"maxItems":256,"items":{"type":"string","maxLength":16384,"pattern":"^[^\\x00]*$"}}`
	tests := []struct {
		name, in, want string
	}{
		{"copies with their own descriptions",
			`{"type":"object","properties":{
				"a":` + argv[:len(argv)-1] + `,"description":"first"},
				"b":{"anyOf":[` + argv + `,{"type":"null"}]},
				"c":` + argv + `}}`,
			`{"type":"object","properties":{
				"a":{"$ref":"#/$defs/A","description":"first"},
				"b":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"null"}]},
				"c":{"$ref":"#/$defs/A"}},
			"$defs":{"A":` + argv + `}}`},
		{"a stricter copy adds its assertions beside the $ref",
			`{"type":"object","properties":{
				"a":{"type":"string","maxLength":16384,"pattern":"^[^\\x00]*$","description":"a"},
				"b":{"type":"string","maxLength":16384,"pattern":"^[^\\x00]*$"},
				"c":{"type":"string","maxLength":16384,"pattern":"^[^\\x00]*$","minLength":1},
				"d":{"type":"string","maxLength":16384,"pattern":"^[^\\x00]*$","minLength":2}}}`,
			`{"type":"object","properties":{
				"a":{"$ref":"#/$defs/A","description":"a"},
				"b":{"$ref":"#/$defs/A"},
				"c":{"$ref":"#/$defs/A","minLength":1},
				"d":{"$ref":"#/$defs/A","minLength":2}},
			"$defs":{"A":{"type":"string","maxLength":16384,"pattern":"^[^\\x00]*$"}}}`},
		{"properties beside additionalProperties are never split",
			`{"type":"object","properties":{
				"a":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string","pattern":"^[a-z]{1,64}$"}}},
				"b":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string","pattern":"^[a-z]{1,64}$"},"y":{"type":"integer"}}}}}`,
			`{"type":"object","properties":{
				"a":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string","pattern":"^[a-z]{1,64}$"}}},
				"b":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string","pattern":"^[a-z]{1,64}$"},"y":{"type":"integer"}}}}}`},
		{"a short body stays inline",
			`{"type":"object","properties":{"a":{"type":"integer","minimum":1},"b":{"type":"integer","minimum":1}}}`,
			`{"type":"object","properties":{"a":{"type":"integer","minimum":1},"b":{"type":"integer","minimum":1}}}`},
	}
	m := &model{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parse(t, canonical(m.share(parse(t, tt.in).(schema))))
			if diff := cmp.Diff(parse(t, tt.want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProviderDescription(t *testing.T) {
	for doc, want := range map[string]string{
		"PerfProvider records the workload with perf record.": "Records the workload with perf record.",
		"Collector and its typed fields.":                     "Collector and its typed fields.",
	} {
		if got := providerDescription("PerfProvider", doc); got != want {
			t.Errorf("providerDescription(%q) = %q, want %q", doc, got, want)
		}
	}
}

// TestCompactInputKeepsLimitsStandalone: the runtime compiles properties.limits on its
// own, so generation fails rather than share a subschema of it under $defs.
func TestCompactInputKeepsLimitsStandalone(t *testing.T) {
	long := `{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9._:/-]*$","minLength":1,"maxLength":4096}`
	in := parse(t, `{"type":"object","properties":{"limits":{"type":"object","properties":{"a":`+long+`,"b":`+long+`,"c":`+long+`}}}}`).(schema)
	if _, err := (&model{}).compactInput(in); err == nil {
		t.Error("a $ref inside properties.limits was accepted")
	}
}
