// Package validate checks raw tool arguments against the exact JSON Schema bytes that the
// MCP catalog publishes, and maps the deepest schema error to an INVALID_INPUT failure with
// the field path and the accepted values. It never returns the validator's own text.
package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"

	"github.com/flameox/flameox/internal/failure"
)

// Schema is one compiled tool input schema.
type Schema struct {
	url    string
	doc    any
	schema *jsonschema.Schema
}

// Compile compiles the schema document b, naming it by name.
func Compile(name string, b []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	return &Schema{url: url, doc: doc, schema: s}, nil
}

// Validate checks raw and returns the decoded instance (numbers kept exact) or an
// INVALID_INPUT failure.
func (s *Schema) Validate(raw []byte) (any, *failure.Failure) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, failure.Invalid(failure.Path(), []string{"object"}, "arguments must be one JSON object")
	}
	// Models often send null for an optional field they mean to omit: drop it where the
	// schema does not accept null itself.
	s.dropNulls(inst, s.doc)
	if err := s.schema.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, s.describe(deepest(ve))
		}
		return nil, failure.Invalid(failure.Path(), nil, "arguments do not match the tool schema")
	}
	return inst, nil
}

// deepest picks the most specific leaf error. At a union it drops the arms that fail on the
// kind discriminator when another arm accepted the kind.
func deepest(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return ve
	}
	causes := ve.Causes
	switch ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		var kept []*jsonschema.ValidationError
		for _, c := range causes {
			if !failsOnKind(c) {
				kept = append(kept, c)
			} else if url := onlyMissingKind(c, ve.InstanceLocation); url != "" {
				// The arm would accept the object with its kind: a source with evidence_id
				// and no kind is an evidence source that omitted kind, not a path source
				// with an unknown field.
				return &jsonschema.ValidationError{InstanceLocation: ve.InstanceLocation, SchemaURL: url, ErrorKind: &missingKind{}}
			}
		}
		if len(kept) == 0 {
			// Every arm refused the discriminator: report the discriminator itself.
			return &jsonschema.ValidationError{
				InstanceLocation: append(append([]string{}, ve.InstanceLocation...), "kind"),
				SchemaURL:        ve.SchemaURL,
				ErrorKind:        &unionKind{want: unionKinds(causes)},
			}
		}
		causes = kept
	}
	best := deepest(causes[0])
	if isUnion(ve) && len(causes) > 1 {
		// When every arm refuses the value itself (an integer-or-decimal-string bound
		// given "01": one arm wants an integer, the other a pattern), no arm's own error
		// is the answer: name every form the union accepts.
		same := true
		for _, c := range causes {
			d := deepest(c)
			same = same && len(d.InstanceLocation) == len(ve.InstanceLocation) && refusesValue(d)
		}
		if same {
			return &jsonschema.ValidationError{InstanceLocation: ve.InstanceLocation, SchemaURL: ve.SchemaURL, ErrorKind: &valueUnion{}}
		}
	}
	for _, c := range causes[1:] {
		d := deepest(c)
		// Deeper wins; at one depth an unknown field wins over a missing one, since a
		// misspelt field ("source") is usually why the required one ("sources") is missing.
		if len(d.InstanceLocation) > len(best.InstanceLocation) ||
			len(d.InstanceLocation) == len(best.InstanceLocation) && isUnknownField(d) && !isUnknownField(best) {
			best = d
		}
	}
	return best
}

func isUnion(ve *jsonschema.ValidationError) bool {
	switch ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		return true
	}
	return false
}

// refusesValue reports whether ve refuses a value's type or range, not the members of an
// object or array.
func refusesValue(ve *jsonschema.ValidationError) bool {
	switch ve.ErrorKind.(type) {
	case *kind.Type, *kind.Const, *kind.Enum, *kind.Pattern, *kind.Minimum, *kind.Maximum,
		*kind.ExclusiveMinimum, *kind.ExclusiveMaximum, *kind.MinLength, *kind.MaxLength:
		return true
	}
	return false
}

// valueUnion is a synthetic error: a value matched none of a union's forms.
type valueUnion struct{}

