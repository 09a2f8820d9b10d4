package validate

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// invalid is what checking returns in quick mode, where only whether a value fails
// matters (if, not, the arms of oneOf after a match): no tree is built.
var invalid = &schemaError{}

// checker checks one instance, keeping the instance location of the value at hand.
type checker struct {
	path []string
}

// checkDocument checks instance v against root and returns the error tree, or nil.
func checkDocument(root *node, v any) *schemaError {
	c := &checker{path: make([]string, 0, 16)}
	e := c.check(root, v, false)
	if e == nil {
		return nil
	}
	return &schemaError{schemaURL: root.url, kind: kindRoot, causes: errorsOf(e)}
}

// fail makes an error of n at the current location.
func (c *checker) fail(n *node, k errorKind, quick bool) *schemaError {
	if quick {
		return invalid
	}
	return &schemaError{instance: slices.Clone(c.path), schemaURL: n.url, kind: k}
}

// child checks v, the member or item tok of the value at hand, against n.
func (c *checker) child(n *node, v any, tok string, quick bool) *schemaError {
	c.path = append(c.path, tok)
	e := c.check(n, v, quick)
	c.path = c.path[:len(c.path)-1]
	return e
}

// check checks v against n, in the order of santhosh-tekuri/jsonschema/v6: type, const
// and enum first and alone; then $ref; then the keywords of v's type; then the
// applicators. It returns nil, the one error, or a group of them.
func (c *checker) check(n *node, v any, quick bool) *schemaError {
	if n.isBool {
		if n.boolValue {
			return nil
		}
		return c.fail(n, kindFalse, quick)
	}
	if n.types != 0 && !n.types.accepts(v) {
		e := c.fail(n, kindType, quick)
		if !quick {
			e.names = n.types.names()
		}
		return e
	}
	if n.hasConst && !equal(v, n.constVal) {
		e := c.fail(n, kindConst, quick)
		if !quick {
			e.want = n.constVal
		}
		return e
	}
	if n.hasEnum && !slices.ContainsFunc(n.enum, func(w any) bool { return equal(v, w) }) {
		e := c.fail(n, kindEnum, quick)
		if !quick {
			e.want = n.enum
		}
		return e
	}
	var errs []*schemaError
	if n.ref != nil {
		if e := c.check(n.ref, v, quick); e != nil {
			if quick {
				return e
			}
			ref := c.fail(n, kindRef, false)
			ref.causes = errorsOf(e)
			errs = append(errs, ref)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		errs = c.object(n, x, errs, quick)
	case []any:
		errs = c.array(n, x, errs, quick)
	case string:
		errs = c.string(n, x, errs, quick)
	case json.Number:
		errs = c.number(n, x, errs, quick)
	}
	if quick && len(errs) > 0 {
		return invalid
	}
	errs = c.applicators(n, v, errs, quick)
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	if quick {
		return invalid
	}
	g := c.fail(n, kindGroup, false)
	g.causes = errs
	return g
}

// accepts reports whether v is of a type in t; an integer-valued number is an integer.
func (t typeSet) accepts(v any) bool {
	switch x := v.(type) {
	case nil:
		return t&typeNull != 0
	case bool:
		return t&typeBoolean != 0
	case json.Number:
		return t&typeNumber != 0 || t&typeInteger != 0 && isInteger(x)
	case string:
		return t&typeString != 0
	case []any:
		return t&typeArray != 0
	case map[string]any:
		return t&typeObject != 0
	}
	return false
}

// counted appends an error with limit to errs.
func (c *checker) counted(errs []*schemaError, n *node, k errorKind, limit int, quick bool) []*schemaError {
	e := c.fail(n, k, quick)
	if !quick {
		e.limit = limit
	}
	return append(errs, e)
}

// object checks the keywords of objects: the counts, required, then each member against
// properties, patternProperties and additionalProperties.
func (c *checker) object(n *node, obj map[string]any, errs []*schemaError, quick bool) []*schemaError {
	if n.minProperties >= 0 && len(obj) < n.minProperties {
		errs = c.counted(errs, n, kindMinProperties, n.minProperties, quick)
	}
	if n.maxProperties >= 0 && len(obj) > n.maxProperties {
		errs = c.counted(errs, n, kindMaxProperties, n.maxProperties, quick)
	}
	var missing []string
	for _, name := range n.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		e := c.fail(n, kindRequired, quick)
		if !quick {
			e.names = missing
		}
		errs = append(errs, e)
	}
	if quick && len(errs) > 0 {
		return errs
	}
	// Members are visited in map order; their errors are sorted by member name below, so
	// that the tree, and the failure drawn from it, is the same every time.
	first := len(errs)
	var unknown []string
	for name, v := range obj {
		matched := false
		if s, ok := n.properties[name]; ok {
			matched = true
			errs = appendError(errs, c.child(s, v, name, quick))
		}
		for _, pp := range n.patternProperties {
			if pp.re.MatchString(name) {
				matched = true
				errs = appendError(errs, c.child(pp.schema, v, name, quick))
			}
		}
		switch {
		case matched:
		case n.additionalFalse:
			unknown = append(unknown, name)
		case n.additional != nil:
			errs = appendError(errs, c.child(n.additional, v, name, quick))
		}
		if quick && (len(errs) > 0 || len(unknown) > 0) {
			return append(errs, invalid)
		}
	}
	if len(errs)-first > 1 {
		slices.SortStableFunc(errs[first:], func(a, b *schemaError) int {
			return strings.Compare(a.instance[len(c.path)], b.instance[len(c.path)])
		})
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		e := c.fail(n, kindAdditionalProperties, quick)
		if !quick {
			e.names = unknown
		}
		errs = append(errs, e)
	}
	return errs
}

