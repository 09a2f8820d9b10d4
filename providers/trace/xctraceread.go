package trace

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// An xctrace export is the XML `xcrun xctrace export --xpath` writes for the tables of an
// Instruments trace (decision 0062):
//
//	<trace-query-result>
//	  <node xpath='//trace-toc[1]/run[1]/data[1]/table[31]'>
//	    <schema name="device-thermal-state-intervals">
//	      <col><mnemonic>start</mnemonic><name>Start</name><engineering-type>start-time</engineering-type></col>
//	      <col><mnemonic>duration</mnemonic>...<engineering-type>duration</engineering-type></col> ...
//	    </schema>
//	    <row><start-time id="1" fmt="00:00.000.000">0</start-time><duration id="2" fmt="4.53 s">4531561613</duration>...</row>
//	    <row><start-time ref="3"/><duration ref="2"/><sentinel/>...</row>
//	  </node>
//	</trace-query-result>
//
// A row's children are its column values in schema order. A value written once carries
// an id; a later value equal to it is an element of the same name with ref="id" and
// nothing else, which may point to a value nested in another (a thread's process). A
// <sentinel/> is a null. Times are integer nanoseconds from the start of the run, and an
// element's fmt attribute is the text Instruments shows for it.
//
// DecodeXctrace reads one export streaming: the rows of a table whose schema has a start
// (engineering type start-time) and a duration become slices; the rows of a table with a
// time but no duration (samples, signpost events) are counted as instants; the rest are
// counted as events only. Its memory is the interned values (bounded by MaxValues and
// MaxValueBytes) and the tracks, not the rows.

// XctraceLimits bound one read. A zero field takes its default.
type XctraceLimits struct {
	// MaxDepth bounds element nesting. Default 64 (xctrace writes about 8).
	MaxDepth int
	// MaxValues bounds the values kept for references (every element with an id, except
	// the frames and binaries inside backtraces). Default 8,388,608.
	MaxValues int
	// MaxValueBytes bounds the bytes of the labels kept with them. Default 256 MiB.
	MaxValueBytes int64
	// MaxColumns bounds one schema's columns. Default 1,024.
	MaxColumns int
	// MaxTables bounds the tables (node elements) of one export. Default 4,096.
	MaxTables int
	// MaxTracks bounds the distinct (run, table, thread or process) tracks. Default 65,536.
	MaxTracks int
}

// DefaultXctraceLimits are the values a zero XctraceLimits field takes.
var DefaultXctraceLimits = XctraceLimits{MaxDepth: 64, MaxValues: 1 << 23, MaxValueBytes: 256 << 20,
	MaxColumns: 1024, MaxTables: 4096, MaxTracks: 1 << 16}

func (l XctraceLimits) withDefaults() XctraceLimits {
	d := DefaultXctraceLimits
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxValues > 0 {
		d.MaxValues = l.MaxValues
	}
	if l.MaxValueBytes > 0 {
		d.MaxValueBytes = l.MaxValueBytes
	}
	if l.MaxColumns > 0 {
		d.MaxColumns = l.MaxColumns
	}
	if l.MaxTables > 0 {
		d.MaxTables = l.MaxTables
	}
	if l.MaxTracks > 0 {
		d.MaxTracks = l.MaxTracks
	}
	return d
}

// XctraceTableKind is how a table's rows are read.
type XctraceTableKind string

const (
	// XctraceIntervals: a start and a duration column; its rows are slices.
	XctraceIntervals XctraceTableKind = "intervals"
	// XctracePoints: a time column (start-time, event-time or sample-time) but no
	// duration: samples and events, counted as instants.
	XctracePoints XctraceTableKind = "points"
	// XctraceOther: no time column; counted as events only.
	XctraceOther XctraceTableKind = "other"
)

// XctraceTable is one table (node) of an export as it was read.
type XctraceTable struct {
	// Schema is the schema's name ("" when the node has none).
	Schema string
	// Run is the run number the node's xpath names (run[N]), 1 when it names none.
	Run  int
	Kind XctraceTableKind
	// Rows counts the table's rows; Slices those that became slices; Invalid the rows of
	// an interval table without a start or a duration, or whose end overflows.
	Rows, Slices, Invalid int64
}

// XctraceInfo is what a read found besides the slices.
type XctraceInfo struct {
	Tables []XctraceTable
	// Runs counts the distinct runs the tables belong to.
	Runs int
}

