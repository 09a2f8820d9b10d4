package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Input schemas are what tools/list publishes as each tool's inputSchema and what the
// runtime validates arguments with, byte for byte. They keep every assertion the CUE
// contracts make (types, enums, consts, patterns, bounds, item and property counts,
// required fields, additionalProperties false); compactInput only removes bytes that
// assert nothing:
//
//   - the $schema key: the runtime compiles input schemas as 2020-12 whatever they say, and
//     MCP reads a schema without $schema as 2020-12;
//   - definition-level descriptions (a Go-style doc comment, "Argument is one argv
//     element.", that a field without its own comment inherits): the field, its kind
//     const or the tool description says what they say;
//   - copies of a subschema repeated within one schema: the first is kept under $defs and
//     every use is a $ref (beside which a use keeps its own description), when that is
//     shorter. A use may also add assertions to a shared subschema ({"$ref": Argument,
//     minLength: 1}) when neither side holds a keyword that depends on its siblings.
//     In practice Argv and Environment are shared in experiment tools and the RFC 3339
//     timestamp in query_evidence.
//
// The validation baseline under testdata/validation and TestInputValidationUnchanged hold
// the result to the same acceptance and the same failures as before.

// compactInput applies the rewrites above to a composed input schema.
func (m *model) compactInput(s schema) (schema, error) {
	delete(s, "$schema")
	s = m.dropDefinitionDescriptions(s, true).(schema)
	s = m.share(s)
	// The runtime validates --limits with properties.limits of the first tool's input
	// schema, compiled on its own: it must not refer to the document's $defs.
	props, _ := s["properties"].(schema)
	if l, ok := props["limits"]; ok && strings.Contains(canonical(l), `"$ref"`) {
		return nil, fmt.Errorf("properties.limits refers to $defs; the runtime compiles it on its own")
	}
	return s, nil
}

