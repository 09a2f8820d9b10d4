package runtime

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/repository"
)

// resolved is one path source after resolution and hashing.
type resolved struct {
	path     string
	size     int64
	sha256   string
	format   gen.Format
	producer *string
	role     string
	declared bool
	// evidence is the evidence source this input was read from, with its selector; path
	// is then the stored payload.
	evidence *gen.EvidenceSource
	// reader is the executable a capture of this session recorded for this file.
	reader *providers.Executable
	// members are a directory source's files (path is the directory); nil for a file.
	members []sourcefile.Member
	// read is the file the decoder reads when it is not path: an in-process analysis's
	// verified copy (pinInputs).
	read string
}

func role(i, n int) string {
	if n == 1 {
		return "input"
	}
	return fmt.Sprintf("input-%04d", i+1)
}

// resolveSources checks declared formats before touching any path, then resolves, sizes
// and hashes every source, checks expected digests, and detects omitted formats. An
// evidence source is read from the configured store after the bundle validates; its
// payload digest is verified by the same hashing pass. sized, when set, is called with
// the sources resolved and sized, before the hashing pass (their digests and omitted
// formats not yet known): the analysis starts its worker there (decision 0067, 2nd addendum).
func (rt *Runtime) resolveSources(req *request, sized func([]resolved)) ([]resolved, *failure.Failure) {
	op := req.tool.Operation
	for i, s := range req.sources {
		if s.PathSource == nil {
			continue
		}
		if f := s.PathSource.Format; f != nil && !op.Accepts(*f) {
			return nil, unsupportedFormat(op, i, string(*f))
		}
	}
	out := make([]resolved, len(req.sources))
	bundles := map[string]*repository.Evidence{}
	var total, files int64
	for i, s := range req.sources {
		if s.EvidenceSource != nil {
			r, f := rt.resolveEvidence(op, i, s.EvidenceSource, bundles)
			if f != nil {
				return nil, f
			}
			out[i] = *r
		} else {
			p := s.PathSource
			st, err := os.Stat(p.Path)
			if err != nil {
				return nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput,
					"source %d does not exist or cannot be read", i).
					Field(failure.Path("sources", i, "path"), nil).With("source_index", i)
			}
			if st.IsDir() {
				r, f := rt.resolveDirectory(req, i, p, total, files)
				if f != nil {
					return nil, f
				}
				out[i] = *r
				files += int64(len(r.members)) - 1
			} else if !st.Mode().IsRegular() {
				return nil, failure.New(gen.FailureCodeUnsupportedFormat,
					"source %d is not a regular file; %s reads files in the formats %s", i, op.Name, strings.Join(op.FormatStrings(), ", ")).
					Field(failure.Path("sources", i, "path"), op.FormatStrings()).With("source_index", i)
			} else {
				out[i] = resolved{path: p.Path, size: st.Size(), producer: p.Producer, reader: rt.readers.get(p.Path)}
				if p.Format != nil {
					out[i].format, out[i].declared = *p.Format, true
				}
			}
		}
		out[i].role = role(i, len(req.sources))
		files++
		total += out[i].size
		if total > req.limits.MaxInputBytes {
			return nil, failure.New(gen.FailureCodeLimitExceeded,
				"the sources hold more than limits.max_input_bytes (%d bytes)", req.limits.MaxInputBytes).
				Field(failure.Path("limits", "max_input_bytes"), nil).
				With("field", "max_input_bytes").With("effective_ceiling", req.limits.MaxInputBytes).With("source_index", i)
		}
		if files > req.limits.MaxInputFiles {
			return nil, failure.New(gen.FailureCodeLimitExceeded,
				"the sources hold more than limits.max_input_files (%d files)", req.limits.MaxInputFiles).
				Field(failure.Path("limits", "max_input_files"), nil).With("field", "max_input_files")
		}
	}
	if sized != nil {
		sized(out)
	}
	for i := range out {
		if out[i].members != nil && out[i].evidence == nil {
			continue // hashed while resolving
		}
		sum, size, err := hashSource(out[i])
		if out[i].evidence != nil {
			if err != nil || sum != out[i].sha256 || size != out[i].size {
				store, _ := rt.Store()
				return nil, store.CheckArtifact(out[i].sha256, out[i].size, true).With("source_index", i)
			}
			continue
		}
		if err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput, "source %d could not be read", i).
				Field(failure.Path("sources", i, "path"), nil).With("source_index", i)
		}
		out[i].sha256, out[i].size = sum, size
		if want := req.sources[i].PathSource.ExpectedSHA256; want != nil && *want != sum {
			return nil, failure.New(gen.FailureCodeMissingOrChangedInput,
				"source %d does not have the expected SHA-256", i).
				Field(failure.Path("sources", i, "expected_sha256"), nil).
				With("source_index", i).With("expected_sha256", *want).With("actual_sha256", sum)
		}
		if !out[i].declared {
			f, ff := rt.sniff(out[i].path, op, i)
			if ff != nil {
				if na := ff.NextAction; na != nil && na.CallTool != nil {
					// The tool that reads the format is called on this source, as given.
					na.CallTool.Arguments = sourceArguments(req.sources[i])
				}
				return nil, ff
			}
			out[i].format = f
		}
	}
	req.inputs = out
	return out, nil
}

