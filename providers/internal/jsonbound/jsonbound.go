// Package jsonbound checks the shape of a JSON document held in memory before a
// whole-document decoder (encoding/json into structs or any) builds it: what such a
// decoder allocates grows with the number of values and the length of strings, not with
// the document's bytes (a million `[]` in 2 MB become 24 MB of slice headers, a node `{}`
// of three bytes a struct of a hundred). Check bounds those counts in one streaming pass
// that allocates nothing per token, so a hostile document fails typed before memory
// grows.
package jsonbound

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/flameox/flameox/providers"
)

// Bounds are the most a document may hold; zero leaves a count unbounded.
type Bounds struct {
	// What names the document in messages ("the Speedscope document").
	What string
	// Values bounds every JSON value and object name: what a decoder may allocate one
	// element, field or map entry for.
	Values int64
	// Composites bounds objects and arrays, which decode to structs, maps and slices.
	Composites int64
	// StringBytes bounds one string (or object name), in encoded bytes.
	StringBytes int64
}

// Check scans the JSON value at the start of data and returns its length in bytes; what
// follows it is not read (as encoding/json's Decoder.Decode reads one value). The error
// is a *providers.LimitError naming the first bound passed, or a *providers.DecodeError
// when data does not start with a JSON value.
func Check(data []byte, b Bounds) (int64, error) {
	// A bytes.Buffer is read by the decoder in place: no copy, whatever a token's size.
	// Duplicate names and invalid UTF-8 are what encoding/json accepts; tracking names
	// would also keep a set per object.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var values, composites int64
	for {
		start := dec.InputOffset()
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return 0, &providers.DecodeError{Message: b.What + " is empty"}
		}
		if err != nil {
			var se *jsontext.SyntacticError
			if errors.As(err, &se) || err == io.ErrUnexpectedEOF {
				return 0, &providers.DecodeError{Message: b.What + " is not valid JSON"}
			}
			return 0, &providers.DecodeError{Message: b.What + " could not be read"}
		}
		kind := tok.Kind()
		if dec.StackDepth() == 0 && kind != '{' && kind != '[' {
			return dec.InputOffset(), nil // the root value ended
		}
		if kind == '}' || kind == ']' {
			continue
		}
		if kind == '"' && b.StringBytes > 0 && dec.InputOffset()-start > b.StringBytes+2 {
			return 0, limit(b.StringBytes, "bytes", fmt.Sprintf("%s holds a string longer than %d bytes", b.What, b.StringBytes))
		}
		if kind == '{' || kind == '[' {
			if composites++; b.Composites > 0 && composites > b.Composites {
				return 0, limit(b.Composites, "objects_and_arrays", fmt.Sprintf("%s holds more than %d objects and arrays", b.What, b.Composites))
			}
		}
		if values++; b.Values > 0 && values > b.Values {
			return 0, limit(b.Values, "values", fmt.Sprintf("%s holds more than %d JSON values", b.What, b.Values))
		}
	}
}

func limit(n int64, unit, msg string) error {
	return &providers.LimitError{Message: msg, Limit: n, Unit: unit}
}
