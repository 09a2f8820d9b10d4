package coverage

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// An LCOV tracefile (geninfo(1)'s format, written by lcov, c8 and nyc, Node's
// --test-reporter=lcov, llvm-cov export -format=lcov, cargo llvm-cov and coverage lcov) is
// text: records of one source file each, from SF:<path> to end_of_record, holding
// DA:<line>,<count>[,<checksum>] per instrumented line, FN/FNDA (or lcov 2's FNL/FNA) per
// function and BRDA:<line>,<block>,<branch>,<taken> per branch; TN:<name> names the test
// the records after it belong to. Other keys (LF, LH, FNF, BRF, VER, ...) are summaries or
// extensions and are skipped.

// lcovDetector recognizes a tracefile by its first record line (TN:, SF: or lcov 2's
// VER:), or by its usual names (lcov.info, *.lcov).
var lcovDetector = providers.Detector{Format: gen.FormatLcov, Suffixes: []string{".info", ".lcov"},
	Match: func(_ string, head []byte) bool {
		head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
		for _, k := range []string{"TN:", "SF:", "VER:"} {
			if bytes.HasPrefix(head, []byte(k)) {
				return true
			}
		}
		return false
	}}

// Tracefile bounds, besides maxNames (files, test names, branches, functions) and
// maxDataRows (record lines read).
const (
	// maxLCOVLine bounds one line of a tracefile (a path, a function name, a record).
	maxLCOVLine = 64 << 10
	// maxLCOVLines bounds the instrumented lines (DA records, 16 bytes each) and the
	// executed lines per test (32 bytes each) held until they are sorted.
	maxLCOVLines = 4_000_000
)

// lcovKey identifies a branch (line, block, branch) or a function (name, or lcov 2's
// "#index") of a file.
type lcovKey struct {
	file         int32
	line         int64
	block, index string
}

// lcovReader is the state of one tracefile read.
type lcovReader struct {
	in              providers.Input
	n               int64 // line number
	files, contexts map[string]int32
	fileNames       []string
	ctxNames        []string
	// lines are the executed lines as read (file and test by first appearance);
	// instrumented every DA line, (file, line); both sorted and compacted at the end.
	lines         []entry
	instrumented  [][2]int64
	branches, fns map[lcovKey]bool // hit or not
	records, rows int64
}

func (r *lcovReader) tooMany(what string) error {
	return &providers.LimitError{Source: r.in.Index, Limit: maxLCOVLines, Unit: "rows",
		Message: fmt.Sprintf("source %d holds more than %d %s", r.in.Index, maxLCOVLines, what)}
}

// mark records k as seen, and as hit when hit is true.
func (r *lcovReader) mark(m map[lcovKey]bool, k lcovKey, hit bool) error {
	if _, ok := m[k]; !ok && len(m) >= maxNames {
		return &providers.LimitError{Source: r.in.Index, Limit: maxNames, Unit: "names",
			Message: fmt.Sprintf("source %d names more than %d branches or functions", r.in.Index, maxNames)}
	}
	m[k] = m[k] || hit
	return nil
}

func (r *lcovReader) fail(format string, args ...any) error {
	return decodeErr(r.in.Index, nil, "source %d line %d: %s", r.in.Index, r.n, fmt.Sprintf(format, args...))
}

func (r *lcovReader) intern(m map[string]int32, names *[]string, s string) (int32, error) {
	if i, ok := m[s]; ok {
		return i, nil
	}
	if len(*names) >= maxNames {
		return 0, &providers.LimitError{Source: r.in.Index, Limit: maxNames, Unit: "names",
			Message: fmt.Sprintf("source %d names more than %d files or tests", r.in.Index, maxNames)}
	}
	m[s] = int32(len(*names))
	*names = append(*names, s)
	return m[s], nil
}

// number parses a decimal integer field of a record.
func (r *lcovReader) number(key string, b []byte, what string) (int64, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, r.fail("%s: %s %q is not an integer", key, what, b)
	}
	return v, nil
}

// lineNumber parses a source line number, 1 to maxLine.
func (r *lcovReader) lineNumber(key string, b []byte) (int64, error) {
	v, err := r.number(key, b, "line number")
	if err == nil && (v < 1 || v > maxLine) {
		err = r.fail("%s: line number %d is out of range (1 to %d)", key, v, maxLine)
	}
	return v, err
}

