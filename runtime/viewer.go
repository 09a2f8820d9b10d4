package runtime

import (
	"context"
	"encoding/json"
	"os"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/repository"
)

// Artifact is an open, validated artifact payload: its exact stored bytes.
type Artifact struct {
	File   *os.File
	Size   int64
	SHA256 string
	// Format is the format the named evidence records for the artifact; empty when the
	// request named no evidence.
	Format gen.Format
}

// OpenArtifact validates the stored artifact sum (directory, document, size and SHA-256)
// and opens its payload; the caller closes Artifact.File. When evidenceID is not empty the
// artifact must be one that evidence declares, and its recorded format is returned.
func (rt *Runtime) OpenArtifact(sum, evidenceID string) (*Artifact, *failure.Failure) {
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	var format gen.Format
	if evidenceID != "" {
		ev, f := store.Read(evidenceID, repository.LevelManifest)
		if f != nil {
			return nil, f.Field(failure.Path("evidence_id"), nil)
		}
		found := false
		for _, a := range ev.Manifest.Body.Artifacts {
			if a.SHA256 == sum {
				format, found = a.Format, true
				break
			}
		}
		if !found {
			return nil, failure.New(gen.FailureCodeMissingEvidence, "evidence %s declares no artifact %s", evidenceID, sum).
				Field(failure.Path("sha256"), nil).With("evidence_id", evidenceID).With("artifact_sha256", sum)
		}
	}
	file, size, f := store.OpenArtifact(sum)
	if f != nil {
		return nil, f
	}
	return &Artifact{File: file, Size: size, SHA256: sum, Format: format}, nil
}

// AnalyzeEvidence runs one page of the named analysis tool over evidence sources only and
// returns the same envelope as the tool, without a session handle: the result is not
// cached and cannot be preserved. A path source is INVALID_INPUT at its kind, so a
// caller (the evidence viewer) reads nothing but preserved evidence.
func (rt *Runtime) AnalyzeEvidence(ctx context.Context, name string, raw []byte) (*Result, *failure.Failure) {
	var shape struct {
		Sources []json.RawMessage `json:"sources"`
	}
	if json.Unmarshal(raw, &shape) == nil {
		for i, s := range shape.Sources {
			var src struct {
				Kind any `json:"kind"`
			}
			if json.Unmarshal(s, &src) == nil && src.Kind != nil && src.Kind != "evidence" {
				return nil, failure.Invalid(failure.Path("sources", i, "kind"), []string{"evidence"},
					"sources[%d] must be an evidence source: this surface reads only preserved evidence", i)
			}
		}
	}
	res, _, f := rt.analyzeTool(ctx, name, raw)
	return res, f
}