func (*valueUnion) KeywordPath() []string { return []string{"anyOf"} }
func (*valueUnion) LocalizedString(*message.Printer) string {
	return "matches none of the accepted forms"
}

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

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func isUnknownField(ve *jsonschema.ValidationError) bool {
	_, ok := ve.ErrorKind.(*kind.AdditionalProperties)
	return ok
}

// unionKind is a synthetic error: the discriminator matched no union arm.
type unionKind struct{ want []string }

func (*unionKind) KeywordPath() []string { return []string{"kind"} }
func (u *unionKind) LocalizedString(*message.Printer) string {
	return "kind must be one of " + strings.Join(u.want, ", ")
}

// missingKind is a synthetic error: an object omitted the kind that the one union arm
// fitting its fields requires (its SchemaURL is that arm's).
type missingKind struct{}

func (*missingKind) KeywordPath() []string { return []string{"required"} }
func (*missingKind) LocalizedString(*message.Printer) string {
	return "kind is required"
}

// onlyMissingKind returns the schema URL of a union arm that refuses the object at loc
// only because kind is missing (no other required field missing, no unknown field there;
// errors below the object may remain), or "".
func onlyMissingKind(arm *jsonschema.ValidationError, loc []string) string {
	missing, fits, url := false, true, ""
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		at := slices.Equal(e.InstanceLocation, loc)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			if at {
				for _, m := range k.Missing {
					if m == "kind" {
						missing, url = true, e.SchemaURL
					} else {
						fits = false
					}
				}
			}
		case *kind.AdditionalProperties:
			if at {
				fits = false
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(arm)
	if !missing || !fits {
		return ""
	}
	return url
}

func failsOnKind(ve *jsonschema.ValidationError) bool {
	var found bool
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if _, ok := e.ErrorKind.(*kind.Const); ok && len(e.InstanceLocation) > 0 && e.InstanceLocation[len(e.InstanceLocation)-1] == "kind" {
			found = true
		}
		if r, ok := e.ErrorKind.(*kind.Required); ok {
			for _, m := range r.Missing {
				if m == "kind" {
					found = true
				}
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return found
}

func unionKinds(arms []*jsonschema.ValidationError) []string {
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if c, ok := e.ErrorKind.(*kind.Const); ok {
			if s, ok := c.Want.(string); ok {
				out = append(out, s)
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	for _, a := range arms {
		walk(a)
	}
	return out
}

// describe maps one leaf error to a failure.
func (s *Schema) describe(ve *jsonschema.ValidationError) *failure.Failure {
	path := fieldPath(ve.InstanceLocation)
	where := displayPath(path)
	sub := s.subschema(ve.SchemaURL)
	var f *failure.Failure
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		missing := append([]string{}, k.Missing...)
		sort.Strings(missing)
		path = append(path, missing[0])
		f = failure.Invalid(path, nil, "%s is required", displayPath(path))
	case *kind.AdditionalProperties:
		props := append([]string{}, k.Properties...)
		sort.Strings(props)
		path = append(path, props[0])
		names := propertyNames(s.resolve(sub))
		f = failure.Invalid(path, names, "%s is not a field of this tool; unknown fields are rejected", displayPath(path))
		if near := Nearest(props[0], names); near != "" {
			f.Message += "; did you mean " + near + "?"
			f.With("did_you_mean", near)
		}
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		f = failure.Invalid(path, want, "%s must be one of the accepted values", where)
	case *kind.Const:
		f = failure.Invalid(path, []string{fmt.Sprint(k.Want)}, "%s must be %v", where, k.Want)
	case *missingKind:
		path = append(path, "kind")
		props, _ := s.resolve(sub)["properties"].(map[string]any)
		want, _ := s.resolve(asMap(props["kind"]))["const"].(string)
		f = failure.Invalid(path, []string{want}, "%s is required for an object with these fields: set it to %q", displayPath(path), want)
	case *unionKind:
		want := k.want
		if len(want) == 0 {
			want = s.armKinds(sub)
		}
		f = failure.Invalid(path, want, "%s must be one of %s", where, strings.Join(want, ", "))
	case *valueUnion:
		// Arms of one form (objects told apart by their kind) are one accepted form.
		var forms []string
		for _, x := range s.armForms(sub) {
			if !slices.Contains(forms, x) {
				forms = append(forms, x)
			}
		}
		f = failure.Invalid(path, forms, "%s must be %s", where, strings.Join(forms, ", or "))
	case *kind.Type:
		f = failure.Invalid(path, k.Want, "%s must be of type %s", where, strings.Join(k.Want, " or "))
	case *kind.Minimum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be at least %s", where, ratString(k.Want))
	case *kind.Maximum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be at most %s", where, ratString(k.Want))
	case *kind.ExclusiveMinimum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be greater than %s", where, ratString(k.Want))
	case *kind.ExclusiveMaximum:
		f = failure.Invalid(path, rangeOf(sub), "%s must be less than %s", where, ratString(k.Want))
	case *kind.MinItems:
		f = failure.Invalid(path, nil, "%s needs at least %d items", where, k.Want)
	case *kind.MaxItems:
		f = failure.Invalid(path, nil, "%s accepts at most %d items", where, k.Want)
	case *kind.MinLength:
		f = failure.Invalid(path, nil, "%s must have at least %d characters", where, k.Want)
	case *kind.MaxLength:
		f = failure.Invalid(path, nil, "%s must have at most %d characters", where, k.Want)
	case *kind.Pattern:
		f = failure.Invalid(path, []string{"pattern " + k.Want}, "%s must match the pattern %s", where, k.Want)
	default:
		f = failure.Invalid(path, nil, "%s does not match the tool schema", where)
	}
	keyword := strings.Join(ve.ErrorKind.KeywordPath(), "/")
	return f.With("error_type", "schema_"+keyword)
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

func propertyNames(sub map[string]any) []string {
	props, _ := sub["properties"].(map[string]any)
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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

// acceptsNull reports whether a property schema accepts null itself.
func (s *Schema) acceptsNull(m map[string]any) bool {
	m = s.resolve(m)
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		for _, x := range t {
			if x == "null" {
				return true
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		arms, _ := m[key].([]any)
		for _, a := range arms {
			if arm, ok := a.(map[string]any); ok && s.acceptsNull(arm) {
				return true
			}
		}
	}
	return false
}

// dropNulls removes, recursively, the null members of objects whose property schemas do
// not accept null and that are not required: an optional field sent as null is omitted.
func (s *Schema) dropNulls(inst any, sch any) {
	m := s.resolve(asMap(sch))
	if m == nil {
		return
	}
	switch x := inst.(type) {
	case map[string]any:
		for _, key := range []string{"anyOf", "oneOf"} {
			arms, _ := m[key].([]any)
			for _, a := range arms {
				arm := s.resolve(asMap(a))
				props, _ := arm["properties"].(map[string]any)
				k, _ := s.resolve(asMap(props["kind"]))["const"].(string)
				if k != "" && (x["kind"] == k || x["kind"] == nil && impliedArm(arm, x)) {
					s.dropNulls(inst, arm)
				}
			}
		}
		props, _ := m["properties"].(map[string]any)
		required := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, n := range r {
				if name, ok := n.(string); ok {
					required[name] = true
				}
			}
		}
		for k, v := range x {
			p, ok := props[k]
			if !ok {
				continue
			}
			if v == nil && !required[k] && !s.acceptsNull(asMap(p)) {
				delete(x, k)
				continue
			}
			s.dropNulls(v, p)
		}
	case []any:
		for _, v := range x {
			s.dropNulls(v, m["items"])
		}
	}
}

// impliedArm reports whether arm, a union arm whose kind is not required, is the arm of
// object x that omits kind: x holds every field the arm requires.
func impliedArm(arm, x map[string]any) bool {
	req, _ := arm["required"].([]any)
	if len(req) == 0 {
		return false
	}
	for _, r := range req {
		name, _ := r.(string)
		if name == "kind" {
			return false
		}
		if _, ok := x[name]; !ok {
			return false
		}
	}
	return true
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// Nearest returns the name closest to s (a shared prefix or an edit distance of at
// most 2), or "".
func Nearest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := distance(s, n)
		if strings.HasPrefix(n, s) || strings.HasPrefix(s, n) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
