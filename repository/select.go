package repository

import (
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
)

// Selector returns the opaque selector of a logical source ("logical") or an artifact
// ("artifact") of evidence id: the SHA-256 of the canonical [id, kind, index].
func Selector(id, kind string, index int) string {
	d, err := canon.Digest([]any{id, kind, index})
	if err != nil {
		panic(err) // a string and a small integer always have a canonical form
	}
	return d
}

// Selected is one native file chosen from a bundle.
type Selected struct {
	SHA256   string
	Size     int64
	Format   gen.Format
	Producer *string
	Role     string
	// Selector is the selector that names it (logical for a source, artifact for a member).
	Selector string
	// Members are a directory source's files (their payloads are PayloadPath of each
	// member's SHA-256); SHA256 and Size are then the bundle digest and total size.
	Members []sourcefile.Member
}

// Select chooses the logical source or artifact named by selector. Without a selector the
// bundle must hold exactly one logical source that is not retained console output.
// fieldPath locates the source in the caller's request for failures.
func (e *Evidence) Select(selector *string, fieldPath []any) (*Selected, *failure.Failure) {
	b := &e.Manifest.Body
	fromSource := func(i int) (*Selected, *failure.Failure) {
		src := b.SourceLayout.Sources[i]
		sel := &Selected{SHA256: src.SHA256, Size: src.SizeBytes, Format: src.Format, Producer: src.Producer,
			Role: src.Role, Selector: Selector(e.ID, "logical", i)}
		if src.IsDirectory {
			sel.Members = make([]sourcefile.Member, len(src.RelativePaths))
			for k, rel := range src.RelativePaths {
				a := b.Artifacts[src.ArtifactIndices[k]]
				sel.Members[k] = sourcefile.Member{Rel: rel, SHA256: a.SHA256, Size: a.SizeBytes}
			}
		}
		return sel, nil
	}
	if selector == nil {
		var candidates []int
		for i, src := range b.SourceLayout.Sources {
			if !IsConsoleRole(src.Role) {
				candidates = append(candidates, i)
			}
		}
		if len(candidates) == 1 {
			return fromSource(candidates[0])
		}
		accepted := make([]string, 0, len(candidates))
		for _, i := range candidates {
			accepted = append(accepted, Selector(e.ID, "logical", i))
		}
		return nil, failure.Invalid(append(fieldPath, "artifact_selector"), accepted,
			"a selector is required: evidence %s holds %d logical sources; pass one artifact_selector from inspect_evidence",
			e.ID, len(candidates)).With("evidence_id", e.ID)
	}
	for i := range b.SourceLayout.Sources {
		if Selector(e.ID, "logical", i) == *selector {
			return fromSource(i)
		}
	}
	for i, a := range b.Artifacts {
		if Selector(e.ID, "artifact", i) == *selector {
			return &Selected{SHA256: a.SHA256, Size: a.SizeBytes, Format: a.Format, Producer: a.Producer,
				Role: a.Role, Selector: *selector}, nil
		}
	}
	return nil, failure.New(gen.FailureCodeMissingEvidence,
		"evidence %s has no source or artifact with this selector", e.ID).
		Field(append(fieldPath, "artifact_selector"), nil).With("evidence_id", e.ID)
}

// AnalysisSources returns the ordered evidence sources that replay the recorded analysis.
func (e *Evidence) AnalysisSources() []gen.EvidenceSource {
	out := make([]gen.EvidenceSource, len(e.Manifest.Body.SourceLayout.AnalysisSources))
	for i, si := range e.Manifest.Body.SourceLayout.AnalysisSources {
		sel := Selector(e.ID, "logical", int(si))
		out[i] = gen.EvidenceSource{Kind: "evidence", EvidenceID: e.ID, ArtifactSelector: &sel}
	}
	return out
}
