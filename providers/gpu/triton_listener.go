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
	"github.com/flameox/flameox/providers/internal/jsonlines"
)

// Flameox's Triton listener JSONL (format triton, decision 0059): one listener-v1 record
// a line, written by providers/gpu/python/flameox_triton_listener.py.
const (
	listenerSchema  = "flameox.triton-autotune"
	listenerVersion = "listener-v1"
	// maxListenerLine bounds one record: maxTritonCandidates candidates of a few hundred
	// bytes each fit.
	maxListenerLine = 4 << 20
)

// listenerDetector recognizes listener JSONL by its first record's schema member,
// "schema": "flameox.triton-autotune" (the listener writes it first).
var listenerDetector = providers.Detector{Format: gen.FormatTriton, Container: gen.FormatJsonl,
	Match: func(_ string, head []byte) bool {
		first, _, _ := bytes.Cut(head, []byte("\n"))
		if !bytes.HasPrefix(bytes.TrimLeft(first, " \t\r\ufeff"), []byte("{")) {
			return false
		}
		for rest := first; ; {
			_, after, ok := bytes.Cut(rest, []byte(`"schema"`))
			if !ok {
				return false
			}
			v := bytes.TrimLeft(after, " \t")
			if v, ok := bytes.CutPrefix(v, []byte(":")); ok && bytes.HasPrefix(bytes.TrimLeft(v, " \t"), []byte(`"`+listenerSchema+`"`)) {
				return true
			}
			rest = after
		}
	}}

func listenerProvider() gen.Provider {
	return gen.Provider{ID: "triton-autotune", Version: listenerVersion}
}

// listenerRecord is a record's fields, each kept raw so that a wrong type names its field.
// Fields the reader does not use (hook, triton_version, pid, time_ns) are ignored.
type listenerRecord struct {
	Schema        json.RawMessage `json:"schema"`
	Version       json.RawMessage `json:"version"`
	Kernel        json.RawMessage `json:"kernel"`
	Key           json.RawMessage `json:"key"`
	CacheHit      json.RawMessage `json:"cache_hit"`
	TuningSeconds json.RawMessage `json:"tuning_seconds"`
	BestIndex     json.RawMessage `json:"best_index"`
	Candidates    json.RawMessage `json:"candidates"`
}

type listenerCandidate struct {
	Config    json.RawMessage `json:"config"`
	TimingsMS json.RawMessage `json:"timings_ms"`
}

// listenerLines reads the lines of a listener file, each bounded (line indices from 0,
// as every JSON Lines reader of Flameox counts them).
type listenerLines struct {
	*jsonlines.Reader
	src int
}

// fieldError is the DecodeError of a record field: the line (from 0) and the field's
// JSON pointer are in the message and the details.
func (l *listenerLines) fieldError(line int, field, format string, args ...any) error {
	msg := fmt.Sprintf("source %d: line %d: ", l.src, line)
	if field != "" {
		msg += field + ": "
	}
	msg += fmt.Sprintf(format, args...)
	if !l.Terminated() {
		msg += " (the last line has no newline: the file may be truncated)"
	}
	d := map[string]any{"line": line}
	if field != "" {
		d["field"] = field
	}
	return &providers.DecodeError{Source: l.src, Message: msg, Details: d}
}

