package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/repository"
)

// lifecycleHandler runs one lifecycle tool on schema-valid arguments.
type lifecycleHandler func(ctx context.Context, rt *Runtime, inst any) (any, *failure.Failure)

// lifecycleHandlers are the preparation and evidence tools by name.
var lifecycleHandlers = map[string]lifecycleHandler{
	"prepare_providers": func(ctx context.Context, rt *Runtime, inst any) (any, *failure.Failure) {
		var a gen.PrepareProvidersArguments
		if f := decodeArguments(inst, &a); f != nil {
			return nil, f
		}
		return rt.Prepare(ctx, a)
	},
	"preserve_evidence": func(_ context.Context, rt *Runtime, inst any) (any, *failure.Failure) {
		var a gen.PreserveEvidenceArguments
		if f := decodeArguments(inst, &a); f != nil {
			return nil, f
		}
		return rt.Preserve(a.AnalysisID)
	},
	"rescue_evidence": func(_ context.Context, rt *Runtime, inst any) (any, *failure.Failure) {
		var a gen.RescueEvidenceArguments
		if f := decodeArguments(inst, &a); f != nil {
			return nil, f
		}
		return rt.Rescue(a.AnalysisID, a.Destination)
	},
	"query_evidence": func(_ context.Context, rt *Runtime, inst any) (any, *failure.Failure) {
		var a gen.QueryEvidenceArguments
		if f := decodeArguments(inst, &a); f != nil {
			return nil, f
		}
		a.ApplyDefaults()
		return rt.Query(a)
	},
	"inspect_evidence": func(_ context.Context, rt *Runtime, inst any) (any, *failure.Failure) {
		var a gen.InspectEvidenceArguments
		if f := decodeArguments(inst, &a); f != nil {
			return nil, f
		}
		return rt.Inspect(a.EvidenceID)
	},
}

func decodeArguments(inst any, into any) *failure.Failure {
	if err := decodeInto(inst, into); err != nil {
		return failure.Invalid(failure.Path(), nil, "arguments do not match the tool schema")
	}
	return nil
}

// expired is EXPIRED_SESSION_ANALYSIS for a handle this session does not hold.
func expired(id string) *failure.Failure {
	return failure.New(gen.FailureCodeExpiredSessionAnalysis,
		"analysis %s is not a live analysis of this session: handles do not survive a restart and the least recently used are evicted", id).
		Field(failure.Path("analysis_id"), nil).With("analysis_id", id).
		With("recovery", []string{"Run the analysis again in this session and preserve the new analysis_id."})
}

// lookup returns the live record for id.
func (rt *Runtime) lookup(id string) (*record, *failure.Failure) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	r, ok := rt.cache.get(id)
	if !ok {
		return nil, expired(id)
	}
	return r, nil
}

