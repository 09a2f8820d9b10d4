package testrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// observationKeys are the exact keys of an observation.
var observationKeys = []string{"name", "phase", "monotonic_ns", "values"}

func summarizeObservations(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (*providers.Analysis, error) {
	f, err := providers.OpenBounded(ctx, in, limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lr := newLineReader(f, in.Index, "observation")
	var rows []gen.ObservationRow
	var count int64
	torn := false
	for {
		line, idx, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		row, err := observation(lr, line, idx)
		if err != nil {
			if !lr.Terminated() {
				torn = true
				break
			}
			return nil, err
		}
		row.Index = count
		count++
		if len(rows) < providers.MaxProjectionRows {
			rows = append(rows, *row)
		}
	}
	var lim []string
	if torn {
		lim = append(lim, "The stream's last line was torn (the workload was killed while writing it); it was dropped.")
	}
	return &providers.Analysis{Provider: provider(), Metrics: map[string]any{"observation_count": count}, Limitations: lim,
		Rows: providers.Project(int(count), func(i int) gen.ObservationRow { return rows[i] })}, nil
}

func observation(lr *lineReader, line []byte, idx int) (*gen.ObservationRow, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return nil, lr.lineError(idx, "not a JSON object")
	}
	if len(fields) != len(observationKeys) {
		return nil, lr.lineError(idx, "an observation holds exactly the keys name, phase, monotonic_ns and values")
	}
	for _, k := range observationKeys {
		if _, ok := fields[k]; !ok {
			return nil, lr.lineError(idx, "an observation holds exactly the keys name, phase, monotonic_ns and values")
		}
	}
	var row gen.ObservationRow
	if json.Unmarshal(fields["name"], &row.Name) != nil {
		return nil, lr.lineError(idx, "name must be a string")
	}
	if json.Unmarshal(fields["phase"], &row.Phase) != nil {
		return nil, lr.lineError(idx, "phase must be a string")
	}
	ns, err := strconv.ParseInt(string(fields["monotonic_ns"]), 10, 64)
	if err != nil || ns < 0 {
		return nil, lr.lineError(idx, "monotonic_ns must be a non-negative integer")
	}
	row.MonotonicNS = ns
	dec := json.NewDecoder(bytes.NewReader(fields["values"]))
	dec.UseNumber()
	if err := dec.Decode(&row.Values); err != nil || row.Values == nil {
		return nil, lr.lineError(idx, "values must be a JSON object")
	}
	return &row, nil
}