// xctraceTimeTypes are the engineering types of a point in time, in nanoseconds from the
// start of the run.
var xctraceTimeTypes = map[string]bool{"start-time": true, "event-time": true, "sample-time": true}

// xctraceNotLabels are the engineering types that are not a row's label: times,
// durations, identities, numbers, addresses and backtraces. Any other value (a state, a
// name, an operation, a narrative) is.
var xctraceNotLabels = map[string]bool{
	"start-time": true, "event-time": true, "sample-time": true, "duration": true, "duration-on-core": true,
	"duration-waiting": true, "mach-absolute-time": true, "mach-continuous-time": true, "time-since-epoch": true,
	"thread": true, "process": true, "tid": true, "pid": true, "core": true, "device-session": true,
	"uint32": true, "uint64": true, "int32": true, "int64": true, "sint32": true, "sint64": true,
	"fixed-decimal": true, "size-in-bytes": true, "address": true, "boolean": true, "weight": true,
	"backtrace": true, "tagged-backtrace": true, "kperf-bt": true, "text-backtrace": true,
	"text-addresses": true, "text-address": true, "register-content": true, "sentinel": true,
}

// xctraceBacktraces are the elements whose descendants (frames, binaries, addresses) are
// not kept for references: only the threads and processes inside them are.
var xctraceBacktraces = map[string]bool{"backtrace": true, "tagged-backtrace": true, "kperf-bt": true, "text-backtrace": true}

// xctraceDenseIDs bounds the numeric ids indexed in a slice (4 bytes an id, whether or
// not it was kept); larger ids, and ids that are not numbers, are looked up in a map.
const xctraceDenseIDs = 1 << 24

// xctraceRun finds the run number in a node's xpath.
var xctraceRun = regexp.MustCompile(`run\[(\d{1,9})\]`)

// xval is one interned value: its label (fmt, else its text) where it can be a row's
// label, its integer text, and for a thread or a process what identifies it.
type xval struct {
	label  string
	num    int64
	thread int32 // index in threads, -1 for none
	flags  uint8
}

const (
	xvNum uint8 = 1 << iota
	xvPID
	xvTID
)

// xthread is a thread or process value's identity: its tid and pid, and its process's label.
type xthread struct {
	tid, pid       int64
	hasTID, hasPID bool
	label, process string
}

type xcol struct{ mnemonic, typ string }

// xtable is the table being read: its schema's columns and the roles found in them.
type xtable struct {
	info                        *XctraceTable
	cols                        []xcol
	start, dur, name, thr, proc int // column index, -1 for none
	hasTime                     bool
	run                         int
	fallbackName                string
}

// roles finds the columns the rows are read by: the start (the column named start of
// type start-time, else the first start-time), the duration (named duration, else the
// first of type duration), the thread, the process, and the label (the column named
// name, else the first whose type is not a time, duration, identity, number or backtrace).
func (t *xtable) roles() {
	t.start, t.dur, t.name, t.thr, t.proc = -1, -1, -1, -1, -1
	for i, c := range t.cols {
		switch {
		case c.typ == "start-time" && (t.start < 0 || c.mnemonic == "start" && t.cols[t.start].mnemonic != "start"):
			t.start = i
		case c.typ == "duration" && (t.dur < 0 || c.mnemonic == "duration" && t.cols[t.dur].mnemonic != "duration"):
			t.dur = i
		case c.typ == "thread" && t.thr < 0:
			t.thr = i
		case c.typ == "process" && t.proc < 0:
			t.proc = i
		}
		if xctraceTimeTypes[c.typ] {
			t.hasTime = true
		}
		if c.mnemonic == "name" && (t.name < 0 || t.cols[t.name].mnemonic != "name") {
			t.name = i
		} else if t.name < 0 && c.typ != "" && !xctraceNotLabels[c.typ] {
			t.name = i
		}
	}
	switch {
	case t.start >= 0 && t.dur >= 0:
		t.info.Kind = XctraceIntervals
	case t.hasTime:
		t.info.Kind = XctracePoints
	default:
		t.info.Kind = XctraceOther
	}
}

// rowRoles assigns roles from a row's element names, for a node without a schema (the
// element names are the engineering types).
func (t *xtable) rowRoles(tags []string) {
	t.cols = t.cols[:0]
	for _, g := range tags {
		t.cols = append(t.cols, xcol{typ: g})
	}
	t.roles()
}

