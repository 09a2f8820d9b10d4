package cpu

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// Func identifies a profiled function as pstats does: (file, line, function).
type Func struct {
	File     string
	Line     int64
	Function string
}

// String is "<file>:<line>:<function>", the form the function filter matches.
func (f Func) String() string { return fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Function) }

// PstatsFunction is one entry of a pstats dict.
type PstatsFunction struct {
	Func
	PrimitiveCalls int64
	TotalCalls     int64
	SelfSeconds    float64
	CumSeconds     float64
	Callers        []PstatsEdge
}

// PstatsEdge is one caller entry: cProfile writes (nc, cc, tt, ct), profile.py a bare
// call count (then PrimitiveCalls, SelfSeconds and CumSeconds are nil).
type PstatsEdge struct {
	Caller         Func
	TotalCalls     int64
	PrimitiveCalls *int64
	SelfSeconds    *float64
	CumSeconds     *float64
}

// python2 are the details of a pstats file written by Python 2.
var python2 = map[string]any{"python_major_version": 2}

// maxPstatsFunctions bounds the functions of one pstats file.
const maxPstatsFunctions = 2_000_000

// The caller edges of one pstats file are bounded twice. A marshal reference lets a
// file name one callers dict from every function, so that a few hundred kilobytes
// expand to billions of edges: beyond minExpandedEdges, a file may not hold more edges
// than it has bytes (an edge written out costs at least ten), and it never holds more
// than maxPstatsEdges.
const (
	minExpandedEdges = 1 << 20
	maxPstatsEdges   = 16 << 20
)

// pstatsTable is a decoded pstats file: one compact record per function in file order,
// their caller edges when they were asked for, and the strings both name by index.
type pstatsTable struct {
	strs  []string
	funcs []pstatsRecord
	// callers holds the edges of funcs[i] from firsts[i] to firsts[i+1] (or the end);
	// both are empty unless the edges were asked for.
	callers []pstatsCaller
	firsts  []int
	// edges counts the caller edges of the file, kept or not.
	edges int
}

type pstatsRecord struct {
	fkey
	cc, nc int64
	tt, ct float64
}

// pstatsCaller is one caller edge; bare marks profile.py's bare call count (nc only).
type pstatsCaller struct {
	fkey
	nc, cc int64
	tt, ct float64
	bare   bool
}

// callersOf returns the caller edges of function i.
func (t *pstatsTable) callersOf(i int) []pstatsCaller {
	end := len(t.callers)
	if i+1 < len(t.firsts) {
		end = t.firsts[i+1]
	}
	return t.callers[t.firsts[i]:end]
}

// fn is the Func of key k.
func (t *pstatsTable) fn(k fkey) Func {
	return Func{File: t.strs[k.file], Line: k.line, Function: t.strs[k.name]}
}

// DecodePstats reads a pstats file written by CPython 3's cProfile or profile module
// (marshal of the Stats dict).
func DecodePstats(r io.Reader) ([]PstatsFunction, error) {
	t, err := decodePstatsTable(r, true)
	if err != nil {
		return nil, err
	}
	return t.functions(), nil
}

// functions lists the table's functions with their caller edges.
func (t *pstatsTable) functions() []PstatsFunction {
	out := make([]PstatsFunction, len(t.funcs))
	for i, rec := range t.funcs {
		f := PstatsFunction{Func: t.fn(rec.fkey), PrimitiveCalls: rec.cc, TotalCalls: rec.nc, SelfSeconds: rec.tt, CumSeconds: rec.ct}
		for _, c := range t.callersOf(i) {
			e := PstatsEdge{Caller: t.fn(c.fkey), TotalCalls: c.nc}
			if !c.bare {
				cc, tt, ct := c.cc, c.tt, c.ct
				e.PrimitiveCalls, e.SelfSeconds, e.CumSeconds = &cc, &tt, &ct
			}
			f.Callers = append(f.Callers, e)
		}
		out[i] = f
	}
	return out
}

