package runtime

import (
	"context"
	"encoding/json"
	"errors"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/providers/preview"
	"github.com/flameox/flameox/runtime/continuation"
)

// analyzer runs one operation on an admitted request.
type analyzer func(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure)

// analyzers are the operations this build implements, by task name.
var analyzers = map[gen.OperationName]analyzer{
	gen.OperationNamePreviewArtifact:         analyzePreview,
	gen.OperationNameRankCPUHotspots:         analyzeCPUHotspots,
	gen.OperationNameInspectCPUCallers:       analyzeCPUCallers,
	gen.OperationNameSummarizeBenchmarks:     analyzeBenchSummary,
	gen.OperationNameAnalyzeBenchmarkScaling: analyzeBenchScaling,
	gen.OperationNameCompareBenchmarks:       analyzeBenchCompare,
}

// fragmentLimitation explains fragment mode.
const fragmentLimitation = "Text fragments are decoded with invalid UTF-8 replaced, so they are not byte-exact slices; offsets count fragments, and a fragment is line_terminated only when it ends with LF."

func analyzePreview(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure) {
	fields := req.typed.(*gen.PreviewFields)
	in, f := rt.resolveSources(req)
	if f != nil {
		return nil, f
	}
	fragments := 0
	if fields.TextFragmentChars != nil {
		fragments = int(*fields.TextFragmentChars)
		for i, r := range in {
			if r.format != gen.FormatText {
				return nil, failure.Invalid(failure.Path("text_fragment_chars"), []string{"text"},
					"text_fragment_chars applies to text sources only; source %d is %s", i, r.format).
					With("option", "text_fragment_chars").With("accepted_formats", []string{"text"}).With("source_index", i)
			}
		}
	}
	if f := req.bind(in); f != nil {
		return nil, f
	}
	offset := fields.Offset
	offsetPath := failure.Path("offset")
	if req.continuation != "" {
		o, err := continuation.Decode(req.continuation, req.digest)
		if err != nil {
			return nil, failure.Invalid(failure.Path("continuation"), nil,
				"the continuation does not match this request and its inputs; submit next_page unchanged or start a fresh page without continuation")
		}
		offset, offsetPath = o, failure.Path("continuation")
	}
	req.offset = offset
	srcs := make([]preview.Source, len(in))
	for i, r := range in {
		srcs[i] = preview.Source{Path: r.path, Format: r.format, SHA256: r.sha256, Size: r.size}
	}
	page, err := preview.Read(ctx, srcs, preview.Options{Offset: offset, MaxRows: int(req.limits.MaxRows), FragmentChars: fragments})
	if err != nil {
		return nil, previewFailure(ctx, err, offsetPath)
	}
	if f := recheck(in); f != nil {
		return nil, f
	}
	limitations := append([]string{}, req.tool.Operation.Limitations...)
	if fragments > 0 {
		limitations = append(limitations, fragmentLimitation)
	}
	res := newResult(req, in, page.Rows, page.Complete, page.Observed)
	res.Provider = gen.Provider{ID: "flameox", Version: Version}
	res.Blocks = []any{
		MetricsBlock{Type: "metrics", Values: map[string]any{"input_count": len(in), "row_count": len(page.Rows)}},
		TableBlock{Type: "table", Rows: page.Rows},
	}
	if !page.Complete {
		for _, r := range in {
			if r.format == gen.FormatJSON {
				limitations = append(limitations, "The page stops before the end of a JSON document; JSON after this page has not been validated.")
				break
			}
		}
	}
	if page.Complete && len(page.Rows) == 0 {
		limitations = append(limitations, "The sources hold no logical rows.")
	}
	res.Limitations = limitations
	if f := rt.paginate(req, in, res, int64(len(page.Rows))); f != nil {
		return nil, f
	}
	return res, nil
}

