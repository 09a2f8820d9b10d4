// Package repository is the immutable, content-addressed evidence store. It owns lazy store
// creation, staged publication, fail-closed validation of every read, evidence source
// selection, inventory queries and rescue into a new store.
//
// Layout under the store directory:
//
//	repository.json                              {format_version, created_at}
//	artifacts/sha256/<2 hex>/<sha256>/artifact.json, payload (exact native bytes)
//	evidence/sha256/<2 hex>/<evidence id>/manifest.json, data/analysis.json
//	.staging/<owner>/<kind>-<24 hex>/            publications in progress
//
// There is no catalog, database, lock or mutable index on disk: the inventory is the sorted
// directory listing, and a bundle is visible only once it is complete. A Store keeps an
// in-process cache of each shard directory's listing (inventory.go, decision 0031), derived
// from the directory and checked against it on every call: a shard is relisted whenever its
// status (device, inode, mtime, ctime) changed or was within the racy window of its listing.
package repository

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/flameox/flameox/contracts"
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/validate"
)

// FormatVersion is the store format this build reads and writes.
const FormatVersion = "flameox-go/1"

// DataMediaType is the media type of data/analysis.json.
const DataMediaType = "application/vnd.flameox.evidence+json;version=1"

// Document size bounds for reads.
const (
	maxSmallDocumentBytes = 64 << 10
	maxManifestBytes      = 128 << 20
)

// Store is one evidence store. Its methods are safe for concurrent use; publications of one
// Store are serialized, and separate processes coordinate only through atomic renames.
type Store struct {
	loc   Location
	owner string

	mu      sync.Mutex // serializes publication in this process
	cleaned bool

	inv inventoryCache // shard listings, checked against the directory on every read
}

// Open returns the store at loc. It performs no I/O: a store that does not exist yet is
// an empty store until the first publication creates it.
func Open(loc Location) *Store {
	return &Store{loc: loc, owner: ownerName()}
}

// Location returns the store's location.
func (s *Store) Location() Location { return s.loc }

func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.loc.Dir}, elem...)...)
}

func artifactRel(sum string) []string {
	return []string{"artifacts", "sha256", sum[:2], sum}
}

func evidenceRel(id string) []string {
	return []string{"evidence", "sha256", id[:2], id}
}

// PayloadPath returns the path of an artifact's exact native bytes.
func (s *Store) PayloadPath(sum string) string {
	return s.path(append(artifactRel(sum), "payload")...)
}

// storeIdentifier names the store in failure details without revealing its path.
func (s *Store) storeIdentifier() string {
	sum := sha256.Sum256([]byte(s.loc.Dir))
	return hex.EncodeToString(sum[:])
}

// annotate adds the store's configuration to a repository failure.
func (s *Store) annotate(f *failure.Failure) *failure.Failure {
	f.With("configuration_source", s.loc.Source).
		With("configuration_variable", EnvironmentVariable).
		With("store_identifier", s.storeIdentifier())
	if s.loc.Source != SourceRescueDestination {
		f.With("local_diagnostic", "flameox evidence location")
	}
	return f
}

var corruptionRecovery = []string{
	"Nothing was repaired or hidden; bundles that are intact stay readable by evidence_id.",
	"Run `flameox evidence location` to find the store, then restore the damaged entry from a backup or move it out of the store.",
	"Or set FLAMEOX_DATA_DIR to another directory and restart or reconnect Flameox.",
}

// corrupt returns REPOSITORY_CORRUPTION for problem, a stable snake_case identifier.
func (s *Store) corrupt(problem, format string, args ...any) *failure.Failure {
	f := failure.New(gen.FailureCodeRepositoryCorruption, "the evidence store is corrupt: "+format, args...).
		With("problem", problem).With("recovery", corruptionRecovery)
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: "The evidence store failed validation and was not modified. " + corruptionRecovery[1]}}
	return s.annotate(f)
}

// unsupported returns UNSUPPORTED_REPOSITORY_FORMAT for a document of another format.
func (s *Store) unsupported(document string, found any) *failure.Failure {
	f := failure.New(gen.FailureCodeUnsupportedRepositoryFormat,
		"the evidence store's %s has a format this build does not read", document).
		With("document", document).With("found_format_version", found).
		With("supported_format_versions", []string{FormatVersion}).
		With("recovery", []string{
			"Use the Flameox release that wrote this store, or set FLAMEOX_DATA_DIR to another directory and restart or reconnect Flameox.",
		})
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: "This store was written in another format; nothing was changed. Use the release that wrote it, or configure another FLAMEOX_DATA_DIR."}}
	return s.annotate(f)
}

// ioFailure returns REPOSITORY_IO_FAILURE with the errno name but never the path.
func (s *Store) ioFailure(err error, action string) *failure.Failure {
	f := failure.Wrap(err, gen.FailureCodeRepositoryIoFailure, "the evidence store could not be %s", action).
		With("action", action)
	var errno syscall.Errno
	if errors.As(err, &errno) {
		f.With("errno", errnoName(errno))
		f.Retryable = errno == syscall.EAGAIN || errno == syscall.EINTR || errno == syscall.EBUSY
	}
	return s.annotate(f)
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EROFS:
		return "EROFS"
	case syscall.EDQUOT:
		return "EDQUOT"
	case syscall.EIO:
		return "EIO"
	case syscall.ENOTDIR:
		return "ENOTDIR"
	case syscall.EXDEV:
		return "EXDEV"
	}
	return "errno_" + hex.EncodeToString([]byte{byte(e)})
}

// rootState is what checkRoot found.
type rootState int

