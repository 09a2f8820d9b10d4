package validate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flameox/flameox/internal/failure"
)

// armForms describes each arm of a union schema in a few words ("an integer from 0 to
// 9223372036854775807", "a string matching ^[0-9]+$").
func (s *Schema) armForms(sub map[string]any) []string {
	var out []string
	for _, arm := range s.arms(sub) {
		out = append(out, s.form(arm))
	}
	return out
}

// arms lists the arms of a union schema (anyOf or oneOf), each resolved.
func (s *Schema) arms(sub map[string]any) []map[string]any {
	var out []map[string]any
	sub = s.resolve(sub)
	for _, key := range []string{"anyOf", "oneOf"} {
		arms, _ := sub[key].([]any)
		for _, a := range arms {
			out = append(out, s.resolve(asMap(a)))
		}
	}
	return out
}

// form describes one schema's accepted values in a few words.
func (s *Schema) form(m map[string]any) string {
	if c, ok := m["const"]; ok {
		b, _ := json.Marshal(c)
		return string(b)
	}
	if e, ok := m["enum"].([]any); ok {
		var vals []string
		for _, v := range e {
			b, _ := json.Marshal(v)
			vals = append(vals, string(b))
		}
		return "one of " + strings.Join(vals, ", ")
	}
	t, _ := m["type"].(string)
	switch t {
	case "integer", "number":
		lo, hasLo := m["minimum"]
		hi, hasHi := m["maximum"]
		switch {
		case hasLo && hasHi:
			return fmt.Sprintf("%s from %s to %s", article(t), numString(lo), numString(hi))
		case len(rangeOf(m)) > 0:
			return article(t) + " " + strings.Join(rangeOf(m), " and ")
		}
	case "string":
		if p, ok := m["pattern"].(string); ok {
			return "a string matching " + p
		}
	case "":
		return "a value of another form"
	}
	return article(t)
}

// article names type t with its indefinite article ("an integer").
func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// describe maps one leaf error to a failure.
func (s *Schema) describe(ve *schemaError) *failure.Failure {
	path := fieldPath(ve.instance)
	where := displayPath(path)
	sub := s.subschema(ve.schemaURL)
	var f *failure.Failure
	switch ve.kind {
	case kindRequired:
		missing := slices.Clone(ve.names)
		sort.Strings(missing)
		path = append(path, missing[0])
		f = failure.Invalid(path, nil, "%s is required", displayPath(path))
	case kindAdditionalProperties:
		props := slices.Clone(ve.names)
		sort.Strings(props)
		path = append(path, props[0])
		names := propertyNames(s.resolve(sub))
		f = failure.Invalid(path, names, "%s is not a field of this tool; unknown fields are rejected", displayPath(path))
		if near := Nearest(props[0], names); near != "" {
			f.Message += "; did you mean " + near + "?"
			f.With("did_you_mean", near)
		}
	case kindEnum:
		var want []string
		for _, w := range ve.want.([]any) {
			want = append(want, fmt.Sprint(w))
		}
		f = failure.Invalid(path, want, "%s must be one of the accepted values", where)
	case kindConst:
		f = failure.Invalid(path, []string{fmt.Sprint(ve.want)}, "%s must be %v", where, ve.want)
	case kindMissingKind:
		path = append(path, "kind")
		props, _ := s.resolve(sub)["properties"].(map[string]any)
		want, _ := s.resolve(asMap(props["kind"]))["const"].(string)
		f = failure.Invalid(path, []string{want}, "%s is required for an object with these fields: set it to %q", displayPath(path), want)
	case kindUnionKind:
		want := ve.names
		if len(want) == 0 {
			want = s.armKinds(sub)
		}
		f = failure.Invalid(path, want, "%s must be one of %s", where, strings.Join(want, ", "))
	case kindValueUnion:
		// Arms of one form (objects told apart by their kind) are one accepted form.
		var forms []string
		for _, x := range s.armForms(sub) {
			if !slices.Contains(forms, x) {
				forms = append(forms, x)
			}
		}
		f = failure.Invalid(path, forms, "%s must be %s", where, strings.Join(forms, ", or "))
	case kindType:
		f = failure.Invalid(path, ve.names, "%s must be of type %s", where, strings.Join(ve.names, " or "))
	case kindMinimum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be at least %s", where, ratString(ve.bound))
	case kindMaximum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be at most %s", where, ratString(ve.bound))
	case kindExclusiveMinimum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be greater than %s", where, ratString(ve.bound))
	case kindExclusiveMaximum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be less than %s", where, ratString(ve.bound))
	case kindMinItems:
		f = failure.Invalid(path, nil, "%s needs at least %d items", where, ve.limit)
	case kindMaxItems:
		f = failure.Invalid(path, nil, "%s accepts at most %d items", where, ve.limit)
	case kindMinLength:
		f = failure.Invalid(path, nil, "%s must have at least %d characters", where, ve.limit)
	case kindMaxLength:
		f = failure.Invalid(path, nil, "%s must have at most %d characters", where, ve.limit)
	case kindPattern:
		f = failure.Invalid(path, []string{"pattern " + ve.pattern}, "%s must match the pattern %s", where, ve.pattern)
	default:
		f = failure.Invalid(path, nil, "%s does not match the tool schema", where)
	}
	return f.With("error_type", "schema_"+ve.kind.keyword())
}

