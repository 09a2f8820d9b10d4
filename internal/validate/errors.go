package validate

import (
	"math/big"
	"slices"
)

// schemaError is one node of the error tree that checking an instance builds: where in
// the instance, which schema object, which keyword refused the value with that keyword's
// parameters, and the errors beneath it. The tree has the shape and order of
// santhosh-tekuri/jsonschema/v6's ValidationError tree, which the failure mapping was
// written against.
type schemaError struct {
	// instance is the instance location: member names and array indices.
	instance []string
	// schemaURL is the location of the schema object, mem:///name#/json/pointer with each
	// pointer token path-escaped.
	schemaURL string
	kind      errorKind
	// names: the missing members (required), the unknown ones (additionalProperties), the
	// wanted types (type), the accepted kinds (unionKind).
	names []string
	// want is the wanted value (const) or values (enum, a []any).
	want any
	// bound is the number of minimum, maximum, exclusiveMinimum and exclusiveMaximum.
	bound *big.Rat
	// limit is the count of minLength, maxLength, minItems, maxItems, minProperties and
	// maxProperties.
	limit int
	// pattern is the regular expression of pattern.
	pattern string
	causes  []*schemaError
}

// errorKind names what a schemaError reports.
type errorKind uint8

const (
	kindRoot  errorKind = iota // the document: the root schema's errors
	kindGroup                  // several errors of one schema object
	kindRef                    // $ref: the referenced schema's errors
	kindFalse                  // the schema false
	kindType
	kindConst
	kindEnum
	kindMinimum
	kindMaximum
	kindExclusiveMinimum
	kindExclusiveMaximum
	kindMinLength
	kindMaxLength
	kindPattern
	kindMinItems
	kindMaxItems
	kindMinProperties
	kindMaxProperties
	kindRequired
	kindAdditionalProperties
	kindAllOf
	kindAnyOf
	kindOneOf
	kindNot
	// The kinds below are made by deepest, never by checking.
	kindValueUnion  // a value matched none of a union's forms
	kindUnionKind   // the kind discriminator matched no union arm
	kindMissingKind // an object omitted the kind its one fitting union arm requires
)

// keyword is the keyword path of k, as the error_type of a failure names it: "" where
// the error belongs to no keyword (a group, the false schema, not).
func (k errorKind) keyword() string {
	switch k {
	case kindRef:
		return "$ref"
	case kindType:
		return "type"
	case kindConst:
		return "const"
	case kindEnum:
		return "enum"
	case kindMinimum:
		return "minimum"
	case kindMaximum:
		return "maximum"
	case kindExclusiveMinimum:
		return "exclusiveMinimum"
	case kindExclusiveMaximum:
		return "exclusiveMaximum"
	case kindMinLength:
		return "minLength"
	case kindMaxLength:
		return "maxLength"
	case kindPattern:
		return "pattern"
	case kindMinItems:
		return "minItems"
	case kindMaxItems:
		return "maxItems"
	case kindMinProperties:
		return "minProperties"
	case kindMaxProperties:
		return "maxProperties"
	case kindRequired, kindMissingKind:
		return "required"
	case kindAdditionalProperties:
		return "additionalProperties"
	case kindAllOf:
		return "allOf"
	case kindAnyOf, kindValueUnion:
		return "anyOf"
	case kindOneOf:
		return "oneOf"
	case kindUnionKind:
		return "kind"
	}
	return ""
}

// errorsOf returns the errors that e stands for: a group's causes, or e alone.
func errorsOf(e *schemaError) []*schemaError {
	if e.kind == kindGroup {
		return e.causes
	}
	return []*schemaError{e}
}

// at reports whether e is at instance location loc.
func (e *schemaError) at(loc []string) bool {
	return slices.Equal(e.instance, loc)
}