// resolveEvidence selects source i's native file from a validated bundle of the store.
func (rt *Runtime) resolveEvidence(op gen.OperationDecl, i int, src *gen.EvidenceSource, bundles map[string]*repository.Evidence) (*resolved, *failure.Failure) {
	store, f := rt.Store()
	if f != nil {
		return nil, f
	}
	ev, ok := bundles[src.EvidenceID]
	if !ok {
		ev, f = store.Read(src.EvidenceID, repository.LevelArtifacts)
		if f != nil {
			if f.Code == gen.FailureCodeMissingEvidence || f.Code == gen.FailureCodeInvalidInput {
				f.Field(failure.Path("sources", i, "evidence_id"), nil)
			}
			return nil, f.With("source_index", i)
		}
		bundles[src.EvidenceID] = ev
	}
	sel, f := ev.Select(src.ArtifactSelector, failure.Path("sources", i))
	if f != nil {
		return nil, f.With("source_index", i)
	}
	if !op.Accepts(sel.Format) {
		return nil, unsupportedFormat(op, i, string(sel.Format)).Field(failure.Path("sources", i), op.FormatStrings()).
			With("evidence_id", ev.ID)
	}
	selector := sel.Selector
	r := &resolved{
		path: store.PayloadPath(sel.SHA256), size: sel.Size, sha256: sel.SHA256, format: sel.Format,
		producer: sel.Producer, declared: true, members: sel.Members,
		evidence: &gen.EvidenceSource{Kind: "evidence", EvidenceID: ev.ID, ArtifactSelector: &selector},
	}
	if sel.Members != nil {
		dir, f := rt.materialize(store, sel)
		if f != nil {
			return nil, f.With("source_index", i)
		}
		r.path = dir
	}
	return r, nil
}

// materialize rebuilds a preserved directory source from its members' stored payloads,
// verified, once per bundle digest in this session: analyzers read a directory.
func (rt *Runtime) materialize(store *repository.Store, sel *repository.Selected) (string, *failure.Failure) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.materialized == "" {
		d, err := os.MkdirTemp("", "flameox-evidence-dirs-")
		if err != nil {
			return "", failure.Wrap(err, gen.FailureCodeIoFailure, "a directory for preserved directory sources cannot be created; check TMPDIR")
		}
		rt.materialized = d
	}
	dir := filepath.Join(rt.materialized, sel.SHA256)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	tmp := dir + ".part"
	os.RemoveAll(tmp)
	if err := sourcefile.Materialize(tmp, sel.Members, func(m sourcefile.Member) string { return store.PayloadPath(m.SHA256) }); err != nil {
		os.RemoveAll(tmp)
		return "", store.CheckArtifact(sel.Members[0].SHA256, sel.Members[0].Size, true).
			With("reason", "directory_members")
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", failure.Wrap(err, gen.FailureCodeIoFailure, "a preserved directory source cannot be rebuilt; check TMPDIR")
	}
	return dir, nil
}

// hashSource hashes a file, or a directory's members into its bundle digest.
func hashSource(r resolved) (string, int64, error) {
	if r.members == nil {
		return sourcefile.Hash(r.path)
	}
	_, sum, size, err := sourcefile.HashDirectory(context.Background(), r.path, int64(len(r.members)), r.size)
	return sum, size, err
}

