package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/nonfinite"
)

// Bounds of Triton autotune evidence.
const (
	// maxTritonBytes bounds a source (an entry, or the provider's bundle of entries).
	maxTritonBytes = 64 << 20
	// maxTritonEntries bounds the entries of one source.
	maxTritonEntries = providers.MaxProjectionRows
	// maxTritonCandidates bounds the configs of one entry.
	maxTritonCandidates = 10_000
)

// tritonDetector recognizes a Triton cache entry, <kernel>.autotune.json, or the triton
// provider's bundle of entries, triton.autotune.jsonl.
var tritonDetector = providers.Detector{Format: gen.FormatTritonCache, Suffixes: []string{".autotune.json", ".autotune.jsonl"},
	Container: gen.FormatJSON,
	Match: func(_ string, head []byte) bool {
		return bytes.Contains(head, []byte(`"configs_timings"`)) && bytes.Contains(head, []byte(`"key"`))
	}}

func tritonProvider() gen.Provider {
	return gen.Provider{ID: "flameox-triton-cache", Version: "native-1"}
}

// tritonEntry is one cache entry as Triton's autotuner writes it (Autotuner.check_disk_cache):
// {"key": [...], "configs_timings": [[config, timings], ...]}.
type tritonEntry struct {
	Key            []any               `json:"key"`
	ConfigsTimings [][]json.RawMessage `json:"configs_timings"`
}

func tritonDecodeErr(src int, entry int, format string, args ...any) error {
	return &providers.DecodeError{Source: src, Message: fmt.Sprintf("source %d: entry %d: ", src, entry) + fmt.Sprintf(format, args...),
		Details: map[string]any{"entry": entry}}
}

