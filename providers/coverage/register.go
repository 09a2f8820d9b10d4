// Package coverage reads coverage.py data files (.coverage, SQLite) natively through a
// pure-Go SQLite driver, the executed lines and branch arcs of every measured file per
// context, and LCOV tracefiles (lcov.go), the executed lines per file and test. It also registers the coverage capture provider, which runs a Python
// workload under coverage run.
package coverage

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sqlitefile"
)

// Register adds summarize_coverage, the detectors of coverage.py data and LCOV
// tracefiles and the coverage capture provider.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeCoverage, summarize))
	r.Detector(detector)
	r.Detector(lcovDetector)
	// coverage.py's data file is SQLite.
	r.Amplifying(gen.FormatCoverage)
	r.Collector(collector)
}

// detector recognizes coverage.py's data file: .coverage, a parallel-mode
// .coverage.<host>.<pid>.<random>, or any *.coverage name, holding SQLite.
var detector = providers.Detector{Format: gen.FormatCoverage, Suffixes: []string{".coverage"},
	Match: func(name string, head []byte) bool {
		return bytes.HasPrefix(head, sqlitefile.Magic) && (strings.HasSuffix(name, ".coverage") || strings.HasPrefix(name, ".coverage."))
	}}

func provider() gen.Provider { return gen.Provider{ID: "flameox-coverage", Version: "native-1"} }

const (
	kindLine = iota
	kindArc
)

var kindNames = [...]string{kindLine: "line_hit", kindArc: "branch_arc"}

// hit is one executed line (to unused) or arc of a file in a context (its rank in
// context order).
type hit struct {
	from, to int64
	ctx      int32
}

// entry is one row of the population, kept compact until its page is built.
type entry struct {
	hit
	file int32
	kind uint8
}

func byLine(a, b hit) int {
	return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.ctx, b.ctx))
}

func byArc(a, b hit) int {
	return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), cmp.Compare(a.ctx, b.ctx))
}

// readers is the family's format table: the one place it chooses a reader by format.
var readers = map[gen.Format]func(context.Context, providers.Input, gen.EffectiveLimits) (*data, error){
	gen.FormatCoverage: readCoveragePy,
	gen.FormatLcov:     readLCOV,
}

// data is what a reader found in one source: the measured files and contexts, each sorted
// by name; the rows kept (at most MaxProjectionRows) in the table's order and how many
// there are; the metrics and limitations of the result.
type data struct {
	files, contexts []string
	store           []entry
	total           int64
	metrics         map[string]any
	limitations     []string
}

// keep appends the hits of file fi of kind k to d.store while it has room.
func (d *data) keep(fi int32, k uint8, hs []hit) {
	for _, h := range hs {
		if len(d.store) >= providers.MaxProjectionRows {
			return
		}
		d.store = append(d.store, entry{hit: h, file: fi, kind: k})
	}
}

func summarize(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	d, err := readers[in.Format](ctx, in, req.Limits)
	if err != nil {
		return nil, err
	}
	rows := providers.Project(int(min(d.total, int64(providers.MaxProjectionRows)+1)), func(i int) gen.CoverageRow {
		e := d.store[i]
		row := gen.CoverageRow{Kind: kindNames[e.kind], File: d.files[e.file], LineFrom: e.from, Context: d.contexts[e.ctx]}
		if e.kind == kindArc {
			to := e.to
			row.LineTo = &to
		}
		return row
	})
	return &providers.Analysis{Provider: provider(), Metrics: d.metrics, Rows: rows, Limitations: d.limitations}, nil
}

// readCoveragePy reads a coverage.py data file (SQLite).
func readCoveragePy(ctx context.Context, in providers.Input, _ gen.EffectiveLimits) (*data, error) {
	d, err := open(ctx, in)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	version, hasArcs, recorded, err := d.meta(ctx)
	if err != nil {
		return nil, err
	}
	files, err := d.names(ctx, "SELECT id, path FROM file")
	if err != nil {
		return nil, err
	}
	contexts, err := d.names(ctx, "SELECT id, context FROM context")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b name) int { return cmp.Compare(a.text, b.text) })
	slices.SortFunc(contexts, func(a, b name) int { return cmp.Compare(a.text, b.text) })
	rank := make(map[int64]int32, len(contexts))
	out := &data{}
	for i, c := range contexts {
		rank[c.id] = int32(i)
		out.contexts = append(out.contexts, c.text)
	}
	for _, f := range files {
		out.files = append(out.files, f.text)
	}

	r := &reader{db: d, rank: rank, hasArcs: hasArcs}
	var lines, arcCount int64
	if recorded {
		for fi, f := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			ls, as, err := r.file(ctx, f.id)
			if err != nil {
				return nil, err
			}
			lines += distinct(ls, func(a, b hit) bool { return a.from == b.from })
			arcCount += distinct(as, func(a, b hit) bool { return a.from == b.from && a.to == b.to })
			out.total += int64(len(ls) + len(as))
			out.keep(int32(fi), kindLine, ls)
			out.keep(int32(fi), kindArc, as)
		}
	}

	out.metrics = map[string]any{
		"file_count": len(files), "line_count": lines, "arc_count": arcCount,
		"coverage_version": version, "has_arcs": hasArcs, "context_count": len(contexts),
	}
	switch {
	case !recorded || out.total == 0:
		out.limitations = append(out.limitations, "no_coverage_recorded: the data file holds no executed line or arc.")
	case !hasArcs:
		out.limitations = append(out.limitations, "no_branch_data: the data were recorded without branch measurement (coverage run --branch); only line hits are listed.")
	}
	return out, nil
}

