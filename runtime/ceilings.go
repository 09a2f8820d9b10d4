package runtime

import (
	"bytes"
	"encoding/json"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// publishCeilings gives every tool the server's ceilings, which its published input
// schema (Tool.Input) states as the maxima of page_size and of each limits field, so that
// tools/list advertises what this server accepts rather than the contract's hard maxima
// (decision 0043). The schema stays the one requests are validated against; a value
// between the ceiling and the hard maximum is still answered LIMIT_EXCEEDED with its
// recovery (ceilingFailure). Each schema is written on its first use.
func (rt *Runtime) publishCeilings() {
	for _, t := range rt.tools {
		t.ceilings = &rt.limits
	}
}

// withCeilings returns schema with each limits field's maximum set to the ceiling, and
// page_size's, which is limits.max_rows's alias where a tool has limits; ok is false for
// a tool without limits (a lifecycle tool, whose page_size pages something else). The
// result is compact and keeps the schema's member order and every other token's text.
//
// It scans the schema's bytes once, dropping the whitespace between tokens, copying
// strings, numbers and literals as they are, and replacing the number at each ceiling's
// ".../maximum" pointer: an MCP server publishes every tool's schema before its first
// tools/list answer. Decoding each into maps and encoding it again cost 9 ms of a 30 ms
// start (issue 36); a jsontext token stream, 2.7 ms and 1.3 MB in 18,000 allocations
// for the catalog, and in a cold server most of that in page faults; this scan, 0.6 ms
// and 0.3 MB (BenchmarkWithCeilings). The schemas are the embedded
// contracts, which encoding/json wrote; a schema this scanner does not take as it is (an
// escape that an encoder would rewrite, like \u00e9 or \/, or bytes that are not JSON)
// and a ceiling field without a maximum of its own (no contract has one) take the slower
// path that decodes and encodes, whose output is what this one's must equal (the test).
func withCeilings(schema json.RawMessage, c gen.EffectiveLimits) (json.RawMessage, bool, error) {
	fields := make(map[string]string, len(limitTable))
	for _, lf := range limitTable {
		fields[lf.name] = jsonNumber(lf.get(&c))
	}
	pageSize := jsonNumber(float64(c.MaxRows))
	// field is the ceiling of the schema object at names (a pointer from the root): the
	// page_size property's, or a limits property's; its maximum is what gets replaced.
	field := func(names [][]byte) (string, bool) {
		switch {
		case len(names) == 2 && string(names[0]) == "properties" && string(names[1]) == "page_size":
			return pageSize, true
		case len(names) == 4 && string(names[0]) == "properties" && string(names[1]) == "limits" &&
			string(names[2]) == "properties":
			v, ok := fields[string(names[3])]
			return v, ok
		}
		return "", false
	}
	out := make([]byte, 0, len(schema))
	// stack holds the open containers; names[i] is the member name that holds the value
	// at depth i+1 (the root is depth 0), kept only down to the ceilings' depth.
	stack := make([]byte, 0, 32)
	var names [ceilingDepth][]byte
	// expectName is true where an object's next string is a member name.
	expectName := false
	present, replaced, limits := 0, 0, false
	for i := 0; i < len(schema); {
		b := schema[i]
		depth := len(stack)
		switch b {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case ',', ':':
			out = append(out, b)
			expectName = b == ',' && depth > 0 && stack[depth-1] == '{'
			i++
			continue
		case '{', '[':
			if b == '{' && depth >= 2 && depth <= ceilingDepth-1 {
				// The object just begun is held by the member named at depth-1: a ceiling
				// field's (page_size's at depth 2, a limits field's at 4), or limits itself.
				if _, ok := field(names[:depth]); ok {
					present++
				}
				limits = limits || depth == 2 && string(names[0]) == "properties" && string(names[1]) == "limits"
			}
			stack = append(stack, b)
			expectName = b == '{'
			out = append(out, b)
			i++
			continue
		case '}', ']':
			if depth == 0 || stack[depth-1] != b-2 { // '{'+2 == '}', '['+2 == ']'
				return withCeilingsByMap(schema, c)
			}
			stack = stack[:depth-1]
			expectName = false
			out = append(out, b)
			i++
			continue
		case '"':
			j, ok := stringEnd(schema, i)
			if !ok {
				return withCeilingsByMap(schema, c)
			}
			if expectName && depth <= ceilingDepth {
				names[depth-1] = schema[i+1 : j-1]
			}
			expectName = false
			out = append(out, schema[i:j]...)
			i = j
			continue
		}
		// A number or a literal: up to the next delimiter.
		j := i + 1
		for j < len(schema) && !jsonDelimiter[schema[j]] {
			j++
		}
		if (b == '-' || b >= '0' && b <= '9') && depth >= 1 && depth <= ceilingDepth && string(names[depth-1]) == "maximum" {
			if v, ok := field(names[:depth-1]); ok {
				replaced++
				out = append(out, v...)
				i = j
				continue
			}
		}
		out = append(out, schema[i:j]...)
		i = j
	}
	switch {
	case len(stack) != 0:
		return withCeilingsByMap(schema, c)
	case !limits:
		return schema, false, nil
	case present != replaced:
		return withCeilingsByMap(schema, c)
	}
	return out, true, nil
}

// jsonDelimiter marks the bytes that end a JSON number or literal.
var jsonDelimiter = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, ',': true, ':': true,
	'{': true, '}': true, '[': true, ']': true, '"': true}

