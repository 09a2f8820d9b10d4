package gpu

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Bounds of a Compute Sanitizer log.
const (
	// maxSanitizerBytes bounds the decompressed log.
	maxSanitizerBytes = 512 << 20
	// maxSanitizerText bounds the character data of one element.
	maxSanitizerText = 64 << 10
	// maxSanitizerDepth bounds element nesting.
	maxSanitizerDepth = 64
	// maxSanitizerRecords bounds the records counted; rows stop at MaxProjectionRows.
	maxSanitizerRecords = 10_000_000
)

// sanitizerRoot is the root element compute-sanitizer --xml writes.
const sanitizerRoot = "ComputeSanitizerOutput"

// sanitizerDetector recognizes a Compute Sanitizer XML log by its root element.
var sanitizerDetector = providers.Detector{Format: gen.FormatComputeSanitizer, Container: gen.FormatText, Extension: ".xml",
	Match: func(_ string, head []byte) bool { return bytes.Contains(head, []byte("<"+sanitizerRoot)) }}

func sanitizerProvider() gen.Provider {
	return gen.Provider{ID: "flameox-compute-sanitizer", Version: "native-1"}
}

// Classifications of a record.
const (
	classMemory = "memory_access"
	classRace   = "race_hazard"
	classAPI    = "api_error"
	classOther  = "other"
)

// defaultPrintLimit is compute-sanitizer's default --print-limit: it stops printing
// (and saving) records after this many errors.
const defaultPrintLimit = 100

// sanitizerLog is a decoded log: the rows kept, the number of records and the counts.
type sanitizerLog struct {
	rows            []gen.SanitizerRecordRow
	records         int64
	kinds, levels   map[string]int64
	classifications map[string]int64
	hazards         int64
	// errors counts the error records (isError).
	errors int64
	// summary is what the log's own console summary lines say, when it has any.
	summary sanitizerSummary
}

// sanitizerSummary holds the figures of compute-sanitizer's console summary lines found
// in the log's text outside its records: "ERROR SUMMARY: 1024 errors" and "ERROR SUMMARY:
// 924 errors were not printed. Use --print-limit option to adjust the number of printed
// errors". A nil figure is a line the log does not have; repeated lines keep the largest.
type sanitizerSummary struct {
	total, notPrinted *int64
}

