package repository

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
)

// Level selects how much of a bundle a read validates. Every level validates the store
// root, the bundle's topology, the manifest's shape, identity and invariants.
type Level int

const (
	// LevelManifest also validates nothing else: query uses it.
	LevelManifest Level = iota
	// LevelData adds the data files' digests and sizes.
	LevelData
	// LevelArtifacts adds every artifact's directory, document and payload size. An
	// analysis reading the payload verifies its digest while it hashes the source.
	LevelArtifacts
	// LevelFull adds every payload's digest.
	LevelFull
)

// Evidence is one validated bundle.
type Evidence struct {
	ID       string
	Manifest gen.Manifest
	// Raw is manifest.json exactly as stored (canonical bytes).
	Raw []byte
	dir string
}

// missing returns MISSING_EVIDENCE for id.
func missing(id string) *failure.Failure {
	return failure.New(gen.FailureCodeMissingEvidence, "evidence %s is not in the evidence store", id).
		With("evidence_id", id).
		With("recovery", []string{"Call query_evidence to list the preserved evidence, or preserve the analysis again."})
}

// Read returns the validated bundle id at level. A bundle that does not exist is
// MISSING_EVIDENCE; any violation is REPOSITORY_CORRUPTION or UNSUPPORTED_REPOSITORY_FORMAT
// and nothing is repaired.
func (s *Store) Read(id string, level Level) (*Evidence, *failure.Failure) {
	if !isHex(id, 64) {
		return nil, failure.Invalid(failure.Path("evidence_id"), nil, "an evidence_id is 64 lowercase hexadecimal characters")
	}
	state, f := s.checkRoot()
	if f != nil {
		return nil, f
	}
	if state != rootReady {
		return nil, missing(id)
	}
	return s.readBundle(id, level)
}

func (s *Store) readBundle(id string, level Level) (*Evidence, *failure.Failure) {
	dir, f, err := s.realDir(evidenceRel(id)...)
	if err != nil {
		return nil, missing(id)
	}
	if f != nil {
		return nil, f.With("evidence_id", id)
	}
	ev, f := s.readManifestAt(dir, id)
	if f != nil {
		return nil, f.With("evidence_id", id)
	}
	if level >= LevelData {
		if f := s.checkDataFiles(ev); f != nil {
			return nil, f.With("evidence_id", id)
		}
	}
	if level >= LevelArtifacts {
		if f := s.checkArtifacts(ev, level == LevelFull); f != nil {
			return nil, f.With("evidence_id", id)
		}
	}
	return ev, nil
}

// readManifestAt validates the bundle directory dir, whose name must be id.
func (s *Store) readManifestAt(dir, id string) (*Evidence, *failure.Failure) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, s.ioFailure(err, "read")
	}
	var m gen.Manifest
	raw, members, f := s.readDocumentRaw(dir+"/manifest.json", "manifest.json", maxManifestBytes, schemaManifest, &m)
	if f != nil {
		return nil, f
	}
	want := map[string]bool{"manifest.json": true}
	if len(m.Body.DataFiles) > 0 {
		want["data"] = true
	}
	for _, e := range entries {
		if !want[e.Name()] {
			return nil, s.corrupt("unexpected_entry", "evidence %s holds an entry its manifest does not declare", id)
		}
		delete(want, e.Name())
	}
	if len(want) > 0 {
		return nil, s.corrupt("missing_entry", "evidence %s lacks a declared entry", id)
	}
	body, err := canon.Canonical(members["body"])
	if err != nil {
		return nil, s.corrupt("manifest_identity", "the manifest body of evidence %s has no canonical form", id)
	}
	sum := sha256.Sum256(body)
	if got := hex.EncodeToString(sum[:]); got != m.EvidenceID || got != id {
		return nil, s.corrupt("manifest_identity", "the manifest body of evidence %s does not hash to its evidence_id", id).
			With("recorded_evidence_id", m.EvidenceID)
	}
	if f := s.checkInvariants(&m.Body, id); f != nil {
		return nil, f
	}
	return &Evidence{ID: id, Manifest: m, Raw: raw, dir: dir}, nil
}

// consoleSuffixes end the roles of console logical sources.
var consoleSuffixes = []string{"/stdout", "/stderr", "/oracle_stdout", "/oracle_stderr"}

// IsConsoleRole reports whether role names retained console output.
func IsConsoleRole(role string) bool {
	for _, s := range consoleSuffixes {
		if strings.HasSuffix(role, s) {
			return true
		}
	}
	return false
}

