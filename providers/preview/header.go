package preview

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonvalue"
)

// A binary format that preview_artifact cannot page as records (a profile, a trace, a
// report, a database) is previewed as its header view (decision 0058): a few record rows
// that say what the file is, in the JSON projection's shape for a root object, scalars
// as {key, value} and list items as {section, ...}:
//
//	format, size_bytes, magic (the first 16 bytes, hex), compression (gzip only),
//	recognized (the content is the format: its magic, its header parsed), reason when not,
//	then the format's own header fields.
//
// Every view is bounded: at most maxHeaderRows rows, each list at most maxHeaderItems,
// strings cut at maxHeaderString bytes, and the bytes read bounded by the source's size
// (and max_input_bytes after gzip); a walk over the whole file (pstats totals, perf.data
// record counts, Perfetto packet kinds) keeps counts only.

const (
	maxHeaderRows   = 512
	maxHeaderItems  = 256
	maxHeaderString = 512
)

// headerViews are the formats previewed by their header view, and what reads their own
// fields; nil when only the common rows and the file's leading strings are known (a
// private format).
var headerViews = map[contracts.Format]func(h *header) error{
	contracts.FormatPstats:         pstatsHeader,
	contracts.FormatPprof:          pprofHeader,
	contracts.FormatPerfData:       perfDataHeader,
	contracts.FormatPerfetto:       perfettoHeader,
	contracts.FormatRocprofPftrace: perfettoHeader,
	contracts.FormatCoverage:       sqliteHeader,
	contracts.FormatNsysSqlite:     sqliteHeader,
	contracts.FormatMemray:         nil,
	contracts.FormatNsysRep:        nil,
	contracts.FormatNsightCompute:  nil,
	contracts.FormatXctrace:        nil,
}

// magics are the leading bytes of the formats that have them.
var magics = map[contracts.Format]string{
	contracts.FormatPerfData:      "PERFILE2",
	contracts.FormatCoverage:      "SQLite format 3\x00",
	contracts.FormatNsysSqlite:    "SQLite format 3\x00",
	contracts.FormatMemray:        "memray\x00",
	contracts.FormatNsightCompute: "NVR\x00",
}

// notRecognized is content that is not the format the source was detected or declared
// as: the view says so (recognized false, the reason) instead of failing.
type notRecognized struct{ reason string }

func (e *notRecognized) Error() string { return e.reason }

func unrecognized(format string, args ...any) error {
	return &notRecognized{reason: fmt.Sprintf(format, args...)}
}

// header collects the rows of one header view.
type header struct {
	src    Source
	index  int
	ctx    context.Context
	head   []byte // the file's first bytes (raw, before any gzip)
	rows   []json.RawMessage
	digest string
}

// field adds the scalar row {key, value}.
func (h *header) field(key string, v any) {
	h.add(func(o *object) {
		o.str("key", key)
		o.val("value", v)
	})
}

// item adds the list row {section, ...}.
func (h *header) item(section string, fill func(o *object)) {
	h.add(func(o *object) {
		o.str("section", section)
		fill(o)
	})
}

func (h *header) add(fill func(o *object)) {
	if len(h.rows) >= maxHeaderRows {
		return
	}
	o := newObject()
	o.int("record_index", int64(len(h.rows)))
	fill(o)
	o.str("input_sha256", h.digest)
	h.rows = append(h.rows, o.done())
}

// val appends a header value: a string (cut at maxHeaderString bytes, valid UTF-8), an
// integer (a string beyond +-(2^53-1)), a finite float (else a string), a bool, a list
// of strings or null.
func (o *object) val(k string, v any) {
	o.key(k)
	o.b = appendVal(o.b, v)
}

func appendVal(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return jsonvalue.AppendString(b, cut(x))
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonvalue.AppendString(b, cut(s))
		}
		return append(b, ']')
	}
	return jsonvalue.Append(b, v)
}

