package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/encoding/jsonschema"
)

// Compact output schemas are what tools/list publishes as each tool's outputSchema: the
// stable result envelope and one shape for the recoverable states and the failure
// envelope, rendered from the same CUE definitions as the rich schemas but
//
//   - without descriptions (the rich schemas under contracts/tools keep them),
//   - with the definitions override names replaced by an open shape (formats and
//     operation names as strings, next_action an object),
//   - reduced to the envelope (decision 0015): every field of the success envelope and of
//     the problem shape keeps its type, const or enum, items and unions; objects below
//     them are open ({type: object}) except union arms, which keep their discriminator
//     and required fields (a block's type and its rows or values), so coverage, provider,
//     capture, next_action, rows, metrics values and details are open objects, and bounds
//     and patterns are gone,
//   - with a subschema repeated within one document kept once under $defs and referenced
//     with $ref where that is shorter than repeating it.
//
// Only keywords common to draft-07 and 2020-12 appear, plus $defs, which draft-07
// validators resolve as a plain JSON pointer ($ref never has siblings).

// override returns the compact rendering that replaces definition name's, if any.
func (c *compactor) override(name string) (schema, bool, error) {
	switch name {
	case "Format", "OperationName":
		// The catalog lists formats and operation names; results carry them as strings.
		return schema{"type": "string"}, true, nil
	case "NextAction":
		// An open object: its kind vocabulary is the rich schema's.
		return schema{"type": "object"}, true, nil
	}
	return nil, false, nil
}

// compactor renders compact schemas from encoding/jsonschema output.
type compactor struct {
	defs   schema         // raw definitions by name, merged over every rendered value
	bodies map[string]any // compact definition bodies, $refs kept
}

func newCompactor() *compactor {
	return &compactor{defs: schema{}, bodies: map[string]any{}}
}

// rawSchema is encoding/jsonschema's rendering of v with its $defs kept apart.
func rawSchema(v cue.Value) (schema, schema, error) {
	expr, err := jsonschema.Generate(v, nil)
	if err != nil {
		return nil, nil, err
	}
	b, err := v.Context().BuildExpr(expr).MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var s schema
	if err := dec.Decode(&s); err != nil {
		return nil, nil, err
	}
	defs, _ := s["$defs"].(schema)
	delete(s, "$defs")
	delete(s, "$schema")
	return s, defs, nil
}

// value renders v compactly, with $refs to compact definition bodies.
func (c *compactor) value(v cue.Value) (schema, error) {
	s, defs, err := rawSchema(v)
	if err != nil {
		return nil, err
	}
	for k, d := range defs {
		c.defs[k] = d
	}
	n, err := c.node(s)
	if err != nil {
		return nil, err
	}
	return tidy(n).(schema), nil
}

// node renders one raw schema node compactly.
func (c *compactor) node(n any) (any, error) {
	x, ok := n.(schema)
	if !ok {
		return n, nil
	}
	if ref, ok := x["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		body, err := c.body(name)
		if err != nil {
			return nil, err
		}
		siblings := schema{}
		for k, v := range x {
			if k != "$ref" && k != "description" {
				siblings[k] = v
			}
		}
		if len(siblings) == 0 {
			return schema{"$ref": "#/$defs/" + name}, nil
		}
		// An embedding: the definition's body merged with the embedding's keywords.
		rest, err := c.node(siblings)
		if err != nil {
			return nil, err
		}
		return mergeSiblings(deepCopy(body).(schema), rest.(schema)), nil
	}
	out := schema{}
	for k, v := range x {
		switch k {
		case "description", "title", "default", "examples", "$comment", "$schema":
			continue
		case "additionalProperties":
			if v == true {
				continue
			}
			r, err := c.node(v)
			if err != nil {
				return nil, err
			}
			out[k] = r
		case "properties", "patternProperties":
			m := schema{}
			for p, ps := range v.(schema) {
				r, err := c.node(ps)
				if err != nil {
					return nil, err
				}
				m[p] = r
			}
			out[k] = m
		case "items", "not", "contains", "propertyNames":
			r, err := c.node(v)
			if err != nil {
				return nil, err
			}
			out[k] = r
		case "anyOf", "allOf", "oneOf", "prefixItems":
			var l []any
			for _, a := range v.([]any) {
				r, err := c.node(a)
				if err != nil {
					return nil, err
				}
				l = append(l, r)
			}
			out[k] = l
		default:
			out[k] = deepCopy(v)
		}
	}
	return out, nil
}

