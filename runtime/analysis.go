package runtime

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/runtime/continuation"
)

// analyze runs the fixed analysis sequence on an admitted request: resolve and hash the
// sources, run the analyzer, bind the request identity, choose the page start, page the
// rows, re-check the inputs and build the envelope. No analyzer takes part in any step
// but its own.
func (rt *Runtime) analyze(ctx context.Context, req *request) (*Result, *failure.Failure) {
	// The analysis observes limits.timeout_seconds as well as the caller's cancellation.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.limits.TimeoutSeconds*float64(time.Second)))
	defer cancel()
	// Inputs that their sizes alone send to a worker start it before the hashing pass, so
	// that its start overlaps the hashing; the request follows once the inputs are known.
	var started *startedWorker
	in, f := rt.resolveSources(req, func(sized []resolved) {
		if rt.worker != "" && !inProcess(sized) {
			// A worker that cannot be prepared here is prepared again by
			// analyzeInWorker, which words the failure.
			started, _ = rt.prepareWorker(ctx, req, sized)
		}
	})
	// A worker the analysis does not use after all (a failure, or a source that shrank
	// below the in-process size between its size and its hashing) is stopped unused.
	defer started.abandon()
	if f != nil {
		return nil, f
	}
	rt.managedReaders(in)
	var res *Result
	switch {
	case rt.worker != "" && rt.needsWorker(in):
		res, f = rt.analyzeInWorker(ctx, req, in, started)
	case inProcess(in):
		// The decoder reads what was measured (decision 0054).
		pinned, done, pf := pinInputs(in, sealedScratch(ctx))
		if pf != nil {
			return nil, pf
		}
		res, f = rt.analyzeResolved(ctx, req, pinned)
		done()
	default:
		// No worker (a test, or a worker that is the analysis itself): read in place.
		res, f = rt.analyzeResolved(ctx, req, in)
	}
	if f != nil {
		return nil, thenRetry(f, req.tool.Name)
	}
	if f := recheck(in); f != nil {
		return nil, f
	}
	return res, nil
}

// analyzeResolved runs the steps that call provider code on resolved inputs: analyze,
// bind the request identity, choose the page start, page the rows and build the
// envelope. An analysis worker runs exactly these.
func (rt *Runtime) analyzeResolved(ctx context.Context, req *request, in []resolved) (*Result, *failure.Failure) {
	offsetPath := failure.Path("continuation")
	a, err := req.admitted.Run(ctx, providerInputs(in), req.limits)
	if err != nil {
		return nil, rt.withDetectedFormat(req, in, providerFailure(ctx, err, offsetPath))
	}
	if f := req.bind(in, a.Implementation); f != nil {
		return nil, f
	}
	offset := int64(0)
	if req.continuation != "" {
		o, err := continuation.Decode(req.continuation, req.digest)
		if err != nil {
			if rt.isWorker {
				// The parent holds the session's analyses that explain a mismatch.
				return nil, failure.Wrap(errContinuationMismatch, gen.FailureCodeInvalidInput, "the continuation does not match this request")
			}
			return nil, rt.continuationMismatch(req)
		}
		offset = o
	} else if a.OffsetField != "" {
		offset, offsetPath = a.Offset, failure.Path(a.OffsetField)
	}
	req.offset = offset
	b, f := rt.budget(req, in, a)
	if f != nil {
		return nil, f
	}
	page, err := a.Rows.Page(ctx, offset, req.limits.MaxRows, b.fits)
	if err != nil {
		// A reader that decodes as it pages (Perfetto) fails here, not in Run: a declared
		// format that detection contradicts is named the same way (issue 33 item 3).
		return nil, rt.withDetectedFormat(req, in, providerFailure(ctx, err, offsetPath))
	}
	res, f := rt.envelope(req, in, a, page)
	if f == nil && b.cut && res.Truncation != nil && res.Truncation.Reason == "row_limit" {
		// The page ended before max_rows: its next row would pass max_result_bytes (or
		// its one row alone did).
		res.Truncation.Reason = "result_bytes"
	}
	return res, f
}