// distinct counts the runs of sorted hs that same does not join.
func distinct(hs []hit, same func(a, b hit) bool) int64 {
	var n int64
	for i := range hs {
		if i == 0 || !same(hs[i-1], hs[i]) {
			n++
		}
	}
	return n
}

// reader reads the hits of one measured file at a time.
type reader struct {
	db      *db
	rank    map[int64]int32
	hasArcs bool
	// read counts the data rows read so far.
	read int64
}

// file returns the sorted line hits and arcs of file id. Arc data yield line hits as
// coverage.py derives them: the positive ends of the arcs, per context.
func (r *reader) file(ctx context.Context, id int64) (lines, arcs []hit, err error) {
	d := r.db
	query := "SELECT context_id, numbits FROM line_bits WHERE file_id = ?"
	if r.hasArcs {
		query = "SELECT context_id, fromno, tono FROM arc WHERE file_id = ?"
	}
	rows, err := d.sql.QueryContext(ctx, query, id)
	if err != nil {
		return nil, nil, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	tooMany := func() error {
		return &providers.LimitError{Source: d.index, Limit: maxFileHits, Unit: "rows",
			Message: fmt.Sprintf("source %d: a measured file has more than %d line hits and arcs across its contexts", d.index, maxFileHits)}
	}
	for rows.Next() {
		if r.read++; r.read > maxDataRows {
			return nil, nil, &providers.LimitError{Source: d.index, Limit: maxDataRows, Unit: "rows",
				Message: fmt.Sprintf("source %d holds more than %d line_bits and arc rows", d.index, maxDataRows)}
		}
		var cid sql.NullInt64
		var h hit
		if r.hasArcs {
			var from, to sql.NullInt64
			if err := rows.Scan(&cid, &from, &to); err != nil {
				return nil, nil, d.sqlErr(ctx, err)
			}
			if !from.Valid || !to.Valid || abs(from.Int64) > maxLine || abs(to.Int64) > maxLine {
				return nil, nil, decodeErr(d.index, nil, "source %d: an arc has a missing or out-of-range line number", d.index)
			}
			h.from, h.to = from.Int64, to.Int64
		} else {
			var bits []byte
			if err := rows.Scan(&cid, &bits); err != nil {
				return nil, nil, d.sqlErr(ctx, err)
			}
			if len(bits) > maxNumbitsBytes {
				return nil, nil, &providers.LimitError{Source: d.index, Limit: maxNumbitsBytes, Unit: "bytes",
					Message: fmt.Sprintf("source %d: a numbits line set is longer than %d bytes", d.index, maxNumbitsBytes)}
			}
			var over bool
			rk, ok := r.rank[cid.Int64]
			if !cid.Valid || !ok {
				return nil, nil, decodeErr(d.index, nil, "source %d: line data name a context the context table does not hold", d.index)
			}
			numbits(bits, func(line int64) {
				if len(lines) >= maxFileHits {
					over = true
					return
				}
				lines = append(lines, hit{from: line, ctx: rk})
			})
			if over {
				return nil, nil, tooMany()
			}
			continue
		}
		rk, ok := r.rank[cid.Int64]
		if !cid.Valid || !ok {
			return nil, nil, decodeErr(d.index, nil, "source %d: an arc names a context the context table does not hold", d.index)
		}
		h.ctx = rk
		if len(arcs)+len(lines) >= maxFileHits {
			return nil, nil, tooMany()
		}
		arcs = append(arcs, h)
		for _, l := range []int64{h.from, h.to} {
			if l > 0 {
				lines = append(lines, hit{from: l, ctx: rk})
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, d.sqlErr(ctx, err)
	}
	slices.SortFunc(lines, byLine)
	lines = slices.CompactFunc(lines, func(a, b hit) bool { return byLine(a, b) == 0 })
	slices.SortFunc(arcs, byArc)
	arcs = slices.CompactFunc(arcs, func(a, b hit) bool { return byArc(a, b) == 0 })
	return lines, arcs, nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