const (
	rootAbsent rootState = iota // no directory
	rootEmpty                   // a directory without repository.json and nothing else but .staging
	rootReady                   // repository.json validated
)

// checkRoot validates the store root: repository.json present and in this format, or a
// store that holds nothing yet. A non-empty store without repository.json is corrupt.
func (s *Store) checkRoot() (rootState, *failure.Failure) {
	st, err := os.Stat(s.loc.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rootAbsent, nil
	}
	if err != nil {
		return 0, s.ioFailure(err, "opened")
	}
	if !st.IsDir() {
		return 0, s.corrupt("root_not_directory", "the configured store location is not a directory")
	}
	var doc gen.RepositoryDocument
	f := s.readDocument(s.path("repository.json"), "repository.json", maxSmallDocumentBytes, schemaRepository, &doc)
	if f == nil {
		return rootReady, nil
	}
	if f.Details["problem"] != "missing_document" {
		return 0, f
	}
	entries, err := os.ReadDir(s.loc.Dir)
	if err != nil {
		return 0, s.ioFailure(err, "read")
	}
	for _, e := range entries {
		if e.Name() != ".staging" {
			// A concurrent publisher links repository.json before it creates anything else,
			// so it may have appeared since the first look: read it again before judging.
			if f := s.readDocument(s.path("repository.json"), "repository.json", maxSmallDocumentBytes, schemaRepository, &doc); f == nil {
				return rootReady, nil
			} else if f.Details["problem"] != "missing_document" {
				return 0, f
			}
			return 0, s.corrupt("missing_repository_document",
				"the store holds entries but no repository.json")
		}
	}
	return rootEmpty, nil
}

// realDir checks that every component of rel below the store root is a directory and not
// a symbolic link. A missing component returns fs.ErrNotExist.
func (s *Store) realDir(rel ...string) (string, *failure.Failure, error) {
	p := s.loc.Dir
	for _, r := range rel {
		p = filepath.Join(p, r)
		st, err := os.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return p, nil, err
			}
			return p, s.ioFailure(err, "read"), nil
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return p, s.corrupt("symlink", "a symbolic link is inside the store"), nil
		}
		if !st.IsDir() {
			return p, s.corrupt("unexpected_entry", "a store entry that must be a directory is not one"), nil
		}
	}
	return p, nil, nil
}

// schemas of the persisted documents, compiled once from the published contracts.
var (
	schemaRepository = compiledSchema("RepositoryDocument")
	schemaArtifact   = compiledSchema("ArtifactDocument")
	schemaManifest   = compiledSchema("Manifest")
)

func compiledSchema(name string) func() *validate.Schema {
	return sync.OnceValue(func() *validate.Schema {
		b, err := fs.ReadFile(contracts.FS, "repository/"+name+".json")
		if err != nil {
			panic(err)
		}
		sch, err := validate.Compile(name+".json", b)
		if err != nil {
			panic(err)
		}
		return sch
	})
}

// readDocument reads a persisted JSON document as boundary input: a regular file that is
// not a link, at most max bytes, in this store format, matching its schema, decoded
// strictly into into. It returns the raw bytes through into's decoding only.
func (s *Store) readDocument(p, document string, max int64, sch func() *validate.Schema, into any) *failure.Failure {
	_, _, f := s.readDocumentRaw(p, document, max, sch, into)
	return f
}

// readDocumentRaw is readDocument that also returns the raw bytes and their top-level
// members.
func (s *Store) readDocumentRaw(p, document string, max int64, sch func() *validate.Schema, into any) ([]byte, map[string]json.RawMessage, *failure.Failure) {
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, s.corrupt("missing_document", "%s is missing", document).With("document", document)
	}
	if err != nil {
		return nil, nil, s.ioFailure(err, "read")
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, nil, s.corrupt("symlink", "%s is a symbolic link", document).With("document", document)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, s.corrupt("unexpected_entry", "%s is not a regular file", document).With("document", document)
	}
	file, err := os.Open(p)
	if err != nil {
		return nil, nil, s.ioFailure(err, "read")
	}
	defer file.Close()
	raw, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return nil, nil, s.ioFailure(err, "read")
	}
	if int64(len(raw)) > max {
		return nil, nil, s.corrupt("oversized_document", "%s exceeds %d bytes", document, max).With("document", document)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, nil, s.corrupt("unparseable_document", "%s is not a JSON object", document).With("document", document)
	}
	var version any
	if v, ok := probe["format_version"]; ok {
		_ = json.Unmarshal(v, &version)
	}
	if version != FormatVersion {
		if version == nil {
			return nil, nil, s.corrupt("missing_format_version", "%s has no format_version", document).With("document", document)
		}
		return nil, nil, s.unsupported(document, version)
	}
	if _, vf := sch().Validate(raw); vf != nil {
		return nil, nil, s.corrupt("document_shape", "%s does not match its schema at %v", document, displayPath(vf.FieldPath)).
			With("document", document).With("field_path", vf.FieldPath)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return nil, nil, s.corrupt("document_shape", "%s does not decode into its contract", document).With("document", document)
	}
	return raw, probe, nil
}

func displayPath(p []any) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// isHex reports whether s is n lowercase hexadecimal characters.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	var bad byte
	for i := 0; i < len(s); i++ {
		bad |= notHex[s[i]]
	}
	return bad == 0
}

// notHex is 1 for every byte that is not a lowercase hexadecimal digit.
var notHex = func() (t [256]byte) {
	for i := range t {
		if !(i >= '0' && i <= '9' || i >= 'a' && i <= 'f') {
			t[i] = 1
		}
	}
	return t
}()