// budgetSlack covers what a page adds to the envelope besides its rows: page metrics
// and limitations, and the digits of counts and offsets.
const budgetSlack = 1024

// pageBudget admits rows while the serialized result stays within max_result_bytes
// (decision 0011): a page ends before the row that would pass it, but its first row is
// admitted whatever its size, complete and alone, so that no row is ever unreadable.
type pageBudget struct {
	left int
	// admitted counts the rows of the page so far.
	admitted int
	// cut is set once the budget ended the page: a row was refused, or a first row
	// larger than the budget was admitted alone.
	cut bool
}

func (b *pageBudget) fits(row json.RawMessage) bool {
	if b.cut {
		return false
	}
	n := jsonSize(row) + 1 // and its separating comma
	if n > b.left {
		b.cut = true
		if b.admitted > 0 {
			return false
		}
	}
	b.left -= n
	b.admitted++
	return true
}

// jsonSize is the size of a compact JSON value as the transports encode it: json.Marshal
// escapes <, > and & (6 bytes for 1) and U+2028 and U+2029 (6 bytes for 3).
func jsonSize(v []byte) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '<', '>', '&':
			n += 5
		case 0xe2:
			if i+2 < len(v) && v[i+1] == 0x80 && (v[i+2] == 0xa8 || v[i+2] == 0xa9) {
				n += 3
			}
		}
	}
	return n
}

// budget sizes the envelope of this request without rows, as it will be serialized
// with a truncation and a next page, and returns what is left for rows.
func (rt *Runtime) budget(req *request, in []resolved, a *providers.Analysis) (*pageBudget, *failure.Failure) {
	probe := &providers.Page{Rows: []json.RawMessage{}, More: true, Observed: req.offset + req.limits.MaxRows + 1}
	res, f := rt.envelope(req, in, a, probe)
	if f != nil {
		return nil, f
	}
	// The continuation of a deeper page is longer by its offset's digits only.
	b, err := json.Marshal(res)
	if err != nil {
		return nil, failure.Unencodable(err)
	}
	return &pageBudget{left: int(req.limits.MaxResultBytes) - len(b) - budgetSlack}, nil
}

// providerInputs projects the resolved sources for an analyzer.
func providerInputs(in []resolved) []providers.Input {
	out := make([]providers.Input, len(in))
	for i, r := range in {
		path := r.path
		if r.read != "" {
			path = r.read
		}
		out[i] = providers.Input{Index: i, Path: path, Format: r.format, SHA256: r.sha256, Size: r.size, Producer: r.producer, Reader: r.reader, Members: r.members}
	}
	return out
}

// envelope builds the result of a page: inputs, provider, limitations (the operation's,
// each input format's, the analysis's, the page's), metrics, the table, coverage,
// truncation and next_page.
func (rt *Runtime) envelope(req *request, in []resolved, a *providers.Analysis, page *providers.Page) (*Result, *failure.Failure) {
	op := req.tool.Operation
	res := &Result{Status: "complete", Operation: string(op.Name), Provider: a.Provider}
	if res.Provider.Version == "" {
		res.Provider.Version = Version
	}
	for _, r := range in {
		in := gen.Input{SHA256: r.sha256, SizeBytes: r.size, Format: r.format, Producer: r.producer, Role: r.role}
		if r.evidence == nil {
			p := r.path
			in.Path = &p
		}
		res.Inputs = append(res.Inputs, in)
	}
	res.Limitations = []string{}
	if !a.OwnLimitations {
		res.Limitations = append(res.Limitations, op.Limitations...)
		seen := map[gen.Format]bool{}
		for _, r := range in {
			if !seen[r.format] {
				seen[r.format] = true
				res.Limitations = append(res.Limitations, op.FormatLimitations[r.format]...)
			}
		}
	}
	res.Limitations = append(append(res.Limitations, a.Limitations...), page.Limitations...)
	if a.Metrics != nil || page.Metrics != nil {
		// A streaming reader learns its figures while paging (a trace's counts).
		values := map[string]any{}
		for k, v := range a.Metrics {
			values[k] = v
		}
		for k, v := range page.Metrics {
			values[k] = v
		}
		res.Blocks = append(res.Blocks, MetricsBlock{Type: "metrics", Values: values})
	}
	res.Blocks = append(res.Blocks, tableBlock(page.Rows))
	returned := int64(len(page.Rows))
	res.Coverage = gen.Coverage{RowsReturned: returned, RowsObserved: page.Observed, Complete: !page.More && !page.Limited}
	switch {
	case page.More:
		if f := rt.paginate(req, in, res, returned); f != nil {
			return nil, f
		}

	case page.Limited:
		next := req.offset + returned
		res.Truncation = &gen.Truncation{Reason: "provider_limit", NextOffset: &next}
		res.Limitations = append(res.Limitations, fmt.Sprintf(
			"The projection stops at %d rows (provider_limit); narrow the request with the operation's own fields (a filter, a window, a metric) to see the rest.", providers.MaxProjectionRows))
	}
	return res, nil
}

