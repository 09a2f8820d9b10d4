package validate

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
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

	pattern *pattern

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
	re     *pattern
	schema *node
}

// pattern is a regular expression of a schema, compiled with Go's regexp package on its
// first match: a schema whose instances never reach a pattern compiles none of it, and a
// source that many schemas state (a name's pattern) is compiled once in the process.
// Compile has parsed the source, so compiling it cannot fail.
type pattern struct {
	src string
	re  func() *regexp.Regexp
}

// patterns holds the process's patterns by source. It only grows, with the sources of
// the schemas the process compiles: here the embedded contracts, a fixed set.
var patterns sync.Map // string -> *pattern

// newPattern parses src as regexp.Compile does and returns its shared pattern.
func newPattern(src string) (*pattern, error) {
	if p, ok := patterns.Load(src); ok {
		return p.(*pattern), nil
	}
	if _, err := syntax.Parse(src, syntax.Perl); err != nil {
		return nil, err
	}
	p, _ := patterns.LoadOrStore(src, &pattern{src: src, re: sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(src)
	})})
	return p.(*pattern), nil
}

// MatchString reports whether s contains a match of the pattern.
func (p *pattern) MatchString(s string) bool { return p.re().MatchString(s) }

// String is the pattern's source.
func (p *pattern) String() string { return p.src }

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
