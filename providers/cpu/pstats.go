package cpu

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
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

// DecodePstats reads a pstats file written by CPython 3's cProfile or profile module
// (marshal of the Stats dict).
func DecodePstats(r io.Reader) ([]PstatsFunction, error) {
	u := &unmarshaler{r: bufio.NewReaderSize(r, 1<<16)}
	v, err := u.value(0)
	if err != nil {
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
	if _, err := u.r.ReadByte(); err != io.EOF {
		return nil, &providers.DecodeError{Message: "the pstats file has data after its marshal value"}
	}
	d, ok := v.(dict)
	if !ok {
		return nil, &providers.DecodeError{Message: "the pstats file does not hold a dict of function statistics"}
	}
	if len(d) > maxPstatsFunctions {
		return nil, &providers.LimitError{Message: fmt.Sprintf("the pstats file holds more than %d functions", maxPstatsFunctions), Limit: maxPstatsFunctions}
	}
	out := make([]PstatsFunction, 0, len(d))
	for i, p := range d {
		fn, err := funcKey(p.key)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		t, ok := p.value.(tuple)
		if !ok || len(t) != 5 {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("entry %d is not a (cc, nc, tt, ct, callers) tuple", i)}
		}
		cc, ok1 := asInt(t[0])
		nc, ok2 := asInt(t[1])
		tt, ok3 := asFloat(t[2])
		ct, ok4 := asFloat(t[3])
		callers, ok5 := t[4].(dict)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) {
			return nil, &providers.DecodeError{Message: fmt.Sprintf("entry %d has malformed statistics", i)}
		}
		f := PstatsFunction{Func: fn, PrimitiveCalls: cc, TotalCalls: nc, SelfSeconds: tt, CumSeconds: ct}
		for j, c := range callers {
			cf, err := funcKey(c.key)
			if err != nil {
				return nil, fmt.Errorf("entry %d caller %d: %w", i, j, err)
			}
			e := PstatsEdge{Caller: cf}
			switch x := c.value.(type) {
			case int64:
				e.TotalCalls = x
			case tuple:
				if len(x) != 4 {
					return nil, &providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d is not an (nc, cc, tt, ct) tuple", i, j)}
				}
				nc, ok1 := asInt(x[0])
				cc, ok2 := asInt(x[1])
				tt, ok3 := asFloat(x[2])
				ct, ok4 := asFloat(x[3])
				if !(ok1 && ok2 && ok3 && ok4) {
					return nil, &providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d has malformed statistics", i, j)}
				}
				e.TotalCalls, e.PrimitiveCalls, e.SelfSeconds, e.CumSeconds = nc, &cc, &tt, &ct
			default:
				return nil, &providers.DecodeError{Message: fmt.Sprintf("entry %d caller %d is neither a tuple nor a call count", i, j)}
			}
			f.Callers = append(f.Callers, e)
		}
		out = append(out, f)
	}
	return out, nil
}

func funcKey(k any) (Func, error) {
	t, ok := k.(tuple)
	if !ok || len(t) != 3 {
		return Func{}, &providers.DecodeError{Message: "a function key is not a (file, line, function) tuple"}
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
		return Func{}, &providers.DecodeError{Message: "a function key is not a (file, line, function) tuple"}
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
