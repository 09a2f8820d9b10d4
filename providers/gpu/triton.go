package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
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

// readTriton decodes the entries of in: one JSON value after another.
func readTriton(ctx context.Context, in providers.Input) ([]gen.TritonAutotuneRow, error) {
	f, err := providers.OpenBounded(ctx, in, maxTritonBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src := in.Index
	dec := json.NewDecoder(f)
	dec.UseNumber()
	var rows []gen.TritonAutotuneRow
	for n := 0; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			var lim *providers.LimitError
			if errors.As(err, &lim) {
				return nil, lim
			}
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
	row := gen.TritonAutotuneRow{Index: int64(n), Key: e.Key, CandidateCount: int64(len(e.ConfigsTimings)),
		Candidates: make([]map[string]any, 0, len(e.ConfigsTimings))}
	var best []float64
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
		nums, vals, err := timings(ct[1])
		if err != nil {
			return row, tritonDecodeErr(src, n, "configs_timings[%d] has timings that are not numbers", i)
		}
		row.Candidates = append(row.Candidates, map[string]any{"config": cfg, "timings_ms": nums})
		if len(vals) > 0 && (best == nil || less(vals, best)) {
			best = vals
			k := int64(i)
			row.ChosenIndex, row.ChosenConfig = &k, cfg
			t := vals[0]
			row.ChosenTimingMS = &t
		}
	}
	return row, nil
}

// timings reads a timings value: a list of numbers (Triton 3) or one number (older
// Triton, whose do_bench returned a float).
func timings(raw json.RawMessage) ([]json.Number, []float64, error) {
	var list []json.Number
	if err := json.Unmarshal(raw, &list); err != nil {
		var one json.Number
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, nil, err
		}
		list = []json.Number{one}
	}
	vals := make([]float64, len(list))
	for i, s := range list {
		v, err := strconv.ParseFloat(string(s), 64)
		if err != nil {
			return nil, nil, err
		}
		vals[i] = v
	}
	if list == nil {
		list = []json.Number{}
	}
	return list, vals, nil
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

// inspectTriton is inspect_triton_autotune.
func inspectTriton(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	rows, err := readTriton(ctx, req.Inputs[0])
	if err != nil {
		return nil, err
	}
	var candidates int64
	for _, r := range rows {
		candidates += r.CandidateCount
	}
	m := map[string]any{"selection_count": len(rows), "candidate_count": candidates, "cache_hit_count": nil}
	var lim []string
	if len(rows) == 0 {
		lim = append(lim, "no_autotune_entries: the source holds no cache entry; no autotuner tuned (a single config, or a kernel without @triton.autotune), or tuning did not finish.")
	}
	return &providers.Analysis{Provider: tritonProvider(), Metrics: m, Rows: providers.ProjectSlice(rows, func(r gen.TritonAutotuneRow) gen.TritonAutotuneRow { return r }),
		Limitations: lim}, nil
}