// checkInvariants checks the membership rules a schema cannot express.
func (s *Store) checkInvariants(b *gen.ManifestBody, id string) *failure.Failure {
	bad := func(rule string) *failure.Failure {
		return s.corrupt("manifest_invariant", "the manifest of evidence %s breaks the rule: %s", id, rule).With("rule", rule)
	}
	if b.Operation != b.AnalysisRequest.Operation {
		return bad("operation equals analysis_request.operation")
	}
	if b.EvidenceKind == "analysis" && b.CaptureRequest != nil {
		return bad("analysis evidence has no capture_request")
	}
	roles := map[string]bool{}
	for _, a := range b.Artifacts {
		if roles[a.Role] {
			return bad("artifact roles are unique")
		}
		roles[a.Role] = true
	}
	owner := make([]int, len(b.Artifacts))
	for i := range owner {
		owner[i] = -1
	}
	sourceRoles := map[string]bool{}
	for si, src := range b.SourceLayout.Sources {
		if sourceRoles[src.Role] {
			return bad("source roles are unique")
		}
		sourceRoles[src.Role] = true
		for _, ai := range src.ArtifactIndices {
			if ai < 0 || int(ai) >= len(b.Artifacts) {
				return bad("artifact indices are in range")
			}
			if owner[ai] != -1 {
				return bad("every artifact belongs to exactly one source")
			}
			owner[ai] = si
		}
		if !src.IsDirectory {
			if len(src.ArtifactIndices) != 1 || len(src.RelativePaths) != 0 {
				return bad("a file source has exactly one artifact and no relative paths")
			}
			a := b.Artifacts[src.ArtifactIndices[0]]
			if a.Role != src.Role || a.SHA256 != src.SHA256 || a.SizeBytes != src.SizeBytes ||
				a.Format != src.Format || !sameProducer(a.Producer, src.Producer) {
				return bad("a file source and its artifact have the same role, digest, size, format and producer")
			}
			continue
		}
		if f := checkDirectorySource(b, src); f != "" {
			return bad(f)
		}
	}
	for _, o := range owner {
		if o == -1 {
			return bad("every artifact belongs to exactly one source")
		}
	}
	if len(b.Inputs) != len(b.SourceLayout.Sources) {
		return bad("inputs list every logical source")
	}
	for i, in := range b.Inputs {
		src := b.SourceLayout.Sources[i]
		if in.SHA256 != src.SHA256 || in.SizeBytes != src.SizeBytes || in.Format != src.Format || in.Role != src.Role {
			return bad("inputs match the logical sources in order")
		}
	}
	req := b.AnalysisRequest
	if len(b.SourceLayout.AnalysisSources) != len(req.Inputs) {
		return bad("analysis_sources match analysis_request.inputs")
	}
	for i, si := range b.SourceLayout.AnalysisSources {
		if si < 0 || int(si) >= len(b.SourceLayout.Sources) {
			return bad("analysis source indices are in range")
		}
		src, in := b.SourceLayout.Sources[si], req.Inputs[i]
		if src.SHA256 != in.SHA256 || src.Format != in.Format || !sameProducer(src.Producer, in.Producer) {
			return bad("each analysis source has the digest, format and producer of its recorded input")
		}
	}
	paths := map[string]bool{}
	for _, d := range b.DataFiles {
		if paths[d.Path] || d.MediaType != DataMediaType {
			return bad("data files are unique and of the evidence media type")
		}
		paths[d.Path] = true
	}
	return nil
}

// checkDirectorySource checks a directory source: normalized, distinct, prefix-free member
// paths, member roles <role>:<path>, and the bundle digest over sorted members.
func checkDirectorySource(b *gen.ManifestBody, src gen.LayoutSource) string {
	if len(src.RelativePaths) != len(src.ArtifactIndices) {
		return "a directory source has one relative path per artifact"
	}
	ms := make([]sourcefile.Member, len(src.RelativePaths))
	var size int64
	for i, rel := range src.RelativePaths {
		if !sourcefile.ValidRel(rel) {
			return "directory member paths are normalized relative POSIX paths"
		}
		a := b.Artifacts[src.ArtifactIndices[i]]
		if a.Role != src.Role+":"+rel {
			return "directory member roles are <role>:<relative path>"
		}
		ms[i] = sourcefile.Member{Rel: rel, SHA256: a.SHA256, Size: a.SizeBytes}
		size += a.SizeBytes
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Rel < ms[j].Rel })
	for i := 1; i < len(ms); i++ {
		if ms[i-1].Rel == ms[i].Rel || strings.HasPrefix(ms[i].Rel, ms[i-1].Rel+"/") {
			return "directory member paths are distinct and prefix-free"
		}
	}
	if sourcefile.DirectoryDigest(ms) != src.SHA256 || size != src.SizeBytes {
		return "a directory source's digest and size cover its members"
	}
	return ""
}

