// Package validate checks raw tool arguments against the exact JSON Schema bytes that the
// MCP catalog publishes, and maps the deepest schema error to an INVALID_INPUT failure with
// the field path and the accepted values. It never returns the validator's own text.
//
// The validator is this package's own (compiling in schema.go, checking in check.go, the
// error tree in errors.go): it covers the JSON Schema 2020-12 keywords the contracts use,
// refuses a schema with any other keyword, and builds its errors in the shape and order
// that santhosh-tekuri/jsonschema/v6 did, so that failures stay as they were. Nothing is
// done at package initialization.
package validate

import (
	"bytes"

	"github.com/flameox/flameox/internal/failure"
)

// Schema is one compiled tool input schema.
type Schema struct {
	url  string
	doc  any
	root *node
}

// Compile compiles the schema document b, naming it by name. It refuses a document that
// is not JSON, a keyword outside the supported set, and a malformed keyword value.
func Compile(name string, b []byte) (*Schema, error) {
	doc, err := decode(b)
	if err != nil {
		return nil, err
	}
	url := "mem:///" + name
	root, err := compileDocument(url, doc)
	if err != nil {
		return nil, err
	}
	return &Schema{url: url, doc: doc, root: root}, nil
}

// Validate checks raw and returns the decoded instance (numbers kept exact) or an
// INVALID_INPUT failure.
func (s *Schema) Validate(raw []byte) (any, *failure.Failure) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	inst, err := decode(raw)
	if err != nil {
		return nil, failure.Invalid(failure.Path(), []string{"object"}, "arguments must be one JSON object")
	}
	// Models often send null for an optional field they mean to omit: drop it where the
	// schema does not accept null itself.
	s.dropNulls(inst, s.doc)
	if e := checkDocument(s.root, inst); e != nil {
		return nil, s.describe(deepest(e))
	}
	return inst, nil
}