// decodePstatsTable reads a pstats file into a table, keeping the caller edges when
// callers is set. The shapes cProfile and profile.py write (a dict of 3-tuple keys to
// 5-tuples with a dict of callers) are read straight into records; any other object in
// their place is decoded as a Go value and judged as such. Errors come in the order of
// a whole-value decode: invalid marshal data first, then data after the value, then the
// function bound, then the first malformed entry.
func decodePstatsTable(r io.Reader, callers bool) (*pstatsTable, error) {
	d := &pstatsDecoder{u: newUnmarshaler(r), keep: callers}
	err := d.read()
	if err != nil {
		// A bound of the decoder or of the bounded reader is reported as itself.
		var lim *providers.LimitError
		if errors.As(err, &lim) {
			return nil, lim
		}
		var p2 *py2Error
		if errors.As(err, &p2) {
			return nil, &providers.DecodeError{Message: "the pstats file was written by Python 2 (" + p2.reason + "); re-profile with Python 3", Details: python2}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &providers.DecodeError{Message: "the pstats file ends in the middle of a marshal value (truncated)"}
		}
		// The unmarshaler's own messages name a type code or a byte offset, never a path.
		return nil, &providers.DecodeError{Message: "the pstats file is not valid marshal data: " + err.Error()}
	}
	if !d.u.AtEnd() {
		return nil, &providers.DecodeError{Message: "the pstats file has data after its marshal value"}
	}
	if !d.isDict {
		return nil, &providers.DecodeError{Message: "the pstats file does not hold a dict of function statistics"}
	}
	if d.count > maxPstatsFunctions {
		return nil, &providers.LimitError{Message: fmt.Sprintf("the pstats file holds more than %d functions", maxPstatsFunctions), Limit: maxPstatsFunctions}
	}
	if d.bad != nil {
		return nil, d.bad
	}
	return d.table(), nil
}

func (d *pstatsDecoder) table() *pstatsTable {
	return &pstatsTable{strs: d.u.strs, funcs: d.funcs, callers: d.callers, firsts: d.firsts, edges: d.edges}
}

// pstatsDecoder reads the Stats dict entry by entry. read returns invalid marshal data
// only; a malformed entry is kept in bad (the first one) while reading goes on, since
// invalid data later in the file takes precedence.
type pstatsDecoder struct {
	u       *unmarshaler
	keep    bool
	isDict  bool
	count   int
	funcs   []pstatsRecord
	callers []pstatsCaller
	firsts  []int
	edges   int
	bad     error
}

func (d *pstatsDecoder) fail(err error) {
	if d.bad == nil {
		d.bad = err
	}
}

func isSeq(code byte) bool { return code == ')' || code == '(' || code == '[' }

func (d *pstatsDecoder) read() error {
	u := d.u
	code, err := u.Peek()
	if err != nil {
		return err
	}
	if code&^flagRef != '{' {
		_, err := u.value(0)
		return err
	}
	d.isDict = true
	u.Skip(1)
	if code&flagRef != 0 {
		u.refs = append(u.refs, u.boxed(dict(nil)))
	}
	for i := 0; ; i++ {
		end, err := u.dictEnd()
		if err != nil || end {
			return err
		}
		d.count++
		if err := d.entry(i); err != nil {
			return err
		}
	}
}