// bundle describes the record as evidence: its sources in request order, the effective
// request with host paths (kept in the manifest for local provenance), and the result
// without process-local handles or host paths as data/analysis.json.
func (rt *Runtime) bundle(r *record) (*repository.Bundle, *failure.Failure) {
	var args map[string]any
	if err := remarshal(r.req.admitted.Fields(), &args); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the analysis arguments could not be recorded")
	}
	var limits gen.RequestLimits
	if err := remarshal(r.req.limits, &limits); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the analysis limits could not be recorded")
	}
	b := &repository.Bundle{
		Kind:      "analysis",
		Operation: r.req.tool.Operation.Name,
		Provider:  gen.StoredProvider{ID: r.result.Provider.ID, Version: r.result.Provider.Version},
		AnalysisRequest: gen.AnalysisRequestRecord{
			Operation: r.req.tool.Operation.Name, Offset: r.req.offset, Arguments: args, Limits: limits,
			Inputs: []gen.RecordedInput{},
		},
		Coverage: gen.StoredCoverage{RowsReturned: r.result.Coverage.RowsReturned,
			RowsObserved: r.result.Coverage.RowsObserved, Complete: r.result.Coverage.Complete},
		Limitations: r.result.Limitations,
		CreatedAt:   r.createdAt,
	}
	if r.capture != nil {
		// Capture evidence keeps its full provenance: target, provider, fields, experiment
		// and every execution record, within limits.max_provenance_bytes.
		prov, f := r.capture.document()
		if f != nil {
			return nil, f
		}
		size, f := r.capture.size()
		if f != nil {
			return nil, f
		}
		if limit := r.req.limits.MaxProvenanceBytes; size > limit {
			return nil, failure.New(gen.FailureCodeLimitExceeded,
				"the capture provenance needs %d bytes even with its console excerpts cut; limits.max_provenance_bytes is %d", size, limit).
				Field(failure.Path("limits", "max_provenance_bytes"), nil).With("field", "max_provenance_bytes").
				With("requested", size).With("effective_ceiling", limit)
		}
		b.Kind, b.CaptureRequest = "capture", prov
		if af := r.analysisFailure; af != nil {
			b.AnalysisRequest.Failure = &gen.RecordedFailure{Code: af.Code, Message: af.Message, Details: af.Details}
		}
	}
	rt.mu.Lock()
	preserved := r.preserved != nil
	rt.mu.Unlock()
	for i, in := range r.inputs {
		readFrom := in.path
		if preserved && rt.store != nil && in.members == nil {
			// Once preserved, the exact bytes are read back from the store, so a rescue
			// does not depend on the caller's file still being there.
			readFrom = rt.store.PayloadPath(in.sha256)
		}
		b.Sources = append(b.Sources, repository.SourceFile{Path: readFrom, SHA256: in.sha256, Size: in.size,
			Format: in.format, Producer: in.producer, Role: in.role, Members: in.members})
		b.AnalysisSources = append(b.AnalysisSources, int64(i))
		rec := gen.RecordedInput{SHA256: in.sha256, Format: in.format, Role: in.role, Producer: in.producer}
		if in.evidence == nil {
			p := in.path
			rec.Path = &p
		}
		b.AnalysisRequest.Inputs = append(b.AnalysisRequest.Inputs, rec)
	}
	for _, in := range r.extra {
		b.Sources = append(b.Sources, repository.SourceFile{Path: in.path, SHA256: in.sha256, Size: in.size,
			Format: in.format, Role: in.role})
	}
	data := *r.result
	data.AnalysisID, data.Continuation, data.NextPage, data.Preserved = "", nil, nil, nil
	data.Inputs = make([]gen.Input, len(r.result.Inputs))
	for i, in := range r.result.Inputs {
		in.Path = nil
		data.Inputs[i] = in
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the analysis data could not be recorded")
	}
	b.Data = raw
	return b, nil
}

func remarshal(v, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// Numbers stay exact: a window bound of 1700000000000000001 ns is recorded as that,
	// not as the float64 nearest to it.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(into)
}

// evidenceNextPage rewrites a live next_page to read the preserved analysis sources.
func evidenceNextPage(live *gen.NextPage, ev *repository.Evidence) *gen.NextPage {
	if live == nil {
		return nil
	}
	args := make(map[string]any, len(live.Arguments))
	for k, v := range live.Arguments {
		args[k] = v
	}
	args["sources"] = ev.AnalysisSources()
	return &gen.NextPage{Tool: live.Tool, Arguments: args}
}

// Preserve publishes the live analysis id to the configured store. It is idempotent: a
// preserved analysis is validated again and returns the same evidence.
func (rt *Runtime) Preserve(id string) (*gen.PreservationResult, *failure.Failure) {
	r, f := rt.lookup(id)
	if f != nil {
		return nil, f
	}
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	rt.mu.Lock()
	prev := r.preserved
	rt.mu.Unlock()
	var ev *repository.Evidence
	if prev != nil {
		if ev, f = store.Read(prev.ID, repository.LevelArtifacts); f != nil {
			return nil, f
		}
	} else {
		b, f := rt.bundle(r)
		if f != nil {
			return nil, f
		}
		if ev, f = store.Publish(b); f != nil {
			return nil, f.With("analysis_id", id)
		}
		rt.switchToEvidence(r, store, ev)
	}
	return &gen.PreservationResult{
		Status:        "complete",
		EvidenceID:    ev.ID,
		ArtifactCount: int64(len(ev.Manifest.Body.Artifacts)),
		NextPage:      evidenceNextPage(r.result.NextPage, ev),
	}, nil
}

