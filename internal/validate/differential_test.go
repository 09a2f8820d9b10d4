package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

var fullCorpus = flag.Bool("full-corpus", false,
	"run every generated instance through the differential test, not a sample of each schema's")

// sampleSize is how many instances of each schema the differential test runs without
// -full-corpus (a quarter of it with -short): an even spread over the sorted corpus.
const sampleSize = 400

// TestDifferentialAgainstV6 holds this validator to santhosh-tekuri/jsonschema/v6, which
// it replaced: for every schema the product compiles and a corpus of instances (examples
// built from each schema, every mutation of every value they hold, pairs of mutations,
// malformed documents), both give the same verdict, the same error tree (v6's converted
// to this package's), the same failure and the same accepted instance.
func TestDifferentialAgainstV6(t *testing.T) {
	schemas := productSchemas(t)
	seen := map[string]bool{}
	total := 0
	for _, sc := range schemas {
		canon := string(mustMarshal(t, decodeDoc(t, sc.doc)))
		if seen[canon] {
			continue // a baseline equal to the served schema
		}
		seen[canon] = true
		t.Run(sc.name, func(t *testing.T) {
			o := newOracle(t, sc.name, sc.doc)
			n := 0
			if !*fullCorpus {
				n = sampleSize
				if testing.Short() {
					n /= 4
				}
			}
			instances := corpus(t, sc.doc, n)
			accepted := 0
			for _, raw := range instances {
				if o.compare(t, raw) {
					accepted++
				}
			}
			total += len(instances)
			if accepted == 0 || accepted == len(instances) {
				t.Errorf("%d of %d instances accepted: the corpus does not exercise the schema", accepted, len(instances))
			}
		})
	}
	t.Logf("%d instances", total)
}

