package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/runtime/failure"
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
}

// hashBufferBytes is the read size for hashing; large reads keep hashing near the
// speed of crypto/sha256 on memory.
const hashBufferBytes = 1 << 20

// HashFile returns the SHA-256 and size of the file at path in one streaming pass.
func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, hashBufferBytes))
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func role(i, n int) string {
	if n == 1 {
		return "input"
	}
	return fmt.Sprintf("input-%04d", i+1)
}

// resolveSources checks declared formats before touching any path, then resolves, sizes
// and hashes every path source, checks expected digests, and detects omitted formats.
func (rt *Runtime) resolveSources(req *request) ([]resolved, *failure.Failure) {
	op := req.tool.Operation
	for i, s := range req.sources {
		if s.EvidenceSource != nil {
			return nil, failure.New(gen.FailureCodeMissingEvidence,
				"evidence %s is not in the evidence store", s.EvidenceSource.EvidenceID).
				Field(failure.Path("sources", i, "evidence_id"), nil).With("source_index", i)
		}
		if f := s.PathSource.Format; f != nil && !op.Accepts(*f) {
			return nil, unsupportedFormat(op, i, string(*f))
		}
	}
	out := make([]resolved, len(req.sources))
	var total int64
	for i, s := range req.sources {
		p := s.PathSource
		st, err := os.Stat(p.Path)
		if err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput,
				"source %d does not exist or cannot be read", i).
				Field(failure.Path("sources", i, "path"), nil).With("source_index", i)
		}
		if st.IsDir() || !st.Mode().IsRegular() {
			return nil, failure.New(gen.FailureCodeUnsupportedFormat,
				"source %d is not a regular file; %s reads files in the formats %s", i, op.Name, strings.Join(op.FormatStrings(), ", ")).
				Field(failure.Path("sources", i, "path"), op.FormatStrings()).With("source_index", i)
		}
		total += st.Size()
		if total > req.limits.MaxInputBytes {
			return nil, failure.New(gen.FailureCodeLimitExceeded,
				"the sources hold more than limits.max_input_bytes (%d bytes)", req.limits.MaxInputBytes).
				Field(failure.Path("limits", "max_input_bytes"), nil).
				With("field", "max_input_bytes").With("effective_ceiling", req.limits.MaxInputBytes).With("source_index", i)
		}
		if int64(i+1) > req.limits.MaxInputFiles {
			return nil, failure.New(gen.FailureCodeLimitExceeded,
				"the sources hold more than limits.max_input_files (%d files)", req.limits.MaxInputFiles).
				Field(failure.Path("limits", "max_input_files"), nil).With("field", "max_input_files")
		}
		out[i] = resolved{path: p.Path, producer: p.Producer, role: role(i, len(req.sources))}
		if p.Format != nil {
			out[i].format, out[i].declared = *p.Format, true
		}
	}
	for i := range out {
		sum, size, err := HashFile(out[i].path)
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
			f, ff := sniff(out[i].path, op, i)
			if ff != nil {
				return nil, ff
			}
			out[i].format = f
		}
	}
	return out, nil
}

// recheck hashes every input again after analysis; a changed input invalidates the page.
func recheck(in []resolved) *failure.Failure {
	for i, r := range in {
		sum, _, err := HashFile(r.path)
		if err != nil || sum != r.sha256 {
			return failure.New(gen.FailureCodeMissingOrChangedInput,
				"source %d changed or disappeared during analysis; retry to analyze its current content", i).
				Field(failure.Path("sources", i, "path"), nil).With("source_index", i).With("sha256_before", r.sha256)
		}
	}
	return nil
}

func unsupportedFormat(op gen.OperationDecl, i int, got string) *failure.Failure {
	return failure.New(gen.FailureCodeUnsupportedFormat,
		"%s does not accept the format %q of source %d; accepted formats: %s", op.Name, got, i, strings.Join(op.FormatStrings(), ", ")).
		Field(failure.Path("sources", i, "format"), op.FormatStrings()).
		With("operation", string(op.Name)).With("source_index", i).With("received_format", got).
		With("accepted_formats", op.FormatStrings())
}

// extensionFormats maps file name suffixes to the formats they announce, most specific
// first. JSON-shaped formats fall back to json and anything readable to text.
var extensionFormats = []struct {
	suffix  string
	formats []gen.Format
}{
	{".autotune.json", []gen.Format{gen.FormatTritonCache, gen.FormatJSON}},
	{".speedscope.json", []gen.Format{gen.FormatPySpy, gen.FormatJSON}},
	{".jsonl", []gen.Format{gen.FormatJsonl, gen.FormatText}},
	{".ndjson", []gen.Format{gen.FormatJsonl, gen.FormatText}},
	{".json", []gen.Format{gen.FormatJSON, gen.FormatText}},
	{".csv", []gen.Format{gen.FormatCSV, gen.FormatText}},
	{".parquet", []gen.Format{gen.FormatParquet}},
	{".pstats", []gen.Format{gen.FormatPstats}},
	{".prof", []gen.Format{gen.FormatPstats}},
	{".cpuprofile", []gen.Format{gen.FormatCpuprofile, gen.FormatJSON}},
	{".heapprofile", []gen.Format{gen.FormatHeapprofile, gen.FormatJSON}},
	{".sarif", []gen.Format{gen.FormatSarif, gen.FormatJSON}},
	{".pftrace", []gen.Format{gen.FormatPerfetto}},
	{".perfetto-trace", []gen.Format{gen.FormatPerfetto}},
	{".nsys-rep", []gen.Format{gen.FormatNsysRep}},
	{".ncu-rep", []gen.Format{gen.FormatNsightCompute}},
	{".ncu-repz", []gen.Format{gen.FormatNsightCompute}},
	{".txt", []gen.Format{gen.FormatText}},
	{".log", []gen.Format{gen.FormatText}},
}

// sniff detects the format of an undeclared source where that is unambiguous: a known
// suffix, the Parquet magic, a leading { or [ for JSON, and text otherwise. The first
// candidate the operation accepts wins.
func sniff(path string, op gen.OperationDecl, i int) (gen.Format, *failure.Failure) {
	name := strings.ToLower(filepath.Base(path))
	var candidates []gen.Format
	for _, e := range extensionFormats {
		if strings.HasSuffix(name, e.suffix) {
			candidates = e.formats
			break
		}
	}
	if candidates == nil {
		head := make([]byte, 512)
		f, err := os.Open(path)
		if err == nil {
			n, _ := io.ReadFull(f, head)
			head = head[:n]
			f.Close()
		}
		trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
		switch {
		case bytes.HasPrefix(head, []byte("PAR1")):
			candidates = []gen.Format{gen.FormatParquet}
		case name == ".coverage" && bytes.HasPrefix(head, []byte("SQLite format 3")):
			candidates = []gen.Format{gen.FormatCoverage}
		case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '['):
			candidates = []gen.Format{gen.FormatJSON, gen.FormatText}
		default:
			candidates = []gen.Format{gen.FormatText}
		}
	}
	for _, c := range candidates {
		if op.Accepts(c) {
			return c, nil
		}
	}
	return "", unsupportedFormat(op, i, string(candidates[0])).With("detected", true)
}