// xctraceReader is one read's state.
type xctraceReader struct {
	ctx   context.Context
	d     *xml.Decoder
	index int
	lim   XctraceLimits
	sink  tracemodel.Sink
	stats *tracemodel.Stats
	info  *XctraceInfo

	// values are the interned values; dense maps a numeric id to its index+1, named any
	// other id.
	values     []xval
	dense      []uint32
	named      map[string]uint32
	valueBytes int64
	threads    []xthread

	tracks   map[[4]int64]int64
	names    map[[2]int64]bool
	procs    map[int64]bool
	runs     map[int]bool
	rowID    int64
	tokens   int64
	depth    int
	ev       tracemodel.Event
	rowCells []cell
	tags     []string
}

// cell is one column value of the row being read: null, or an interned value.
type cell struct {
	null bool
	v    xval
}

// DecodeXctrace reads an xctrace export from r, delivering its interval rows to sink as
// slices in file order (the Nester orders them), and returns what it counted. A
// malformed document is a DecodeError; a document past a bound a LimitError.
func DecodeXctrace(ctx context.Context, r io.Reader, index int, lim XctraceLimits, sink tracemodel.Sink) (*tracemodel.Stats, *XctraceInfo, error) {
	x := &xctraceReader{ctx: ctx, index: index, lim: lim.withDefaults(), sink: sink, stats: &tracemodel.Stats{}, info: &XctraceInfo{},
		named: map[string]uint32{}, tracks: map[[4]int64]int64{}, names: map[[2]int64]bool{}, procs: map[int64]bool{}, runs: map[int]bool{}}
	x.d = xml.NewDecoder(r)
	x.d.Strict = true
	// No entity beyond XML's five is known (an undefined one is a syntax error, never an
	// expansion), and no encoding but UTF-8 is decoded.
	x.d.Entity = nil
	x.d.CharsetReader = nil
	err := x.document()
	x.info.Runs = len(x.runs)
	return x.stats, x.info, err
}

func (x *xctraceReader) decodeErr(msg string, err error) error {
	var le *providers.LimitError
	if errors.As(err, &le) {
		return le
	}
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	var ie *providers.InputError
	if errors.As(err, &ie) {
		return ie
	}
	var de *providers.DecodeError
	if errors.As(err, &de) {
		return de
	}
	return &providers.DecodeError{Source: x.index, Message: fmt.Sprintf("source %d is not a readable xctrace export: %s", x.index, msg),
		Details: map[string]any{"offset": x.d.InputOffset()}, Err: err}
}

func (x *xctraceReader) limit(what string, n int64, unit string) error {
	return &providers.LimitError{Source: x.index, Limit: n, Unit: unit,
		Message: fmt.Sprintf("source %d: the xctrace export has more than %d %s", x.index, n, what)}
}

// token is the next token, checking the depth bound and the context.
func (x *xctraceReader) token() (xml.Token, error) {
	if x.tokens++; x.tokens&0xfff == 0 {
		if err := x.ctx.Err(); err != nil {
			return nil, err
		}
	}
	t, err := x.d.Token()
	if err != nil {
		var se *xml.SyntaxError
		if err == io.EOF && x.depth > 0 || errors.As(err, &se) && se.Msg == "unexpected EOF" {
			return nil, x.decodeErr("the document ends before its elements close (a cut export)", io.ErrUnexpectedEOF)
		}
		if err == io.EOF {
			return nil, err
		}
		return nil, x.decodeErr("malformed XML", err)
	}
	switch t.(type) {
	case xml.StartElement:
		if x.depth++; x.depth > x.lim.MaxDepth {
			return nil, x.limit("levels of element nesting", int64(x.lim.MaxDepth), "levels")
		}
	case xml.EndElement:
		x.depth--
	}
	return t, nil
}

// skip reads to the end of the element just started.
func (x *xctraceReader) skip() error {
	for d := 1; d > 0; {
		t, err := x.token()
		if err != nil {
			return err
		}
		switch t.(type) {
		case xml.StartElement:
			d++
		case xml.EndElement:
			d--
		}
	}
	return nil
}

func attr(e xml.StartElement, name string) (string, bool) {
	for _, a := range e.Attr {
		if a.Name.Local == name && a.Name.Space == "" {
			return a.Value, true
		}
	}
	return "", false
}