// cut bounds a native string at maxHeaderString bytes and makes it valid UTF-8.
func cut(s string) string {
	if len(s) > maxHeaderString {
		s = s[:maxHeaderString]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// headerReader pages the rows of a header view, built when the source is opened.
type headerReader struct {
	rows []json.RawMessage
	i    int
}

func (r *headerReader) skip(n int64) (int64, error) {
	k := min(n, int64(len(r.rows)-r.i))
	r.i += int(k)
	if k < n {
		return k, io.EOF
	}
	return k, nil
}

func (r *headerReader) next() (json.RawMessage, error) {
	if r.i >= len(r.rows) {
		return nil, io.EOF
	}
	r.i++
	return r.rows[r.i-1], nil
}

func (r *headerReader) Close() error { return nil }

// openHeader builds the header view of a binary source.
func openHeader(src Source, index int) (*headerReader, error) {
	g := src.guard
	if g == nil {
		g = &guard{ctx: context.Background()}
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 64<<10)
	n, err := io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, decodeError(index, 0, err, fmt.Sprintf("source %d could not be read", index))
	}
	h := &header{src: src, index: index, ctx: g.ctx, head: head[:n], digest: src.SHA256}
	h.field("format", string(src.Format))
	h.field("size_bytes", src.Size)
	h.field("magic", hex.EncodeToString(h.head[:min(len(h.head), 16)]))
	if sourcefile.IsGzip(h.head) {
		h.field("compression", "gzip")
	}
	common := len(h.rows)
	view := headerViews[src.Format]
	err = nil
	if m, ok := magics[src.Format]; ok && (len(h.head) < len(m) || string(h.head[:len(m)]) != m) {
		err = unrecognized("the file does not start with the %s magic %q", src.Format, m)
	} else if view != nil {
		err = view(h)
	}
	var nr *notRecognized
	var de *providers.DecodeError
	var le *providers.LimitError
	switch {
	case err == nil, errors.As(err, &nr), errors.As(err, &de), errors.As(err, &le),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		// A read that failed mid-file: bad compression or I/O.
		err = decodeError(index, 0, err, fmt.Sprintf("source %d could not be read (bad compression or I/O error)", index))
	}
	switch {
	case errors.As(err, &nr):
		h.rows = h.rows[:common]
		h.field("recognized", false)
		h.field("reason", nr.reason)
		h.leadingStrings()
	case err != nil:
		return nil, err
	default:
		rest := append([]json.RawMessage(nil), h.rows[common:]...)
		h.rows = h.rows[:common]
		h.field("recognized", true)
		for _, r := range rest {
			// Renumber: the recognized row now precedes the format's rows.
			h.rows = append(h.rows, renumber(r, len(h.rows)))
		}
		if view == nil {
			h.leadingStrings()
		}
	}
	return &headerReader{rows: h.rows}, nil
}

// renumber rewrites the leading record_index of a header row.
func renumber(row json.RawMessage, i int) json.RawMessage {
	const prefix = `{"record_index":`
	end := len(prefix)
	for end < len(row) && row[end] >= '0' && row[end] <= '9' {
		end++
	}
	out := append([]byte(prefix), strconv.Itoa(i)...)
	return append(out, row[end:]...)
}

// minString is the shortest printable run strings lists.
const (
	minString  = 6
	maxStrings = 32
)

// leadingStrings adds the first printable ASCII runs of the file's first 64 KiB, as the strings
// tool lists them (at least minString bytes, at most maxStrings runs, each cut at
// maxHeaderString): what a private format says about itself (a tool, a host, a kernel).
func (h *header) leadingStrings() {
	count := 0
	for i := 0; i < len(h.head) && count < maxStrings; {
		if !printable(h.head[i]) {
			i++
			continue
		}
		j := i
		for j < len(h.head) && printable(h.head[j]) {
			j++
		}
		if j-i >= minString {
			start, text := i, string(h.head[i:j])
			h.item("strings", func(o *object) {
				o.int("offset", int64(start))
				o.val("text", text)
			})
			count++
		}
		i = j
	}
}

func printable(c byte) bool { return c == '\t' || c >= 0x20 && c < 0x7f }

// stream opens the source for sequential reading, gzip decompressed transparently,
// bounded by max_input_bytes and the request's context.
func (h *header) stream() (*bufio.Reader, io.Closer, error) {
	f, err := openStream(h.src, h.index)
	if err != nil {
		return nil, nil, err
	}
	return bufio.NewReaderSize(f, 64<<10), f, nil
}

// truncated is the reason of a file that ends inside its structure.
func truncated(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return unrecognized("the file ends inside %s", what)
	}
	return err
}
