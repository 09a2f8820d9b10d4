package repository

import (
	"os"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// OpenArtifact validates the stored artifact sum completely (its directory, document,
// payload size and SHA-256) and opens its payload for reading. An artifact the store does
// not hold is MISSING_EVIDENCE; a damaged one is REPOSITORY_CORRUPTION. The caller closes
// the file. Nothing is written.
func (s *Store) OpenArtifact(sum string) (*os.File, int64, *failure.Failure) {
	if !isHex(sum, 64) {
		return nil, 0, failure.Invalid(failure.Path("sha256"), nil, "an artifact digest is 64 lowercase hexadecimal characters")
	}
	state, f := s.checkRoot()
	if f != nil {
		return nil, 0, f
	}
	absent := failure.New(gen.FailureCodeMissingEvidence, "artifact %s is not in the evidence store", sum).
		With("artifact_sha256", sum)
	if state != rootReady {
		return nil, 0, absent
	}
	dir, f, err := s.realDir(artifactRel(sum)...)
	if err != nil {
		return nil, 0, absent
	}
	if f != nil {
		return nil, 0, f.With("artifact_sha256", sum)
	}
	var doc gen.ArtifactDocument
	if f := s.readDocument(dir+"/artifact.json", "artifact.json", maxSmallDocumentBytes, schemaArtifact, &doc); f != nil {
		return nil, 0, f.With("artifact_sha256", sum)
	}
	if f := s.checkArtifactDir(dir, sum, doc.SizeBytes, true); f != nil {
		return nil, 0, f
	}
	// The payload checked above must be the file opened: a link swapped in between fails.
	lst, err := os.Lstat(dir + "/payload")
	if err != nil {
		return nil, 0, s.ioFailure(err, "read")
	}
	file, err := os.Open(dir + "/payload")
	if err != nil {
		return nil, 0, s.ioFailure(err, "read")
	}
	st, err := file.Stat()
	if err != nil || !os.SameFile(lst, st) || !st.Mode().IsRegular() || st.Size() != doc.SizeBytes {
		file.Close()
		return nil, 0, s.corrupt("payload_digest", "artifact %s changed while it was opened", sum).With("artifact_sha256", sum)
	}
	return file, doc.SizeBytes, nil
}