// document reads the top level: one or more trace-query-result elements (other
// top-level elements, such as the TOC's info an export script may put before them, are
// skipped).
func (x *xctraceReader) document() error {
	results := 0
	for {
		t, err := x.token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		e, ok := t.(xml.StartElement)
		if !ok {
			if c, ok := t.(xml.CharData); ok && len(strings.TrimSpace(string(c))) > 0 {
				return x.decodeErr("text outside any element", nil)
			}
			continue
		}
		switch e.Name.Local {
		case "trace-query-result":
			results++
			if err := x.result(); err != nil {
				return err
			}
		case "trace-toc":
			return &providers.DecodeError{Source: x.index,
				Message: fmt.Sprintf("source %d is an xctrace table of contents (xctrace export --toc), which lists a trace's tables but holds no rows: export the tables with xcrun xctrace export --input T.trace --xpath '/trace-toc/run[@number=\"1\"]/data/table' --output T.xml and read that file", x.index)}
		default:
			if err := x.skip(); err != nil {
				return err
			}
		}
	}
	if results == 0 {
		return &providers.DecodeError{Source: x.index,
			Message: fmt.Sprintf("source %d is not an xctrace export: it holds no <trace-query-result> element (xcrun xctrace export --xpath writes one; a .trace bundle is a directory, given as the directory itself)", x.index)}
	}
	return nil
}

// children reads the child elements of the element just started until it ends, handing
// each to read, which reads it to its end; text between children is ignored.
func (x *xctraceReader) children(read func(xml.StartElement) error) error {
	for {
		t, err := x.token()
		if err != nil {
			return err
		}
		switch e := t.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if err := read(e); err != nil {
				return err
			}
		}
	}
}

// result reads one trace-query-result: its node elements.
func (x *xctraceReader) result() error {
	return x.children(func(e xml.StartElement) error {
		if e.Name.Local != "node" {
			return x.skip()
		}
		return x.node(e)
	})
}

// node reads one table: its schema, then its rows.
func (x *xctraceReader) node(e xml.StartElement) error {
	if len(x.info.Tables) >= x.lim.MaxTables {
		return x.limit("tables (node elements)", int64(x.lim.MaxTables), "tables")
	}
	run := 1
	if xp, ok := attr(e, "xpath"); ok {
		if m := xctraceRun.FindStringSubmatch(xp); m != nil {
			run, _ = strconv.Atoi(m[1])
		}
	}
	x.runs[run] = true
	x.info.Tables = append(x.info.Tables, XctraceTable{Run: run, Kind: XctraceOther})
	t := &xtable{info: &x.info.Tables[len(x.info.Tables)-1], run: run}
	t.roles()
	schema := false
	return x.children(func(s xml.StartElement) error {
		switch s.Name.Local {
		case "schema":
			if err := x.schema(s, t); err != nil {
				return err
			}
			schema = len(t.cols) > 0
			return nil
		case "row":
			return x.row(t, !schema)
		}
		return x.skip()
	})
}

// schema reads a schema's name and columns.
func (x *xctraceReader) schema(e xml.StartElement, t *xtable) error {
	t.info.Schema, _ = attr(e, "name")
	t.fallbackName = t.info.Schema
	t.cols = t.cols[:0]
	err := x.children(func(s xml.StartElement) error {
		if s.Name.Local != "col" {
			return x.skip()
		}
		if len(t.cols) >= x.lim.MaxColumns {
			return x.limit("columns in one schema", int64(x.lim.MaxColumns), "columns")
		}
		c, err := x.col()
		if err != nil {
			return err
		}
		t.cols = append(t.cols, c)
		return nil
	})
	if err != nil {
		return err
	}
	t.roles()
	return nil
}

// col reads a col element's mnemonic and engineering type.
func (x *xctraceReader) col() (xcol, error) {
	var c xcol
	var field *string
	for {
		tok, err := x.token()
		if err != nil {
			return c, err
		}
		switch s := tok.(type) {
		case xml.StartElement:
			switch s.Name.Local {
			case "mnemonic":
				field = &c.mnemonic
			case "engineering-type":
				field = &c.typ
			default:
				if err := x.skip(); err != nil {
					return c, err
				}
			}
		case xml.CharData:
			if field != nil && len(*field)+len(s) <= 256 {
				*field += string(s)
			}
		case xml.EndElement:
			if field == nil {
				c.mnemonic, c.typ = strings.TrimSpace(c.mnemonic), strings.TrimSpace(c.typ)
				return c, nil
			}
			field = nil
		}
	}
}

// row reads one row's column values and delivers it.
func (x *xctraceReader) row(t *xtable, bytag bool) error {
	x.rowCells, x.tags = x.rowCells[:0], x.tags[:0]
	err := x.children(func(s xml.StartElement) error {
		x.tags = append(x.tags, s.Name.Local)
		if s.Name.Local == "sentinel" {
			x.rowCells = append(x.rowCells, cell{null: true})
			return x.skip()
		}
		v, err := x.value(s, false)
		if err != nil {
			return err
		}
		x.rowCells = append(x.rowCells, cell{v: v})
		return nil
	})
	if err != nil {
		return err
	}
	return x.deliver(t, bytag)
}

