package validate

import (
	"regexp"
	"slices"
)

// node is one compiled schema object (or boolean schema) of a document.
type node struct {
	// url is the node's location, mem:///name#/json/pointer, the pointer's tokens
	// path-escaped: the SchemaURL of its errors.
	url string

	// isBool marks a boolean schema; boolValue is which.
	isBool, boolValue bool

	ref *node

	types    typeSet
	hasConst bool
	constVal any
	hasEnum  bool
	enum     []any

	minimum, maximum, exclusiveMinimum, exclusiveMaximum *bound

	// The counts are -1 where absent.
	minLength, maxLength, minItems, maxItems, minProperties, maxProperties int

	pattern *regexp.Regexp

	required          []string
	properties        map[string]*node
	patternProperties []patternProperty
	// additionalProperties: absent (nil, additionalFalse unset), false (additionalFalse),
	// or a schema (additional; true is the schema true).
	additional      *node
	additionalFalse bool
	prefixItems     []*node
	items           *node

	allOf, anyOf, oneOf                   []*node
	not, ifSchema, thenSchema, elseSchema *node
}

// patternProperty is one member of patternProperties.
type patternProperty struct {
	re     *regexp.Regexp
	schema *node
}

// typeSet is a set of JSON types, one bit each, in the order a type error names them.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeNumber
	typeInteger
	typeString
	typeArray
	typeObject
)

var typeNames = [...]string{"null", "boolean", "number", "integer", "string", "array", "object"}

// names lists the types of t in the order null, boolean, number, integer, string, array,
// object.
func (t typeSet) names() []string {
	var out []string
	for i, n := range typeNames {
		if t&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// typeNamed is the type called name, or 0.
func typeNamed(name string) typeSet {
	if i := slices.Index(typeNames[:], name); i >= 0 {
		return 1 << i
	}
	return 0
}

// inPlace lists the schemas that n applies to the instance it checks itself.
func (n *node) inPlace() []*node {
	out := slices.Concat(n.allOf, n.anyOf, n.oneOf)
	for _, x := range []*node{n.ref, n.not, n.ifSchema, n.thenSchema, n.elseSchema} {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}
