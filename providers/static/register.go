// Package static is the static-analysis evidence family: inspect_performance_candidates
// normalizes the results of a SARIF 2.1.0 log, from any analyzer, to candidate rows.
package static

import (
	"context"
	"fmt"
	"path"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds inspect_performance_candidates and the sarif detector.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameInspectPerformanceCandidates, inspect))
	r.Detector(providers.Detector{Format: gen.FormatSarif, Suffixes: []string{".sarif"}, Container: gen.FormatJSON,
		Match: func(_ string, head []byte) bool { return isSARIF(head) }})
}

func provider() gen.Provider { return gen.Provider{ID: "sarif", Version: "2.1.0"} }

// options are the admitted fields, compiled.
type options struct {
	resolver
	include, exclude []glob
}

func compile(f *gen.StaticFields) (*options, error) {
	o := &options{}
	if f.SourceRoot != nil {
		o.root = path.Clean(*f.SourceRoot)
	}
	for _, spec := range []struct {
		field string
		in    []string
		out   *[]glob
	}{{"include_paths", f.IncludePaths, &o.include}, {"exclude_paths", f.ExcludePaths, &o.exclude}} {
		for i, p := range spec.in {
			g, ok := compileGlob(p)
			if !ok {
				return nil, &providers.FieldError{Field: []any{spec.field, i},
					Message: fmt.Sprintf("%s[%d] is not a valid glob: path.Match syntax per segment (*, ?, [...]), ** across segments", spec.field, i)}
			}
			*spec.out = append(*spec.out, g)
		}
	}
	return o, nil
}

// excluded says why a file is filtered out: "" when it is kept, "default" for a
// built-in exclude, "filter" for include_paths or exclude_paths.
func (o *options) excluded(file *string) string {
	if len(o.include) > 0 {
		if file == nil || !anyMatch(o.include, *file) {
			return "filter"
		}
	} else if file != nil && defaultExcluded(*file) {
		return "default"
	}
	if file != nil && anyMatch(o.exclude, *file) {
		return "filter"
	}
	return ""
}

func anyMatch(gs []glob, file string) bool {
	for _, g := range gs {
		if g.match(file) {
			return true
		}
	}
	return false
}

func inspect(ctx context.Context, req *providers.Request[gen.StaticFields]) (*providers.Analysis, error) {
	o, err := compile(req.Fields)
	if err != nil {
		return nil, err
	}
	c, err := readCandidates(ctx, req.Inputs[0], req.Limits.MaxInputBytes, o, providers.MaxProjectionRows)
	if err != nil {
		return nil, err
	}
	return &providers.Analysis{
		Provider:    provider(),
		Metrics:     c.metrics(),
		Rows:        providers.ProjectSlice(c.rows, func(r gen.SarifCandidateRow) gen.SarifCandidateRow { return r }),
		Limitations: c.limitations(),
	}, nil
}