// value reads one value element (just started): a reference to an interned value, or a
// value, interned when it has an id. Inside a backtrace (inBT) only threads and
// processes are kept; the rest is read and dropped.
func (x *xctraceReader) value(e xml.StartElement, inBT bool) (xval, error) {
	tag := e.Name.Local
	if ref, ok := attr(e, "ref"); ok {
		if err := x.skip(); err != nil {
			return xval{}, err
		}
		if inBT && !isIdentity(tag) {
			return xval{thread: -1}, nil
		}
		v, ok := x.lookup(ref)
		if !ok {
			return xval{}, &providers.DecodeError{Source: x.index,
				Message: fmt.Sprintf("source %d is not a readable xctrace export: a <%s> refers to id %q, which no element before it defines", x.index, tag, ref),
				Details: map[string]any{"offset": x.d.InputOffset()}}
		}
		return v, nil
	}
	id, hasID := attr(e, "id")
	keep := !inBT || isIdentity(tag) || xctraceBacktraces[tag]
	label := !xctraceNotLabels[tag]
	v := xval{thread: -1}
	format, _ := attr(e, "fmt")
	if keep && label {
		v.label = format
	}
	var text []byte
	var th *xthread
	if tag == "thread" || tag == "process" {
		th = &xthread{}
	}
	bt := inBT || xctraceBacktraces[tag]
	for {
		tok, err := x.token()
		if err != nil {
			return xval{}, err
		}
		switch s := tok.(type) {
		case xml.CharData:
			if keep && len(text) < 4096 {
				text = append(text, s[:min(len(s), 4096-len(text))]...)
			}
		case xml.StartElement:
			c, err := x.value(s, bt)
			if err != nil {
				return xval{}, err
			}
			if th != nil {
				x.absorb(th, s.Name.Local, c)
			}
		case xml.EndElement:
			if keep {
				t := strings.TrimSpace(string(text))
				if n, err := strconv.ParseInt(t, 10, 64); err == nil {
					v.num, v.flags = n, v.flags|xvNum
				}
				if label && v.label == "" {
					v.label = t
				}
				if th != nil {
					th.label = format
					if th.label == "" {
						th.label = t
					}
					if tag == "process" {
						th.process = th.label
					}
					if len(x.threads) >= math.MaxInt32 {
						return xval{}, x.limit("threads and processes", math.MaxInt32, "values")
					}
					v.thread = int32(len(x.threads))
					x.threads = append(x.threads, *th)
				}
				if tag == "pid" && v.flags&xvNum != 0 {
					v.flags |= xvPID
				}
				if tag == "tid" && v.flags&xvNum != 0 {
					v.flags |= xvTID
				}
				if hasID {
					if err := x.intern(id, v); err != nil {
						return xval{}, err
					}
				}
			}
			return v, nil
		}
	}
}

func isIdentity(tag string) bool {
	return tag == "thread" || tag == "process" || tag == "pid" || tag == "tid"
}

// absorb records a thread's or process's child: its tid, pid, or (a thread's) process.
func (x *xctraceReader) absorb(th *xthread, tag string, c xval) {
	switch {
	case tag == "tid" && c.flags&xvNum != 0:
		th.tid, th.hasTID = c.num, true
	case tag == "pid" && c.flags&xvNum != 0:
		th.pid, th.hasPID = c.num, true
	case tag == "process" && c.thread >= 0:
		p := x.threads[c.thread]
		if p.hasPID {
			th.pid, th.hasPID = p.pid, true
		}
		th.process = p.process
	}
}

// intern keeps v under id.
func (x *xctraceReader) intern(id string, v xval) error {
	if len(x.values) >= x.lim.MaxValues {
		return x.limit("values with an id (interned for references)", int64(x.lim.MaxValues), "values")
	}
	if x.valueBytes += int64(len(v.label)); x.valueBytes > x.lim.MaxValueBytes {
		return x.limit("bytes of value labels (interned for references)", x.lim.MaxValueBytes, "bytes")
	}
	x.values = append(x.values, v)
	ix := uint32(len(x.values))
	if n, err := strconv.ParseUint(id, 10, 32); err == nil && n < xctraceDenseIDs {
		if int(n) >= len(x.dense) {
			grow := max(int(n)+1, 2*len(x.dense))
			x.dense = append(x.dense, make([]uint32, min(grow, xctraceDenseIDs)-len(x.dense))...)
		}
		x.dense[n] = ix
		return nil
	}
	x.named[id] = ix
	return nil
}