// Summary lines, matched within one line of text.
var (
	summaryTotal      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`ERROR SUMMARY: *([0-9]+) errors?\s*$`) })
	summaryNotPrinted = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([0-9]+) errors? (?:were|was) not printed`) })
)

// record accumulates one <record> while its elements stream past.
type record struct {
	row                gen.SanitizerRecordRow
	block, thread      [3]int64
	hasBlock, hasThrd  bool
	srcDir, dstDir     string
	srcCount, dstCount *int64
	// accessAddr and accessSize are initcheck's accessAddress and accessSize, the
	// address and size of a record that has no what/address or what/size.
	accessAddr *string
	accessSize *int64
}

func sanitizerDecodeErr(src int, format string, args ...any) error {
	return &providers.DecodeError{Source: src, Message: fmt.Sprintf(format, args...)}
}

// readSanitizer streams the log of in with encoding/xml's tokenizer.
func readSanitizer(ctx context.Context, in providers.Input) (*sanitizerLog, error) {
	f, err := providers.OpenBounded(ctx, in, maxSanitizerBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	log := &sanitizerLog{kinds: map[string]int64{}, levels: map[string]int64{}, classifications: map[string]int64{}}
	src := in.Index
	// path holds the local names of the open elements below the root; text the
	// character data of the innermost one.
	var (
		path     []string
		text     []byte
		rec      *record
		sawRoot  bool
		rootDone bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var lim *providers.LimitError
			if errors.As(err, &lim) {
				return nil, lim
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var syn *xml.SyntaxError
			if errors.As(err, &syn) {
				return nil, sanitizerDecodeErr(src, "source %d is not well-formed XML (line %d)", src, syn.Line)
			}
			return nil, sanitizerDecodeErr(src, "source %d is not well-formed XML", src)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !sawRoot {
				if t.Name.Local != sanitizerRoot {
					return nil, &providers.UnsupportedError{Source: src,
						Message: fmt.Sprintf("source %d is XML whose root element is not %s: not a Compute Sanitizer log", src, sanitizerRoot)}
				}
				sawRoot = true
				continue
			}
			if rootDone {
				return nil, sanitizerDecodeErr(src, "source %d has content after its %s element", src, sanitizerRoot)
			}
			if len(path) >= maxSanitizerDepth {
				return nil, &providers.LimitError{Source: src, Limit: maxSanitizerDepth, Unit: "levels",
					Message: fmt.Sprintf("source %d nests elements deeper than %d levels", src, maxSanitizerDepth)}
			}
			path = append(path, t.Name.Local)
			text = text[:0]
			if len(path) == 1 && t.Name.Local == "record" {
				rec = &record{row: gen.SanitizerRecordRow{Index: log.records}}
			}
		case xml.CharData:
			if rec == nil && len(path) == 0 {
				log.summary.scan(t)
			}
			if rec != nil && len(path) > 1 {
				if len(text)+len(t) > maxSanitizerText {
					return nil, &providers.LimitError{Source: src, Limit: maxSanitizerText, Unit: "bytes",
						Message: fmt.Sprintf("source %d: record %d has an element with more than %d bytes of text", src, log.records, maxSanitizerText)}
				}
				text = append(text, t...)
			}
		case xml.EndElement:
			if len(path) == 0 {
				rootDone = true
				continue
			}
			if rec != nil && len(path) > 1 {
				if err := rec.set(path[1:], strings.TrimSpace(string(text)), src, log.records); err != nil {
					return nil, err
				}
			}
			text = text[:0]
			if len(path) == 1 && rec != nil {
				if log.records++; log.records > maxSanitizerRecords {
					return nil, &providers.LimitError{Source: src, Limit: maxSanitizerRecords, Unit: "records",
						Message: fmt.Sprintf("source %d holds more than %d records", src, maxSanitizerRecords)}
				}
				log.add(rec.finish())
				rec = nil
			}
			path = path[:len(path)-1]
		}
	}
	if !sawRoot {
		return nil, &providers.UnsupportedError{Source: src,
			Message: fmt.Sprintf("source %d holds no XML element: not a Compute Sanitizer log", src)}
	}
	return log, nil
}

// add counts the finished row and keeps it while rows remain.
func (l *sanitizerLog) add(row gen.SanitizerRecordRow) {
	l.kinds[row.Kind]++
	if row.Level != nil {
		l.levels[*row.Level]++
	}
	l.classifications[row.Classification]++
	if isError(row) {
		l.errors++
	}
	if row.HazardCount != nil {
		l.hazards += *row.HazardCount
	}
	if len(l.rows) < providers.MaxProjectionRows {
		l.rows = append(l.rows, row)
	}
}

// isError reports whether a row is an error record by what it is: an api_error, or a
// memory_access or other record (memcheck, initcheck, synccheck) whose level is not a
// warning or information, or a race_hazard of level Error. The level is compared ignoring case, and a record without one
// is an error: compute-sanitizer writes none on Api records, and initcheck records
// (kind InitcheckApiError) may come without one. A race_hazard's hazards are also
// counted by hazard_count.
func isError(row gen.SanitizerRecordRow) bool {
	switch row.Classification {
	case classAPI:
		return true
	case classRace:
		// Racecheck's own summary counts a hazard of severity Error as an error
		// ("1 hazard displayed (1 error, 0 warnings)").
		return row.Level != nil && strings.EqualFold(*row.Level, "error")
	}
	if row.Level == nil {
		return true
	}
	switch strings.ToLower(*row.Level) {
	case "warning", "info", "information":
		return false
	}
	return true
}

// scan reads the summary lines of text found outside the records.
func (s *sanitizerSummary) scan(text []byte) {
	if !bytes.Contains(text, []byte("ERROR")) && !bytes.Contains(text, []byte("not printed")) {
		return
	}
	for line := range bytes.Lines(text) {
		if m := summaryNotPrinted().FindSubmatch(line); m != nil {
			keepLargest(&s.notPrinted, m[1])
		} else if m := summaryTotal().FindSubmatch(line); m != nil {
			keepLargest(&s.total, m[1])
		}
	}
}

// keepLargest sets *dst to the integer digits when it is larger; digits past int64 are
// ignored.
func keepLargest(dst **int64, digits []byte) {
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return
	}
	if *dst == nil || n > **dst {
		*dst = &n
	}
}

// reported is the error total the log's summary gives: its ERROR SUMMARY figure, else
// the error records plus those it says were not printed; nil without a summary line.
func (s sanitizerSummary) reported(errors int64) *int64 {
	switch {
	case s.total != nil:
		return s.total
	case s.notPrinted != nil:
		n := errors + *s.notPrinted
		if n < errors {
			n = math.MaxInt64
		}
		return &n
	}
	return nil
}

// truncation says whether the log may hold fewer records than the sanitizer found: its
// summary says some were not printed or counts more errors than the log holds records;
// or, without a summary line, it holds exactly defaultPrintLimit records or error
// records. reported is the summary's total (nil without one) and why the limitation
// sentence, empty when possibly is false.
func (l *sanitizerLog) truncation() (possibly bool, reported *int64, why string) {
	reported = l.summary.reported(l.errors)
	switch {
	case l.summary.notPrinted != nil && *l.summary.notPrinted > 0, reported != nil && *reported > l.records:
		return true, reported, summaryTruncation(*reported, l.records)
	case reported != nil:
		return false, reported, ""
	case l.records == defaultPrintLimit:
		return true, nil, limitTruncation("records")
	case l.errors == defaultPrintLimit:
		return true, nil, limitTruncation("error records")
	}
	return false, nil, ""
}

// rerunAll is how to get every record.
const rerunAll = " Rerunning with --print-limit 0 prints them all."

// limitTruncation is the limitation of a log that stops at the default print limit:
// what names what it holds exactly defaultPrintLimit of (records, error records).
func limitTruncation(what string) string {
	return fmt.Sprintf("possibly_truncated: the log holds exactly %[1]d %[2]s, the number after which Compute Sanitizer stops printing "+
		"by default (--print-limit %[1]d), and no summary line saying how many it found, so it may hold only the first %[1]d of more records; "+
		"error_count and the rows cover the printed records only.", defaultPrintLimit, what) +
		rerunAll + " (The compute-sanitizer capture provider passes --print-limit 0, so its logs are complete.)"
}

// summaryTruncation is the limitation of a log whose summary reports more errors than
// it holds records.
func summaryTruncation(reported, records int64) string {
	return fmt.Sprintf("possibly_truncated: the log's own summary reports %d errors but the log holds %d records, "+
		"so it holds only the first %d of more: Compute Sanitizer stops printing at --print-limit (%d by default); "+
		"reported_error_count is the summary's figure, while error_count and the rows cover the printed records only.",
		reported, records, records, defaultPrintLimit) + rerunAll
}

// set stores the text of the element at path (below <record>).
func (r *record) set(path []string, v string, src int, n int64) error {
	p := strings.Join(path, "/")
	integer := func(dst **int64) error {
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return sanitizerDecodeErr(src, "source %d: record %d: <%s> is not an integer", src, n, p)
		}
		*dst = &i
		return nil
	}
	coord := func(dst *[3]int64, seen *bool, axis string) error {
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return sanitizerDecodeErr(src, "source %d: record %d: <%s> is not an integer", src, n, p)
		}
		dst[strings.Index("xyz", axis)] = i
		*seen = true
		return nil
	}
	str := func(dst **string) error { *dst = &v; return nil }
	row := &r.row
	switch p {
	case "kind":
		row.Kind = v
	case "level":
		return str(&row.Level)
	case "who/threadIdx/x", "who/threadIdx/y", "who/threadIdx/z":
		return coord(&r.thread, &r.hasThrd, path[2])
	case "who/blockIdx/x", "who/blockIdx/y", "who/blockIdx/z":
		return coord(&r.block, &r.hasBlock, path[2])
	case "what/text":
		return str(&row.Text)
	case "what/error":
		return str(&row.Error)
	case "what/api":
		return str(&row.Api)
	case "what/result":
		return integer(&row.ApiResult)
	case "what/space":
		return str(&row.Space)
	case "what/direction":
		return str(&row.Direction)
	case "what/size":
		return integer(&row.Size)
	case "what/address":
		return str(&row.Address)
	case "accessAddress", "what/accessAddress":
		return str(&r.accessAddr)
	case "accessSize", "what/accessSize":
		return integer(&r.accessSize)
	case "where/func", "what/source/where/func":
		return str(&row.Function)
	case "where/path", "what/source/where/path":
		return str(&row.File)
	case "where/line", "what/source/where/line":
		return integer(&row.Line)
	case "where/pc", "what/source/where/pc":
		return str(&row.Pc)
	case "what/source/direction":
		r.srcDir = v
	case "what/destination/direction":
		r.dstDir = v
	case "what/source/count":
		return integer(&r.srcCount)
	case "what/destination/count":
		return integer(&r.dstCount)
	case "what/destination/where/func":
		return str(&row.DestinationFunction)
	case "what/destination/where/path":
		return str(&row.DestinationFile)
	case "what/destination/where/line":
		return integer(&row.DestinationLine)
	}
	return nil
}

// finish completes the row: coordinates, hazard and classification.
func (r *record) finish() gen.SanitizerRecordRow {
	row := r.row
	if r.hasBlock {
		row.Block = r.block[:]
	}
	if r.hasThrd {
		row.Thread = r.thread[:]
	}
	if row.Address == nil {
		row.Address = r.accessAddr
	}
	if row.Size == nil {
		row.Size = r.accessSize
	}
	if r.srcDir != "" || r.dstDir != "" {
		h := strings.ToLower(r.srcDir) + "/" + strings.ToLower(r.dstDir)
		row.HazardType = &h
	}
	switch {
	case r.dstCount != nil:
		row.HazardCount = r.dstCount
	case r.srcCount != nil:
		row.HazardCount = r.srcCount
	}
	switch {
	case row.Kind == "Api" || row.Api != nil:
		row.Classification = classAPI
	case row.HazardType != nil || row.HazardCount != nil:
		row.Classification = classRace
	case row.Space != nil || row.Direction != nil || row.Address != nil:
		row.Classification = classMemory
	default:
		row.Classification = classOther
	}
	return row
}

// inspectSanitizer is inspect_sanitizer_failures.
func inspectSanitizer(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	log, err := readSanitizer(ctx, req.Inputs[0])
	if err != nil {
		return nil, err
	}
	truncated, reported, why := log.truncation()
	// A log without records is clean unless its summary counts errors it did not print.
	clean := log.records == 0 && !truncated
	m := map[string]any{
		"record_count": log.records, "kinds": log.kinds, "levels": log.levels,
		"classifications": log.classifications, "hazard_count": log.hazards,
		"error_count":          log.errors,
		"possibly_truncated":   truncated,
		"reported_error_count": reported,
		"clean":                clean,
	}
	var lim []string
	if clean {
		lim = append(lim, "no_errors_recorded: the log holds no record; the sanitizer tool reported nothing in the kernels that ran.")
	}
	if why != "" {
		lim = append(lim, why)
	}
	rows := providers.Project(int(min(log.records, int64(providers.MaxProjectionRows)+1)), func(i int) gen.SanitizerRecordRow {
		return log.rows[i]
	})
	return &providers.Analysis{Provider: sanitizerProvider(), Metrics: m, Rows: rows, Limitations: lim}, nil
}
