package repository

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/owner"
	"github.com/flameox/flameox/internal/sourcefile"
)

// SourceFile is one native file to preserve as a logical source.
type SourceFile struct {
	// Path is where the bytes are read from now: the caller's path or a stored payload.
	Path     string
	SHA256   string
	Size     int64
	Format   gen.Format
	Producer *string
	Role     string
	// Members are the files of a directory source (Path is the directory), sorted by
	// relative path; SHA256 and Size are then the bundle digest and total size. Nil for
	// a file source.
	Members []sourcefile.Member
}

// artifacts lists the content-addressed files of the bundle in order: a file source is
// one artifact; a directory source is one per member, with the role <role>:<relative
// path> and the directory's format and producer.
func (b *Bundle) artifacts() []SourceFile {
	var out []SourceFile
	for _, src := range b.Sources {
		if src.Members == nil {
			out = append(out, src)
			continue
		}
		for _, m := range src.Members {
			out = append(out, SourceFile{Path: filepath.Join(src.Path, filepath.FromSlash(m.Rel)), SHA256: m.SHA256, Size: m.Size,
				Format: src.Format, Producer: src.Producer, Role: src.Role + ":" + m.Rel})
		}
	}
	return out
}

// Bundle is everything one evidence bundle records.
type Bundle struct {
	Kind      string // "analysis" or "capture"
	Operation gen.OperationName
	Provider  gen.StoredProvider
	// Sources are the logical sources in order; AnalysisSources index them.
	Sources         []SourceFile
	AnalysisSources []int64
	AnalysisRequest gen.AnalysisRequestRecord
	CaptureRequest  map[string]any
	Coverage        gen.StoredCoverage
	Limitations     []string
	// Data is data/analysis.json.
	Data      []byte
	CreatedAt time.Time
}

// testHookBeforeRename, when set by a test, runs after a bundle is staged and validated
// and before it is renamed into place.
var testHookBeforeRename func(stage string)

// Publish preserves b. Every source is re-hashed first: a source whose artifact is new is
// verified by the copy into staging, one whose artifact is stored already is hashed again,
// and a changed input fails before anything is renamed into place. The store is created
// lazily; each artifact and then the evidence bundle is published through a validated
// staging directory and an atomic no-replace rename, with fsync. A concurrent
// publisher's entry is validated and reused, never overwritten. Publishing the same bundle
// again validates it and returns it.
func (s *Store) Publish(b *Bundle) (*Evidence, *failure.Failure) {
	body, f := b.body()
	if f != nil {
		return nil, f
	}
	canonBody, err := canon.Marshal(body)
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the manifest has no canonical form")
	}
	sum := sha256.Sum256(canonBody)
	id := hex.EncodeToString(sum[:])
	manifest, err := canon.Marshal(gen.Manifest{FormatVersion: FormatVersion, EvidenceID: id, Body: *body})
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the manifest has no canonical form")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.initialize(); f != nil {
		return nil, f
	}
	defer os.Remove(s.path(".staging", s.owner))
	// Evidence that exists already is validated as it stands, before any artifact is
	// written: a damaged bundle stays damaged and the publication fails.
	if _, f, err := s.realDir(evidenceRel(id)...); err == nil {
		if f != nil {
			return nil, f
		}
		for i, src := range b.Sources {
			if f := unchanged(i, src); f != nil {
				return nil, f
			}
		}
		return s.readBundle(id, LevelFull)
	}
	artifacts := b.artifacts()
	staged := map[string]string{} // artifact digest -> staging directory
	defer func() {
		for _, dir := range staged {
			os.RemoveAll(dir)
		}
	}()
	for i, src := range artifacts {
		if _, ok := staged[src.SHA256]; ok {
			if f := unchanged(i, src); f != nil {
				return nil, f
			}
			continue
		}
		if _, f, err := s.realDir(artifactRel(src.SHA256)...); err == nil {
			if f == nil {
				f = unchanged(i, src)
			}
			if f == nil {
				f = s.CheckArtifact(src.SHA256, src.Size, true)
			}
			if f != nil {
				return nil, f.With("source_index", i)
			}
			continue
		}
		dir, f := s.stageArtifact(i, src)
		if dir != "" {
			staged[src.SHA256] = dir
		}
		if f != nil {
			return nil, f.With("source_index", i)
		}
	}
	for _, src := range artifacts {
		dir, ok := staged[src.SHA256]
		if !ok {
			continue
		}
		delete(staged, src.SHA256)
		if f := s.place(dir, artifactRel(src.SHA256), func() *failure.Failure {
			return s.CheckArtifact(src.SHA256, src.Size, true)
		}); f != nil {
			os.RemoveAll(dir)
			return nil, f
		}
		os.RemoveAll(dir) // empty unless a concurrent publisher placed the artifact first
	}
	return s.publishEvidence(id, manifest, b.Data)
}