func (x *xctraceReader) lookup(id string) (xval, bool) {
	var ix uint32
	if n, err := strconv.ParseUint(id, 10, 32); err == nil && n < xctraceDenseIDs {
		if int(n) < len(x.dense) {
			ix = x.dense[n]
		}
	} else {
		ix = x.named[id]
	}
	if ix == 0 {
		return xval{}, false
	}
	return x.values[ix-1], true
}

// deliver counts the row just read and, in an interval table, delivers its slice.
func (x *xctraceReader) deliver(t *xtable, bytag bool) error {
	id := x.rowID
	x.rowID++
	x.stats.Events++
	t.info.Rows++
	if bytag {
		t.rowRoles(x.tags)
	}
	get := func(i int) (xval, bool) {
		if i < 0 || i >= len(x.rowCells) || x.rowCells[i].null {
			return xval{}, false
		}
		return x.rowCells[i].v, true
	}
	switch t.info.Kind {
	case XctracePoints:
		x.stats.Instants++
		return nil
	case XctraceOther:
		x.stats.Ignored++
		return nil
	}
	start, okS := get(t.start)
	dur, okD := get(t.dur)
	if !okS || !okD || start.flags&xvNum == 0 || dur.flags&xvNum == 0 || start.num < 0 || dur.num < 0 || start.num > math.MaxInt64-dur.num {
		x.stats.InvalidIntervals++
		t.info.Invalid++
		return nil
	}
	name := t.fallbackName
	if t.name >= 0 {
		name = ""
		if v, ok := get(t.name); ok {
			name = v.label
		}
	}
	track, err := x.track(t, get)
	if err != nil {
		return err
	}
	x.ev = tracemodel.Event{ID: id, TS: start.num, Dur: dur.num, Track: track, Name: name, Category: t.info.Schema, Phase: "X"}
	x.stats.Slices++
	t.info.Slices++
	return x.sink.Slice(&x.ev)
}

// track is the row's track: its thread's on this table of this run, else its process's,
// else the table's; announced to the sink with its names the first time.
func (x *xctraceReader) track(t *xtable, get func(int) (xval, bool)) (int64, error) {
	var th, pr *xthread
	if v, ok := get(t.thr); ok && v.thread >= 0 {
		th = &x.threads[v.thread]
	}
	if v, ok := get(t.proc); ok && v.thread >= 0 {
		pr = &x.threads[v.thread]
	}
	table := int64(len(x.info.Tables) - 1)
	key := [4]int64{table, -1, -1, 0}
	tr := tracemodel.Track{PID: -1, TID: -1, Async: true}
	switch {
	case th != nil && th.hasTID:
		pid := int64(-1)
		switch {
		case th.hasPID:
			pid = th.pid
		case pr != nil && pr.hasPID:
			pid = pr.pid
		}
		key = [4]int64{table, pid, th.tid, 1}
		tr = tracemodel.Track{PID: pid, TID: th.tid}
		if !x.names[[2]int64{pid, th.tid}] && th.label != "" {
			x.names[[2]int64{pid, th.tid}] = true
			x.sink.ThreadName(pid, th.tid, th.label)
		}
		if th.process != "" && pid >= 0 && !x.procs[pid] {
			x.procs[pid] = true
			x.sink.ProcessName(pid, th.process)
		}
	case pr != nil && pr.hasPID:
		key = [4]int64{table, pr.pid, -1, 2}
		tr = tracemodel.Track{PID: pr.pid, TID: -1, Async: true}
	}
	if pr != nil && pr.hasPID && pr.process != "" && !x.procs[pr.pid] {
		x.procs[pr.pid] = true
		x.sink.ProcessName(pr.pid, pr.process)
	}
	if id, ok := x.tracks[key]; ok {
		return id, nil
	}
	if len(x.tracks) >= x.lim.MaxTracks {
		return 0, x.limit("tracks (threads and processes of each table)", int64(x.lim.MaxTracks), "tracks")
	}
	tr.ID = int64(len(x.tracks) + 1)
	if tr.Async {
		tr.Name = t.info.Schema
	}
	x.tracks[key] = tr.ID
	x.sink.Track(tr)
	return tr.ID, nil
}
