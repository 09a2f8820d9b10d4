package runtime

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

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
// It streams the schema's tokens once (jsontext), replacing the number at each ceiling's
// ".../maximum" pointer: an MCP server publishes every tool's schema before its first
// tools/list answer, and decoding each into maps and encoding it again cost 9 ms of a
// 30 ms start (issue 36). A ceiling field without a maximum of its own (no contract has
// one) takes the slower path that adds the member.
func withCeilings(schema json.RawMessage, c gen.EffectiveLimits) (json.RawMessage, bool, error) {
	targets := ceilingTargets(c)
	dec := jsontext.NewDecoder(bytes.NewReader(schema))
	var out bytes.Buffer
	out.Grow(len(schema))
	enc := jsontext.NewEncoder(&out)
	// path holds the member names of the enclosing objects down to the ceilings' depth
	// (/properties/limits/properties/NAME/maximum); a name is read only there.
	var path [ceilingDepth]string
	present, replaced, limits := 0, 0, false
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
		depth := dec.StackDepth()
		kind := tok.Kind()
		if kind == '"' && depth <= ceilingDepth {
			if k, n := dec.StackIndex(depth); k == '{' && n%2 == 1 {
				// An object's odd entries are its names.
				path[depth-1] = tok.String()
				if err := enc.WriteToken(tok); err != nil {
					return nil, false, err
				}
				continue
			}
		}
		switch {
		case kind == '{' && depth >= 2 && depth <= ceilingDepth:
			// The object just begun is held by the member named at depth-1: a ceiling
			// field's (page_size's at depth 3, a limits field's at 5), or limits itself.
			at := pointer(path[:depth-1])
			if _, ok := targets[at+"/maximum"]; ok {
				present++
			}
			limits = limits || at == "/properties/limits"
		case kind == '0' && depth <= ceilingDepth:
			if v, ok := targets[pointer(path[:depth])]; ok {
				replaced++
				if err := enc.WriteValue(jsontext.Value(v)); err != nil {
					return nil, false, err
				}
				continue
			}
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, false, err
		}
	}
	switch {
	case !limits:
		return schema, false, nil
	case present != replaced:
		return withCeilingsByMap(schema, c)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), true, nil
}

// ceilingDepth is the object depth of a ceiling's maximum: the root, properties,
// limits, properties, the field.
const ceilingDepth = 5

// pointer is the JSON pointer of the member names (none needs escaping).
func pointer(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "/" + strings.Join(names, "/")
}

// ceilingTargets maps the JSON pointer of each ceiling's maximum to its new text.
func ceilingTargets(c gen.EffectiveLimits) map[string]string {
	t := make(map[string]string, len(limitTable)+1)
	for _, lf := range limitTable {
		t["/properties/limits/properties/"+lf.name+"/maximum"] = jsonNumber(lf.get(&c))
	}
	t["/properties/page_size/maximum"] = jsonNumber(float64(c.MaxRows))
	return t
}

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