// unchanged re-hashes source i and fails when it no longer has its analyzed identity.
func unchanged(i int, src SourceFile) *failure.Failure {
	if src.Members != nil {
		_, sum, size, err := sourcefile.HashDirectory(context.Background(), src.Path, int64(len(src.Members)), src.Size)
		if err != nil || sum != src.SHA256 || size != src.Size {
			return changed(i, src)
		}
		return nil
	}
	sum, size, err := sourcefile.Hash(src.Path)
	if err != nil || sum != src.SHA256 || size != src.Size {
		return changed(i, src)
	}
	return nil
}

func changed(i int, src SourceFile) *failure.Failure {
	return failure.New(gen.FailureCodeMissingOrChangedInput,
		"source %d changed or disappeared since it was analyzed; nothing was preserved", i).
		With("source_index", i).With("sha256_analyzed", src.SHA256)
}

// body builds the manifest body: artifacts, layout and data file entries from the sources.
func (b *Bundle) body() (*gen.ManifestBody, *failure.Failure) {
	dataSum := sha256.Sum256(b.Data)
	body := &gen.ManifestBody{
		EvidenceKind:    b.Kind,
		Operation:       b.Operation,
		Provider:        b.Provider,
		CaptureRequest:  b.CaptureRequest,
		AnalysisRequest: b.AnalysisRequest,
		Episode:         gen.Episode{CreatedAt: b.CreatedAt.UTC().Format(time.RFC3339Nano)},
		Coverage:        b.Coverage,
		Limitations:     append([]string{}, b.Limitations...),
		SourceLayout:    gen.SourceLayout{AnalysisSources: append([]int64{}, b.AnalysisSources...)},
		DataFiles: []gen.DataFile{{Path: "data/analysis.json", SHA256: hex.EncodeToString(dataSum[:]),
			SizeBytes: int64(len(b.Data)), MediaType: DataMediaType}},
	}
	for _, src := range b.Sources {
		body.Inputs = append(body.Inputs, gen.ManifestInput{SHA256: src.SHA256, SizeBytes: src.Size, Format: src.Format, Role: src.Role})
		layout := gen.LayoutSource{Role: src.Role, SHA256: src.SHA256, SizeBytes: src.Size, Format: src.Format,
			Producer: src.Producer, IsDirectory: src.Members != nil, ArtifactIndices: []int64{}, RelativePaths: []string{}}
		if src.Members == nil {
			layout.ArtifactIndices = append(layout.ArtifactIndices, int64(len(body.Artifacts)))
			body.Artifacts = append(body.Artifacts, gen.ArtifactEntry{FormatVersion: FormatVersion, SHA256: src.SHA256,
				SizeBytes: src.Size, Role: src.Role, Format: src.Format, Producer: src.Producer})
		}
		for _, m := range src.Members {
			layout.ArtifactIndices = append(layout.ArtifactIndices, int64(len(body.Artifacts)))
			layout.RelativePaths = append(layout.RelativePaths, m.Rel)
			body.Artifacts = append(body.Artifacts, gen.ArtifactEntry{FormatVersion: FormatVersion, SHA256: m.SHA256,
				SizeBytes: m.Size, Role: src.Role + ":" + m.Rel, Format: src.Format, Producer: src.Producer})
		}
		body.SourceLayout.Sources = append(body.SourceLayout.Sources, layout)
	}
	if body.Limitations == nil {
		body.Limitations = []string{}
	}
	return body, nil
}

