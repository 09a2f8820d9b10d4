package ncu

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/flameox/flameox/providers"
)

// Bounds of one CSV page.
const (
	// maxLineBytes bounds one physical line (the raw page's header and launch rows are
	// the longest: about 60 bytes per metric).
	maxLineBytes = 16 << 20
	// maxColumns bounds the fields of one record.
	maxColumns = 100_000
	// maxLaunches bounds the distinct launch IDs of one report.
	maxLaunches = 1_000_000
	// maxDistinctIDs bounds the distinct metric and section names kept for the metrics.
	maxDistinctIDs = 100_000
	// maxListedIDs bounds metric_ids and section_ids in the metrics block.
	maxListedIDs = 128
)

// launchColumns are the columns every ncu --csv page starts with: the launch's identity.
var launchColumns = []string{"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
	"Block Size", "Grid Size", "Device", "CC"}

// detailsColumns are the details page's columns after the launch columns.
var detailsColumns = []string{"Section Name", "Metric Name", "Metric Unit", "Metric Value",
	"Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"}

const (
	colID = iota
	colProcessID
	colProcessName
	colHost
	colKernel
	colContext
	colStream
	colBlock
	colGrid
	colDevice
	colCC
	colSection
	colMetric
	colUnit
	colValue
	colRule
	colRuleType
	colRuleDesc
	colSpeedupType
	colSpeedup
)

// IsCSVHead reports whether head starts an ncu --csv page (details or raw).
func IsCSVHead(head []byte) bool {
	h := bytes.TrimPrefix(head, []byte("\ufeff"))
	return bytes.HasPrefix(h, []byte(`"ID","Process ID","Process Name","Host Name","Kernel Name"`))
}

// page selects what a decode keeps of a page.
type page uint8

const (
	keepAll page = iota
	// keepMeasurements keeps the measurements (the raw page of a converted report).
	keepMeasurements
	// keepObservations keeps the observations and section names (the details page of a
	// converted report).
	keepObservations
)

// launch is the identity of one profiled kernel launch.
type launch struct {
	id                                  int64
	kernel, device, stream, block, grid string
}

// entry is one row, kept compact until its page is built.
type entry struct {
	launch      int32
	observation bool
	numeric     bool
	hasSpeedup  bool
	// section, metric, unit (measurements) or rule, ruleType, speedupType (observations)
	// are interned.
	section, metric, unit, value      string
	rule, ruleType, desc, speedupType string
	speedup                           float64
}

// report accumulates the rows and figures of one or more pages of one report.
type report struct {
	launches  []launch
	byID      map[int64]int32
	entries   []entry
	metrics   int64
	observed  int64
	metricIDs map[string]struct{}
	sections  map[string]struct{}
	strs      map[string]string
	raw       bool
	// summaries are the launches view's figures and rule results, by launch index.
	summaries []launchSummary
}

func newReport() *report {
	return &report{byID: map[int64]int32{}, metricIDs: map[string]struct{}{}, sections: map[string]struct{}{}, strs: map[string]string{}}
}

func (r *report) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := r.strs[s]; ok {
		return v
	}
	s = strings.Clone(s)
	if len(r.strs) < maxDistinctIDs {
		r.strs[s] = s
	}
	return s
}

// rows is the number of rows read, beyond the kept ones.
func (r *report) rows() int64 { return r.metrics + r.observed }

func (r *report) add(e entry) {
	r.summarize(e.launch, &e)
	if len(r.entries) <= providers.MaxProjectionRows {
		r.entries = append(r.entries, e)
	}
	if e.observation {
		r.observed++
	} else {
		r.metrics++
	}
}

func (r *report) note(set map[string]struct{}, s string) {
	if s == "" {
		return
	}
	if _, ok := set[s]; !ok && len(set) < maxDistinctIDs {
		set[r.intern(s)] = struct{}{}
	}
}