// recheck hashes every input again after analysis; a changed input invalidates the page.
func recheck(in []resolved) *failure.Failure {
	for i, r := range in {
		sum, _, err := hashSource(r)
		if err != nil || sum != r.sha256 {
			return changedInput(i, r.sha256)
		}
	}
	return nil
}

func unsupportedFormat(op gen.OperationDecl, i int, got string) *failure.Failure {
	f := failure.New(gen.FailureCodeUnsupportedFormat,
		"%s does not accept the format %q of source %d; accepted formats: %s", op.Name, got, i, strings.Join(op.FormatStrings(), ", ")).
		Field(failure.Path("sources", i, "format"), op.FormatStrings()).
		With("operation", string(op.Name)).With("source_index", i).With("received_format", got).
		With("accepted_formats", op.FormatStrings())
	recovery := fmt.Sprintf("Give sources[%d] in one of the formats %s reads (%s)", i, op.Name, strings.Join(op.FormatStrings(), ", "))
	if readers := operationsReading(gen.Format(got)); len(readers) > 0 {
		f.With("tools_reading_format", readers)
		verb := "reads"
		if len(readers) > 1 {
			verb = "read"
		}
		f.Message += fmt.Sprintf("; %s %s %s", strings.Join(readers, ", "), verb, got)
		recovery += fmt.Sprintf(", or call %s on it", strings.Join(readers, " or "))
	}
	return f.With("recovery", recovery+".")
}

// operationsReading lists the released operations that read format f, in registry order.
func operationsReading(f gen.Format) []string {
	var out []string
	for _, op := range gen.Operations {
		if op.Released && op.Accepts(f) {
			out = append(out, string(op.Name))
		}
	}
	return out
}

// gunzipHead returns up to 512 decompressed bytes of the gzip file at path.
func gunzipHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(zr, head)
	return head[:n]
}