// switchToEvidence marks r preserved as ev. A record that reads capture scratch switches
// to the stored payloads and evidence sources, and releases the scratch: the published
// bundle is now the only copy. A record over the caller's own files keeps its paths.
func (rt *Runtime) switchToEvidence(r *record, store *repository.Store, ev *repository.Evidence) {
	rt.mu.Lock()
	r.preserved = ev
	if len(r.scratch) == 0 {
		rt.mu.Unlock()
		return
	}
	// A directory input (a collector's directory artifact) has no payload of its own
	// digest: it is read again as its members, materialized from the store (decision
	// 0063). materialize takes the lock itself.
	var members map[int][]sourcefile.Member
	for i, in := range r.inputs {
		if in.members != nil {
			if members == nil {
				members = map[int][]sourcefile.Member{}
			}
			members[i] = in.members
		}
	}
	dirs := map[int]string{}
	if len(members) > 0 {
		rt.mu.Unlock()
		for i, m := range members {
			if d, f := rt.materialize(store, &repository.Selected{SHA256: r.inputs[i].sha256, Members: m}); f == nil {
				dirs[i] = d
			}
		}
		rt.mu.Lock()
		if len(r.scratch) == 0 {
			rt.mu.Unlock()
			return
		}
	}
	sel := ev.AnalysisSources()
	for i := range r.inputs {
		r.inputs[i].path = store.PayloadPath(r.inputs[i].sha256)
		if d, ok := dirs[i]; ok {
			r.inputs[i].path = d
		}
		if i < len(sel) {
			r.inputs[i].evidence = &sel[i]
		}
	}
	for i := range r.extra {
		r.extra[i].path = store.PayloadPath(r.extra[i].sha256)
	}
	held := r.scratch
	r.scratch = nil
	rt.mu.Unlock()
	rt.scratch.release(held)
}

// Rescue writes the live analysis id as a complete new store at destination and returns
// the restart handoff. Repeating the same rescue validates the published evidence and
// returns the original handoff, even after the analysis was evicted.
func (rt *Runtime) Rescue(id, destination string) (*gen.RescueResult, *failure.Failure) {
	destination = cleanDestination(destination)
	key := rescueKey{id, destination}
	rt.mu.Lock()
	done := rt.rescues.items[key]
	rt.mu.Unlock()
	if done != nil {
		if f := repository.CheckRescued(destination, done.EvidenceID); f != nil {
			return nil, f
		}
		return done, nil
	}
	r, f := rt.lookup(id)
	if f != nil {
		return nil, f
	}
	active := repository.Location{}
	if store, f := rt.Store(); f == nil {
		active = store.Location()
	}
	if f := repository.PreflightRescue(destination, active); f != nil {
		return nil, f
	}
	b, f := rt.bundle(r)
	if f != nil {
		return nil, f
	}
	ev, f := repository.Rescue(destination, active, b)
	if f != nil {
		return nil, f.With("analysis_id", id)
	}
	res := &gen.RescueResult{
		Status:            "complete",
		EvidenceID:        ev.ID,
		ArtifactCount:     int64(len(ev.Manifest.Body.Artifacts)),
		NextPage:          evidenceNextPage(r.result.NextPage, ev),
		RescueDestination: destination,
		NextAction: gen.RestartReconnect{Kind: "restart_reconnect",
			Environment: map[string]any{repository.EnvironmentVariable: destination},
			Message: "The evidence is in a new store. Restart or reconnect Flameox with FLAMEOX_DATA_DIR set to rescue_destination, then use next_page or evidence " +
				ev.ID + "; the active store is unchanged."},
	}
	rt.mu.Lock()
	rt.rescues.put(key, res)
	rt.mu.Unlock()
	return res, nil
}

// parseTime parses an RFC 3339 time with a timezone; the schema already checked its shape.
func parseTime(field string, v *string) (*time.Time, *failure.Failure) {
	if v == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *v)
	if err != nil {
		return nil, failure.Invalid(failure.Path(field), nil,
			"%s must be an RFC 3339 date-time with a timezone, such as 2026-11-29T12:00:00Z", field)
	}
	return &t, nil
}