// entry reads function i: its key and its (cc, nc, tt, ct, callers) tuple.
func (d *pstatsDecoder) entry(i int) error {
	u := d.u
	key, bad, err := d.key(1)
	if err != nil {
		return err
	}
	if bad != nil {
		d.fail(fmt.Errorf("entry %d: %w", i, bad))
	}
	rec := pstatsRecord{fkey: key}
	first := len(d.callers)
	code, err := u.Peek()
	if err != nil {
		return err
	}
	if !isSeq(code) {
		m, err := u.scalar(1)
		if err != nil {
			return err
		}
		return d.entryFrom(i, rec, first, u.unboxed(m))
	}
	n, err := d.seqLen()
	if err != nil {
		return err
	}
	if n != 5 {
		d.fail(&providers.DecodeError{Message: fmt.Sprintf("entry %d is not a (cc, nc, tt, ct, callers) tuple", i)})
		return d.skip(n, 2)
	}
	s, err := d.scalars(2)
	if err != nil {
		return err
	}
	cc, ok1 := intOf(s[0])
	nc, ok2 := intOf(s[1])
	tt, ok3 := floatOf(s[2])
	ct, ok4 := floatOf(s[3])
	rec.cc, rec.nc, rec.tt, rec.ct = cc, nc, tt, ct
	if code, err = u.Peek(); err != nil {
		return err
	}
	malformed := func() error {
		return &providers.DecodeError{Message: fmt.Sprintf("entry %d has malformed statistics", i)}
	}
	if code != '{' {
		m, err := u.scalar(2)
		if err != nil {
			return err
		}
		callers, ok5 := u.unboxed(m).(dict)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) {
			d.fail(malformed())
			return nil
		}
		return d.callersFrom(i, rec, first, callers)
	}
	if !(ok1 && ok2 && ok3 && ok4) {
		d.fail(malformed())
	}
	u.Skip(1)
	for j := 0; ; j++ {
		end, err := u.dictEnd()
		if err != nil {
			return err
		}
		if end {
			break
		}
		if err := d.caller(i, j); err != nil {
			return err
		}
	}
	d.add(rec, first)
	return nil
}

// add keeps rec, whose caller edges start at first, while the file is well formed and
// within the bound.
func (d *pstatsDecoder) add(rec pstatsRecord, first int) {
	if d.bad == nil && d.count <= maxPstatsFunctions {
		d.funcs = sampled.Push(d.funcs, rec)
		if d.keep {
			d.firsts = sampled.Push(d.firsts, first)
		}
	}
}