// initialize creates the store when it is absent or empty and removes abandoned staging.
// repository.json is written through staging and hard-linked into place, so it is never
// overwritten and never seen half-written.
func (s *Store) initialize() *failure.Failure {
	state, f := s.checkRoot()
	if f != nil {
		return f
	}
	if state == rootAbsent {
		if err := os.MkdirAll(s.loc.Dir, 0o700); err != nil {
			return s.ioFailure(err, "created")
		}
	}
	// .staging is checked to be a real directory before anything is created in it: a
	// link there would make publication write, and cleanup delete, outside the store.
	if f := s.mkdirs(".staging"); f != nil {
		return f
	}
	if f := s.mkdirs(".staging", s.owner); f != nil {
		return f
	}
	if state != rootReady {
		doc, err := canon.Marshal(gen.RepositoryDocument{FormatVersion: FormatVersion,
			CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)})
		if err != nil {
			return failure.Wrap(err, gen.FailureCodeInternalFailure, "the repository document has no canonical form")
		}
		tmp := s.path(".staging", s.owner, "repository-"+randomHex(12)+".json")
		if err := writeSynced(tmp, doc); err != nil {
			return s.ioFailure(err, "created")
		}
		err = os.Link(tmp, s.path("repository.json"))
		os.Remove(tmp)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return s.ioFailure(err, "created")
		}
		if err := syncDir(s.loc.Dir); err != nil {
			return s.ioFailure(err, "created")
		}
		if _, f := s.checkRoot(); f != nil {
			return f
		}
	}
	for _, d := range [][]string{{"artifacts", "sha256"}, {"evidence", "sha256"}} {
		if f := s.mkdirs(d...); f != nil {
			return f
		}
	}
	if !s.cleaned {
		s.cleaned = true
		s.removeAbandonedStaging()
	}
	return nil
}

// mkdirs creates the directories rel below the root, refusing links on the way.
func (s *Store) mkdirs(rel ...string) *failure.Failure {
	p := s.loc.Dir
	for _, r := range rel {
		p = filepath.Join(p, r)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return s.ioFailure(err, "created")
		}
	}
	_, f, err := s.realDir(rel...)
	if err != nil {
		return s.ioFailure(err, "created")
	}
	return f
}

// stage creates a new staging directory for one publication.
func (s *Store) stage(kind string) (string, *failure.Failure) {
	p := s.path(".staging", s.owner, kind+"-"+randomHex(12))
	if err := os.Mkdir(p, 0o700); err != nil {
		return "", s.ioFailure(err, "written")
	}
	return p, nil
}

// stageArtifact copies src's exact bytes into a new staging directory, verifying them
// against the analyzed digest and size, with artifact.json beside them, and validates the
// staged structure. It returns the directory (to be placed, or removed on failure).
func (s *Store) stageArtifact(i int, src SourceFile) (string, *failure.Failure) {
	stage, f := s.stage("artifact")
	if f != nil {
		return "", f
	}
	if err := sourcefile.CopyVerified(src.Path, stage+"/payload", src.SHA256, src.Size); err != nil {
		if errors.Is(err, sourcefile.ErrChanged) || errors.Is(err, fs.ErrNotExist) {
			return stage, changed(i, src)
		}
		return stage, s.ioFailure(err, "written")
	}
	doc, err := canon.Marshal(gen.ArtifactDocument{FormatVersion: FormatVersion, SHA256: src.SHA256, SizeBytes: src.Size})
	if err != nil {
		return stage, failure.Wrap(err, gen.FailureCodeInternalFailure, "the artifact document has no canonical form")
	}
	if err := writeSynced(stage+"/artifact.json", doc); err != nil {
		return stage, s.ioFailure(err, "written")
	}
	if err := syncDir(stage); err != nil {
		return stage, s.ioFailure(err, "written")
	}
	// The payload digest was verified while copying; validate the staged structure.
	return stage, s.checkArtifactDir(stage, src.SHA256, src.Size, false)
}