// body is the compact rendering of definition name.
func (c *compactor) body(name string) (any, error) {
	if b, ok := c.bodies[name]; ok {
		return b, nil
	}
	var b any
	if s, ok, err := c.override(name); err != nil {
		return nil, fmt.Errorf("#%s: %w", name, err)
	} else if ok {
		b = s
	} else {
		raw, ok := c.defs[name]
		if !ok {
			return nil, fmt.Errorf("unresolved $ref #/$defs/%s", name)
		}
		n, err := c.node(raw)
		if err != nil {
			return nil, err
		}
		b = n
	}
	b = tidy(b)
	c.bodies[name] = b
	return b, nil
}

// tidy applies normalize and then folds nullable unions into type lists.
func tidy(n any) any {
	return foldNullable(normalize(n))
}

// foldNullable rewrites anyOf [A, {type: null}] as A with "null" added to its type (or to
// its enum) where that means the same: A has a type and no keyword that applies to null.
func foldNullable(n any) any {
	switch x := n.(type) {
	case schema:
		for k, v := range x {
			x[k] = foldNullable(v)
		}
		arms, ok := x["anyOf"].([]any)
		if !ok || len(x) != 1 {
			return x
		}
		// Arms that only name a type are one type list.
		var types []any
		for _, a := range arms {
			if s, _ := a.(schema); len(s) == 1 {
				if t, ok := s["type"].(string); ok {
					types = append(types, t)
				}
			}
		}
		if len(types) == len(arms) {
			return schema{"type": types}
		}
		if len(arms) != 2 {
			return x
		}
		var other schema
		null := 0
		for _, a := range arms {
			s, _ := a.(schema)
			if len(s) == 1 && s["type"] == "null" {
				null++
			} else {
				other = s
			}
		}
		if null != 1 || other == nil {
			return x
		}
		if e, ok := other["enum"].([]any); ok && len(other) == 1 {
			return schema{"enum": append(append([]any{}, e...), nil)}
		}
		if cst, ok := other["const"]; ok && len(other) == 1 {
			return schema{"enum": []any{cst, nil}}
		}
		for _, k := range []string{"const", "enum", "anyOf", "allOf", "oneOf", "not", "$ref"} {
			if _, ok := other[k]; ok {
				return x
			}
		}
		out := schema{}
		for k, v := range other {
			out[k] = v
		}
		switch t := other["type"].(type) {
		case string:
			out["type"] = []any{t, "null"}
		case []any:
			out["type"] = append(append([]any{}, t...), "null")
		default:
			return x
		}
		return out
	case []any:
		for i, v := range x {
			x[i] = foldNullable(v)
		}
	}
	return n
}

