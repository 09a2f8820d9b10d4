package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/validate"
	"github.com/flameox/flameox/providers"
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
	// raw is the whole schema-valid argument object, for an analysis worker.
	raw map[string]any
	// admitted holds the operation's typed fields, defaults applied, and runs them.
	admitted providers.Admitted
	// digest and offset are set once inputs are resolved.
	digest string
	offset int64
	// inputs are the resolved sources; started is when admission began.
	inputs  []resolved
	started time.Time
}

// normalizeNumbers rewrites integral JSON numbers (2.0, 1e3, 1700000000000000123.0) as
// integers so they decode into integer fields, exactly (never through float64, which
// would round past 2^53), and keeps every other number as it was written.
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
		if n, ok := integralText(string(x)); ok {
			return json.Number(n)
		}
	}
	return v
}

// integralText returns the integer a JSON number's text denotes ("2.50e1" is "25",
// "-0.0" is "0") when it has no fractional part and at most 20 digits, else false. It
// works on the digits, so it is exact, and bounded by the text (an exponent of more than
// four digits is never integral in 20 digits).
func integralText(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e := strings.TrimPrefix(s[i+1:], "+")
		if len(strings.TrimPrefix(e, "-")) > 4 {
			return "", false
		}
		var err error
		if exp, err = strconv.Atoi(e); err != nil {
			return "", false
		}
		mant = s[:i]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	point := len(intPart) + exp - (len(intPart+frac) - len(digits)) // digits before the point
	if digits == "" {
		return "0", true
	}
	if point < len(strings.TrimRight(digits, "0")) || point > 20 {
		return "", false
	}
	n := digits[:min(point, len(digits))] + strings.Repeat("0", max(point-len(digits), 0))
	if neg {
		n = "-" + n
	}
	return n, true
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
	req := &request{tool: t, fields: map[string]any{}, started: time.Now(), raw: obj}
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
	adm, f := rt.admitFields(t, req.fields)
	if f != nil {
		return nil, f
	}
	req.admitted = adm
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

// admitFields decodes the operation fields of tool t with its analyzer.
func (rt *Runtime) admitFields(t *Tool, fields map[string]any) (providers.Admitted, *failure.Failure) {
	a, ok := rt.providers.LookupAnalyzer(t.Operation.Name)
	if !ok {
		return nil, failure.New(gen.FailureCodeInternalFailure, "operation %s has no analyzer in this build", t.Operation.Name)
	}
	adm, err := a.Admit(fields)
	if err != nil {
		// A rule across the fields (a window's end after its start) names its field.
		var fe *providers.FieldError
		if errors.As(err, &fe) && len(fe.Field) > 0 {
			return nil, failure.Invalid(fe.Field, fe.Accepted, "%s", fe.Message)
		}
		return nil, failure.Invalid(failure.Path(), nil, "operation fields do not match the tool schema")
	}
	return adm, nil
}

// limitField binds one RequestLimits field to its EffectiveLimits counterpart; values
// are compared as float64 (every limit fits exactly).
type limitField struct {
	name      string
	requested func(*gen.RequestLimits) (float64, bool)
	get       func(*gen.EffectiveLimits) float64
	set       func(*gen.EffectiveLimits, float64)
}

func intLimit(name string, req func(*gen.RequestLimits) *int64, eff func(*gen.EffectiveLimits) *int64) limitField {
	return limitField{
		name: name,
		requested: func(r *gen.RequestLimits) (float64, bool) {
			if p := req(r); p != nil {
				return float64(*p), true
			}
			return 0, false
		},
		get: func(l *gen.EffectiveLimits) float64 { return float64(*eff(l)) },
		set: func(l *gen.EffectiveLimits, v float64) { *eff(l) = int64(v) },
	}
}

// limitTable lists every limit in name order, so failures report the first by name.
var limitTable = []limitField{
	intLimit("max_input_bytes", func(r *gen.RequestLimits) *int64 { return r.MaxInputBytes }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxInputBytes }),
	intLimit("max_input_files", func(r *gen.RequestLimits) *int64 { return r.MaxInputFiles }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxInputFiles }),
	intLimit("max_memory_bytes", func(r *gen.RequestLimits) *int64 { return r.MaxMemoryBytes }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxMemoryBytes }),
	intLimit("max_output_bytes", func(r *gen.RequestLimits) *int64 { return r.MaxOutputBytes }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxOutputBytes }),
	intLimit("max_provenance_bytes", func(r *gen.RequestLimits) *int64 { return r.MaxProvenanceBytes }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxProvenanceBytes }),
	intLimit("max_result_bytes", func(r *gen.RequestLimits) *int64 { return r.MaxResultBytes }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxResultBytes }),
	intLimit("max_rows", func(r *gen.RequestLimits) *int64 { return r.MaxRows }, func(l *gen.EffectiveLimits) *int64 { return &l.MaxRows }),
	{
		name: "timeout_seconds",
		requested: func(r *gen.RequestLimits) (float64, bool) {
			if r.TimeoutSeconds != nil {
				return *r.TimeoutSeconds, true
			}
			return 0, false
		},
		get: func(l *gen.EffectiveLimits) float64 { return l.TimeoutSeconds },
		set: func(l *gen.EffectiveLimits, v float64) { l.TimeoutSeconds = v },
	},
}

// lower applies the fields of r to base; a field above the ceiling is LIMIT_EXCEEDED.
// pageSizeAlias names the field path used when max_rows came from page_size.
func lower(base, ceiling gen.EffectiveLimits, r *gen.RequestLimits, pageSizeAlias []any, scope string) (gen.EffectiveLimits, *failure.Failure) {
	eff := base
	if r == nil {
		return eff, nil
	}
	for _, lf := range limitTable {
		v, ok := lf.requested(r)
		if !ok {
			continue
		}
		name, max := lf.name, lf.get(&ceiling)
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
		lf.set(&eff, v)
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
	if err := json.Unmarshal(rt.tools[0].InputSchema(), &in); err != nil {
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
