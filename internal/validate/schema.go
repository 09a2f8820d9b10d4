package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// draft2020 is the only dialect a document may name in $schema (with or without the
// empty fragment).
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// supported reports whether Compile accepts keyword k. Any other keyword is refused, so
// that a contract cannot come to depend on a keyword this validator would silently ignore.
func supported(k string) bool {
	switch k {
	case "$schema", "$id", "$defs", "$ref", "$comment",
		"title", "description", "default", "examples", "format", "deprecated", "readOnly", "writeOnly",
		"type", "enum", "const",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
		"minLength", "maxLength", "pattern",
		"minItems", "maxItems", "prefixItems", "items",
		"minProperties", "maxProperties", "required", "properties", "patternProperties", "additionalProperties",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else":
		return true
	}
	return false
}

// compiler compiles the schema objects of one document, each location once.
type compiler struct {
	base  string
	doc   any
	nodes map[string]*node // by JSON pointer
}

// compileDocument compiles document doc, named base (mem:///name).
func compileDocument(base string, doc any) (*node, error) {
	c := &compiler{base: base, doc: doc, nodes: map[string]*node{}}
	root, err := c.compile("", doc)
	if err != nil {
		return nil, err
	}
	if err := c.checkCycles(); err != nil {
		return nil, err
	}
	return root, nil
}

// errorf is a compile error at JSON pointer ptr.
func (c *compiler) errorf(ptr, format string, args ...any) error {
	return fmt.Errorf("schema %s at #%s: %s", c.base, ptr, fmt.Sprintf(format, args...))
}

// compile compiles the schema v at JSON pointer ptr.
func (c *compiler) compile(ptr string, v any) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	n := &node{url: c.base + "#" + encodePointer(ptr),
		minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProperties: -1, maxProperties: -1}
	c.nodes[ptr] = n
	switch s := v.(type) {
	case bool:
		n.isBool, n.boolValue = true, s
		return n, nil
	case map[string]any:
		keys := make([]string, 0, len(s))
		for k := range s {
			if !supported(k) {
				return nil, c.errorf(ptr, "keyword %q is not supported by this validator", k)
			}
			keys = append(keys, k)
		}
		// Sorted, so that the first error found is the same every time.
		slices.Sort(keys)
		for _, k := range keys {
			if err := c.keyword(n, ptr, s, k); err != nil {
				return nil, err
			}
		}
		_, then := s["then"]
		_, els := s["else"]
		if n.ifSchema == nil && (then || els) {
			return nil, c.errorf(ptr, "then or else without if has no effect")
		}
		return n, nil
	}
	return nil, c.errorf(ptr, "a schema must be an object or a boolean, not %s", jsonKind(v))
}

// keyword compiles keyword k of schema object s at ptr into n.
func (c *compiler) keyword(n *node, ptr string, s map[string]any, k string) error {
	v := s[k]
	at := ptr + "/" + escapeToken(k)
	var err error
	switch k {
	case "$schema":
		if str, _ := v.(string); strings.TrimSuffix(str, "#") != draft2020 {
			return c.errorf(at, "only the 2020-12 dialect (%s) is supported, not %v", draft2020, v)
		}
	case "$id":
		if _, ok := v.(string); !ok || ptr != "" {
			return c.errorf(at, "$id must be a string at the document root: another resource is not supported")
		}
	case "$comment", "title", "description", "format":
		if _, ok := v.(string); !ok {
			return c.errorf(at, "%s must be a string", k)
		}
	case "deprecated", "readOnly", "writeOnly":
		if _, ok := v.(bool); !ok {
			return c.errorf(at, "%s must be a boolean", k)
		}
	case "default":
	case "examples":
		if _, ok := v.([]any); !ok {
			return c.errorf(at, "examples must be an array")
		}
	case "$defs":
		_, err = c.schemaMap(at, v)
	case "$ref":
		n.ref, err = c.reference(at, v)
	case "type":
		n.types, err = c.typeSet(at, v)
	case "const":
		n.hasConst, n.constVal = true, v
	case "enum":
		arr, ok := v.([]any)
		if !ok {
			return c.errorf(at, "enum must be an array")
		}
		n.hasEnum, n.enum = true, arr
	case "minimum":
		n.minimum, err = c.number(at, v)
	case "maximum":
		n.maximum, err = c.number(at, v)
	case "exclusiveMinimum":
		n.exclusiveMinimum, err = c.number(at, v)
	case "exclusiveMaximum":
		n.exclusiveMaximum, err = c.number(at, v)
	case "minLength":
		n.minLength, err = c.count(at, v)
	case "maxLength":
		n.maxLength, err = c.count(at, v)
	case "minItems":
		n.minItems, err = c.count(at, v)
	case "maxItems":
		n.maxItems, err = c.count(at, v)
	case "minProperties":
		n.minProperties, err = c.count(at, v)
	case "maxProperties":
		n.maxProperties, err = c.count(at, v)
	case "pattern":
		n.pattern, err = c.regexp(at, v)
	case "required":
		n.required, err = c.names(at, v)
	case "properties":
		n.properties, err = c.schemaMap(at, v)
	case "patternProperties":
		err = c.patternProperties(n, at, v)
	case "additionalProperties":
		if b, ok := v.(bool); ok && !b {
			n.additionalFalse = true
		} else {
			n.additional, err = c.compile(at, v)
		}
	case "prefixItems":
		n.prefixItems, err = c.schemaList(at, v)
	case "items":
		n.items, err = c.compile(at, v)
	case "allOf":
		n.allOf, err = c.schemaList(at, v)
	case "anyOf":
		n.anyOf, err = c.schemaList(at, v)
	case "oneOf":
		n.oneOf, err = c.schemaList(at, v)
	case "not":
		n.not, err = c.compile(at, v)
	case "if":
		n.ifSchema, err = c.compile(at, v)
	case "then":
		n.thenSchema, err = c.compile(at, v)
	case "else":
		n.elseSchema, err = c.compile(at, v)
	}
	return err
}