// launchOf returns the launch index of a record, adding the launch when it is new.
func (r *report) launchOf(rec []string, src int, line int) (int32, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(rec[colID]), 10, 64)
	if err != nil || id < 0 {
		return 0, rowErr(src, line, "a row's ID is not a launch number")
	}
	if i, ok := r.byID[id]; ok {
		return i, nil
	}
	if len(r.launches) >= maxLaunches {
		return 0, &providers.LimitError{Source: src, Limit: maxLaunches, Unit: "launches",
			Message: fmt.Sprintf("source %d holds more than %d kernel launches", src, maxLaunches)}
	}
	r.launches = append(r.launches, launch{id: id, kernel: strings.Clone(rec[colKernel]), device: r.intern(rec[colDevice]),
		stream: r.intern(rec[colStream]), block: r.intern(rec[colBlock]), grid: r.intern(rec[colGrid])})
	r.byID[id] = int32(len(r.launches) - 1)
	return int32(len(r.launches) - 1), nil
}

func rowErr(src, line int, msg string) error {
	return &providers.DecodeError{Source: src, Message: fmt.Sprintf("source %d: line %d: %s", src, line, msg),
		Details: map[string]any{"line": line}}
}

// decodePage reads one ncu --csv page (details or raw, told apart by the header) into r.
func decodePage(ctx context.Context, rd io.Reader, src int, keep page, r *report) error {
	lb := &lineBound{r: rd, src: src}
	cr := csv.NewReader(lb)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if lb.err != nil {
		return lb.err
	}
	if err != nil {
		return csvErr(err, src, "the input is not an Nsight Compute CSV export")
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	if len(header) < len(launchColumns) || !slices.Equal(header[:len(launchColumns)], launchColumns) {
		return &providers.UnsupportedError{Source: src, Message: fmt.Sprintf("source %d is not an Nsight Compute CSV export: its header does not start with ncu's launch columns (ID, Process ID, ... CC)", src)}
	}
	if len(header) > maxColumns {
		return &providers.LimitError{Source: src, Limit: maxColumns, Unit: "columns",
			Message: fmt.Sprintf("source %d has more than %d columns", src, maxColumns)}
	}
	details := len(header) >= len(launchColumns)+4 && slices.Equal(header[len(launchColumns):len(launchColumns)+4], detailsColumns[:4])
	if details {
		err = decodeDetails(ctx, cr, header, src, keep, r)
	} else {
		err = decodeRaw(ctx, cr, header, src, keep, r)
	}
	if lb.err != nil {
		// The CSV reader may report the cut line rather than the bound.
		return lb.err
	}
	return err
}

func decodeDetails(ctx context.Context, cr *csv.Reader, header []string, src int, keep page, r *report) error {
	width := len(header)
	rules := width >= colSpeedup+1 && slices.Equal(header[colRule:colSpeedup+1], detailsColumns[4:])
	if !rules && width != colValue+1 {
		return &providers.UnsupportedError{Source: src, Message: fmt.Sprintf("source %d: the details page has columns after Metric Value other than ncu's rule columns", src)}
	}
	var rec []string
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		got, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvErr(err, src, "the details page is not valid CSV")
		}
		// FieldPos panics after a failed Read: ask only for a record read whole.
		line, _ := cr.FieldPos(0)
		if len(got) > width {
			return rowErr(src, line, fmt.Sprintf("a row has %d fields, more than the header's %d", len(got), width))
		}
		if len(got) < colValue+1 {
			return rowErr(src, line, fmt.Sprintf("a row has %d fields, fewer than the %d a measurement needs", len(got), colValue+1))
		}
		// Rows without rule results end after Metric Value (ncu writes them ragged).
		rec = append(append(rec[:0], got...), make([]string, width-len(got))...)
		li, err := r.launchOf(rec, src, line)
		if err != nil {
			return err
		}
		if keep != keepMeasurements {
			r.note(r.sections, rec[colSection])
		}
		if rec[colMetric] != "" && keep != keepObservations {
			v, num := parseValue(rec[colValue])
			r.note(r.metricIDs, rec[colMetric])
			r.add(entry{launch: li, section: r.intern(rec[colSection]), metric: r.intern(rec[colMetric]), unit: r.intern(rec[colUnit]),
				value: strings.Clone(v), numeric: num})
		}
		if rules && rec[colRule] != "" && keep != keepMeasurements {
			e := entry{launch: li, observation: true, section: r.intern(rec[colSection]), rule: r.intern(rec[colRule]),
				ruleType: r.intern(rec[colRuleType]), desc: r.intern(rec[colRuleDesc]), speedupType: r.intern(rec[colSpeedupType])}
			if v, num := parseValue(rec[colSpeedup]); num {
				e.speedup, _ = strconv.ParseFloat(v, 64)
				e.hasSpeedup = true
			}
			r.add(e)
		}
	}
}