// fieldPath turns an instance location into a field path with integer array indices.
func fieldPath(loc []string) []any {
	out := make([]any, 0, len(loc))
	for _, p := range loc {
		if n, err := strconv.Atoi(p); err == nil && strconv.Itoa(n) == p {
			out = append(out, n)
			continue
		}
		out = append(out, p)
	}
	return out
}

// displayPath renders a field path for a message: arguments, or sources[0].path.
func displayPath(path []any) string {
	if len(path) == 0 {
		return "arguments"
	}
	var b strings.Builder
	for i, p := range path {
		switch x := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", x)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(fmt.Sprint(x))
		}
	}
	return b.String()
}

// ratString renders a bound: an integer as is, a fraction with six decimals.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}

// subschema resolves an absolute schema URL within this document.
func (s *Schema) subschema(u string) map[string]any {
	_, frag, _ := strings.Cut(u, "#")
	var cur any = s.doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		// The fragment is path-escaped (encodePointer): a patternProperties key such as
		// ^[^=\x00]{1,256}$ is found only unescaped.
		if u, err := url.PathUnescape(tok); err == nil {
			tok = u
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i >= len(x) {
				return nil
			}
			cur = x[i]
		default:
			return nil
		}
	}
	// The URL of a keyword error names the keyword; step back to its schema object.
	m, _ := cur.(map[string]any)
	return m
}

// propertyNames lists the members that schema object sub declares, sorted.
func propertyNames(sub map[string]any) []string {
	props, _ := sub["properties"].(map[string]any)
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// rangeOf lists the bounds of schema object sub (">=1", "<=1000").
func rangeOf(sub map[string]any) []string {
	var lo, hi string
	if v, ok := sub["minimum"]; ok {
		lo = ">=" + numString(v)
	}
	if v, ok := sub["exclusiveMinimum"]; ok {
		lo = ">" + numString(v)
	}
	if v, ok := sub["maximum"]; ok {
		hi = "<=" + numString(v)
	}
	if v, ok := sub["exclusiveMaximum"]; ok {
		hi = "<" + numString(v)
	}
	var out []string
	for _, x := range []string{lo, hi} {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// numString renders a number of the schema document as written.
func numString(v any) string {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// resolve follows a local $ref ("#/$defs/X") of a schema object, if any.
func (s *Schema) resolve(m map[string]any) map[string]any {
	for i := 0; i < 8 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return m
		}
		m = s.subschema(s.url + ref)
	}
	return m
}

// armKinds lists the kind constants of the arms of a union schema (anyOf or oneOf).
func (s *Schema) armKinds(sub map[string]any) []string {
	var out []string
	for _, arm := range s.arms(sub) {
		props, _ := arm["properties"].(map[string]any)
		k, _ := props["kind"].(map[string]any)
		if c, ok := s.resolve(k)["const"].(string); ok {
			out = append(out, c)
		}
	}
	return out
}