// Query returns one page of manifests matching the filters.
func (rt *Runtime) Query(a gen.QueryEvidenceArguments) (*gen.QueryResult, *failure.Failure) {
	after, f := parseTime("created_after", a.CreatedAfter)
	if f != nil {
		return nil, f
	}
	before, f := parseTime("created_before", a.CreatedBefore)
	if f != nil {
		return nil, f
	}
	if after != nil && before != nil && before.Before(*after) {
		return nil, failure.Invalid(failure.Path("created_before"), nil, "created_before must not precede created_after")
	}
	var op *string
	if a.Operation != nil {
		s := string(*a.Operation)
		op = &s
	}
	filter := repository.Filter{Kind: a.EvidenceKind, Operation: op, ProviderID: a.ProviderID,
		InputSHA256: a.InputSHA256, CreatedAfter: after, CreatedBefore: before}
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	cursor := ""
	if a.Cursor != nil {
		cursor = *a.Cursor
	}
	page, f := store.Query(filter, cursor, int(a.PageSize))
	if f != nil {
		return nil, f
	}
	res := &gen.QueryResult{Status: "complete", Evidence: page.Evidence, InventoryDigest: page.InventoryDigest,
		InventorySize: int64(page.InventorySize)}
	if page.NextOffset >= 0 {
		var args map[string]any
		next := a
		c := repository.EncodeCursor(page.InventoryDigest, filter.Digest(), page.NextOffset)
		next.Cursor = &c
		if err := remarshal(next, &args); err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the next query could not be encoded")
		}
		res.NextPage = &gen.NextPage{Tool: "query_evidence", Arguments: args}
	}
	return res, nil
}

// EvidenceSources returns the ordered analysis sources of a validated bundle.
func (rt *Runtime) EvidenceSources(id string) ([]gen.EvidenceSource, *failure.Failure) {
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	ev, f := store.Read(id, repository.LevelManifest)
	if f != nil {
		return nil, f
	}
	return ev.AnalysisSources(), nil
}

// Manifest returns the full canonical manifest of a validated bundle: the local,
// full-provenance view that `flameox evidence show` prints.
func (rt *Runtime) Manifest(id string) (json.RawMessage, *failure.Failure) {
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	ev, f := store.Read(id, repository.LevelFull)
	if f != nil {
		return nil, f
	}
	return ev.Raw, nil
}

// Inspect validates a bundle completely and returns its redacted projection: identities,
// coverage and status, and never argv, environment values, working directories or paths.
func (rt *Runtime) Inspect(id string) (*gen.EvidenceProjection, *failure.Failure) {
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	ev, f := store.Read(id, repository.LevelFull)
	if f != nil {
		return nil, f.Field(failure.Path("evidence_id"), nil)
	}
	b := &ev.Manifest.Body
	reqDigest, err := canon.Digest(b.AnalysisRequest)
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the recorded request has no canonical form")
	}
	p := &gen.EvidenceProjection{
		Status: "complete", FormatVersion: ev.Manifest.FormatVersion, EvidenceID: ev.ID,
		AnalysisSources: ev.AnalysisSources(),
		Body: gen.ProjectedBody{
			EvidenceKind: b.EvidenceKind, Operation: b.Operation,
			Provider:       gen.Provider{ID: b.Provider.ID, Version: b.Provider.Version},
			Inputs:         b.Inputs,
			CaptureRequest: projectCapture(b.CaptureRequest),
			AnalysisRequest: gen.ProjectedRequest{RequestSHA256: reqDigest, Operation: b.AnalysisRequest.Operation, Inputs: []gen.ManifestInput{},
				Offset: b.AnalysisRequest.Offset, Arguments: b.AnalysisRequest.Arguments, Limits: b.AnalysisRequest.Limits},
			Episode:     b.Episode,
			Coverage:    gen.Coverage{RowsReturned: b.Coverage.RowsReturned, RowsObserved: b.Coverage.RowsObserved, Complete: b.Coverage.Complete},
			Limitations: b.Limitations,
		},
	}
	for i, si := range b.SourceLayout.AnalysisSources {
		src := b.SourceLayout.Sources[si]
		in := b.AnalysisRequest.Inputs[i]
		p.Body.AnalysisRequest.Inputs = append(p.Body.AnalysisRequest.Inputs,
			gen.ManifestInput{SHA256: in.SHA256, SizeBytes: src.SizeBytes, Format: in.Format, Role: in.Role})
	}
	if fl := b.AnalysisRequest.Failure; fl != nil {
		p.Body.AnalysisRequest.Failure = map[string]any{"code": fl.Code}
	}
	for i, src := range b.SourceLayout.Sources {
		p.LogicalSources = append(p.LogicalSources, gen.LogicalSource{Role: src.Role, SHA256: src.SHA256,
			SizeBytes: src.SizeBytes, Format: src.Format, Producer: src.Producer,
			Source: selectorSource(ev.ID, "logical", i)})
	}
	for i, a := range b.Artifacts {
		p.Body.Artifacts = append(p.Body.Artifacts, gen.ProjectedArtifact{Role: a.Role, SHA256: a.SHA256,
			SizeBytes: a.SizeBytes, Format: a.Format, Source: selectorSource(ev.ID, "artifact", i)})
	}
	for _, d := range b.DataFiles {
		p.Body.DataFiles = append(p.Body.DataFiles, map[string]any{"sha256": d.SHA256, "size_bytes": d.SizeBytes, "media_type": d.MediaType})
	}
	return p, nil
}