func previewFailure(ctx context.Context, err error, offsetPath []any) *failure.Failure {
	var de *preview.DecodeError
	var le *preview.LimitError
	var oe *preview.OffsetError
	switch {
	case errors.As(err, &oe):
		return failure.Invalid(offsetPath, nil, "%s", oe.Error()).
			With("offset", oe.Offset).With("available_rows", oe.Population)
	case errors.As(err, &de):
		return failure.Wrap(err, gen.FailureCodeDecodeFailure, "%s", de.Message).
			With("source_index", de.Source).With("row", de.Row)
	case errors.As(err, &le):
		f := failure.Wrap(err, gen.FailureCodeLimitExceeded, "%s", le.Message).
			With("source_index", le.Source).With("row", le.Row).With("limit_bytes", le.Limit)
		return f
	case ctx.Err() != nil:
		return failure.Wrap(err, gen.FailureCodeCancelled, "the analysis was cancelled")
	}
	return failure.Wrap(err, gen.FailureCodeDecodeFailure, "an input could not be read during analysis")
}

// bind computes the request digest from the resolved inputs: operation, ordered content
// digests, formats and producers, typed arguments, effective limits and implementation.
// Paths and roles are excluded so a continuation survives a move or a new process.
func (req *request) bind(in []resolved) *failure.Failure {
	return req.bindWith(in, nil)
}

// bindWith is bind with external decoder executables (name -> SHA-256) added to the
// implementation identity.
func (req *request) bindWith(in []resolved, external map[string]any) *failure.Failure {
	impl := map[string]any{"flameox": Version}
	for k, v := range external {
		impl[k] = v
	}
	inputs := make([]map[string]any, len(in))
	for i, r := range in {
		inputs[i] = map[string]any{"sha256": r.sha256, "format": r.format, "producer": r.producer}
	}
	d, err := canon.Digest(map[string]any{
		"operation":      req.tool.Operation.Name,
		"inputs":         inputs,
		"arguments":      req.typed,
		"limits":         req.limits,
		"implementation": impl,
	})
	if err != nil {
		return failure.Wrap(err, gen.FailureCodeInternalFailure, "the request identity could not be computed")
	}
	req.digest = d
	return nil
}

// newResult fills the envelope fields shared by every analysis.
func newResult(req *request, in []resolved, rows []json.RawMessage, complete bool, observed int64) *Result {
	res := &Result{Status: "complete", Operation: string(req.tool.Operation.Name)}
	for _, r := range in {
		in := gen.Input{SHA256: r.sha256, SizeBytes: r.size, Format: r.format, Producer: r.producer, Role: r.role}
		if r.evidence == nil {
			p := r.path
			in.Path = &p
		}
		res.Inputs = append(res.Inputs, in)
	}
	res.Coverage = gen.Coverage{RowsReturned: int64(len(rows)), RowsObserved: observed, Complete: complete}
	return res
}

// paginate sets truncation, the continuation and the exact next_page call.
func (rt *Runtime) paginate(req *request, in []resolved, res *Result, returned int64) *failure.Failure {
	if res.Coverage.Complete {
		return nil
	}
	next := req.offset + returned
	res.Truncation = &gen.Truncation{Reason: "row_limit", NextOffset: &next}
	tok, err := continuation.Encode(req.digest, next)
	if err != nil {
		return failure.Wrap(err, gen.FailureCodeInternalFailure, "the continuation could not be encoded")
	}
	res.Token = tok
	args := map[string]any{}
	for k, v := range req.fields {
		args[k] = v
	}
	sources := make([]any, len(in))
	for i, r := range in {
		if r.evidence != nil {
			sources[i] = *r.evidence
			continue
		}
		s := map[string]any{"kind": "path", "path": r.path, "format": string(r.format), "expected_sha256": r.sha256}
		if r.producer != nil {
			s["producer"] = *r.producer
		}
		sources[i] = s
	}
	args["sources"] = sources
	args["continuation"] = tok
	args["page_size"] = req.limits.MaxRows
	args["limits"] = req.limits
	res.NextPage = &gen.NextPage{Tool: req.tool.Name, Arguments: args}
	return nil
}