// place renames stage to rel without replacing anything. When another publisher placed
// the same entry first, validateExisting decides whether it can be reused.
func (s *Store) place(stage string, rel []string, validateExisting func() *failure.Failure) *failure.Failure {
	if f := s.mkdirs(rel[:len(rel)-1]...); f != nil {
		return f
	}
	dest := s.path(rel...)
	if testHookBeforeRename != nil {
		testHookBeforeRename(stage)
	}
	err := renameNoReplace(stage, dest)
	if errors.Is(err, errExists) {
		return validateExisting()
	}
	if err != nil {
		return s.ioFailure(err, "written")
	}
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return s.ioFailure(err, "written")
	}
	return nil
}

// publishEvidence stages manifest.json and data/analysis.json, validates them as a reader
// would, and renames the bundle into place.
func (s *Store) publishEvidence(id string, manifest, data []byte) (*Evidence, *failure.Failure) {
	rel := evidenceRel(id)
	if _, f, err := s.realDir(rel...); err == nil {
		if f != nil {
			return nil, f
		}
		return s.readBundle(id, LevelFull)
	}
	stage, f := s.stage("evidence")
	if f != nil {
		return nil, f
	}
	defer os.RemoveAll(stage)
	if err := os.Mkdir(stage+"/data", 0o700); err != nil {
		return nil, s.ioFailure(err, "written")
	}
	if err := writeSynced(stage+"/data/analysis.json", data); err != nil {
		return nil, s.ioFailure(err, "written")
	}
	if err := writeSynced(stage+"/manifest.json", manifest); err != nil {
		return nil, s.ioFailure(err, "written")
	}
	if err := syncDir(stage + "/data"); err != nil {
		return nil, s.ioFailure(err, "written")
	}
	if err := syncDir(stage); err != nil {
		return nil, s.ioFailure(err, "written")
	}
	ev, f := s.readManifestAt(stage, id)
	if f != nil {
		return nil, f
	}
	if f := s.checkDataFiles(ev); f != nil {
		return nil, f
	}
	if f := s.checkArtifacts(ev, false); f != nil {
		return nil, f
	}
	f = s.place(stage, rel, func() *failure.Failure { _, f := s.readBundle(id, LevelFull); return f })
	s.inv.forget(id[:2])
	if f != nil {
		return nil, f
	}
	return s.readBundle(id, LevelArtifacts)
}

var errExists = errors.New("repository: destination exists")

// skipSync disables fsync; only benchmark setup that builds thousands of bundles sets it.
var skipSync bool

func writeSynced(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if skipSync {
		return f.Close()
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(p string) error {
	if skipSync {
		return nil
	}
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !dirSyncUnsupported(err) {
		return err
	}
	return nil
}

// ownerName names this process's staging directory: its owner tag (pid and start time)
// and random bytes.
func ownerName() string { return owner.Tag() + "-" + randomHex(8) }

// processStart and ownerGone are the owner package's, named for this package's tests.
var (
	processStart = owner.ProcessStart
	ownerGone    = owner.Gone
)

// removeAbandonedStaging removes staging directories whose owner is provably gone. It
// works through an os.Root at the store directory, so no link is followed out of the
// store, and removes only real directories of a real .staging.
func (s *Store) removeAbandonedStaging() {
	root, err := os.OpenRoot(s.loc.Dir)
	if err != nil {
		return
	}
	defer root.Close()
	removeAbandoned(root, ".staging", func(name string) (string, bool) { return name, name != s.owner })
}

// removeAbandoned removes the entries of the directory dir below root that are real
// directories and whose owner, as owner derives it from the entry name, is provably gone.
// dir itself must be a real directory, not a link.
func removeAbandoned(root *os.Root, dir string, owner func(name string) (string, bool)) {
	if st, err := root.Lstat(dir); err != nil || !st.IsDir() {
		return
	}
	d, err := root.Open(dir)
	if err != nil {
		return
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	for _, e := range entries {
		name, ok := owner(e.Name())
		if !ok || e.Type() != fs.ModeDir || !ownerGone(name) {
			continue
		}
		root.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
