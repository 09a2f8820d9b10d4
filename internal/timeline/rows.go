package timeline

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// FromRows reads summarize_trace's or inspect_trace_window's slice rows (decoded with
// json.Decoder.UseNumber, or plain float64s and decimal strings). The lane label is the
// row's process and thread names when it has them, else "track N"; correlation_id and
// stream (summarize_trace's, for flows) are read when present.
func FromRows(rows []map[string]any) []Slice {
	out := make([]Slice, 0, len(rows))
	for _, r := range rows {
		track, _ := integer(r["track_id"])
		s := Slice{Name: str(r["name"]), Track: track, Parent: -1}
		s.ID, _ = integer(r["id"])
		if p, ok := integer(r["parent_id"]); ok {
			s.Parent = p
		}
		s.Start, _ = integer(r["ts"])
		s.Dur, _ = integer(r["dur"])
		s.Lane = LaneLabel(str(r["process_name"]), str(r["thread_name"]), track)
		s.Correlation, s.HasCorrelation = integer(r["correlation_id"])
		_, s.GPU = integer(r["stream"])
		out = append(out, s)
	}
	return out
}

// LaneLabel names a track's lane: "process / thread", either one alone, or "track N".
func LaneLabel(process, thread string, track int64) string {
	switch {
	case process != "" && thread != "":
		return process + " / " + thread
	case thread != "":
		return thread
	case process != "":
		return process + " / track " + strconv.FormatInt(track, 10)
	}
	return fmt.Sprintf("track %d", track)
}

func str(v any) string { s, _ := v.(string); return s }

// integer reads an integral JSON value: a json.Number, a float64 or a decimal string.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<63-1 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}