// caller reads caller j of entry i: a key and (nc, cc, tt, ct) or a bare count.
func (d *pstatsDecoder) caller(i, j int) error {
	u := d.u
	key, bad, err := d.key(3)
	if err != nil {
		return err
	}
	if bad != nil {
		d.fail(fmt.Errorf("entry %d caller %d: %w", i, j, bad))
	}
	code, err := u.Peek()
	if err != nil {
		return err
	}
	if !isSeq(code) {
		m, err := u.scalar(3)
		if err != nil {
			return err
		}
		if m.kind == kInt {
			return d.addCaller(pstatsCaller{fkey: key, nc: int64(m.bits), bare: true})
		}
		c, bad := d.callerValue(i, j, u.unboxed(m))
		if bad != nil {
			d.fail(bad)
		}
		c.fkey = key
		return d.addCaller(c)
	}
	n, err := d.seqLen()
	if err != nil {
		return err
	}
	if n != 4 {
		d.fail(&providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d is not an (nc, cc, tt, ct) tuple", i, j)})
		return d.skip(n, 4)
	}
	s, err := d.scalars(4)
	if err != nil {
		return err
	}
	nc, ok1 := intOf(s[0])
	cc, ok2 := intOf(s[1])
	tt, ok3 := floatOf(s[2])
	ct, ok4 := floatOf(s[3])
	if !(ok1 && ok2 && ok3 && ok4) {
		d.fail(&providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d has malformed statistics", i, j)})
	}
	return d.addCaller(pstatsCaller{fkey: key, nc: nc, cc: cc, tt: tt, ct: ct})
}

func (d *pstatsDecoder) addCaller(c pstatsCaller) error {
	d.edges++
	if d.edges > minExpandedEdges {
		if err := d.edgeBound(); err != nil {
			return err
		}
	}
	if d.keep && d.bad == nil && d.count <= maxPstatsFunctions {
		d.callers = sampled.Push(d.callers, c)
	}
	return nil
}

// edgeBound fails once the caller edges read expand beyond the bytes read or beyond
// maxPstatsEdges, before they are kept.
func (d *pstatsDecoder) edgeBound() error {
	read := d.u.Pos()
	if d.edges > maxPstatsEdges {
		return &providers.LimitError{Message: fmt.Sprintf("the pstats file holds more than %d caller edges", maxPstatsEdges),
			Limit: maxPstatsEdges, Unit: "caller_edges"}
	}
	if int64(d.edges) > read {
		return &providers.LimitError{Message: fmt.Sprintf("the pstats file expands to more than %d caller edges from %d bytes: its marshal references repeat callers dicts; beyond %d edges a file may hold at most one edge per byte", d.edges-1, read, minExpandedEdges),
			Limit: read, Unit: "caller_edges", Details: map[string]any{"caller_edges": d.edges, "bytes_read": read}}
	}
	return nil
}

// scalars reads the four counts and times of a statistics tuple at depth.
func (d *pstatsDecoder) scalars(depth int) (s [4]mval, err error) {
	for j := range s {
		if s[j], err = d.u.scalar(depth); err != nil {
			return s, err
		}
	}
	return s, nil
}

// seqLen consumes the code and length of a tuple or list without the reference flag.
func (d *pstatsDecoder) seqLen() (int, error) {
	code, err := d.u.Byte()
	if err != nil {
		return 0, err
	}
	if code == ')' {
		n, err := d.u.Byte()
		return int(n), err
	}
	return d.u.count()
}

// skip reads n objects at depth.
func (d *pstatsDecoder) skip(n, depth int) error {
	for k := 0; k < n; k++ {
		if _, err := d.u.value(depth); err != nil {
			return err
		}
	}
	return nil
}

// key reads a function key at depth: a (file, line, function) tuple, straight into an
// fkey when it has that shape, or any object judged as pstats.funcKey judges it. bad
// is a malformed key, err invalid marshal data.
func (d *pstatsDecoder) key(depth int) (k fkey, bad, err error) {
	u := d.u
	code, err := u.Peek()
	if err != nil {
		return k, nil, err
	}
	if !isSeq(code &^ flagRef) {
		m, err := u.scalar(depth)
		if err != nil {
			return k, nil, err
		}
		if m.kind == kKey {
			return u.keys[m.bits], nil, nil
		}
		k, bad = d.keyFrom(u.unboxed(m))
		return k, bad, nil
	}
	slot := -1
	if code&flagRef != 0 {
		u.Skip(1)
		slot = u.reserve()
		code &^= flagRef
		var n int
		if code == ')' {
			b, err := u.Byte()
			if err != nil {
				return k, nil, err
			}
			n = int(b)
		} else if n, err = u.count(); err != nil {
			return k, nil, err
		}
		return d.keyElems(n, depth, slot)
	}
	n, err := d.seqLen()
	if err != nil {
		return k, nil, err
	}
	return d.keyElems(n, depth, slot)
}

// keyElems reads the n elements of a key tuple; slot is its reference slot or -1.
func (d *pstatsDecoder) keyElems(n, depth, slot int) (k fkey, bad, err error) {
	u := d.u
	if n != 3 {
		return k, errNotKey(), d.skip(n, depth+1)
	}
	var e [3]mval
	for j := range e {
		if e[j], err = u.scalar(depth + 1); err != nil {
			return k, nil, err
		}
	}
	line, ok2 := intOf(e[1])
	ok1, ok3 := e[0].kind == kStr, e[2].kind == kStr
	if e[2].kind == kAny {
		if c, ok := u.anys[e[2].bits].(codeObject); ok {
			e[2], ok3 = u.internString(c.String()), true
		}
	}
	if !(ok1 && ok2 && ok3) {
		if e[0].kind == kAny {
			if _, bytesKey := u.anys[e[0].bits].([]byte); bytesKey {
				return k, &providers.DecodeError{Message: "function names are byte strings, as Python 2 wrote them; re-profile with Python 3", Details: python2}, nil
			}
		}
		return k, errNotKey(), nil
	}
	k = fkey{file: uint32(e[0].bits), line: line, name: uint32(e[2].bits)}
	if slot >= 0 {
		u.keys = sampled.Push(u.keys, k)
		u.refs[slot] = mval{kKey, uint64(len(u.keys) - 1)}
	}
	return k, nil, nil
}

// keyFrom judges a decoded object as a function key.
func (d *pstatsDecoder) keyFrom(v any) (fkey, error) {
	f, err := funcKey(v)
	if err != nil {
		return fkey{}, err
	}
	return fkey{file: uint32(d.u.internString(f.File).bits), line: f.Line, name: uint32(d.u.internString(f.Function).bits)}, nil
}

// entryFrom judges a decoded object as the statistics of entry i.
func (d *pstatsDecoder) entryFrom(i int, rec pstatsRecord, first int, v any) error {
	t, ok := v.(tuple)
	if !ok || len(t) != 5 {
		d.fail(&providers.DecodeError{Message: fmt.Sprintf("entry %d is not a (cc, nc, tt, ct, callers) tuple", i)})
		return nil
	}
	cc, ok1 := asInt(t[0])
	nc, ok2 := asInt(t[1])
	tt, ok3 := asFloat(t[2])
	ct, ok4 := asFloat(t[3])
	callers, ok5 := t[4].(dict)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		d.fail(&providers.DecodeError{Message: fmt.Sprintf("entry %d has malformed statistics", i)})
		return nil
	}
	rec.cc, rec.nc, rec.tt, rec.ct = cc, nc, tt, ct
	return d.callersFrom(i, rec, first, callers)
}

// callersFrom judges a decoded callers dict of entry i and adds the entry.
func (d *pstatsDecoder) callersFrom(i int, rec pstatsRecord, first int, callers dict) error {
	for j, p := range callers {
		key, err := d.keyFrom(p.key)
		if err != nil {
			d.fail(fmt.Errorf("entry %d caller %d: %w", i, j, err))
		}
		c, bad := d.callerValue(i, j, p.value)
		if bad != nil {
			d.fail(bad)
		}
		c.fkey = key
		if err := d.addCaller(c); err != nil {
			return err
		}
	}
	d.add(rec, first)
	return nil
}

// callerValue judges a decoded object as the value of caller j of entry i.
func (d *pstatsDecoder) callerValue(i, j int, v any) (pstatsCaller, error) {
	switch x := v.(type) {
	case int64:
		return pstatsCaller{nc: x, bare: true}, nil
	case tuple:
		if len(x) != 4 {
			return pstatsCaller{}, &providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d is not an (nc, cc, tt, ct) tuple", i, j)}
		}
		nc, ok1 := asInt(x[0])
		cc, ok2 := asInt(x[1])
		tt, ok3 := asFloat(x[2])
		ct, ok4 := asFloat(x[3])
		if !(ok1 && ok2 && ok3 && ok4) {
			return pstatsCaller{}, &providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d has malformed statistics", i, j)}
		}
		return pstatsCaller{nc: nc, cc: cc, tt: tt, ct: ct}, nil
	}
	return pstatsCaller{}, &providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d is neither a tuple nor a call count", i, j)}
}

func errNotKey() error {
	return &providers.DecodeError{Message: "a function key is not a (file, line, function) tuple"}
}

func funcKey(k any) (Func, error) {
	t, ok := k.(tuple)
	if !ok || len(t) != 3 {
		return Func{}, errNotKey()
	}
	file, ok1 := t[0].(string)
	line, ok2 := asInt(t[1])
	name, ok3 := t[2].(string)
	if c, ok := t[2].(codeObject); ok {
		name, ok3 = c.String(), true
	}
	if !(ok1 && ok2 && ok3) {
		if _, bytesKey := t[0].([]byte); bytesKey {
			return Func{}, &providers.DecodeError{Message: "function names are byte strings, as Python 2 wrote them; re-profile with Python 3", Details: python2}
		}
		return Func{}, errNotKey()
	}
	return Func{File: file, Line: line, Function: name}, nil
}

func asInt(v any) (int64, bool) {
	i, ok := v.(int64)
	return i, ok
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// rank orders the functions by metric (descending), then file, line and function, as
// indices into funcs. Equal keys keep file order, as a stable sort would.
func (t *pstatsTable) rank(metric string) []int32 {
	keys := make([]float64, len(t.funcs))
	for i := range t.funcs {
		x := &t.funcs[i]
		switch metric {
		case "cumulative_time_seconds":
			keys[i] = x.ct
		case "total_calls":
			keys[i] = float64(x.nc)
		case "primitive_calls":
			keys[i] = float64(x.cc)
		default:
			keys[i] = x.tt
		}
	}
	order := make([]int32, len(t.funcs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := sampled.Descending(keys[a], keys[b]); c != 0 {
			return c
		}
		if c := t.compareKeys(t.funcs[a].fkey, t.funcs[b].fkey); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// compareKeys orders function keys by file, line, then function.
func (t *pstatsTable) compareKeys(a, b fkey) int {
	if c := t.compareStrs(a.file, b.file); c != 0 {
		return c
	}
	if c := cmp.Compare(a.line, b.line); c != 0 {
		return c
	}
	return t.compareStrs(a.name, b.name)
}

func (t *pstatsTable) compareStrs(a, b uint32) int {
	if a == b {
		return 0
	}
	return strings.Compare(t.strs[a], t.strs[b])
}

// pstatsEdge is a caller edge: callers[caller] into funcs[callee].
type pstatsEdge struct{ callee, caller int32 }

// callerEdges lists the caller edges that pass the filter, by cumulative time (absent
// last), then caller and callee positions; equal edges keep file order.
func (t *pstatsTable) callerEdges(function, direction string) []pstatsEdge {
	needle := strings.ToLower(function)
	matches := map[fkey]bool{}
	match := func(k fkey) bool {
		if needle == "" {
			return true
		}
		m, ok := matches[k]
		if !ok {
			m = strings.Contains(strings.ToLower(t.fn(k).String()), needle)
			matches[k] = m
		}
		return m
	}
	var out []pstatsEdge
	for i := range t.funcs {
		callee := match(t.funcs[i].fkey)
		for j, c := range t.callersOf(i) {
			if sampled.KeepEdge(match(c.fkey), callee, direction) {
				out = append(out, pstatsEdge{callee: int32(i), caller: int32(t.firsts[i] + j)})
			}
		}
	}
	cum := func(e pstatsEdge) float64 {
		if c := &t.callers[e.caller]; !c.bare {
			return c.ct
		}
		return -1
	}
	slices.SortFunc(out, func(a, b pstatsEdge) int {
		if c := sampled.Descending(cum(a), cum(b)); c != 0 {
			return c
		}
		ra, rb := t.callers[a.caller].fkey, t.callers[b.caller].fkey
		ea, eb := t.funcs[a.callee].fkey, t.funcs[b.callee].fkey
		if c := t.compareStrs(ra.file, rb.file); c != 0 {
			return c
		}
		if c := cmp.Compare(ra.line, rb.line); c != 0 {
			return c
		}
		if c := t.compareStrs(ea.file, eb.file); c != 0 {
			return c
		}
		if c := cmp.Compare(ea.line, eb.line); c != 0 {
			return c
		}
		if c := t.compareStrs(ra.name, rb.name); c != 0 {
			return c
		}
		if c := t.compareStrs(ea.name, eb.name); c != 0 {
			return c
		}
		return cmp.Compare(a.caller, b.caller)
	})
	return out
}
