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
//
// The validation baseline under testdata/validation and TestInputValidationUnchanged hold
// the result to the same acceptance and the same failures as before.

// compactInput applies the rewrites above to a composed input schema.
func (m *model) compactInput(s schema) schema {
	delete(s, "$schema")
	s = m.dropDefinitionDescriptions(s, true).(schema)
	return m.share(s)
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

// use is one place where a subschema occurs: the node, and how to replace it.
type use struct {
	node schema
	set  func(schema)
}

// share hoists repeated subschemas of s into $defs while that makes s shorter.
func (m *model) share(s schema) schema {
	defs := schema{}
	for {
		uses := map[string][]use{}
		var order []string
		var visit func(n schema, set func(schema), top bool)
		visit = func(n schema, set func(schema), top bool) {
			if !top {
				if _, ok := n["$ref"]; !ok {
					k := canonical(withoutDescription(n))
					if _, ok := uses[k]; !ok {
						order = append(order, k)
					}
					uses[k] = append(uses[k], use{n, set})
				}
			}
			eachSubschema(n, visit)
		}
		visit(s, func(schema) {}, true)
		for _, name := range sortedKeys(defs) {
			d := defs[name].(schema)
			eachSubschema(d, visit)
		}
		best, bestSaving := "", 0
		var bestUses []use
		for _, k := range order {
			body := withoutDescription(uses[k][0].node)
			if len(body) == 0 {
				continue
			}
			// Exact copies, and nodes that add assertions to a body of assertions.
			all := append([]use{}, uses[k]...)
			if onlyAssertions(body) {
				for _, k2 := range order {
					if k2 == k {
						continue
					}
					for _, u := range uses[k2] {
						if extends(u.node, body) {
							all = append(all, u)
						}
					}
				}
			}
			if len(all) < 2 {
				continue
			}
			name := m.defName(body, defs)
			ref := "#/$defs/" + name
			saving := -len(`"`+name+`":,`) - len(canonical(body))
			if len(defs) == 0 {
				saving -= len(`"$defs":{},`)
			}
			for _, u := range all {
				saving += len(canonical(u.node)) - len(canonical(replaced(u.node, body, ref)))
			}
			if saving > bestSaving {
				best, bestSaving, bestUses = k, saving, all
			}
		}
		if best == "" {
			break
		}
		body := withoutDescription(uses[best][0].node)
		name := m.defName(body, defs)
		defs[name] = deepCopy(body)
		for _, u := range bestUses {
			u.set(replaced(u.node, body, "#/$defs/"+name))
		}
	}
	if len(defs) > 0 {
		s["$defs"] = defs
	}
	return s
}

// eachSubschema calls visit with every direct subschema of n and a setter replacing it.
func eachSubschema(n schema, visit func(schema, func(schema), bool)) {
	for _, k := range sortedKeys(n) {
		switch k {
		case "properties", "patternProperties":
			props := n[k].(schema)
			for _, p := range sortedKeys(props) {
				if ps, ok := props[p].(schema); ok {
					p := p
					visit(ps, func(r schema) { props[p] = r }, false)
				}
			}
		case "items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else":
			if ps, ok := n[k].(schema); ok {
				k := k
				visit(ps, func(r schema) { n[k] = r }, false)
			}
		case "anyOf", "allOf", "oneOf", "prefixItems":
			l := n[k].([]any)
			for i := range l {
				if ps, ok := l[i].(schema); ok {
					i := i
					visit(ps, func(r schema) { l[i] = r }, false)
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

// defName names a shared subschema after the CUE definition it renders, or after its
// shape when no definition renders it.
func (m *model) defName(body schema, defs schema) string {
	want := canonical(stripDescriptions(body))
	name := m.defNames[want]
	if name == "" {
		name = "Shared"
	}
	for k, v := range defs {
		if canonical(v) == canonical(body) {
			return k
		}
	}
	base := name
	for i := 2; defs[name] != nil; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	return name
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