func decodeRaw(ctx context.Context, cr *csv.Reader, header []string, src int, keep page, r *report) error {
	r.raw = true
	names := make([]string, len(header))
	for i := len(launchColumns); i < len(header); i++ {
		names[i] = strings.Clone(header[i])
	}
	units := make([]string, len(header))
	first := true
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvErr(err, src, "the raw page is not valid CSV")
		}
		// FieldPos panics after a failed Read: ask only for a record read whole.
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return rowErr(src, line, fmt.Sprintf("a row has %d fields, the header %d", len(rec), len(header)))
		}
		// The row after the header holds the units; it has no launch ID.
		if first && strings.TrimSpace(rec[colID]) == "" {
			first = false
			for i := len(launchColumns); i < len(rec); i++ {
				units[i] = r.intern(rec[i])
			}
			continue
		}
		first = false
		li, err := r.launchOf(rec, src, line)
		if err != nil {
			return err
		}
		if keep == keepObservations {
			continue
		}
		for i := len(launchColumns); i < len(rec); i++ {
			r.note(r.metricIDs, names[i])
			if len(r.entries) > providers.MaxProjectionRows {
				r.metrics++
				if _, ok := summaryMetrics[[2]string{"", names[i]}]; ok {
					v, num := parseValue(rec[i])
					r.summarize(li, &entry{launch: li, metric: names[i], unit: units[i], value: strings.Clone(v), numeric: num})
				}
				continue
			}
			v, num := parseValue(rec[i])
			r.add(entry{launch: li, metric: names[i], unit: units[i], value: r.internValue(v, num), numeric: num})
		}
	}
}

// internValue shares the text of short values (0, n/a, ...), which repeat across launches.
func (r *report) internValue(v string, num bool) string {
	if len(v) <= 4 {
		return r.intern(v)
	}
	return strings.Clone(v)
}

func csvErr(err error, src int, msg string) error {
	var le *providers.LimitError
	if errors.As(err, &le) {
		return le
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return rowErr(src, pe.Line, msg)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err == io.EOF {
		return &providers.DecodeError{Source: src, Message: fmt.Sprintf("source %d is empty: %s", src, msg)}
	}
	return &providers.DecodeError{Source: src, Message: fmt.Sprintf("source %d: %s", src, msg), Err: err}
}

// groupedNumber is a decimal number, optionally with thousands separators, as ncu prints
// values.
var groupedNumber = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(\d+|\d{1,3}(,\d{3})+)(\.\d+)?([eE][-+]?\d+)?$`)
})

// jsonNumber is JSON's number grammar.
var jsonNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$`) })

// parseValue returns a printed value as a JSON number without separators when it is one,
// else the text as printed.
func parseValue(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if t == "" || !groupedNumber().MatchString(t) {
		return s, false
	}
	t = strings.TrimPrefix(strings.ReplaceAll(t, ",", ""), "+")
	if jsonNumber().MatchString(t) {
		return t, true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return s, false
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// jsonValue is the row value of an entry.
func (e *entry) jsonValue() any {
	if e.numeric {
		return json.Number(e.value)
	}
	return e.value
}

// lineBound fails a read once a physical line grows beyond maxLineBytes.
type lineBound struct {
	r    io.Reader
	src  int
	line int64
	err  error
}

func (l *lineBound) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if i := bytes.IndexByte(p[:n], '\n'); i >= 0 {
		// The line the chunk ends stops at its first newline; the rest start after its last.
		if l.line += int64(i); l.line <= maxLineBytes {
			l.line = int64(n - bytes.LastIndexByte(p[:n], '\n') - 1)
		}
	} else {
		l.line += int64(n)
	}
	if l.line > maxLineBytes {
		l.err = &providers.LimitError{Source: l.src, Limit: maxLineBytes, Unit: "bytes",
			Message: fmt.Sprintf("source %d has a line longer than %d bytes", l.src, maxLineBytes)}
		return n, l.err
	}
	return n, err
}
