package validate

import (
	"bytes"
	"encoding/json"
	"io"
)

// maxDepth is how deeply arrays and objects may nest in a decoded document. Checking
// recurses once a level, so the bound keeps a hostile document from costing stack; no
// contract nests anywhere near it.
const maxDepth = 256

// decodeError is an error of decode; a constant, so that nothing is built at init.
type decodeError string

// Error returns the text of e.
func (e decodeError) Error() string { return string(e) }

const (
	errTrailing decodeError = "invalid character after top-level value"
	errTooDeep  decodeError = "JSON nests arrays and objects too deeply"
)

// Decode reads an instance as Validate reads one, without checking it against a schema:
// for an instance that was validated already (an analysis worker's arguments, which its
// parent validated and admitted).
func Decode(b []byte) (any, error) { return decode(b) }

// decode reads the one JSON value of b as map[string]any, []any, json.Number (numbers
// kept exact), string, bool or nil. Like the decoder of santhosh-tekuri/jsonschema/v6, it
// refuses anything after the value but white space; it also refuses nesting deeper
// than maxDepth.
func decode(b []byte) (any, error) {
	if tooDeep(b, maxDepth) {
		return nil, errTooDeep
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errTrailing
	}
	return v, nil
}

// tooDeep reports whether the arrays and objects of JSON text b nest deeper than max.
// Brackets inside strings do not count; text that is not JSON is the decoder's to refuse.
func tooDeep(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			// Skip the string, to the first quote that no backslash escapes.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