// typeSet compiles type: one type name or a non-empty list of distinct ones.
func (c *compiler) typeSet(at string, v any) (typeSet, error) {
	var list []any
	switch t := v.(type) {
	case string:
		list = []any{t}
	case []any:
		list = t
	}
	if len(list) == 0 {
		return 0, c.errorf(at, "type must be a type name or a non-empty array of them")
	}
	var set typeSet
	for _, x := range list {
		name, _ := x.(string)
		t := typeNamed(name)
		if t == 0 || set&t != 0 {
			return 0, c.errorf(at, "%v is not a type name, or is named twice", x)
		}
		set |= t
	}
	return set, nil
}

// number compiles a numeric bound.
func (c *compiler) number(at string, v any) (*bound, error) {
	n, ok := v.(json.Number)
	if ok {
		if r, ok := parseNumber(n); ok {
			return newBound(r), nil
		}
	}
	return nil, c.errorf(at, "%v is not a number", v)
}

// count compiles a non-negative integer (a length, an item or member count).
func (c *compiler) count(at string, v any) (int, error) {
	if n, ok := v.(json.Number); ok {
		if r, ok := parseNumber(n); ok && r.IsInt() && r.Sign() >= 0 && r.Num().IsInt64() {
			if i := r.Num().Int64(); int64(int(i)) == i {
				return int(i), nil
			}
		}
	}
	return 0, c.errorf(at, "%v is not a non-negative integer", v)
}

// regexp compiles a pattern with Go's regexp package, as v6 did (on its first match:
// newPattern).
func (c *compiler) regexp(at string, v any) (*pattern, error) {
	s, ok := v.(string)
	if !ok {
		return nil, c.errorf(at, "a pattern must be a string")
	}
	re, err := newPattern(s)
	if err != nil {
		return nil, c.errorf(at, "invalid pattern %q: %v", s, err)
	}
	return re, nil
}

// names compiles required: an array of member names.
func (c *compiler) names(at string, v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, c.errorf(at, "required must be an array of names")
	}
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, ok := x.(string)
		if !ok {
			return nil, c.errorf(at, "required must be an array of names, not hold %v", x)
		}
		out = append(out, s)
	}
	return out, nil
}

// schemaMap compiles an object of schemas (properties, patternProperties, $defs).
func (c *compiler) schemaMap(at string, v any) (map[string]*node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, c.errorf(at, "must be an object of schemas")
	}
	out := make(map[string]*node, len(m))
	for name, sub := range m {
		n, err := c.compile(at+"/"+escapeToken(name), sub)
		if err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, nil
}

// schemaList compiles a non-empty array of schemas (prefixItems, allOf, anyOf, oneOf).
func (c *compiler) schemaList(at string, v any) ([]*node, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, c.errorf(at, "must be a non-empty array of schemas")
	}
	out := make([]*node, len(arr))
	for i, sub := range arr {
		n, err := c.compile(at+"/"+strconv.Itoa(i), sub)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// patternProperties compiles patternProperties: each name a pattern, each value a schema.
func (c *compiler) patternProperties(n *node, at string, v any) error {
	m, err := c.schemaMap(at, v)
	if err != nil {
		return err
	}
	// In a fixed order, so that a name matching several patterns fails the same way
	// every time.
	for _, p := range slices.Sorted(maps.Keys(m)) {
		re, err := c.regexp(at+"/"+escapeToken(p), p)
		if err != nil {
			return err
		}
		n.patternProperties = append(n.patternProperties, patternProperty{re, m[p]})
	}
	return nil
}

// reference compiles the target of $ref v: a JSON pointer into this document.
func (c *compiler) reference(at string, v any) (*node, error) {
	ref, ok := v.(string)
	if !ok {
		return nil, c.errorf(at, "$ref must be a string")
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, c.errorf(at, "$ref %q: only references within the document (#/...) are supported", ref)
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil || ptr != "" && !strings.HasPrefix(ptr, "/") {
		return nil, c.errorf(at, "$ref %q: only JSON pointer references are supported", ref)
	}
	target, ok := lookup(c.doc, ptr)
	if !ok {
		return nil, c.errorf(at, "$ref %q names no schema in the document", ref)
	}
	return c.compile(ptr, target)
}

// checkCycles refuses a schema that reaches itself through $ref and the in-place
// applicators (allOf, anyOf, oneOf, not, if, then, else) without descending into the
// instance: checking it would never end.
func (c *compiler) checkCycles() error {
	const (
		visiting = 1
		done     = 2
	)
	state := map[*node]int{}
	var visit func(n *node) error
	visit = func(n *node) error {
		switch state[n] {
		case visiting:
			return fmt.Errorf("schema %s: %s reaches itself through $ref or an applicator without descending into the instance", c.base, n.url)
		case done:
			return nil
		}
		state[n] = visiting
		for _, next := range n.inPlace() {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[n] = done
		return nil
	}
	for _, ptr := range slices.Sorted(maps.Keys(c.nodes)) {
		if err := visit(c.nodes[ptr]); err != nil {
			return err
		}
	}
	return nil
}

// jsonKind names the JSON kind of v for an error message.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