// readTriton decodes the entries of in: one JSON value after another. Python's json
// writes a non-finite float as a bare literal (Infinity, -Infinity, NaN), which strict
// JSON rejects; Triton's autotuner caches [inf, inf, inf] for a config that failed, so
// such literals are accepted outside strings (nonfinite.Accept).
func readTriton(ctx context.Context, in providers.Input) ([]gen.TritonAutotuneRow, error) {
	f, err := providers.OpenBounded(ctx, in, maxTritonBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src := in.Index
	b, err := io.ReadAll(f)
	if err != nil {
		var lim *providers.LimitError
		if errors.As(err, &lim) {
			return nil, lim
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &providers.DecodeError{Source: src, Message: fmt.Sprintf("source %d cannot be read to its end (a damaged compressed stream?)", src)}
	}
	accepted, _ := nonfinite.Accept(b)
	dec := json.NewDecoder(bytes.NewReader(accepted))
	dec.UseNumber()
	var rows []gen.TritonAutotuneRow
	for n := 0; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, tritonDecodeErr(src, n, "not valid JSON")
		}
		if n >= maxTritonEntries {
			return nil, &providers.LimitError{Source: src, Limit: maxTritonEntries, Unit: "entries",
				Message: fmt.Sprintf("source %d holds more than %d autotune entries", src, maxTritonEntries)}
		}
		row, err := tritonRow(raw, src, n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// tritonRow builds the row of entry n.
func tritonRow(raw json.RawMessage, src, n int) (gen.TritonAutotuneRow, error) {
	var e tritonEntry
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&e); err != nil || e.Key == nil || e.ConfigsTimings == nil {
		if n == 0 && e.ConfigsTimings == nil && bytes.Contains(raw, []byte(`"`+listenerSchema+`"`)) {
			return gen.TritonAutotuneRow{}, &providers.UnsupportedError{Source: src,
				Message: fmt.Sprintf("source %d is Flameox's Triton listener JSONL, not a Triton autotune cache entry: give its format as triton", src)}
		}
		if n == 0 && (err != nil || (e.Key == nil && e.ConfigsTimings == nil)) {
			return gen.TritonAutotuneRow{}, &providers.UnsupportedError{Source: src,
				Message: fmt.Sprintf("source %d is not a Triton autotune cache entry (an object with key and configs_timings)", src)}
		}
		return gen.TritonAutotuneRow{}, tritonDecodeErr(src, n, "not a Triton autotune cache entry (an object with key and configs_timings)")
	}
	if len(e.ConfigsTimings) > maxTritonCandidates {
		return gen.TritonAutotuneRow{}, &providers.LimitError{Source: src, Limit: maxTritonCandidates, Unit: "configs",
			Message: fmt.Sprintf("source %d: entry %d has more than %d configs", src, n, maxTritonCandidates)}
	}
	row := gen.TritonAutotuneRow{Index: int64(n), Key: unmarkAll(e.Key)}
	pairs := make([]tritonPair, 0, len(e.ConfigsTimings))
	for i, ct := range e.ConfigsTimings {
		if len(ct) != 2 {
			return row, tritonDecodeErr(src, n, "configs_timings[%d] is not a [config, timings] pair", i)
		}
		var cfg map[string]any
		cd := json.NewDecoder(bytes.NewReader(ct[0]))
		cd.UseNumber()
		if err := cd.Decode(&cfg); err != nil || cfg == nil {
			return row, tritonDecodeErr(src, n, "configs_timings[%d] has no config object", i)
		}
		cfg = unmark(cfg).(map[string]any)
		vals, err := timings(ct[1])
		if err != nil {
			return row, tritonDecodeErr(src, n, "configs_timings[%d] has timings that are not numbers", i)
		}
		pairs = append(pairs, tritonPair{cfg, vals})
	}
	tritonSelect(&row, pairs, -1)
	return row, nil
}

// tritonPair is one candidate config and its timings (ms).
type tritonPair struct {
	cfg  map[string]any
	vals []float64
}

// tritonSelect sets the candidates of row and its chosen config: chosen is the index
// Triton recorded (a listener record), or -1 for Triton's own rule, the lowest timings
// (min(timings, key=timings.get); a cache entry). Each candidate's ratio is its first
// timing over the chosen one's.
func tritonSelect(row *gen.TritonAutotuneRow, pairs []tritonPair, chosen int) {
	row.CandidateCount = int64(len(pairs))
	row.Candidates = make([]map[string]any, 0, len(pairs))
	var best []float64
	for i, p := range pairs {
		row.Candidates = append(row.Candidates, tritonCandidate(p.cfg, p.vals))
		if chosen < 0 && len(p.vals) > 0 && (best == nil || less(p.vals, best)) {
			best = p.vals
			row.ChosenIndex = ptr(int64(i))
		}
	}
	if chosen >= 0 && chosen < len(pairs) {
		row.ChosenIndex = ptr(int64(chosen))
	}
	if row.ChosenIndex == nil {
		return
	}
	c := pairs[*row.ChosenIndex]
	row.ChosenConfig = c.cfg
	first := math.NaN()
	if len(c.vals) > 0 {
		first = c.vals[0]
		row.ChosenTimingMS = finite(first)
	}
	for i, p := range pairs {
		if len(p.vals) > 0 {
			row.Candidates[i]["ratio_to_chosen"] = ratio(p.vals[0], first)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// tritonQuantiles are the quantiles Triton's autotuner asks do_bench for, in the order it
// caches them (Autotuner._bench: quantiles=(0.5, 0.2, 0.8)), as candidate fields.
var tritonQuantiles = [3]string{"median_ms", "p20_ms", "p80_ms"}

// tritonCandidate is the candidate of one config and its timings: Triton's three
// quantiles labelled, or any other shape as cached under timings_ms; ratio_to_chosen is
// set once the chosen config is known (null without one).
func tritonCandidate(cfg map[string]any, vals []float64) map[string]any {
	c := map[string]any{"config": cfg, "ratio_to_chosen": nil}
	if len(vals) > 0 && math.IsInf(vals[0], 1) {
		c["failed"] = true
	}
	if len(vals) == len(tritonQuantiles) {
		for i, name := range tritonQuantiles {
			c[name] = finite(vals[i])
		}
		return c
	}
	list := make([]*float64, len(vals))
	for i, v := range vals {
		list[i] = finite(v)
	}
	for _, name := range tritonQuantiles {
		c[name] = nil
	}
	c["timings_ms"] = list
	return c
}

// ratio is t over chosen rounded to 4 decimals (correctly, as Python's round), or null
// when it is not finite.
func ratio(t, chosen float64) *float64 {
	r := t / chosen
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return nil
	}
	r, _ = strconv.ParseFloat(strconv.FormatFloat(r, 'f', 4, 64), 64)
	return &r
}

// finite is v, or null when v is not finite (JSON has no infinity).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// timings reads a timings value: a list of numbers (Triton 3's quantiles) or one number
// (a do_bench that returned a float). Non-finite literals come marked (nonfinite.Accept).
func timings(raw json.RawMessage) ([]float64, error) {
	var list []any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&list); err != nil {
		var one any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&one); err != nil {
			return nil, err
		}
		list = []any{one}
	}
	vals := make([]float64, len(list))
	for i, x := range list {
		v, ok := number(x)
		if !ok {
			return nil, errors.New("not a number")
		}
		vals[i] = v
	}
	return vals, nil
}

// less compares timings as Python compares lists: element by element, then by length.
func less(a, b []float64) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// inspectTriton is inspect_triton_autotune: Triton cache entries (triton-cache) or
// Flameox listener records (triton).
func inspectTriton(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	listener := in.Format == gen.FormatTriton
	var (
		rows []gen.TritonAutotuneRow
		err  error
	)
	if listener {
		rows, err = readTritonListener(ctx, in)
	} else {
		rows, err = readTriton(ctx, in)
	}
	if err != nil {
		return nil, err
	}
	var candidates int64
	for _, r := range rows {
		candidates += r.CandidateCount
	}
	m := map[string]any{"selection_count": len(rows), "candidate_count": candidates, "cache_hit_count": nil, "tuning_seconds": nil}
	p := tritonProvider()
	var lim []string
	if listener {
		p = listenerProvider()
		hits, seconds := 0, 0.0
		for _, r := range rows {
			if r.CacheHit != nil && *r.CacheHit {
				hits++
			}
			if r.TuningSeconds != nil {
				seconds += *r.TuningSeconds
			}
		}
		m["cache_hit_count"], m["tuning_seconds"] = hits, seconds
		if len(rows) == 0 {
			lim = append(lim, "no_autotune_entries: the listener recorded no selection; no autotuner with two or more configs met a new key, Triton was not imported, or the workload set its own knobs.autotuning.listener over Flameox's.")
		}
	} else if len(rows) == 0 {
		lim = append(lim, "no_autotune_entries: the source holds no cache entry; no autotuner tuned (a single config, or a kernel without @triton.autotune), or tuning did not finish.")
	}
	return &providers.Analysis{Provider: p, Metrics: m, Rows: providers.ProjectSlice(rows, func(r gen.TritonAutotuneRow) gen.TritonAutotuneRow { return r }),
		Limitations: lim}, nil
}

// number reads a decoded JSON number (json.Number) or a marked non-finite literal.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case string:
		return nonfinite.Float(x)
	}
	return 0, false
}

// unmark replaces the marked non-finite literals in a decoded value (a config or a key)
// with their names as strings, as Flameox carries non-finite values in JSON.
func unmark(v any) any {
	switch x := v.(type) {
	case string:
		if name, ok := nonfinite.Name(x); ok {
			return name
		}
	case map[string]any:
		for k, e := range x {
			x[k] = unmark(e)
		}
	case []any:
		return unmarkAll(x)
	}
	return v
}

// unmarkAll is unmark over a list, in place.
func unmarkAll(l []any) []any {
	for i, e := range l {
		l[i] = unmark(e)
	}
	return l
}
