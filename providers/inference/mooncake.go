package inference

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// maxMooncakeLine bounds one trace line, as the catalog says.
const maxMooncakeLine = 64 << 10

// maxDistinctHash bounds the hash ids counted exactly: a bitset of 2^26 bits (8 MiB).
const maxDistinctHash = 1 << 26

// mooncakeLine is one request of a Mooncake trace.
type mooncakeLine struct {
	Timestamp    *int64  `json:"timestamp"`
	InputLength  *int64  `json:"input_length"`
	OutputLength *int64  `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids"`
}

// decodeTraceLine decodes and checks one trace line: timestamp, input_length and
// output_length are required non-negative integers, hash_ids a list of them.
func decodeTraceLine(line []byte, index int, lr *lineReader, m *mooncakeLine) error {
	*m = mooncakeLine{HashIDs: m.HashIDs[:0]}
	if err := json.Unmarshal(line, m); err != nil {
		return lr.lineError(index, err, "not a Mooncake trace request (%s)", jsonProblem(err))
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"timestamp", m.Timestamp}, {"input_length", m.InputLength}, {"output_length", m.OutputLength}} {
		if f.v == nil {
			return lr.lineError(index, nil, "not a Mooncake trace request: %s is missing", f.name)
		}
		if *f.v < 0 {
			return lr.lineError(index, nil, "%s is negative", f.name)
		}
	}
	for _, h := range m.HashIDs {
		if h < 0 {
			return lr.lineError(index, nil, "hash_ids holds a negative id")
		}
	}
	return nil
}

func traceRow(m *mooncakeLine, index int) gen.InferenceTraceRow {
	return gen.InferenceTraceRow{LineIndex: int64(index), TimestampMS: *m.Timestamp, InputLength: *m.InputLength,
		OutputLength: *m.OutputLength, PrefixHashCount: int64(len(m.HashIDs))}
}

// traceStats are the figures of a whole trace.
type traceStats struct {
	requests                                int
	firstMS, lastMS, minMS, maxMS           int64
	regressions                             int
	maxInput, maxOutput                     int64
	totalHashes, distinctHashes             int64
	distinctExact                           bool
	digest                                  string
	inputLength, outputLength, prefixHashes *series
}

// scanTrace reads every line of a trace once: counts, maxima, prefix-hash counts (exact
// distinct ids through a bitset while the ids stay below 2^26), the workload digest and,
// with keep, the values for percentiles.
func scanTrace(ctx context.Context, in providers.Input, keep bool) (*traceStats, error) {
	st := &traceStats{distinctExact: true, inputLength: &series{keep: keep}, outputLength: &series{keep: keep}, prefixHashes: &series{keep: keep}}
	h := sha256.New()
	var seen []uint64
	var m mooncakeLine
	var buf []byte
	err := eachLine(ctx, in, maxMooncakeLine, "Mooncake request", func(line []byte, index int, lr *lineReader) error {
		if err := decodeTraceLine(line, index, lr, &m); err != nil {
			return err
		}
		if keep && st.requests >= maxRequests {
			return &providers.LimitError{Source: in.Index, Limit: maxRequests, Unit: "requests",
				Message: fmt.Sprintf("the Mooncake trace holds more than %d requests, the bound of an exact percentile summary", maxRequests)}
		}
		t := *m.Timestamp
		if st.requests == 0 {
			st.firstMS, st.minMS, st.maxMS = t, t, t
		} else if t < st.lastMS {
			st.regressions++
		}
		st.lastMS, st.minMS, st.maxMS = t, min(st.minMS, t), max(st.maxMS, t)
		st.requests++
		st.maxInput, st.maxOutput = max(st.maxInput, *m.InputLength), max(st.maxOutput, *m.OutputLength)
		st.inputLength.add(float64(*m.InputLength))
		st.outputLength.add(float64(*m.OutputLength))
		st.prefixHashes.add(float64(len(m.HashIDs)))
		st.totalHashes += int64(len(m.HashIDs))
		buf = strconv.AppendInt(buf[:0], t, 10)
		buf = append(strconv.AppendInt(append(buf, ' '), *m.InputLength, 10), ' ')
		buf = append(strconv.AppendInt(buf, *m.OutputLength, 10), ':')
		for i, id := range m.HashIDs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, id, 10)
			if !st.distinctExact {
				continue
			}
			if id >= maxDistinctHash {
				st.distinctExact, seen = false, nil
				continue
			}
			for int(id>>6) >= len(seen) {
				seen = append(seen, make([]uint64, len(seen)+1)...)
			}
			if seen[id>>6]&(1<<(id&63)) == 0 {
				seen[id>>6] |= 1 << (id & 63)
				st.distinctHashes++
			}
		}
		h.Write(append(buf, '\n'))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if st.requests == 0 {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the Mooncake trace holds no request"}
	}
	st.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return st, nil
}

// traceIdentity: the workload is the trace itself; a trace names no system.
func traceIdentity(st *traceStats) identity {
	id := identity{fields: map[string]string{"workload.trace": st.digest}, identified: map[string]bool{axisWorkload: true}}
	return id
}

// traceMetrics are the comparison vocabulary of a trace and the series of each.
func (st *traceStats) metric(name string) *series {
	switch name {
	case "input_length":
		return st.inputLength
	case "output_length":
		return st.outputLength
	case "prefix_hash_count":
		return st.prefixHashes
	}
	return nil
}

var traceMetrics = []string{"input_length", "output_length", "prefix_hash_count"}

// summarizeTrace is summarize_inference of a Mooncake trace.
func summarizeTrace(ctx context.Context, in providers.Input) (*providers.Analysis, error) {
	st, err := scanTrace(ctx, in, true)
	if err != nil {
		return nil, err
	}
	stats := map[string]any{}
	for _, n := range traceMetrics {
		stats[n] = st.metric(n).summary()
	}
	m := map[string]any{"request_count": st.requests, "max_input_length": st.maxInput, "max_output_length": st.maxOutput,
		"first_timestamp_ms": st.firstMS, "span_ms": st.maxMS - st.minMS, "timestamp_regressions": st.regressions,
		"total_prefix_hashes": st.totalHashes, "statistics": stats,
		"statistics_source": "computed by Flameox from the trace's request lines"}
	a := &providers.Analysis{Provider: gen.Provider{ID: "mooncake-trace", Version: "request-trace-v1"}, Metrics: m,
		Rows: lineRows{in: in, records: int64(st.requests), max: maxMooncakeLine, what: "Mooncake request",
			row: func(line []byte, index int, lr *lineReader) (any, error) {
				var t mooncakeLine
				if err := decodeTraceLine(line, index, lr, &t); err != nil {
					return nil, err
				}
				return traceRow(&t, index), nil
			}}}
	if st.distinctExact {
		m["distinct_prefix_hashes"], m["reused_prefix_hashes"] = st.distinctHashes, st.totalHashes-st.distinctHashes
	} else {
		m["distinct_prefix_hashes"], m["reused_prefix_hashes"] = nil, nil
		a.Limitations = append(a.Limitations, fmt.Sprintf("A hash id is at least %d: distinct and reused prefix hashes are not counted.", maxDistinctHash))
	}
	if st.regressions > 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d requests have a timestamp earlier than the line before them; the trace is not in arrival order.", st.regressions))
	}
	traceIdentity(st).metrics(m)
	return a, nil
}