var docName = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*) `)

// isDefinitionDoc reports whether d is the doc comment of a CUE definition (which starts
// with the definition's name) as its rendering carries it.
func (m *model) isDefinitionDoc(d string) bool {
	n := docName.FindStringSubmatch(d)
	if n == nil || !m.def(n[1]).Exists() {
		return false
	}
	s, err := m.defSchema(n[1])
	return err == nil && s["description"] == d
}

// dropDefinitionDescriptions removes, below the root, every description that is a
// definition's doc comment rather than a field's own.
func (m *model) dropDefinitionDescriptions(n any, root bool) any {
	switch x := n.(type) {
	case schema:
		out := schema{}
		for k, v := range x {
			switch k {
			case "description":
				if d, _ := v.(string); !root && m.isDefinitionDoc(d) {
					continue
				}
				out[k] = v
			case "properties", "patternProperties", "$defs":
				props := schema{}
				for p, ps := range v.(schema) {
					props[p] = m.dropDefinitionDescriptions(ps, false)
				}
				out[k] = props
			case "const", "enum", "default":
				out[k] = v
			default:
				out[k] = m.dropDefinitionDescriptions(v, false)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = m.dropDefinitionDescriptions(v, false)
		}
		return out
	}
	return n
}

// providerDescription is a provider arm's description: its definition's doc comment
// without the definition's name ("PerfProvider records ..." becomes "Records ...").
func providerDescription(def, doc string) string {
	rest, ok := strings.CutPrefix(doc, def+" ")
	if !ok || rest == "" {
		return doc
	}
	r := []rune(rest)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// assertionKeywords hold on their own: their meaning does not depend on a sibling keyword,
// so a schema holding them may be split into a $ref and siblings.
var assertionKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "pattern": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "minProperties": true, "maxProperties": true,
	"required": true,
}

// use is one place where a subschema occurs: the node, the property it describes (or
// whose items or arms it is), and how to replace it.
type use struct {
	node schema
	hint string
	set  func(schema)
}

// share hoists repeated subschemas of an input schema into $defs while that makes it
// shorter. Each use keeps its own description beside the $ref, and a node that adds
// assertions to a shared body of assertions refers to it as well (2020-12 applies the
// keywords beside a $ref).
func (m *model) share(s schema) schema { return m.shareSubschemas(s, false) }

// shareExact hoists repeated subschemas of an output schema into $defs while that makes it
// shorter; only exact copies are shared, and a $ref never has siblings (draft-07 ignores
// them).
func (m *model) shareExact(s schema) schema { return m.shareSubschemas(s, true) }

func (m *model) shareSubschemas(s schema, exact bool) schema {
	defs := schema{}
	body := func(n schema) schema {
		if exact {
			return n
		}
		return withoutDescription(n)
	}
	for {
		uses := map[string][]use{}
		var order []string
		var visit func(n schema, hint string, set func(schema), top bool)
		visit = func(n schema, hint string, set func(schema), top bool) {
			if !top {
				if _, ok := n["$ref"]; !ok {
					k := canonical(body(n))
					if _, ok := uses[k]; !ok {
						order = append(order, k)
					}
					uses[k] = append(uses[k], use{n, hint, set})
				}
			}
			eachSubschema(n, hint, visit)
		}
		visit(s, "", func(schema) {}, true)
		for _, name := range sortedKeys(defs) {
			eachSubschema(defs[name].(schema), name, visit)
		}
		best, bestSaving := "", 0
		var bestUses []use
		for _, k := range order {
			b := body(uses[k][0].node)
			if len(b) == 0 {
				continue
			}
			all := append([]use{}, uses[k]...)
			if !exact && onlyAssertions(b) {
				for _, k2 := range order {
					if k2 == k {
						continue
					}
					for _, u := range uses[k2] {
						if extends(u.node, b) {
							all = append(all, u)
						}
					}
				}
			}
			if len(all) < 2 {
				continue
			}
			name := m.defName(b, uses[k][0].hint, defs)
			ref := "#/$defs/" + name
			saving := -len(`"`+name+`":,`) - len(canonical(b))
			if len(defs) == 0 {
				saving -= len(`"$defs":{},`)
			}
			for _, u := range all {
				saving += len(canonical(u.node)) - len(canonical(replaced(u.node, b, ref)))
			}
			if saving > bestSaving {
				best, bestSaving, bestUses = k, saving, all
			}
		}
		if best == "" {
			break
		}
		b := body(uses[best][0].node)
		name := m.defName(b, uses[best][0].hint, defs)
		defs[name] = deepCopy(b)
		for _, u := range bestUses {
			u.set(replaced(u.node, b, "#/$defs/"+name))
		}
	}
	if len(defs) > 0 {
		s["$defs"] = defs
	}
	return s
}

// eachSubschema calls visit with every direct subschema of n, the property it belongs to
// and a setter replacing it.
func eachSubschema(n schema, hint string, visit func(schema, string, func(schema), bool)) {
	for _, k := range sortedKeys(n) {
		switch k {
		case "properties", "patternProperties":
			props := n[k].(schema)
			for _, p := range sortedKeys(props) {
				if ps, ok := props[p].(schema); ok {
					p := p
					visit(ps, p, func(r schema) { props[p] = r }, false)
				}
			}
		case "items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else":
			if ps, ok := n[k].(schema); ok {
				k := k
				visit(ps, hint, func(r schema) { n[k] = r }, false)
			}
		case "anyOf", "allOf", "oneOf", "prefixItems":
			l := n[k].([]any)
			for i := range l {
				if ps, ok := l[i].(schema); ok {
					i := i
					visit(ps, hint, func(r schema) { l[i] = r }, false)
				}
			}
		}
	}
}

// replaced is node with body's keywords replaced by a $ref to it.
func replaced(node, body schema, ref string) schema {
	out := schema{"$ref": ref}
	for k, v := range node {
		if _, ok := body[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// extends reports whether node holds every keyword of body with the same value and
// otherwise only assertion keywords and a description.
func extends(node, body schema) bool {
	if len(node) <= len(body) {
		return false
	}
	for k, v := range body {
		if w, ok := node[k]; !ok || canonical(v) != canonical(w) {
			return false
		}
	}
	for k := range node {
		if _, ok := body[k]; !ok && k != "description" && !assertionKeywords[k] {
			return false
		}
	}
	return true
}

func onlyAssertions(s schema) bool {
	for k := range s {
		if !assertionKeywords[k] {
			return false
		}
	}
	return true
}

func withoutDescription(s schema) schema {
	out := schema{}
	for k, v := range s {
		if k != "description" {
			out[k] = v
		}
	}
	return out
}

// canonical is s as compact JSON with sorted keys.
func canonical(s any) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func sortedKeys(s schema) []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// defName names a shared subschema after the CUE definition it renders, or else after
// the property it first describes (next_action: NextAction).
func (m *model) defName(body schema, hint string, defs schema) string {
	name := m.defNames[canonical(stripDescriptions(body))]
	if name == "" {
		name = camel(hint)
	}
	if name == "" {
		name = "Shared"
	}
	base := name
	for i := 2; defs[name] != nil; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	return name
}

// camel turns a property name into a definition name: next_action becomes NextAction.
func camel(p string) string {
	var b strings.Builder
	for _, w := range strings.Split(p, "_") {
		if w == "" {
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// stripDescriptions is s without any description, at any depth.
func stripDescriptions(n any) any {
	switch x := n.(type) {
	case schema:
		out := schema{}
		for k, v := range x {
			switch k {
			case "description":
			case "const", "enum", "default":
				out[k] = v
			case "properties", "patternProperties", "$defs":
				props := schema{}
				for p, ps := range v.(schema) {
					props[p] = stripDescriptions(ps)
				}
				out[k] = props
			default:
				out[k] = stripDescriptions(v)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = stripDescriptions(v)
		}
		return out
	}
	return n
}
