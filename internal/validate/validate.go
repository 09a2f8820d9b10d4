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
			}
		}
		if len(kept) == 0 {
			// Every arm refused the discriminator: report the discriminator itself.
			return &jsonschema.ValidationError{
				InstanceLocation: append(append([]string{}, ve.InstanceLocation...), "kind"),
				ErrorKind:        &unionKind{want: unionKinds(causes)},
			}
		}
		causes = kept
	}
	best := deepest(causes[0])
	for _, c := range causes[1:] {
		d := deepest(c)
		if len(d.InstanceLocation) > len(best.InstanceLocation) {
			best = d
		}
	}
	return best
}

// unionKind is a synthetic error: the discriminator matched no union arm.
type unionKind struct{ want []string }

func (*unionKind) KeywordPath() []string { return []string{"kind"} }
func (u *unionKind) LocalizedString(*message.Printer) string {
	return "kind must be one of " + strings.Join(u.want, ", ")
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
		f = failure.Invalid(path, propertyNames(sub), "%s is not a field of this tool; unknown fields are rejected", displayPath(path))
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		f = failure.Invalid(path, want, "%s must be one of the accepted values", where)
	case *kind.Const:
		f = failure.Invalid(path, []string{fmt.Sprint(k.Want)}, "%s must be %v", where, k.Want)
	case *unionKind:
		f = failure.Invalid(path, k.want, "%s must be one of %s", where, strings.Join(k.want, ", "))
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