// stringEnd returns the index just past the JSON string that begins at schema[i], and
// false for an unterminated string or an escape other than those encoding/json writes
// and keeps (\", \\, \n, \r, \t).
func stringEnd(schema []byte, i int) (int, bool) {
	for j := i + 1; j < len(schema); j++ {
		switch schema[j] {
		case '"':
			return j + 1, true
		case '\\':
			if j+1 >= len(schema) || !bytes.ContainsRune([]byte(`"\\nrt`), rune(schema[j+1])) {
				return 0, false
			}
			j++
		}
	}
	return 0, false
}

// ceilingDepth is the object depth of a ceiling's maximum: the root, properties,
// limits, properties, the field.
const ceilingDepth = 5

// withCeilingsByMap is withCeilings by decoding the schema into maps (numbers as
// json.Number) and encoding them again (members sorted): the path for a ceiling field
// that has no maximum to replace.
func withCeilingsByMap(schema json.RawMessage, c gen.EffectiveLimits) (json.RawMessage, bool, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, false, err
	}
	props, _ := m["properties"].(map[string]any)
	lim, ok := props["limits"].(map[string]any)
	if !ok {
		return schema, false, nil
	}
	fields, _ := lim["properties"].(map[string]any)
	for _, lf := range limitTable {
		if f, ok := fields[lf.name].(map[string]any); ok {
			f["maximum"] = json.Number(jsonNumber(lf.get(&c)))
		}
	}
	if ps, ok := props["page_size"].(map[string]any); ok {
		ps["maximum"] = json.Number(jsonNumber(float64(c.MaxRows)))
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, false, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), true, nil
}

// ceilingFailure turns a schema maximum failure of page_size or a limits field whose
// value is within the contract's hard maximum into the LIMIT_EXCEEDED failure a value
// above the server ceiling gets (with its safe retry and restart recovery); nil for any
// other failure.
func ceilingFailure(f *failure.Failure, raw []byte, ceilings gen.EffectiveLimits) *failure.Failure {
	if f == nil || f.Details == nil || f.Details["error_type"] != "schema_maximum" {
		return nil
	}
	var alias []any
	switch {
	case len(f.FieldPath) == 1 && f.FieldPath[0] == "page_size":
		alias = failure.Path("page_size")
	case len(f.FieldPath) == 2 && f.FieldPath[0] == "limits":
	default:
		return nil
	}
	var args struct {
		PageSize *int64             `json:"page_size"`
		Limits   *gen.RequestLimits `json:"limits"`
	}
	if json.Unmarshal(raw, &args) != nil {
		return nil
	}
	r := gen.RequestLimits{}
	if args.Limits != nil {
		r = *args.Limits
	}
	if alias != nil {
		r = gen.RequestLimits{MaxRows: args.PageSize}
	}
	// Above the contract's hard maximum the schema's own failure stands.
	if _, hard := lower(gen.LimitMaxima, gen.LimitMaxima, &r, alias, "request_limit"); hard != nil {
		return nil
	}
	_, g := lower(ceilings, ceilings, &r, alias, "request_limit")
	return g
}
