// Package nonfinite reads the non-finite literals Python's json module writes (NaN,
// Infinity, -Infinity, bare, where strict JSON has no such number): Accept marks them as
// strings outside JSON strings, so that encoding/json decodes the document, and Float
// and Name read a marked string back. The inference and GPU families read such files
// (benchmark results, Triton autotune caches).
package nonfinite

import (
	"bytes"
	"math"
	"strings"
)

// Mark prefixes the strings that stand for the literals.
const Mark = "\x00"

// literals are the bare literals, longest first where one is a prefix of another.
var literals = [][]byte{[]byte("-Infinity"), []byte("Infinity"), []byte("NaN")}

// Accept rewrites the literals outside JSON strings as marked strings ("\u0000NaN"), and
// reports whether it found any; a document without them is returned as it is.
func Accept(b []byte) ([]byte, bool) {
	if !bytes.Contains(b, []byte("Infinity")) && !bytes.Contains(b, []byte("NaN")) {
		return b, false
	}
	var out []byte
	inString, escaped, found, last := false, false, false, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		for _, lit := range literals {
			if bytes.HasPrefix(b[i:], lit) {
				out = append(append(out, b[last:i]...), `"\u0000`...)
				out = append(append(out, lit...), '"')
				i += len(lit) - 1
				last, found = i+1, true
				break
			}
		}
	}
	if !found {
		return b, false
	}
	return append(out, b[last:]...), true
}

// Name is the literal a marked string stands for ("NaN", "Infinity", "-Infinity").
func Name(s string) (string, bool) {
	name, ok := strings.CutPrefix(s, Mark)
	if !ok {
		return "", false
	}
	for _, lit := range literals {
		if name == string(lit) {
			return name, true
		}
	}
	return "", false
}

// Float is the value a marked string stands for.
func Float(s string) (float64, bool) {
	name, ok := Name(s)
	switch {
	case !ok:
		return 0, false
	case name == "NaN":
		return math.NaN(), true
	case name == "Infinity":
		return math.Inf(1), true
	}
	return math.Inf(-1), true
}