// providerFailure maps what an analyzer or its rows returned to the failure envelope;
// it is the one place where provider errors become failures. offsetPath names the field
// that chose the page start.
func providerFailure(ctx context.Context, err error, offsetPath []any) *failure.Failure {
	var (
		de *providers.DecodeError
		le *providers.LimitError
		fe *providers.FieldError
		ue *providers.UnsupportedError
		ie *providers.InputError
		oe *providers.OffsetError
		na *providers.UnavailableError
	)
	withSource := func(f *failure.Failure, source int, details map[string]any) *failure.Failure {
		if source != providers.NoSource {
			f.With("source_index", source)
		}
		for k, v := range details {
			f.With(k, v)
		}
		return f
	}
	var uv *json.UnsupportedValueError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return failure.New(gen.FailureCodeLimitExceeded, "the analysis ran past limits.timeout_seconds and was stopped").
			Field(failure.Path("limits", "timeout_seconds"), nil).With("field", "timeout_seconds").With("reason", "timeout")
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return failure.Wrap(err, gen.FailureCodeCancelled, "the analysis was cancelled")
	case errors.As(err, &uv):
		return failure.Unencodable(err)
	case errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, sourcefile.ErrBadGzip) ||
		errors.As(err, new(flate.CorruptInputError)):
		return failure.Wrap(err, gen.FailureCodeDecodeFailure,
			"an input's gzip stream is corrupt (checksum, header or data); the native file cannot be read as it is").
			With("reason", "corrupt_gzip")
	case errors.As(err, &oe):
		return failure.Invalid(offsetPath, nil, "offset %d is at or beyond the end of the %d available rows", oe.Offset, oe.Available).
			With("offset", oe.Offset).With("available_rows", oe.Available)
	case errors.As(err, &fe):
		f := failure.Invalid(fe.Field, fe.Accepted, "%s", fe.Message)
		return withSource(f, providers.NoSource, fe.Details)
	case errors.As(err, &de):
		return withSource(failure.Wrap(err, gen.FailureCodeDecodeFailure, "%s", de.Message), de.Source, de.Details)
	case errors.As(err, &le):
		f := withSource(failure.Wrap(err, gen.FailureCodeLimitExceeded, "%s", le.Message), le.Source, le.Details)
		if le.Limit != 0 {
			f.With("limit", le.Limit)
		}
		if le.Unit != "" {
			f.With("unit", le.Unit)
		}
		return f
	case errors.As(err, &ue):
		f := withSource(failure.Wrap(err, gen.FailureCodeUnsupportedFormat, "%s", ue.Message), ue.Source, ue.Details)
		if ue.Remediation != "" {
			f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action", Message: ue.Remediation}}
		}
		return f
	case errors.As(err, &ie):
		return failure.Wrap(err, gen.FailureCodeMissingOrChangedInput, "%s", ie.Message).
			Field(failure.Path("sources", ie.Source, "path"), nil).With("source_index", ie.Source)
	case errors.As(err, &na):
		return unavailable(na)
	}
	return failure.Wrap(err, gen.FailureCodeDecodeFailure, "an input could not be decoded")
}

