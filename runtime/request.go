package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/runtime/failure"
	"github.com/flameox/flameox/runtime/validate"
)

// transportFields are the analysis-tool fields that are not operation fields.
var transportFields = map[string]bool{"sources": true, "continuation": true, "limits": true, "page_size": true}

// request is an admitted analysis request: typed once, consumed everywhere after.
type request struct {
	tool         *Tool
	sources      []gen.Source
	continuation string
	limits       gen.EffectiveLimits
	// fields holds the operation fields exactly as the caller supplied them, for replay.
	fields map[string]any
	// typed is the operation's typed field model with defaults applied.
	typed any
	// digest and offset are set once inputs are resolved.
	digest string
	offset int64
}

// normalizeNumbers rewrites integral JSON numbers (2.0) as integers so they decode into
// integer fields, and keeps every other number exact.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			if _, err := x.Int64(); err != nil {
				return json.Number(fmt.Sprintf("%d", int64(f)))
			}
		}
	}
	return v
}

func decodeInto(v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(into)
}

// admit turns a schema-valid instance into a typed request.
func (rt *Runtime) admit(t *Tool, inst any) (*request, *failure.Failure) {
	obj, _ := normalizeNumbers(inst).(map[string]any)
	req := &request{tool: t, fields: map[string]any{}}
	var transport struct {
		Sources      []gen.Source       `json:"sources"`
		Continuation *string            `json:"continuation"`
		Limits       *gen.RequestLimits `json:"limits"`
		PageSize     *int64             `json:"page_size"`
	}
	tr := map[string]any{}
	for k, v := range obj {
		if transportFields[k] {
			tr[k] = v
		} else {
			req.fields[k] = v
		}
	}
	if err := decodeInto(tr, &transport); err != nil {
		return nil, failure.Invalid(failure.Path(), nil, "arguments do not match the tool schema")
	}
	req.sources = transport.Sources
	if transport.Continuation != nil {
		req.continuation = *transport.Continuation
	}
	typed, err := newFields(t.Operation)
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the operation's fields could not be admitted")
	}
	if err := decodeInto(req.fields, typed); err != nil {
		return nil, failure.Invalid(failure.Path(), nil, "operation fields do not match the tool schema")
	}
	if d, ok := typed.(interface{ ApplyDefaults() }); ok {
		d.ApplyDefaults()
	}
	req.typed = typed
	lim, f := rt.effectiveLimits(transport.Limits, transport.PageSize)
	if f != nil {
		return nil, f
	}
	req.limits = lim
	if n := len(req.sources); n < t.Operation.MinSources || n > t.Operation.MaxSources {
		return nil, failure.Invalid(failure.Path("sources"), nil, "%s accepts %d to %d sources; got %d",
			t.Name, t.Operation.MinSources, t.Operation.MaxSources, n).
			With("operation", string(t.Operation.Name)).With("minimum_sources", t.Operation.MinSources).
			With("maximum_sources", t.Operation.MaxSources).With("actual_sources", n)
	}
	return req, nil
}

// newFields returns a pointer to the operation's typed field model.
func newFields(op gen.OperationDecl) (any, error) {
	switch op.FieldsDefinition {
	case "PreviewFields":
		return new(gen.PreviewFields), nil
	case "NoFields":
		return new(gen.NoFields), nil
	case "CpuHotspotFields":
		return new(gen.CpuHotspotFields), nil
	case "CpuCallerFields":
		return new(gen.CpuCallerFields), nil
	case "ScalingFields":
		return new(gen.ScalingFields), nil
	case "CompareFields":
		return new(gen.CompareFields), nil
	case "InferenceCompareFields":
		return new(gen.InferenceCompareFields), nil
	case "StaticFields":
		return new(gen.StaticFields), nil
	case "WindowFields":
		return new(gen.WindowFields), nil
	}
	return nil, fmt.Errorf("no Go model for #%s", op.FieldsDefinition)
}

func limitFields(r *gen.RequestLimits) map[string]*float64 {
	out := map[string]*float64{}
	if r == nil {
		return out
	}
	add := func(name string, p *int64) {
		if p != nil {
			v := float64(*p)
			out[name] = &v
		}
	}
	add("max_rows", r.MaxRows)
	add("max_input_bytes", r.MaxInputBytes)
	add("max_input_files", r.MaxInputFiles)
	add("max_output_bytes", r.MaxOutputBytes)
	add("max_memory_bytes", r.MaxMemoryBytes)
	add("max_provenance_bytes", r.MaxProvenanceBytes)
	if r.TimeoutSeconds != nil {
		v := *r.TimeoutSeconds
		out["timeout_seconds"] = &v
	}
	return out
}

