package gpu

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

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
var sanitizerDetector = providers.Detector{Format: gen.FormatComputeSanitizer, Container: gen.FormatText,
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

// sanitizerLog is a decoded log: the rows kept, the number of records and the counts.
type sanitizerLog struct {
	rows            []gen.SanitizerRecordRow
	records         int64
	kinds, levels   map[string]int64
	classifications map[string]int64
	hazards         int64
	// errors counts the records of level Error and the api_error records.
	errors int64
}

// record accumulates one <record> while its elements stream past.
type record struct {
	row                gen.SanitizerRecordRow
	block, thread      [3]int64
	hasBlock, hasThrd  bool
	srcDir, dstDir     string
	srcCount, dstCount *int64
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
				row := rec.finish()
				log.kinds[row.Kind]++
				if row.Level != nil {
					log.levels[*row.Level]++
				}
				log.classifications[row.Classification]++
				if (row.Level != nil && *row.Level == "Error") || row.Classification == classAPI {
					log.errors++
				}
				if row.HazardCount != nil {
					log.hazards += *row.HazardCount
				}
				if len(log.rows) < providers.MaxProjectionRows {
					log.rows = append(log.rows, row)
				}
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
	m := map[string]any{
		"record_count": log.records, "kinds": log.kinds, "levels": log.levels,
		"classifications": log.classifications, "hazard_count": log.hazards,
		"error_count": log.errors,
		"clean":       log.records == 0,
	}
	var lim []string
	if log.records == 0 {
		lim = append(lim, "no_errors_recorded: the log holds no record; the sanitizer tool reported nothing in the kernels that ran.")
	}
	rows := providers.Project(int(min(log.records, int64(providers.MaxProjectionRows)+1)), func(i int) gen.SanitizerRecordRow {
		return log.rows[i]
	})
	return &providers.Analysis{Provider: sanitizerProvider(), Metrics: m, Rows: rows, Limitations: lim}, nil
}