// readLCOV reads an LCOV tracefile: a row per executed line (DA count above 0) per file
// and test name, and counts of the instrumented lines, branches and functions.
func readLCOV(ctx context.Context, in providers.Input, limits gen.EffectiveLimits) (*data, error) {
	f, err := providers.OpenBounded(ctx, in, limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &lcovReader{in: in, files: map[string]int32{}, contexts: map[string]int32{},
		branches: map[lcovKey]bool{}, fns: map[lcovKey]bool{}}
	// The reader's buffer is the line bound: ReadSlice answers ErrBufferFull past it.
	if err := r.read(bufio.NewReaderSize(f, maxLCOVLine)); err != nil {
		return nil, err
	}
	return r.data(), nil
}

func (r *lcovReader) read(br *bufio.Reader) error {
	ctxID := int32(-1) // the current TN's, -1 before any
	file := int32(-1)  // the open record's file, -1 outside a record
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return &providers.LimitError{Source: r.in.Index, Limit: maxLCOVLine, Unit: "bytes",
				Message: fmt.Sprintf("source %d line %d is longer than %d bytes", r.in.Index, r.n+1, maxLCOVLine)}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		r.n++
		line = bytes.TrimRight(line, "\r\n")
		if err := r.record(line, &ctxID, &file); err != nil {
			return err
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if file >= 0 {
		return r.fail("the record of %s has no end_of_record: the tracefile is truncated", r.fileNames[file])
	}
	if r.records == 0 {
		return decodeErr(r.in.Index, nil, "source %d holds no SF record: it is not an LCOV tracefile", r.in.Index)
	}
	return nil
}

// record reads one line.
func (r *lcovReader) record(line []byte, ctxID, file *int32) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if string(line) == "end_of_record" {
		if *file < 0 {
			return r.fail("end_of_record outside a record")
		}
		*file = -1
		return nil
	}
	key, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return r.fail("%q is not a KEY:value record line", truncate(line))
	}
	switch string(key) {
	case "TN":
		id, err := r.intern(r.contexts, &r.ctxNames, string(value))
		*ctxID = id
		return err
	case "SF":
		if *file >= 0 {
			return r.fail("SF: a record starts before the record of %s ended (end_of_record)", r.fileNames[*file])
		}
		if len(value) == 0 {
			return r.fail("SF: the source file is empty")
		}
		id, err := r.intern(r.files, &r.fileNames, string(value))
		*file = id
		r.records++
		return err
	case "DA", "BRDA", "FN", "FNDA", "FNL", "FNA":
	default:
		return nil // summaries (LF, LH, FNF, FNH, BRF, BRH), VER and extensions
	}
	if *file < 0 {
		return r.fail("%s: outside a record (no SF: before it)", key)
	}
	if r.rows++; r.rows > maxDataRows {
		return &providers.LimitError{Source: r.in.Index, Limit: maxDataRows, Unit: "rows",
			Message: fmt.Sprintf("source %d holds more than %d DA, BRDA and function records", r.in.Index, maxDataRows)}
	}
	if string(key) == "DA" { // line,count[,checksum]: most lines of a tracefile
		return r.da(value, ctxID, *file)
	}
	parts := bytes.Split(value, []byte(","))
	switch string(key) {
	case "BRDA": // line,[exception]block,branch,taken ("-": the block never ran)
		if len(parts) != 4 {
			return r.fail("BRDA: want <line>,<block>,<branch>,<taken>, got %q", truncate(value))
		}
		// Any line number: a branch is counted, never listed, and coverage.py writes the
		// destination of an exit from a function, 0 or below, there.
		ln, err := r.number("BRDA", parts[0], "line number")
		if err != nil {
			return err
		}
		taken := int64(0)
		if string(parts[3]) != "-" {
			if taken, err = r.number("BRDA", parts[3], "taken count"); err != nil {
				return err
			}
		}
		return r.mark(r.branches, lcovKey{file: *file, line: ln, block: string(parts[1]), index: string(parts[2])}, taken > 0)
	case "FN", "FNL": // FN:line,[end,]name (a name may hold commas); FNL:index,line[,end] (lcov 2)
		if len(parts) < 2 {
			return r.fail("%s: want a line and a name or index, got %q", key, truncate(value))
		}
		at, name := parts[0], string(bytes.Join(parts[1:], []byte(",")))
		if string(key) == "FNL" {
			at, name = parts[1], "#"+string(parts[0])
		} else if _, err := strconv.ParseInt(string(parts[1]), 10, 64); err == nil && len(parts) > 2 {
			name = string(bytes.Join(parts[2:], []byte(",")))
		}
		if _, err := r.lineNumber(string(key), at); err != nil {
			return err
		}
		return r.mark(r.fns, lcovKey{file: *file, block: name}, false)
	case "FNDA", "FNA": // FNDA:count,name; FNA:index,count,name (lcov 2)
		if len(parts) < 2 {
			return r.fail("%s: want a count and a name, got %q", key, truncate(value))
		}
		countField, name := parts[0], string(bytes.Join(parts[1:], []byte(",")))
		if string(key) == "FNA" {
			if len(parts) < 3 {
				return r.fail("FNA: want <index>,<count>,<name>, got %q", truncate(value))
			}
			countField, name = parts[1], "#"+string(parts[0])
		}
		count, err := r.number(string(key), countField, "execution count")
		if err != nil {
			return err
		}
		return r.mark(r.fns, lcovKey{file: *file, block: name}, count > 0)
	}
	return nil
}

