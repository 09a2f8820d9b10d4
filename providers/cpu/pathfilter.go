package cpu

import (
	"fmt"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// pathFilter is the include_paths and exclude_paths of a CPU operation (decision 0042): a
// function passes when its file contains one of the includes (when there are any) and
// none of the excludes. Substrings are matched as written, case-sensitively. A nil
// pathFilter passes every function.
type pathFilter struct {
	include, exclude []string
}

// newPathFilter is the filter of the fields, or nil when neither list holds a path.
func newPathFilter(include, exclude []string) *pathFilter {
	if len(include) == 0 && len(exclude) == 0 {
		return nil
	}
	return &pathFilter{include: include, exclude: exclude}
}

// pass reports whether a function in file passes. A function without a file (a native
// or unresolved frame) contains no include.
func (f *pathFilter) pass(file string) bool {
	if f == nil {
		return true
	}
	for _, x := range f.exclude {
		if strings.Contains(file, x) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, x := range f.include {
		if strings.Contains(file, x) {
			return true
		}
	}
	return false
}

// check refuses the filter for perf collapsed stacks, whose frames carry no file: an
// include would pass nothing and an exclude nothing away.
func (f *pathFilter) check(in providers.Input) error {
	if f == nil || in.Format != gen.FormatPerf {
		return nil
	}
	field := "include_paths"
	if len(f.include) == 0 {
		field = "exclude_paths"
	}
	accepted := []string{string(gen.FormatPstats), string(gen.FormatPySpy), string(gen.FormatPerfData), string(gen.FormatCpuprofile), string(gen.FormatPprof)}
	return &providers.FieldError{Field: []any{field}, Accepted: accepted,
		Message: fmt.Sprintf("%s filters by file path; source %d is perf collapsed stacks, which name functions only (no file)", field, in.Index),
		Details: map[string]any{"option": field, "accepted_formats": accepted, "source_index": in.Index}}
}

// figures adds the filter's count to the metrics: the rows of the operation's
// population that the filter left out.
func (f *pathFilter) figures(m map[string]any, excluded int) {
	if f != nil {
		m["filter_excluded_count"] = excluded
	}
}

// notes are the limitations of a filtered result: what the filter leaves as it was, and
// an emptied population, with the count it left out.
func (f *pathFilter) notes(listed, excluded int, what string) []string {
	if f == nil {
		return nil
	}
	out := []string{"path_filters: only functions whose file passes include_paths/exclude_paths are listed (a frame without a file passes no include; a caller edge needs both functions); figures, totals and counts stay the whole profile's (an excluded callee's time stays in its callers' inclusive time, not moved to their self time)."}
	if listed == 0 && excluded > 0 {
		out = append(out, fmt.Sprintf("no_rows_match_filters: %d %s did not pass the filters (include_paths, exclude_paths); widen or omit them.", excluded, what))
	}
	return out
}