// readTritonListener decodes the records of a listener file, one row a record.
func readTritonListener(ctx context.Context, in providers.Input) ([]gen.TritonAutotuneRow, error) {
	f, err := providers.OpenBounded(ctx, in, maxTritonBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &listenerLines{Reader: jsonlines.New(f, in.Index, maxListenerLine, "Triton listener record"), src: in.Index}
	var rows []gen.TritonAutotuneRow
	for {
		if len(rows)%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, n, err := l.Next()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rows) >= maxTritonEntries {
			return nil, &providers.LimitError{Source: in.Index, Limit: maxTritonEntries, Unit: "records",
				Message: fmt.Sprintf("source %d holds more than %d Triton listener records", in.Index, maxTritonEntries)}
		}
		row, err := listenerRow(l, line, n, len(rows))
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
}

// listenerRow builds the row of record index, read from line n.
func listenerRow(l *listenerLines, line []byte, n, index int) (gen.TritonAutotuneRow, error) {
	row := gen.TritonAutotuneRow{Index: int64(index)}
	var rec listenerRecord
	if err := decodeStrict(line, &rec); err != nil {
		if index == 0 && json.Valid(line) {
			return row, l.unsupported("its first record is not a JSON object")
		}
		return row, l.fieldError(n, "", "not one JSON object")
	}
	// The first record decides whether this is listener JSONL at all; a later record
	// of another schema or version is a malformed file.
	for _, h := range []struct {
		field string
		raw   json.RawMessage
		want  string
	}{{"/schema", rec.Schema, listenerSchema}, {"/version", rec.Version, listenerVersion}} {
		var s string
		if err := decodeStrict(h.raw, &s); err != nil || s != h.want {
			got := "no string"
			if err == nil {
				got = strconv.Quote(s)
			}
			if index == 0 {
				return row, l.unsupported(fmt.Sprintf("its first record's %s is %s, not %q", h.field[1:], got, h.want))
			}
			return row, l.fieldError(n, h.field, "is %s, not %q", got, h.want)
		}
	}
	var kernel string
	if err := decodeStrict(rec.Kernel, &kernel); err != nil {
		return row, l.fieldError(n, "/kernel", "is not a string")
	}
	row.Kernel = &kernel
	if err := decodeStrict(rec.Key, &row.Key); err != nil || row.Key == nil {
		return row, l.fieldError(n, "/key", "is not an array")
	}
	var hit bool
	if err := decodeStrict(rec.CacheHit, &hit); err != nil {
		return row, l.fieldError(n, "/cache_hit", "is not a boolean")
	}
	row.CacheHit = &hit
	if !isNull(rec.TuningSeconds) {
		v, ok := jsonNumber(rec.TuningSeconds)
		if !ok || v < 0 {
			return row, l.fieldError(n, "/tuning_seconds", "is not a non-negative number or null")
		}
		row.TuningSeconds = &v
	}
	var raws []json.RawMessage
	if err := decodeStrict(rec.Candidates, &raws); err != nil || raws == nil {
		return row, l.fieldError(n, "/candidates", "is not an array")
	}
	if len(raws) > maxTritonCandidates {
		return row, &providers.LimitError{Source: l.src, Limit: maxTritonCandidates, Unit: "candidates",
			Message: fmt.Sprintf("source %d: line %d: /candidates: more than %d candidates", l.src, n, maxTritonCandidates),
			Details: map[string]any{"line": n, "field": "/candidates"}}
	}
	best := -1
	if !isNull(rec.BestIndex) {
		v, ok := jsonNumber(rec.BestIndex)
		if !ok || v != math.Trunc(v) || v < 0 || v >= float64(len(raws)) {
			return row, l.fieldError(n, "/best_index", "is not the index of a candidate (0 to %d) or null", len(raws)-1)
		}
		best = int(v)
	}
	pairs := make([]tritonPair, 0, len(raws))
	for i, raw := range raws {
		at := fmt.Sprintf("/candidates/%d", i)
		var c listenerCandidate
		if err := decodeStrict(raw, &c); err != nil {
			return row, l.fieldError(n, at, "is not an object")
		}
		var cfg map[string]any
		if err := decodeStrict(c.Config, &cfg); err != nil || cfg == nil {
			return row, l.fieldError(n, at+"/config", "is not an object")
		}
		var list []any
		if err := decodeStrict(c.TimingsMS, &list); err != nil || list == nil {
			return row, l.fieldError(n, at+"/timings_ms", "is not an array")
		}
		vals := make([]float64, len(list))
		for j, x := range list {
			v, ok := listenerTiming(x)
			if !ok {
				return row, l.fieldError(n, fmt.Sprintf("%s/timings_ms/%d", at, j), "is not a number, \"Infinity\", \"-Infinity\" or \"NaN\"")
			}
			vals[j] = v
		}
		pairs = append(pairs, tritonPair{cfg, vals})
	}
	tritonSelect(&row, pairs, best)
	return row, nil
}

// unsupported is the answer for a source whose first record is not listener-v1.
func (l *listenerLines) unsupported(why string) error {
	return &providers.UnsupportedError{Source: l.src,
		Message: fmt.Sprintf("source %d is not Flameox Triton listener JSONL (schema %s, version %s): %s", l.src, listenerSchema, listenerVersion, why)}
}

// decodeStrict decodes one JSON value (numbers kept as written) into v; an absent field
// (no bytes) or trailing data is an error.
func decodeStrict(raw []byte, v any) error {
	if len(raw) == 0 {
		return errors.New("absent")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// jsonNumber reads a raw JSON number (not a string holding one).
func jsonNumber(raw json.RawMessage) (float64, bool) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' {
		return 0, false
	}
	var x json.Number
	if err := decodeStrict(raw, &x); err != nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(x), 64)
	return v, err == nil
}

// listenerTiming reads one timing: a number, or a non-finite value by the name the
// listener writes for it (strict JSON has no such number).
func listenerTiming(x any) (float64, bool) {
	switch v := x.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	case string:
		switch v {
		case "Infinity":
			return math.Inf(1), true
		case "-Infinity":
			return math.Inf(-1), true
		case "NaN":
			return math.NaN(), true
		}
	}
	return 0, false
}