// da reads a DA record of file: <line>,<count>[,<checksum>]. Every DA line is
// instrumented; one with a count above 0 is an executed line of the current test.
func (r *lcovReader) da(value []byte, ctxID *int32, file int32) error {
	at, rest, ok := bytes.Cut(value, []byte(","))
	countField, checksum, _ := bytes.Cut(rest, []byte(","))
	if !ok || bytes.IndexByte(checksum, ',') >= 0 {
		return r.fail("DA: want <line>,<count>[,<checksum>], got %q", truncate(value))
	}
	ln, err := r.lineNumber("DA", at)
	if err != nil {
		return err
	}
	count, err := r.number("DA", countField, "execution count")
	if err != nil {
		return err
	}
	if len(r.instrumented) >= maxLCOVLines {
		return r.tooMany("DA records")
	}
	r.instrumented = append(r.instrumented, [2]int64{int64(file), ln})
	if count <= 0 {
		return nil
	}
	if *ctxID < 0 { // records before any TN: the default test, ""
		if *ctxID, err = r.intern(r.contexts, &r.ctxNames, ""); err != nil {
			return err
		}
	}
	if len(r.lines) >= maxLCOVLines {
		return r.tooMany("executed lines")
	}
	r.lines = append(r.lines, entry{hit: hit{from: ln, ctx: *ctxID}, file: file, kind: kindLine})
	return nil
}

// truncate shortens a quoted excerpt of a malformed line.
func truncate(b []byte) []byte {
	if len(b) > 80 {
		return append(slices.Clip(b[:77]), "..."...)
	}
	return b
}

// data orders what was read as the table is ordered: by file name, then line, then test
// name, each executed line of a file and test once.
func (r *lcovReader) data() *data {
	fileRank, files := ranks(r.fileNames)
	ctxRank, contexts := ranks(r.ctxNames)
	for i := range r.lines {
		r.lines[i].file = fileRank[r.lines[i].file]
		r.lines[i].ctx = ctxRank[r.lines[i].ctx]
	}
	slices.SortFunc(r.lines, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.file, b.file), byLine(a.hit, b.hit))
	})
	r.lines = slices.Compact(r.lines)
	out := &data{files: files, contexts: contexts, total: int64(len(r.lines))}
	out.store = r.lines[:min(len(r.lines), providers.MaxProjectionRows)]
	slices.SortFunc(r.instrumented, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	r.instrumented = slices.Compact(r.instrumented)
	executed := int64(0)
	for i, e := range r.lines {
		if i == 0 || e.file != r.lines[i-1].file || e.from != r.lines[i-1].from {
			executed++
		}
	}
	count := func(m map[lcovKey]bool) (n, hit int) {
		for _, h := range m {
			n++
			if h {
				hit++
			}
		}
		return n, hit
	}
	branches, branchesHit := count(r.branches)
	functions, functionsHit := count(r.fns)
	out.metrics = map[string]any{
		"file_count": len(r.fileNames), "line_count": executed, "arc_count": int64(0),
		"has_arcs": false, "context_count": len(r.ctxNames),
		"instrumented_line_count": int64(len(r.instrumented)),
		"branch_count":            branches, "branch_hit_count": branchesHit,
		"function_count": functions, "function_hit_count": functionsHit,
	}
	if executed == 0 {
		out.limitations = append(out.limitations, "no_coverage_recorded: the tracefile lists no executed line.")
	}
	return out
}

// ranks maps each name's index to its rank in sorted order, and returns the names in
// that order.
func ranks(names []string) ([]int32, []string) {
	order := make([]int32, len(names))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(names[a], names[b]) })
	rank, sorted := make([]int32, len(names)), make([]string, len(names))
	for r, i := range order {
		rank[i], sorted[r] = int32(r), names[i]
	}
	return rank, sorted
}
