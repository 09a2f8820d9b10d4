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
// a tool without limits (a lifecycle tool, whose page_size pages something else).
// Numbers keep their text (json.Number).
func withCeilings(schema json.RawMessage, c gen.EffectiveLimits) (json.RawMessage, bool, error) {
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