// expand replaces every $ref in n by the compact body of its definition.
func (c *compactor) expand(n any) any {
	switch x := n.(type) {
	case schema:
		if ref, ok := x["$ref"].(string); ok {
			return c.expand(deepCopy(c.bodies[strings.TrimPrefix(ref, "#/$defs/")]))
		}
		out := schema{}
		for k, v := range x {
			out[k] = c.expand(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = c.expand(v)
		}
		return out
	}
	return n
}

// envelopeArm keeps an output arm's own keywords and every one of its properties, each
// reduced by envelopeNode.
func envelopeArm(arm schema) schema {
	out := schema{}
	for k, v := range arm {
		switch k {
		case "properties":
			props := schema{}
			for p, ps := range v.(schema) {
				props[p] = envelopeNode(ps.(schema), false)
			}
			out[k] = props
		case "type", "required", "const", "enum", "if", "then", "else":
			// if/then/else come from mergeArms: the discriminator and what it requires.
			out[k] = v
		}
	}
	return out
}

// envelopeNode reduces a field of the envelope to its type, const, enum, items and unions.
// Objects below the envelope are open: their properties and required fields go (coverage
// is {type: object}), except in the arms of a union, which keep their discriminators (a
// property with a const) and their required fields, so a block still names its type and
// requires its rows or values. Bounds, patterns and additionalProperties go everywhere.
func envelopeNode(s schema, inArm bool) schema {
	out := schema{}
	for k, v := range s {
		switch k {
		case "type", "const", "enum":
			out[k] = v
		case "required":
			if inArm {
				out[k] = v
			}
		case "items":
			if it := envelopeNode(v.(schema), false); len(it) > 0 {
				out[k] = it
			}
		case "anyOf", "allOf", "oneOf":
			var arms []any
			seen := map[string]bool{}
			for _, a := range v.([]any) {
				r := envelopeNode(a.(schema), true)
				if key := canonical(r); !seen[key] {
					seen[key] = true
					arms = append(arms, r)
				}
			}
			if len(arms) == 1 && len(s) == 1 {
				return arms[0].(schema)
			}
			out[k] = arms
		case "properties":
			if !inArm {
				continue
			}
			props := schema{}
			for p, ps := range v.(schema) {
				if r := envelopeNode(ps.(schema), false); hasConst(r) {
					props[p] = r
				}
			}
			if len(props) > 0 {
				out[k] = props
			}
		}
	}
	return foldNullable(out).(schema)
}

// hasConst reports whether s is a discriminator: it holds a const.
func hasConst(s schema) bool {
	_, ok := s["const"]
	return ok
}

// compactOutput is a tool's published output schema: the union of its success envelope
// (definition success, with operation fixed to op when op is not empty) and one shape for
// the recoverable states and the failure envelope, which share their fields.
func (m *model) compactOutput(success, op string) (schema, error) {
	c := newCompactor()
	var arms []schema
	for _, name := range []string{success, "Recoverable", "Failure"} {
		s, err := c.value(m.def(name))
		if err != nil {
			return nil, fmt.Errorf("#%s: %w", name, err)
		}
		if name == success && op != "" {
			s["properties"].(schema)["operation"] = schema{"const": op}
		}
		arms = append(arms, s)
	}
	problem, err := mergeArms(arms[1:], "status")
	if err != nil {
		return nil, err
	}
	var env []any
	for _, a := range []schema{arms[0], problem} {
		arm := envelopeArm(tidy(c.expand(a)).(schema))
		// The root says object; the arms need not repeat it.
		if arm["type"] == "object" {
			delete(arm, "type")
		}
		env = append(env, arm)
	}
	return m.shareExact(schema{"type": "object", "anyOf": env}), nil
}

// mergeArms merges object schemas discriminated by the property disc into one: the union
// of their properties (disc's values joined into one enum), the requirements they share,
// and an if/then per arm that requires more when disc has that arm's values.
func mergeArms(arms []schema, disc string) (schema, error) {
	props := schema{}
	var values []any
	common := map[string]int{}
	for _, a := range arms {
		p, _ := a["properties"].(schema)
		d, _ := p[disc].(schema)
		v, err := discValues(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", disc, err)
		}
		values = append(values, v...)
		for name, ps := range p {
			if name == disc {
				continue
			}
			if prev, ok := props[name]; ok {
				a, _ := json.Marshal(prev)
				b, _ := json.Marshal(ps)
				if !bytes.Equal(a, b) {
					return nil, fmt.Errorf("property %s differs between the arms", name)
				}
			}
			props[name] = ps
		}
		for _, r := range toStrings(a["required"]) {
			common[r]++
		}
	}
	props[disc] = schema{"enum": values}
	var required []string
	for r, n := range common {
		if n == len(arms) {
			required = append(required, r)
		}
	}
	sort.Strings(required)
	out := schema{"type": "object", "properties": props, "required": toAny(required)}
	var conds []any
	for _, a := range arms {
		var extra []string
		for _, r := range toStrings(a["required"]) {
			if common[r] != len(arms) {
				extra = append(extra, r)
			}
		}
		if len(extra) == 0 {
			continue
		}
		v, _ := discValues(a["properties"].(schema)[disc].(schema))
		conds = append(conds, schema{
			"if":   schema{"properties": schema{disc: schema{"enum": v}}},
			"then": schema{"required": toAny(extra)},
		})
	}
	switch len(conds) {
	case 0:
	case 1:
		for k, v := range conds[0].(schema) {
			out[k] = v
		}
	default:
		out["allOf"] = conds
	}
	return out, nil
}

// discValues are the values a discriminator schema (const or enum) admits.
func discValues(d schema) ([]any, error) {
	if c, ok := d["const"]; ok {
		return []any{c}, nil
	}
	if e, ok := d["enum"].([]any); ok {
		return e, nil
	}
	return nil, fmt.Errorf("not a const or enum: %v", d)
}
