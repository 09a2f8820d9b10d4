package trace

import (
	"context"
	"fmt"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// byStartID orders window rows by start and id.
func byStartID(a, b *slice) bool {
	if a.TS != b.TS {
		return a.TS < b.TS
	}
	return a.ID < b.ID
}

// windowBounds reads a window's bounds: each an integer or its canonical decimal string,
// the exclusive end positive and after the start.
func windowBounds(f *gen.WindowFields) (start, end int64, err error) {
	if start, err = bound(f.StartNS, "start_ns"); err != nil {
		return 0, 0, err
	}
	if end, err = bound(f.EndNS, "end_ns"); err != nil {
		return 0, 0, err
	}
	if end <= 0 || end <= start {
		return 0, 0, &providers.FieldError{Field: []any{"end_ns"}, Accepted: []string{"greater than start_ns"},
			Message: "end_ns must be positive and greater than start_ns (the window is [start_ns, end_ns))"}
	}
	return start, end, nil
}

// window is inspect_trace_window: the slices (a span source's spans) overlapping
// [start_ns, end_ns), by start and id.
func window(ctx context.Context, req *providers.Request[gen.WindowFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	start, end, err := windowBounds(req.Fields)
	if err != nil {
		return nil, err
	}
	src, err := open(in)
	if err != nil {
		return nil, err
	}
	f := windowFilter(req.Fields)
	if s, ok := src.(spanSource); ok {
		return s.windowSpans(start, end, f), nil
	}
	in, a, tp, done, err := sliceRead(ctx, src, req.Limits)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, done)
	q := &query{in: in, tp: tp, less: byStartID, filter: f,
		pick: func(s *tracemodel.Nested) (string, bool) { return "", overlaps(s.TS, s.Dur, start, end) },
		figures: func(m map[string]any, n int64) string {
			m["matching_slice_count"] = n
			m["start_ns"], m["end_ns"] = nanos(start), nanos(end)
			return "no_slices_in_window: no slice of the trace overlaps the window; the metrics count the whole trace."
		},
		project: func(_ context.Context, _ *scan, sel []slice) ([]any, error) {
			out := make([]any, len(sel))
			for i := range sel {
				s := &sel[i]
				name, mangled := displayName(s.Name)
				out[i] = gen.TraceWindowRow{ID: s.ID, ParentID: parent(&s.Nested), Name: name, MangledName: mangled,
					Category: optional(s.Category), Ts: nanos(s.TS), Dur: nanos(s.Dur), TrackID: s.Track}
			}
			return out, nil
		}}
	a.Rows = doneRows{q.rows(), done}
	return tp.bind(a), nil
}

// overlaps is the window predicate ts < end AND ts + dur > start AND dur >= 0, without
// overflowing ts + dur.
func overlaps(ts, dur, start, end int64) bool {
	if dur < 0 || ts >= end {
		return false
	}
	if ts > start {
		return true
	}
	// start - ts is in [0, 2^64): exact in uint64.
	return uint64(dur) > uint64(start)-uint64(ts)
}

// bound parses a trace bound: an integer or its canonical decimal string.
func bound(v any, field string) (int64, error) {
	bad := &providers.FieldError{Field: []any{field}, Accepted: []string{"an integer from 0 to 9223372036854775807", "a string matching ^(0|[1-9][0-9]{0,18})$ up to 9223372036854775807"},
		Message: fmt.Sprintf("%s must be an integer from 0 to 9223372036854775807 nanoseconds, or its canonical decimal string", field)}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case interface{ String() string }: // json.Number
		s = x.String()
	case float64:
		if x != float64(int64(x)) || x < 0 || x > 1<<53 {
			return 0, bad
		}
		return int64(x), nil
	default:
		return 0, bad
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, bad
	}
	return n, nil
}
