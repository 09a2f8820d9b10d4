package xctrace

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// Limits bound one read. A zero field takes its default.
type Limits struct {
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

// DefaultLimits are the values a zero Limits field takes.
var DefaultLimits = Limits{MaxDepth: 64, MaxValues: 1 << 23, MaxValueBytes: 256 << 20,
	MaxColumns: 1024, MaxTables: 4096, MaxTracks: 1 << 16}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
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

// Info is what a read found besides the slices.
type Info struct {
	Tables []Table
	// Runs counts the distinct runs the tables belong to.
	Runs int
}

// reader is one read's state.
type reader struct {
	ctx   context.Context
	d     *xml.Decoder
	index int
	lim   Limits
	sink  tracemodel.Sink
	stats *tracemodel.Stats
	info  *Info

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

// Decode reads an xctrace export from r, delivering its interval rows to sink as
// slices in file order (the Nester orders them), and returns what it counted. A
// malformed document is a DecodeError; a document past a bound a LimitError.
func Decode(ctx context.Context, r io.Reader, index int, lim Limits, sink tracemodel.Sink) (*tracemodel.Stats, *Info, error) {
	x := &reader{ctx: ctx, index: index, lim: lim.withDefaults(), sink: sink, stats: &tracemodel.Stats{}, info: &Info{},
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

func (x *reader) decodeErr(msg string, err error) error {
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

func (x *reader) limit(what string, n int64, unit string) error {
	return &providers.LimitError{Source: x.index, Limit: n, Unit: unit,
		Message: fmt.Sprintf("source %d: the xctrace export has more than %d %s", x.index, n, what)}
}

// token is the next token, checking the depth bound and the context.
func (x *reader) token() (xml.Token, error) {
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
func (x *reader) skip() error {
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
func (x *reader) document() error {
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
func (x *reader) children(read func(xml.StartElement) error) error {
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
func (x *reader) result() error {
	return x.children(func(e xml.StartElement) error {
		if e.Name.Local != "node" {
			return x.skip()
		}
		return x.node(e)
	})
}