// appendError appends e to errs, if there is an error.
func appendError(errs []*schemaError, e *schemaError) []*schemaError {
	if e != nil {
		errs = append(errs, e)
	}
	return errs
}

// array checks the keywords of arrays: the counts, then each item against prefixItems
// and items.
func (c *checker) array(n *node, arr []any, errs []*schemaError, quick bool) []*schemaError {
	if n.minItems >= 0 && len(arr) < n.minItems {
		errs = c.counted(errs, n, kindMinItems, n.minItems, quick)
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		errs = c.counted(errs, n, kindMaxItems, n.maxItems, quick)
	}
	for i, v := range arr {
		if quick && len(errs) > 0 {
			return errs
		}
		s := n.items
		if i < len(n.prefixItems) {
			s = n.prefixItems[i]
		}
		if s != nil {
			errs = appendError(errs, c.child(s, v, strconv.Itoa(i), quick))
		}
	}
	return errs
}

// string checks the keywords of strings: the lengths, in code points, and pattern,
// which matches anywhere in s unless anchored.
func (c *checker) string(n *node, s string, errs []*schemaError, quick bool) []*schemaError {
	if n.minLength >= 0 || n.maxLength >= 0 {
		length := utf8.RuneCountInString(s)
		if n.minLength >= 0 && length < n.minLength {
			errs = c.counted(errs, n, kindMinLength, n.minLength, quick)
		}
		if n.maxLength >= 0 && length > n.maxLength {
			errs = c.counted(errs, n, kindMaxLength, n.maxLength, quick)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		e := c.fail(n, kindPattern, quick)
		if !quick {
			e.pattern = n.pattern.String()
		}
		errs = append(errs, e)
	}
	return errs
}

// number checks the bounds of x.
func (c *checker) number(n *node, x json.Number, errs []*schemaError, quick bool) []*schemaError {
	errs = c.beyond(errs, n, n.minimum, kindMinimum, x, quick, func(d int) bool { return d < 0 })
	errs = c.beyond(errs, n, n.maximum, kindMaximum, x, quick, func(d int) bool { return d > 0 })
	errs = c.beyond(errs, n, n.exclusiveMinimum, kindExclusiveMinimum, x, quick, func(d int) bool { return d <= 0 })
	return c.beyond(errs, n, n.exclusiveMaximum, kindExclusiveMaximum, x, quick, func(d int) bool { return d >= 0 })
}

// beyond appends an error of kind k if x is beyond b, that is if fails holds for the
// comparison of x with b. A number too large for math/big to expand is beyond every
// bound.
func (c *checker) beyond(errs []*schemaError, n *node, b *bound, k errorKind, x json.Number, quick bool, fails func(int) bool) []*schemaError {
	if b == nil {
		return errs
	}
	if cmp, ok := b.cmp(x); ok && !fails(cmp) {
		return errs
	}
	e := c.fail(n, k, quick)
	if !quick {
		e.bound = b.rat
	}
	return append(errs, e)
}

// applicators checks not, allOf, anyOf, oneOf and if, in that order.
func (c *checker) applicators(n *node, v any, errs []*schemaError, quick bool) []*schemaError {
	if n.not != nil && c.check(n.not, v, true) == nil {
		errs = append(errs, c.fail(n, kindNot, quick))
	}
	if len(n.allOf) > 0 {
		var causes []*schemaError
		for _, s := range n.allOf {
			if e := c.check(s, v, quick); e != nil {
				causes = append(causes, e)
				if quick {
					break
				}
			}
		}
		errs = c.union(errs, n, kindAllOf, causes, quick)
	}
	if len(n.anyOf) > 0 {
		var causes []*schemaError
		for _, s := range n.anyOf {
			e := c.check(s, v, quick)
			if e == nil {
				causes = nil
				break
			}
			causes = append(causes, e)
		}
		errs = c.union(errs, n, kindAnyOf, causes, quick)
	}
	if len(n.oneOf) > 0 {
		matched := -1
		var causes []*schemaError
		for i, s := range n.oneOf {
			e := c.check(s, v, quick || matched >= 0)
			if e != nil {
				if matched < 0 {
					causes = append(causes, e)
				}
				continue
			}
			if matched < 0 {
				matched = i
				continue
			}
			// A second arm matched: a leaf error.
			errs = append(errs, c.fail(n, kindOneOf, quick))
			break
		}
		if matched < 0 {
			errs = c.union(errs, n, kindOneOf, causes, quick)
		}
	}
	if n.ifSchema != nil {
		if c.check(n.ifSchema, v, true) == nil {
			if n.thenSchema != nil {
				errs = appendError(errs, c.check(n.thenSchema, v, quick))
			}
		} else if n.elseSchema != nil {
			errs = appendError(errs, c.check(n.elseSchema, v, quick))
		}
	}
	return errs
}

// union appends the error of an applicator whose arms failed with causes, if any did.
func (c *checker) union(errs []*schemaError, n *node, k errorKind, causes []*schemaError, quick bool) []*schemaError {
	if len(causes) == 0 {
		return errs
	}
	e := c.fail(n, k, quick)
	if !quick {
		e.causes = causes
	}
	return append(errs, e)
}