func getLimit(l *gen.EffectiveLimits, name string) float64 {
	switch name {
	case "max_rows":
		return float64(l.MaxRows)
	case "max_input_bytes":
		return float64(l.MaxInputBytes)
	case "max_input_files":
		return float64(l.MaxInputFiles)
	case "max_output_bytes":
		return float64(l.MaxOutputBytes)
	case "max_memory_bytes":
		return float64(l.MaxMemoryBytes)
	case "max_provenance_bytes":
		return float64(l.MaxProvenanceBytes)
	case "timeout_seconds":
		return l.TimeoutSeconds
	}
	panic("unknown limit " + name)
}

func setLimit(l *gen.EffectiveLimits, name string, v float64) {
	switch name {
	case "max_rows":
		l.MaxRows = int64(v)
	case "max_input_bytes":
		l.MaxInputBytes = int64(v)
	case "max_input_files":
		l.MaxInputFiles = int64(v)
	case "max_output_bytes":
		l.MaxOutputBytes = int64(v)
	case "max_memory_bytes":
		l.MaxMemoryBytes = int64(v)
	case "max_provenance_bytes":
		l.MaxProvenanceBytes = int64(v)
	case "timeout_seconds":
		l.TimeoutSeconds = v
	}
}

// lower applies the fields of r to base; a field above the ceiling is LIMIT_EXCEEDED.
// pageSizeAlias names the field path used when max_rows came from page_size.
func lower(base, ceiling gen.EffectiveLimits, r *gen.RequestLimits, pageSizeAlias []any, scope string) (gen.EffectiveLimits, *failure.Failure) {
	eff := base
	fields := limitFields(r)
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		v := *fields[name]
		max := getLimit(&ceiling, name)
		if v > max {
			path := failure.Path("limits", name)
			if name == "max_rows" && pageSizeAlias != nil {
				path = pageSizeAlias
			}
			f := failure.New(gen.FailureCodeLimitExceeded,
				"%s %v is above the server ceiling %v; requests may only lower limits. Retry with %s=%v, or restart or reconnect Flameox with the desired --limits setting",
				displayLimit(path), jsonNumber(v), jsonNumber(max), displayLimit(path), jsonNumber(max))
			f.FieldPath = path
			f.AcceptedValues = []string{"<=" + jsonNumber(max)}
			f.With("field", name).With("requested", v).With("effective_ceiling", max).
				With("scope", scope).With("mutability", "lower_only").
				With("safe_retry", map[string]any{name: max}).
				With("recovery", map[string]any{"action": "restart_reconnect", "startup_setting": name})
			return eff, f
		}
		setLimit(&eff, name, v)
	}
	return eff, nil
}

func displayLimit(path []any) string {
	if len(path) == 1 {
		return fmt.Sprint(path[0])
	}
	return fmt.Sprintf("%v.%v", path[0], path[1])
}

func jsonNumber(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// effectiveLimits lowers the server ceilings by the request's limits and page_size.
func (rt *Runtime) effectiveLimits(r *gen.RequestLimits, pageSize *int64) (gen.EffectiveLimits, *failure.Failure) {
	var alias []any
	if pageSize != nil {
		if r != nil && r.MaxRows != nil && *r.MaxRows != *pageSize {
			return gen.EffectiveLimits{}, failure.Invalid(failure.Path("page_size"), nil,
				"page_size %d and limits.max_rows %d must agree; page_size is shorthand for limits.max_rows", *pageSize, *r.MaxRows)
		}
		merged := gen.RequestLimits{}
		if r != nil {
			merged = *r
		}
		merged.MaxRows = pageSize
		r = &merged
		alias = failure.Path("page_size")
	}
	return lower(rt.limits, rt.limits, r, alias, "request_limit")
}

// parseStartupLimits validates --limits JSON against the RequestLimits contract, the same
// schema every tool publishes for its limits field.
func (rt *Runtime) parseStartupLimits(b []byte) (*gen.RequestLimits, *failure.Failure) {
	var in map[string]any
	if err := json.Unmarshal(rt.tools[0].InputSchema, &in); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the limits contract could not be loaded")
	}
	sub := in["properties"].(map[string]any)["limits"]
	sb, _ := json.Marshal(sub)
	v, err := validate.Compile("limits.json", sb)
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the limits contract could not be compiled")
	}
	inst, f := v.Validate(b)
	if f != nil {
		f.FieldPath = append(failure.Path("limits"), f.FieldPath...)
		f.Message = "--limits: " + f.Message
		return nil, f
	}
	var lim gen.RequestLimits
	if err := decodeInto(normalizeNumbers(inst), &lim); err != nil {
		return nil, failure.Invalid(failure.Path("limits"), nil, "--limits must be a RequestLimits object")
	}
	return &lim, nil
}