func selectorSource(id, kind string, i int) gen.EvidenceSource {
	sel := repository.Selector(id, kind, i)
	return gen.EvidenceSource{Kind: "evidence", EvidenceID: id, ArtifactSelector: &sel}
}

// captureSafeKeys are the capture provenance keys inspect_evidence may show; argv, cwd,
// environment values and console text never appear.
var captureSafeExecutionKeys = []string{"case", "block", "returncode", "returncode_scope", "executable_sha256",
	"collector_executable_sha256", "workload_executable_sha256", "workload_returncode", "status", "failure_code",
	"missing_artifact_roles", "wall_time_ns", "containment", "limit", "output_streams"}

// projectCapture returns the allowlisted projection of capture provenance, or nil.
func projectCapture(c map[string]any) map[string]any {
	if c == nil {
		return nil
	}
	out := map[string]any{"mode": c["mode"], "experiment_present": c["experiment"] != nil}
	if d, err := canon.Digest(c); err == nil {
		out["request_sha256"] = d
	}
	if t, ok := c["target"].(map[string]any); ok {
		target := map[string]any{"provider_id": t["provider_id"], "budget": t["budget"]}
		if argv, ok := t["argv"].([]any); ok {
			target["argument_count"] = len(argv)
		}
		if env, ok := t["environment"].(map[string]any); ok {
			target["environment_override_count"] = len(env)
		}
		out["target"] = target
	}
	var execs []any
	if list, ok := c["executions"].([]any); ok {
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			safe := map[string]any{}
			for _, k := range captureSafeExecutionKeys {
				if v, ok := m[k]; ok {
					safe[k] = v
				}
			}
			if cd, ok := m["console_diagnostics"].(map[string]any); ok {
				safe["console_diagnostics"] = consoleCounts(cd)
			}
			if o, ok := m["semantic_oracle"].(map[string]any); ok {
				oracle := map[string]any{}
				for _, k := range []string{"returncode", "status", "failure_code", "limit", "wall_time_ns"} {
					oracle[k] = o[k]
				}
				if cd, ok := o["output_streams"].(map[string]any); ok {
					oracle["output_streams"] = consoleCounts(cd)
				}
				safe["semantic_oracle"] = oracle
			}
			execs = append(execs, safe)
		}
	}
	out["executions"] = execs
	return out
}

// PreflightRescue checks a rescue destination against the active store before any
// analysis runs, as `flameox analyze --rescue-to` requires.
func (rt *Runtime) PreflightRescue(destination string) *failure.Failure {
	destination = cleanDestination(destination)
	active := repository.Location{}
	if store, f := rt.Store(); f == nil {
		active = store.Location()
	}
	return repository.PreflightRescue(destination, active)
}

// consoleCounts keeps the byte counts and completeness of console diagnostics, never the
// excerpt text.
func consoleCounts(cd map[string]any) map[string]any {
	counts := map[string]any{}
	for k, v := range cd {
		if k != "stdout" && k != "stderr" {
			counts[k] = v
		}
	}
	return counts
}

// cleanDestination cleans an absolute rescue destination ("/tmp/rescue/" names
// "/tmp/rescue"); a relative one is left for the rules to refuse.
func cleanDestination(d string) string {
	if filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return d
}