// unavailable is the UNAVAILABLE_CAPABILITY state of a missing executable or module.
func unavailable(na *providers.UnavailableError) *failure.Failure {
	f := failure.New(gen.FailureCodeUnavailableCapability, "%s", na.Message).With("provider_id", na.Provider)
	if na.Executable != "" {
		f.With("missing_executable", na.Executable)
	}
	if na.Module != "" {
		f.With("missing_module", na.Module)
	}
	f.With("remediation", na.Remediation)
	for k, v := range na.Details {
		f.With(k, v)
	}
	if na.Preparable {
		return retryAfterPreparing(f, na.Provider, "")
	}
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action", Message: na.Remediation}}
	return f
}

// bind computes the request digest from the resolved inputs: operation, ordered content
// digests, formats and producers, typed arguments, effective limits and implementation
// (Flameox and any external decoder executables, name -> SHA-256). Paths and roles are
// excluded so a continuation survives a move or a new process.
func (req *request) bind(in []resolved, external map[string]string) *failure.Failure {
	impl := map[string]any{"flameox": implementation}
	for k, v := range external {
		impl[k] = v
	}
	inputs := make([]map[string]any, len(in))
	for i, r := range in {
		inputs[i] = map[string]any{"sha256": r.sha256, "format": r.format, "producer": r.producer}
	}
	// The arguments are bound in their replay form (wide integers as decimal strings),
	// so that next_page's arguments continue the request they came from.
	args, err := replayForm(req.admitted.Fields())
	if err != nil {
		return failure.Wrap(err, gen.FailureCodeInternalFailure, "the request identity could not be computed")
	}
	d, err := canon.Digest(map[string]any{
		"operation":      req.tool.Operation.Name,
		"inputs":         inputs,
		"arguments":      args,
		"limits":         req.limits,
		"implementation": impl,
	})
	if err != nil {
		return failure.Wrap(err, gen.FailureCodeInternalFailure, "the request identity could not be computed")
	}
	req.digest = d
	return nil
}

// paginate sets truncation, the continuation and the exact next_page call.
func (rt *Runtime) paginate(req *request, in []resolved, res *Result, returned int64) *failure.Failure {
	next := req.offset + returned
	res.Truncation = &gen.Truncation{Reason: "row_limit", NextOffset: &next}
	tok, err := continuation.Encode(req.digest, next)
	if err != nil {
		return failure.Wrap(err, gen.FailureCodeInternalFailure, "the continuation could not be encoded")
	}
	res.Token = tok
	res.NextPage = &gen.NextPage{Tool: req.tool.Name, Arguments: nextPageArguments(req, in, tok)}
	return nil
}

// nextPageArguments are the exact arguments of the next page: the operation fields as
// given, the resolved sources pinned by digest and format, the continuation and the
// effective limits.
func nextPageArguments(req *request, in []resolved, tok string) map[string]any {
	args := map[string]any{}
	for k, v := range req.fields {
		args[k] = wideAsString(v)
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
	return args
}

// replayForm returns the JSON value of v with wide integers as wideAsString writes them.
func replayForm(v any) (any, error) {
	var out any
	if err := remarshal(v, &out); err != nil {
		return nil, err
	}
	return wideAsString(out), nil
}

// wideAsString returns v with every integer outside +-(2^53-1) written as its exact
// decimal string: JSON clients read numbers as doubles, so replay arguments carry such
// integers (trace-window bounds at epoch nanoseconds, the only fields that admit them)
// in the decimal-string form those fields accept.
func wideAsString(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = wideAsString(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = wideAsString(e)
		}
		return out
	case json.Number:
		const safe = 1<<53 - 1
		if n, err := x.Int64(); err == nil && (n > safe || n < -safe) {
			return x.String()
		}
	}
	return v
}