// TestDifferentialKeywords runs the keywords no contract uses yet (oneOf, allOf, not,
// if/then/else, boolean schemas, minProperties, several patterns, type lists) through the
// same comparison.
func TestDifferentialKeywords(t *testing.T) {
	tests := []struct {
		name, schema string
		instances    []string
	}{
		{"oneOf", `{"oneOf":[{"type":"integer"},{"minimum":2},{"type":"string","maxLength":2}]}`,
			[]string{`1`, `2`, `3.5`, `"ab"`, `"abc"`, `null`, `0.5`, `true`}},
		{"oneOf objects", `{"type":"object","properties":{"v":{"oneOf":[
			{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"],"additionalProperties":false},
			{"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind","y"],"additionalProperties":false}]}}}`,
			[]string{`{"v":{"kind":"a"}}`, `{"v":{"kind":"b"}}`, `{"v":{"kind":"c"}}`, `{"v":{"y":"s"}}`, `{"v":{"kind":"a","x":"s"}}`, `{"v":{}}`, `{"v":3}`}},
		{"allOf", `{"allOf":[{"type":"object","required":["a"]},{"properties":{"a":{"maximum":3},"b":{"type":"string"}}},{"maxProperties":2}]}`,
			[]string{`{"a":1}`, `{"a":4}`, `{}`, `{"a":1,"b":2,"c":3}`, `{"b":"x"}`, `[]`}},
		{"not", `{"properties":{"a":{"not":{"type":"string"}},"b":{"not":{"enum":[1,2]}}}}`,
			[]string{`{"a":1}`, `{"a":"x"}`, `{"b":1.0}`, `{"b":3}`, `{"a":"x","b":2}`}},
		{"if then else", `{"type":"object","if":{"properties":{"kind":{"const":"n"}},"required":["kind"]},
			"then":{"properties":{"v":{"type":"number"}}},"else":{"properties":{"v":{"type":"string"}},"required":["v"]}}`,
			[]string{`{"kind":"n","v":1}`, `{"kind":"n","v":"x"}`, `{"kind":"s","v":"x"}`, `{"kind":"s","v":1}`, `{}`, `{"kind":"n"}`}},
		{"boolean schemas", `{"properties":{"never":false,"any":true},"items":false,"prefixItems":[true]}`,
			[]string{`{"never":1}`, `{"any":[1]}`, `{}`, `[1]`, `[1,2]`, `[]`}},
		{"counts", `{"type":["object","array","string","null"],"minProperties":2,"maxProperties":3,"minItems":1,"maxItems":2,"minLength":1,"maxLength":2}`,
			[]string{`{}`, `{"a":1,"b":2}`, `{"a":1,"b":2,"c":3,"d":4}`, `[]`, `[1,2,3]`, `""`, `"éé"`, `"ééé"`, `null`, `1`}},
		{"patterns", `{"type":"object","patternProperties":{"^a":{"type":"integer"},"b$":{"minimum":5}},"additionalProperties":{"type":"string"}}`,
			[]string{`{"ab":3}`, `{"ab":7}`, `{"ab":"x"}`, `{"a":1.5,"zb":1,"c":2,"d":"x"}`, `{"c":1,"d":2,"e":3}`}},
		{"const and enum values", `{"properties":{"c":{"const":{"a":[1,2.0]}},"e":{"enum":[1,"1",null,[1],{"x":1e0}]}}}`,
			[]string{`{"c":{"a":[1.0,2]}}`, `{"c":{"a":[1,3]}}`, `{"c":{"a":[1,2],"b":1}}`, `{"e":1.0}`, `{"e":"1"}`, `{"e":[1.00]}`,
				`{"e":{"x":10e-1}}`, `{"e":2}`, `{"e":{"x":1,"y":1}}`}},
		{"bounds", `{"properties":{"i":{"type":"integer","exclusiveMinimum":-1,"exclusiveMaximum":1e2},"n":{"type":"number","minimum":0.5,"maximum":9223372036854775807}}}`,
			[]string{`{"i":-1}`, `{"i":0}`, `{"i":99.0}`, `{"i":100}`, `{"i":1e2}`, `{"i":1E1}`, `{"n":0.49999}`, `{"n":0.5}`,
				`{"n":9223372036854775807}`, `{"n":9223372036854775808}`, `{"n":-0}`, `{"i":-0.0}`, `{"i":1.5}`}},
		{"refs", `{"$defs":{"P":{"type":"object","properties":{"n":{"$ref":"#/$defs/N"},"next":{"$ref":"#/$defs/P"}},"additionalProperties":false},
			"N":{"type":"integer","minimum":1}},"$ref":"#/$defs/P","required":["n"]}`,
			[]string{`{"n":1}`, `{"n":0}`, `{"next":{"next":{"n":"x"}}}`, `{"n":1,"bogus":1,"next":{"n":0,"x":1}}`, `{"n":1,"next":[]}`}},
		{"escaped names", `{"type":"object","properties":{"a/b":{"type":"integer"},"c~d":{"maximum":1},"sp ace":{"minimum":1},"^[x]":{"enum":["y"]}},"additionalProperties":false}`,
			[]string{`{"a/b":"x"}`, `{"c~d":2}`, `{"sp ace":0}`, `{"^[x]":"z"}`, `{"e":1}`}},
		{"multiple errors", `{"type":"object","required":["z"],"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"object","properties":{"d":{"type":"string"}}}},"additionalProperties":false}`,
			[]string{`{"a":"x","b":"y","c":{"d":1},"q":1,"r":2}`, `{"b":"y","a":"x"}`, `{"c":{"d":1},"a":"x"}`, `{"r":1,"q":2,"a":"s"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOracle(t, tt.name, []byte(tt.schema))
			for _, raw := range tt.instances {
				o.compare(t, []byte(raw))
			}
		})
	}
}

// oracle compiles one schema document both ways.
type oracle struct {
	s     *Schema
	v6    *jsonschema.Schema
	kinds map[string]errorKind
}

func newOracle(t *testing.T, name string, doc []byte) *oracle {
	t.Helper()
	s, err := Compile(name, doc)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	v6doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem:///"+name, v6doc); err != nil {
		t.Fatal(err)
	}
	v6, err := c.Compile("mem:///" + name)
	if err != nil {
		t.Fatalf("v6: %v", err)
	}
	return &oracle{s: s, v6: v6, kinds: v6Kinds()}
}

// compare runs raw through both validators and reports any difference; it returns
// whether raw was accepted.
func (o *oracle) compare(t *testing.T, raw []byte) bool {
	t.Helper()
	got, gotFailure := o.s.Validate(raw)
	// The old path: v6 decodes, the nulls are dropped, v6 checks, the tree is mapped.
	input := raw
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		if gotFailure == nil || !cmp.Equal(gotFailure.AcceptedValues, []string{"object"}) || len(gotFailure.FieldPath) != 0 {
			t.Errorf("%s: v6 refuses the JSON (%v), this validator says %v", raw, err, gotFailure)
		}
		return false
	}
	o.s.dropNulls(inst, o.s.doc)
	verr := o.v6.Validate(inst)
	if verr == nil {
		if gotFailure != nil {
			t.Errorf("%s: v6 accepts, this validator refuses: %v", raw, gotFailure)
		} else if diff := cmp.Diff(inst, got); diff != "" {
			t.Errorf("%s: accepted instance (-v6 +new):\n%s", raw, diff)
		}
		return true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		t.Fatalf("%s: v6: %v", raw, verr)
	}
	want := convert(t, o.kinds, ve)
	normalize(want, inst)
	mine, _ := decode(input)
	o.s.dropNulls(mine, o.s.doc)
	tree := checkDocument(o.s.root, mine)
	if tree == nil {
		t.Errorf("%s: v6 refuses, this validator accepts:\n%v", raw, want)
		return false
	}
	if diff := cmp.Diff(render(want), render(tree)); diff != "" {
		t.Errorf("%s: error tree (-v6 +new):\n%s", raw, diff)
		return false
	}
	if diff := cmp.Diff(outcomeOf(o.s.describe(deepest(want))), outcomeOf(gotFailure)); diff != "" {
		t.Errorf("%s: failure (-v6 +new):\n%s", raw, diff)
	}
	return false
}

// render writes e and its causes, one error a line with all its parameters.
func render(e *schemaError) string {
	var b strings.Builder
	var write func(e *schemaError, indent string)
	write = func(e *schemaError, indent string) {
		fmt.Fprintf(&b, "%s%q %s %d names=%q want=%s limit=%d pattern=%q", indent, e.instance, e.schemaURL, e.kind,
			e.names, outcomeOf(e.want), e.limit, e.pattern)
		if e.bound != nil {
			b.WriteString(" bound=" + e.bound.RatString())
		}
		b.WriteByte('\n')
		for _, c := range e.causes {
			write(c, indent+"  ")
		}
	}
	write(e, "")
	return b.String()
}

func outcomeOf(f any) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// v6Kinds maps v6's error kinds, by Go type, to this package's.
func v6Kinds() map[string]errorKind {
	return map[string]errorKind{
		"*kind.Schema": kindRoot, "*kind.Group": kindGroup, "*kind.Reference": kindRef, "*kind.FalseSchema": kindFalse,
		"*kind.Type": kindType, "*kind.Const": kindConst, "*kind.Enum": kindEnum,
		"*kind.Minimum": kindMinimum, "*kind.Maximum": kindMaximum,
		"*kind.ExclusiveMinimum": kindExclusiveMinimum, "*kind.ExclusiveMaximum": kindExclusiveMaximum,
		"*kind.MinLength": kindMinLength, "*kind.MaxLength": kindMaxLength, "*kind.Pattern": kindPattern,
		"*kind.MinItems": kindMinItems, "*kind.MaxItems": kindMaxItems,
		"*kind.MinProperties": kindMinProperties, "*kind.MaxProperties": kindMaxProperties,
		"*kind.Required": kindRequired, "*kind.AdditionalProperties": kindAdditionalProperties,
		"*kind.AllOf": kindAllOf, "*kind.AnyOf": kindAnyOf, "*kind.OneOf": kindOneOf, "*kind.Not": kindNot,
	}
}

// convert turns v6's error tree into this package's.
func convert(t *testing.T, kinds map[string]errorKind, ve *jsonschema.ValidationError) *schemaError {
	t.Helper()
	k, ok := kinds[fmt.Sprintf("%T", ve.ErrorKind)]
	if !ok {
		t.Fatalf("v6 error kind %T has no counterpart", ve.ErrorKind)
	}
	e := &schemaError{instance: ve.InstanceLocation, schemaURL: ve.SchemaURL, kind: k}
	switch x := ve.ErrorKind.(type) {
	case *kind.Type:
		e.names = x.Want
	case *kind.Const:
		e.want = x.Want
	case *kind.Enum:
		e.want = x.Want
	case *kind.Pattern:
		e.pattern = x.Want
	case *kind.Required:
		e.names = x.Missing
	case *kind.AdditionalProperties:
		// v6 lists them in map order; this validator sorts them.
		e.names = slices.Sorted(slices.Values(x.Properties))
	default:
		// A bound's Want is a *big.Rat, a count's an int.
		if w := reflect.ValueOf(x).Elem().FieldByName("Want"); w.IsValid() {
			switch want := w.Interface().(type) {
			case *big.Rat:
				e.bound = want
			case int:
				e.limit = want
			}
		}
	}
	for _, c := range ve.Causes {
		e.causes = append(e.causes, convert(t, kinds, c))
	}
	return e
}

// normalize puts the errors of an object's members in member-name order, as this
// validator does: v6 visits members in map order. The object is the group's own; where
// v6 flattened a member's group into the root or a $ref, it is where the causes meet.
func normalize(e *schemaError, inst any) {
	owner := e.instance
	switch e.kind {
	case kindRoot, kindRef:
		owner = commonPrefix(e.causes)
		fallthrough
	case kindGroup:
		if _, ok := valueAt(inst, owner).(map[string]any); ok {
			var at []int
			var members []*schemaError
			for i, c := range e.causes {
				if len(c.instance) > len(owner) {
					at = append(at, i)
					members = append(members, c)
				}
			}
			slices.SortStableFunc(members, func(a, b *schemaError) int {
				return strings.Compare(a.instance[len(owner)], b.instance[len(owner)])
			})
			for i, c := range members {
				e.causes[at[i]] = c
			}
		}
	}
	for _, c := range e.causes {
		normalize(c, inst)
	}
}

// commonPrefix is the instance location that all errs are at or below.
func commonPrefix(errs []*schemaError) []string {
	prefix := errs[0].instance
	for _, e := range errs[1:] {
		n := 0
		for n < len(prefix) && n < len(e.instance) && prefix[n] == e.instance[n] {
			n++
		}
		prefix = prefix[:n]
	}
	return prefix
}

func valueAt(v any, loc []string) any {
	for _, tok := range loc {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			v = x[i]
		}
	}
	return v
}
