package main

import (
	"encoding/json"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	"github.com/google/go-cmp/cmp"
)

func TestFoldNullable(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"type and null",
			`{"anyOf":[{"type":"string"},{"type":"null"}]}`,
			`{"type":["string","null"]}`},
		{"types only",
			`{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
			`{"type":["string","integer"]}`},
		{"object or null",
			`{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"null"}]}`,
			`{"type":["object","null"],"properties":{"a":{"type":"string"}},"required":["a"]}`},
		{"enum or null",
			`{"anyOf":[{"enum":["a","b"]},{"type":"null"}]}`,
			`{"enum":["a","b",null]}`},
		{"a reference keeps its union",
			`{"anyOf":[{"$ref":"#/$defs/X"},{"type":"null"}]}`,
			`{"anyOf":[{"$ref":"#/$defs/X"},{"type":"null"}]}`},
		{"a const object keeps its union",
			`{"anyOf":[{"type":"object","const":{}},{"type":"null"}]}`,
			`{"anyOf":[{"type":"object","const":{}},{"type":"null"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := foldNullable(parse(t, tt.in))
			if diff := cmp.Diff(parse(t, tt.want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeArms(t *testing.T) {
	rec := parse(t, `{"type":"object","properties":{"status":{"enum":["retryable","unavailable"]},"code":{"type":"string"}},"required":["code","status"]}`).(schema)
	fail := parse(t, `{"type":"object","properties":{"status":{"const":"failed"},"code":{"type":"string"},"field_path":{"type":"array"}},"required":["code","field_path","status"]}`).(schema)
	got, err := mergeArms([]schema{rec, fail}, "status")
	if err != nil {
		t.Fatal(err)
	}
	want := parse(t, `{"type":"object",
		"properties":{"status":{"enum":["retryable","unavailable","failed"]},"code":{"type":"string"},"field_path":{"type":"array"}},
		"required":["code","status"],
		"if":{"properties":{"status":{"enum":["failed"]}}},"then":{"required":["field_path"]}}`)
	b, _ := json.Marshal(got)
	if diff := cmp.Diff(want, parse(t, string(b))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	fail["properties"].(schema)["code"] = schema{"type": "integer"}
	if _, err := mergeArms([]schema{rec, fail}, "status"); err == nil {
		t.Error("arms that disagree on a property were merged")
	}
}

// TestShareExact: in an output schema a long subschema used twice is shared under $defs,
// named after the property it first describes, and its $ref has no siblings; a short one,
// one used once and a near copy stay inline.
func TestShareExact(t *testing.T) {
	long := `{"enum":["AAAAAAAAAAAAAAAAAAAA","BBBBBBBBBBBBBBBBBBBB","CCCCCCCCCCCCCCCCCCCC"]}`
	root := parse(t, `{"type":"object","properties":{
		"a_code":`+long+`,"b":{"type":"string"},"c":{"type":"string"},
		"d":{"type":"object","properties":{"x":`+long+`}},
		"e":{"enum":["AAAAAAAAAAAAAAAAAAAA","BBBBBBBBBBBBBBBBBBBB","CCCCCCCCCCCCCCCCCCCC"],"description":"near copy"}}}`).(schema)
	got := (&model{}).shareExact(root)
	want := parse(t, `{"type":"object","properties":{
		"a_code":{"$ref":"#/$defs/ACode"},"b":{"type":"string"},"c":{"type":"string"},
		"d":{"type":"object","properties":{"x":{"$ref":"#/$defs/ACode"}}},
		"e":{"enum":["AAAAAAAAAAAAAAAAAAAA","BBBBBBBBBBBBBBBBBBBB","CCCCCCCCCCCCCCCCCCCC"],"description":"near copy"}},
		"$defs":{"ACode":`+long+`}}`)
	if diff := cmp.Diff(want, parse(t, canonical(got))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestEnvelopeNode: a field of the envelope keeps its type, const, enum, items and unions;
// objects below it are open, except union arms, which keep their discriminator and their
// required fields; bounds, patterns and other fields' schemas go.
func TestEnvelopeNode(t *testing.T) {
	in := parse(t, `{"type":["object","null"],"additionalProperties":false,"required":["reason","next_offset"],"properties":{
		"reason":{"enum":["row_limit","provider_limit"]},"next_offset":{"type":"integer","minimum":0}}}`).(schema)
	want := parse(t, `{"type":["object","null"]}`)
	if diff := cmp.Diff(want, parse(t, canonical(envelopeNode(in, false)))); diff != "" {
		t.Errorf("object (-want +got):\n%s", diff)
	}
	in = parse(t, `{"type":"array","items":{"anyOf":[
		{"type":"object","required":["type","rows"],"properties":{"type":{"const":"table"},"rows":{"type":"array","items":{"type":"object"}},"title":{"type":"string","pattern":"^x$"}}},
		{"type":"object","required":["type","values"],"properties":{"type":{"const":"metrics"},"values":{"type":"object"}}}]}}`).(schema)
	want = parse(t, `{"type":"array","items":{"anyOf":[
		{"type":"object","required":["type","rows"],"properties":{"type":{"const":"table"}}},
		{"type":"object","required":["type","values"],"properties":{"type":{"const":"metrics"}}}]}}`)
	if diff := cmp.Diff(want, parse(t, canonical(envelopeNode(in, false)))); diff != "" {
		t.Errorf("union (-want +got):\n%s", diff)
	}
}

func TestMergeSiblingsEmbedsProperties(t *testing.T) {
	def := parse(t, `{"type":"object","properties":{"status":{"const":"complete"}},"required":["status"]}`).(schema)
	sib := parse(t, `{"properties":{"rescue_destination":{"type":"string"}},"required":["rescue_destination"]}`).(schema)
	want := parse(t, `{"type":"object","properties":{"status":{"const":"complete"},"rescue_destination":{"type":"string"}},"required":["rescue_destination","status"]}`)
	b, _ := json.Marshal(mergeSiblings(def, sib))
	if diff := cmp.Diff(want, parse(t, string(b))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestTypeRows: an operation's row definitions type the table rows of its rich result;
// without them the rows stay open objects.
func TestTypeRows(t *testing.T) {
	root := cuecontext.New().CompileString(`
#ARow: {
	// Function name.
	function!: string
	self!: int & >=0
}
#BRow: {edge!: string}
`)
	if err := root.Err(); err != nil {
		t.Fatal(err)
	}
	m := &model{root: root}
	result := func() schema {
		return parse(t, `{"type":"object","properties":{"blocks":{"type":"array","items":{"anyOf":[
			{"type":"object","properties":{"type":{"const":"metrics"},"values":{"type":"object"}}},
			{"type":"object","properties":{"type":{"const":"table"},"rows":{"type":"array","items":{"type":"object"}}}}]}}}}`).(schema)
	}
	rows := func(s schema) any {
		arms := s["properties"].(schema)["blocks"].(schema)["items"].(schema)["anyOf"].([]any)
		return arms[1].(schema)["properties"].(schema)["rows"].(schema)["items"]
	}
	open := result()
	if err := m.typeRows(open, operation{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parse(t, `{"type":"object"}`), rows(open)); diff != "" {
		t.Errorf("rows without definitions (-want +got):\n%s", diff)
	}
	typed := result()
	if err := m.typeRows(typed, operation{Name: "x", Rows: []string{"ARow", "BRow"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rows(typed))
	want := parse(t, `{"anyOf":[
		{"title":"ARow","type":"object","additionalProperties":false,"required":["function","self"],
		 "properties":{"function":{"type":"string","description":"Function name."},"self":{"type":"integer","minimum":0}}},
		{"title":"BRow","type":"object","additionalProperties":false,"required":["edge"],"properties":{"edge":{"type":"string"}}}]}`)
	if diff := cmp.Diff(want, parse(t, string(b))); diff != "" {
		t.Errorf("typed rows (-want +got):\n%s", diff)
	}
}