func sameProducer(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// checkDataFiles verifies each data file is a regular file with its digest and size.
func (s *Store) checkDataFiles(ev *Evidence) *failure.Failure {
	data := ev.dir + "/data"
	if len(ev.Manifest.Body.DataFiles) == 0 {
		return nil
	}
	st, err := os.Lstat(data)
	if err != nil {
		return s.corrupt("missing_entry", "the data directory of evidence %s is missing", ev.ID)
	}
	if !st.IsDir() || st.Mode()&fs.ModeSymlink != 0 {
		return s.corrupt("symlink", "the data directory of evidence %s is not a real directory", ev.ID)
	}
	entries, err := os.ReadDir(data)
	if err != nil {
		return s.ioFailure(err, "read")
	}
	declared := map[string]gen.DataFile{}
	for _, d := range ev.Manifest.Body.DataFiles {
		declared[strings.TrimPrefix(d.Path, "data/")] = d
	}
	if len(entries) != len(declared) {
		return s.corrupt("unexpected_entry", "the data directory of evidence %s does not hold exactly its declared files", ev.ID)
	}
	for _, e := range entries {
		d, ok := declared[e.Name()]
		if !ok {
			return s.corrupt("unexpected_entry", "the data directory of evidence %s holds an undeclared file", ev.ID)
		}
		p := data + "/" + e.Name()
		if f := s.checkFile(p, d.SHA256, d.SizeBytes, true, "data_digest"); f != nil {
			return f.With("data_file", d.Path)
		}
	}
	return nil
}

// checkFile checks that p is a regular file (not a link) of size bytes and, when hash is
// set, of digest sum.
func (s *Store) checkFile(p, sum string, size int64, hash bool, problem string) *failure.Failure {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return s.corrupt("missing_entry", "a declared file is missing")
	}
	if err != nil {
		return s.ioFailure(err, "read")
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return s.corrupt("symlink", "a declared file is a symbolic link")
	}
	if !st.Mode().IsRegular() {
		return s.corrupt("unexpected_entry", "a declared file is not a regular file")
	}
	if st.Size() != size {
		return s.corrupt(problem, "a stored file does not have its recorded size").
			With("recorded_size_bytes", size).With("actual_size_bytes", st.Size())
	}
	if hash {
		got, _, err := sourcefile.Hash(p)
		if err != nil {
			return s.ioFailure(err, "read")
		}
		if got != sum {
			return s.corrupt(problem, "a stored file does not have its recorded SHA-256").With("recorded_sha256", sum)
		}
	}
	return nil
}

// checkArtifacts validates every artifact of ev: a real directory holding exactly
// artifact.json and payload, the document's identity and size, and optionally the payload
// digest.
func (s *Store) checkArtifacts(ev *Evidence, hash bool) *failure.Failure {
	seen := map[string]bool{}
	for _, a := range ev.Manifest.Body.Artifacts {
		if seen[a.SHA256] {
			continue
		}
		seen[a.SHA256] = true
		if f := s.CheckArtifact(a.SHA256, a.SizeBytes, hash); f != nil {
			return f
		}
	}
	return nil
}

// CheckArtifact validates the stored artifact sum of size bytes.
func (s *Store) CheckArtifact(sum string, size int64, hash bool) *failure.Failure {
	dir, f, err := s.realDir(artifactRel(sum)...)
	if err != nil {
		return s.corrupt("missing_artifact", "artifact %s named by a manifest is missing", sum).With("artifact_sha256", sum)
	}
	if f != nil {
		return f.With("artifact_sha256", sum)
	}
	return s.checkArtifactDir(dir, sum, size, hash)
}

func (s *Store) checkArtifactDir(dir, sum string, size int64, hash bool) *failure.Failure {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s.ioFailure(err, "read")
	}
	if len(entries) != 2 || entries[0].Name() != "artifact.json" || entries[1].Name() != "payload" {
		return s.corrupt("unexpected_entry", "artifact %s does not hold exactly artifact.json and payload", sum).With("artifact_sha256", sum)
	}
	var doc gen.ArtifactDocument
	if f := s.readDocument(dir+"/artifact.json", "artifact.json", maxSmallDocumentBytes, schemaArtifact, &doc); f != nil {
		return f.With("artifact_sha256", sum)
	}
	if doc.SHA256 != sum || doc.SizeBytes != size {
		return s.corrupt("artifact_identity", "artifact %s is recorded with another digest or size", sum).With("artifact_sha256", sum)
	}
	if f := s.checkFile(dir+"/payload", sum, size, hash, "payload_digest"); f != nil {
		return f.With("artifact_sha256", sum)
	}
	return nil
}

// safeName returns an inventory entry name when it is short and plain, else its digest.
func safeName(n string) string {
	if len(n) <= 80 && !strings.ContainsAny(n, "/\\\x00") {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return "sha256:" + hex.EncodeToString(sum[:])
}
