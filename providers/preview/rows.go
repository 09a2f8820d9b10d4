package preview

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/go-json-experiment/json/jsontext"
)

// object builds one ordered JSON object row.
type object struct{ b []byte }

func newObject() *object { return &object{b: append(make([]byte, 0, 128), '{')} }

func (o *object) key(k string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = jsonvalue.AppendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *object) str(k, v string) { o.key(k); o.b = jsonvalue.AppendString(o.b, v) }
func (o *object) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}
func (o *object) bool(k string, v bool) { o.key(k); o.b = strconv.AppendBool(o.b, v) }
func (o *object) raw(k string, v []byte) {
	o.key(k)
	o.b = append(o.b, v...)
}

// members appends the members of the compact JSON object obj.
func (o *object) members(obj []byte) {
	inner := bytes.TrimSpace(obj[1 : len(obj)-1])
	if len(inner) == 0 {
		return
	}
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, inner...)
}

func (o *object) done() json.RawMessage { return append(o.b, '}') }

// projectValue returns the compact canonical projection of one native JSON value:
// integers outside +-(2^53-1) and numbers that overflow float64 become strings. It scans
// the compact bytes once and copies only when a number needs rewriting.
func projectValue(v jsontext.Value) (jsontext.Value, error) {
	if err := v.Compact(); err != nil {
		return nil, err
	}
	var out []byte
	last := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '"' {
			i = stringEnd(v, i)
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		end := i
		for end < len(v) && strings.IndexByte("+-.eE0123456789", v[end]) >= 0 {
			end++
		}
		if end-i > 15 || bytes.ContainsAny(v[i:end], "eE") {
			if s, wide := jsonvalue.WideNumber(string(v[i:end])); wide {
				out = append(out, v[last:i]...)
				out = jsonvalue.AppendString(out, s)
				last = end
			}
		}
		i = end - 1
	}
	if out == nil {
		return v, nil
	}
	return append(out, v[last:]...), nil
}

// stringEnd returns the index of the quote closing the JSON string that opens at v[start].
func stringEnd(v []byte, start int) int {
	for i := start + 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(v)
}

// hasTopLevelKey reports whether the compact, valid JSON object obj has a member named
// one of keys. It scans bytes instead of decoding: this runs once per returned row.
func hasTopLevelKey(obj []byte, keys []string) bool {
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '"':
			end := stringEnd(obj, i)
			if depth == 1 && end+1 < len(obj) && obj[end+1] == ':' {
				for _, k := range keys {
					if string(obj[i+1:end]) == k {
						return true
					}
				}
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return false
}

// recordRow projects one native record into a preview row: an object keeps its members
// (unless one collides with the reserved names, then it moves under value), anything else
// becomes {"value": ...}. prefix members (record_index, section) come first.
func recordRow(v jsontext.Value, digest string, reserved []string, prefix func(*object)) (json.RawMessage, error) {
	v, err := projectValue(v)
	if err != nil {
		return nil, err
	}
	o := newObject()
	if prefix != nil {
		prefix(o)
	}
	if v.Kind() == '{' {
		if !hasTopLevelKey(v, reserved) {
			o.members(v)
			o.str("input_sha256", digest)
			return o.done(), nil
		}
	}
	o.raw("value", v)
	o.str("input_sha256", digest)
	return o.done(), nil
}