// withDetectedFormat turns the decode failure of a source whose format the caller
// declared into an actionable one when detection reads the file as another format the
// operation accepts: it names that format and asks to omit or change the declaration.
func (rt *Runtime) withDetectedFormat(req *request, in []resolved, f *failure.Failure) *failure.Failure {
	i, ok := f.Details["source_index"].(int)
	if f.Code != gen.FailureCodeDecodeFailure || !ok || i < 0 || i >= len(in) || i >= len(req.sources) {
		return f
	}
	src := req.sources[i].PathSource
	if src == nil || src.Format == nil {
		return f
	}
	detected, df := rt.sniff(in[i].path, req.tool.Operation, i)
	if df != nil || detected == *src.Format {
		return f
	}
	f.With("declared_format", string(*src.Format)).With("detected_format", string(detected))
	f.FieldPath = failure.Path("sources", i, "format")
	f.NextAction = &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request", FieldPath: failure.Path("sources", i, "format"),
		Message: fmt.Sprintf("Source %d was declared %s but reads as %s: omit format (it is detected) or declare %s, then retry.",
			i, *src.Format, detected, detected)}}
	return f
}

// continuationMismatch explains a continuation that does not bind this request. When the
// request it was issued for is a live analysis of this session, the failure names what
// changed (sources, fields, limits); otherwise it says the token is foreign or damaged.
func (rt *Runtime) continuationMismatch(req *request) *failure.Failure {
	generic := failure.Invalid(failure.Path("continuation"), nil,
		"the continuation does not match this request and its inputs; submit next_page unchanged or start a fresh page without continuation")
	issued, _, err := continuation.Peek(req.continuation)
	if err != nil {
		return generic.With("reason", "malformed_or_tampered")
	}
	var old *request
	rt.mu.Lock()
	for _, r := range rt.cache.all() {
		if r.req != nil && r.req.digest == issued {
			old = r.req
			break
		}
	}
	rt.mu.Unlock()
	if old == nil {
		return generic.With("reason", "issued_for_another_request")
	}
	changed := requestChanges(old, req)
	if len(changed) == 0 {
		return generic.With("reason", "implementation_changed")
	}
	names := make([]string, len(changed))
	for i, c := range changed {
		names[i] = displayLimit(c)
	}
	f := failure.Invalid(changed[0], nil,
		"the continuation was issued for a request whose %s differ from this one; submit next_page unchanged, or drop continuation to start over with the new values",
		strings.Join(names, ", ")).With("reason", "request_changed").With("changed_fields", names)
	f.NextAction = &gen.NextAction{AdjustRequest: &gen.AdjustRequest{Kind: "adjust_request", FieldPath: failure.Path("continuation"),
		Message: "Remove continuation to start a fresh first page with these arguments, or resubmit next_page exactly as it was returned."}}
	return f
}

// requestChanges lists the field paths whose values differ between two requests of one
// tool: each source (content, format, producer), each operation field and each limit.
func requestChanges(old, cur *request) [][]any {
	var out [][]any
	if old.tool.Name != cur.tool.Name {
		return [][]any{failure.Path("continuation")}
	}
	for i := range max(len(old.inputs), len(cur.inputs)) {
		if i >= len(old.inputs) || i >= len(cur.inputs) {
			out = append(out, failure.Path("sources"))
			break
		}
		a, b := old.inputs[i], cur.inputs[i]
		if a.sha256 != b.sha256 || a.format != b.format || !equalJSON(a.producer, b.producer) {
			out = append(out, failure.Path("sources", i))
		}
	}
	var oa, ca map[string]any
	remarshal(old.admitted.Fields(), &oa)
	remarshal(cur.admitted.Fields(), &ca)
	for _, k := range unionKeys(oa, ca) {
		if !equalJSON(oa[k], ca[k]) {
			out = append(out, failure.Path(k))
		}
	}
	var ol, cl map[string]any
	remarshal(old.limits, &ol)
	remarshal(cur.limits, &cl)
	for _, k := range unionKeys(ol, cl) {
		if !equalJSON(ol[k], cl[k]) {
			out = append(out, failure.Path("limits", k))
		}
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
