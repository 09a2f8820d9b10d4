package trace

import (
	"fmt"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// filter is a request's slice filters (decision 0037): a slice passes when it passes
// every filter given. The zero filter passes everything; a nil *filter too.
type filter struct {
	kinds    []string
	cats     []string
	contains string
	minDur   int64
}

// newFilter reads the filter fields of a request; it returns nil when none is given.
func newFilter(kinds, cats []string, contains *string, minDur *int64) *filter {
	f := &filter{kinds: kinds, cats: cats}
	if contains != nil {
		f.contains = *contains
	}
	if minDur != nil {
		f.minDur = *minDur
	}
	if len(f.kinds) == 0 && len(f.cats) == 0 && f.contains == "" && f.minDur == 0 {
		return nil
	}
	return f
}

func sliceFilter(f *gen.TraceSliceFields) *filter {
	if f == nil {
		return nil
	}
	return newFilter(f.EventKind, f.Category, f.NameContains, f.MinDurationNS)
}

func pytorchFilter(f *gen.TraceFilterFields) *filter {
	if f == nil {
		return nil
	}
	return newFilter(f.EventKind, f.Category, f.NameContains, f.MinDurationNS)
}

func windowFilter(f *gen.WindowFields) *filter {
	if f == nil {
		return nil
	}
	return newFilter(f.EventKind, f.Category, f.NameContains, f.MinDurationNS)
}

// slice says whether a nested slice passes. The event kind is classified only when a
// kind filter is given.
func (f *filter) slice(n *tracemodel.Nested) bool {
	if f == nil {
		return true
	}
	return f.passKind(n, "")
}

// passKind is slice for a slice whose event kind is kind ("" when not classified yet).
func (f *filter) passKind(n *tracemodel.Nested, kind string) bool {
	if f == nil {
		return true
	}
	if n.Dur < f.minDur {
		return false
	}
	if len(f.cats) > 0 && !slices.Contains(f.cats, n.Category) {
		return false
	}
	if f.contains != "" && !strings.Contains(n.Name, f.contains) {
		return false
	}
	if len(f.kinds) > 0 {
		if kind == "" {
			kind = eventKind(n)
		}
		return slices.Contains(f.kinds, kind)
	}
	return true
}

// span says whether an OTLP span passes: its category is its kind's enum name, and it has
// no PyTorch event kind, so a kind filter passes none. A span without a duration (timed
// false) passes no duration filter.
func (f *filter) span(name, kind string, dur int64, timed bool) bool {
	if f == nil {
		return true
	}
	if len(f.kinds) > 0 {
		return false
	}
	if f.minDur > 0 && (!timed || dur < f.minDur) {
		return false
	}
	if len(f.cats) > 0 && !slices.Contains(f.cats, kind) {
		return false
	}
	return f.contains == "" || strings.Contains(name, f.contains)
}

// figures adds the filter's count to the metrics: the slices (or spans) of the
// operation's population that the filters left out.
func (f *filter) figures(m map[string]any, excluded int64) {
	if f != nil {
		m["filter_excluded_count"] = excluded
	}
}

// emptyNote is the limitation of a population the filters emptied, in place of the
// operation's own.
func (f *filter) emptyNote(excluded int64, what string) string {
	return fmt.Sprintf("no_rows_match_filters: %d %s did not pass the filters (event_kind, category, name_contains, min_duration_ns); widen or omit them.", excluded, what)
}