// textual reports whether head reads as UTF-8 text without control bytes other than
// whitespace (a profile's protobuf does not).
func textual(head []byte) bool {
	if len(head) == 0 {
		return false
	}
	for len(head) > 0 {
		r, size := utf8.DecodeRune(head)
		if r == utf8.RuneError && size == 1 && len(head) >= utf8.UTFMax {
			return false
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
		head = head[size:]
	}
	return true
}

// sniff detects the format of an undeclared source with the registered detectors: a gzip
// file is what it holds (a textual format read through transparent decompression, else
// a binary one such as pprof). The first candidate the operation accepts wins.
func (rt *Runtime) sniff(path string, op gen.OperationDecl, i int) (gen.Format, *failure.Failure) {
	name := strings.ToLower(filepath.Base(path))
	head := make([]byte, 512)
	if f, err := os.Open(path); err == nil {
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		f.Close()
	} else {
		head = head[:0]
	}
	if sourcefile.IsGzip(head) {
		inner := gunzipHead(path)
		if bytes.HasPrefix(inner, []byte("SQLite format 3\x00")) {
			// A database is read in place, never through a stream: say so rather than
			// calling it a pprof profile (the other binary gzip content).
			return "", failure.New(gen.FailureCodeUnsupportedFormat,
				"source %d is a gzip-compressed SQLite database, which is read only uncompressed; decompress it (gunzip) and pass the database itself", i).
				Field(failure.Path("sources", i), op.FormatStrings()).
				With("operation", string(op.Name)).With("source_index", i).With("detected", true).With("content", "gzip-compressed SQLite")
		}
		if textual(inner) {
			name, head = strings.TrimSuffix(name, ".gz"), inner
		}
	}
	candidates := rt.providers.Detect(name, head)
	for _, c := range candidates {
		if op.Accepts(c) {
			return c, nil
		}
	}
	got := "unknown"
	if len(candidates) > 0 {
		got = string(candidates[0])
	}
	// The caller declared no format: point at the format (where declaring one of the
	// accepted formats would be read as that format; catalog §4), and at a tool that
	// reads what the source is.
	f := unsupportedFormat(op, i, got).With("detected", true)
	if readers := operationsReading(gen.Format(got)); len(readers) > 0 {
		f.NextAction = &gen.NextAction{CallTool: &gen.CallTool{Kind: "call_tool", Tool: readers[0], Arguments: map[string]any{},
			Message: fmt.Sprintf("Source %d reads as %s, which %s does not accept: call %s on it (arguments hold that source as given).",
				i, got, op.Name, strings.Join(readers, " or "))}}
	}
	return "", f
}

// resolveDirectory resolves path source i that is a directory: a format of the operation
// that is a directory of files (declared, or detected from its top-level names), and
// its members hashed within what max_input_files and max_input_bytes leave after the
// sources before it (total bytes, files files). Links and special files are refused.
func (rt *Runtime) resolveDirectory(req *request, i int, p *gen.PathSource, total, files int64) (*resolved, *failure.Failure) {
	op := req.tool.Operation
	var dirFormats []string
	for _, f := range op.Formats {
		if rt.providers.IsDirectoryFormat(f) {
			dirFormats = append(dirFormats, string(f))
		}
	}
	notDir := func(got string) *failure.Failure {
		return failure.New(gen.FailureCodeUnsupportedFormat,
			"source %d is a directory; %s reads a directory only in the formats %v (it reads files in %s)", i, op.Name, dirFormats, strings.Join(op.FormatStrings(), ", ")).
			Field(failure.Path("sources", i, "path"), dirFormats).With("source_index", i).With("received_format", got)
	}
	r := &resolved{path: p.Path, producer: p.Producer}
	if p.Format != nil {
		if !rt.providers.IsDirectoryFormat(*p.Format) {
			return nil, notDir(string(*p.Format))
		}
		r.format, r.declared = *p.Format, true
	} else {
		entries, err := os.ReadDir(p.Path)
		if err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput, "source %d (a directory) cannot be read", i).
				Field(failure.Path("sources", i, "path"), nil).With("source_index", i)
		}
		names := make([]string, 0, min(len(entries), 4096))
		for _, e := range entries[:min(len(entries), 4096)] {
			names = append(names, e.Name())
		}
		for _, f := range rt.providers.DetectDirectory(names) {
			if op.Accepts(f) {
				r.format = f
				break
			}
		}
		if r.format == "" {
			return nil, notDir("directory").With("detected", true)
		}
	}
	members, sum, size, err := sourcefile.HashDirectory(context.Background(), p.Path,
		req.limits.MaxInputFiles-files, req.limits.MaxInputBytes-total)
	switch {
	case errors.Is(err, sourcefile.ErrTooManyFiles):
		return nil, failure.New(gen.FailureCodeLimitExceeded,
			"the sources hold more than limits.max_input_files (%d files); source %d is a directory", req.limits.MaxInputFiles, i).
			Field(failure.Path("limits", "max_input_files"), nil).With("field", "max_input_files").With("source_index", i)
	case errors.Is(err, sourcefile.ErrTooLarge):
		return nil, failure.New(gen.FailureCodeLimitExceeded,
			"the sources hold more than limits.max_input_bytes (%d bytes); source %d is a directory", req.limits.MaxInputBytes, i).
			Field(failure.Path("limits", "max_input_bytes"), nil).With("field", "max_input_bytes").
			With("effective_ceiling", req.limits.MaxInputBytes).With("source_index", i)
	case errors.Is(err, sourcefile.ErrNotRegular):
		return nil, failure.New(gen.FailureCodeUnsupportedFormat,
			"source %d (a directory) holds a symbolic link or special file; a directory source holds regular files and directories only", i).
			Field(failure.Path("sources", i, "path"), nil).With("source_index", i).With("reason", "not_regular")
	case err != nil:
		return nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput, "source %d (a directory) could not be read", i).
			Field(failure.Path("sources", i, "path"), nil).With("source_index", i)
	case len(members) == 0:
		return nil, failure.New(gen.FailureCodeDecodeFailure, "source %d is an empty directory", i).
			Field(failure.Path("sources", i, "path"), nil).With("source_index", i).With("reason", "empty_directory")
	}
	r.members, r.sha256, r.size = members, sum, size
	if want := p.ExpectedSHA256; want != nil && *want != sum {
		return nil, failure.New(gen.FailureCodeMissingOrChangedInput, "source %d does not have the expected SHA-256 (its bundle digest)", i).
			Field(failure.Path("sources", i, "expected_sha256"), nil).
			With("source_index", i).With("expected_sha256", *want).With("actual_sha256", sum)
	}
	return r, nil
}

// sourceArguments are the arguments of a call on one source, as the caller gave it.
func sourceArguments(src gen.Source) map[string]any {
	var v any
	if b, err := json.Marshal(src); err == nil && json.Unmarshal(b, &v) == nil {
		return map[string]any{"sources": []any{v}}
	}
	return map[string]any{}
}
