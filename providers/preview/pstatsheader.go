package preview

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/flameox/flameox/providers"
)

// The pstats header view is what pstats prints first: "N function calls (P primitive
// calls) in T seconds", and the number of functions: function_count, total_calls,
// primitive_calls, total_time_seconds, summed in file order as pstats.Stats does over
// the marshal dict cProfile's dump_stats writes, {(file, line, function): (primitive
// calls, calls, total time, cumulative time, callers)}. The walk keeps counts and the
// numbers marshal may refer back to, never strings or the callers.

// marshal type codes (CPython Python/marshal.c).
const (
	mNull      = '0'
	mFlagRef   = 0x80
	maxMDepth  = 2000
	maxMRefs   = 1 << 22
	maxMDigits = 1 << 16
)

// mval is a walked marshal object: a number, NULL (a dict's end), or anything else.
type mval struct {
	kind byte // 'n' number, '0' NULL, 'o' other
	num  float64
}

type marshalWalk struct {
	r     *bufio.Reader
	refs  []mval
	depth int
	buf   [8]byte
}

func (w *marshalWalk) byte() (byte, error) { return w.r.ReadByte() }

func (w *marshalWalk) int32() (int32, error) {
	if _, err := io.ReadFull(w.r, w.buf[:4]); err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(w.buf[:4])), nil
}

func (w *marshalWalk) skip(n int64) error {
	if n < 0 {
		return unrecognized("a marshal length is negative")
	}
	_, err := w.r.Discard(int(min(n, math.MaxInt32)))
	if err == nil && n > math.MaxInt32 {
		return unrecognized("a marshal string is longer than 2 GiB")
	}
	return err
}

// reserve adds a reference slot for an object written with FLAG_REF.
func (w *marshalWalk) reserve(flag bool) (int, error) {
	if !flag {
		return -1, nil
	}
	if len(w.refs) >= maxMRefs {
		return -1, &providers.LimitError{Message: fmt.Sprintf("the marshal data refers to more than %d objects", maxMRefs), Limit: maxMRefs, Unit: "objects"}
	}
	w.refs = append(w.refs, mval{kind: 'o'})
	return len(w.refs) - 1, nil
}

func (w *marshalWalk) set(slot int, v mval) mval {
	if slot >= 0 {
		w.refs[slot] = v
	}
	return v
}

// value walks one object.
func (w *marshalWalk) value() (mval, error) {
	b, err := w.byte()
	if err != nil {
		return mval{}, err
	}
	return w.valueOf(b)
}

func (w *marshalWalk) valueOf(b byte) (mval, error) {
	if w.depth++; w.depth > maxMDepth {
		return mval{}, unrecognized("the marshal data nests deeper than %d", maxMDepth)
	}
	defer func() { w.depth-- }()
	t, flag := b&^mFlagRef, b&mFlagRef != 0
	other := mval{kind: 'o'}
	switch t {
	case mNull:
		return mval{kind: mNull}, nil
	case 'N', 'F', 'T', 'S', '.':
		slot, err := w.reserve(flag)
		return w.set(slot, other), err
	case 'i':
		n, err := w.int32()
		if err != nil {
			return mval{}, err
		}
		slot, err := w.reserve(flag)
		return w.set(slot, mval{kind: 'n', num: float64(n)}), err
	case 'l':
		n, err := w.int32()
		if err != nil {
			return mval{}, err
		}
		digits := int64(n)
		if digits < 0 {
			digits = -digits
		}
		if digits > maxMDigits {
			return mval{}, unrecognized("a marshal long has %d digits", digits)
		}
		v, scale := 0.0, 1.0
		for range digits {
			if _, err := io.ReadFull(w.r, w.buf[:2]); err != nil {
				return mval{}, err
			}
			v += float64(binary.LittleEndian.Uint16(w.buf[:2])) * scale
			scale *= 1 << 15
		}
		if n < 0 {
			v = -v
		}
		slot, err := w.reserve(flag)
		return w.set(slot, mval{kind: 'n', num: v}), err
	case 'g':
		if _, err := io.ReadFull(w.r, w.buf[:8]); err != nil {
			return mval{}, err
		}
		slot, err := w.reserve(flag)
		return w.set(slot, mval{kind: 'n', num: math.Float64frombits(binary.LittleEndian.Uint64(w.buf[:8]))}), err
	case 'f':
		v, err := w.textFloat()
		if err != nil {
			return mval{}, err
		}
		slot, err := w.reserve(flag)
		return w.set(slot, mval{kind: 'n', num: v}), err
	case 'y':
		if err := w.skip(16); err != nil {
			return mval{}, err
		}
		slot, err := w.reserve(flag)
		return w.set(slot, other), err
	case 'x':
		for range 2 {
			if _, err := w.textFloat(); err != nil {
				return mval{}, err
			}
		}
		slot, err := w.reserve(flag)
		return w.set(slot, other), err
	case 's', 't', 'u', 'a', 'A':
		n, err := w.int32()
		if err != nil {
			return mval{}, err
		}
		if err := w.skip(int64(n)); err != nil {
			return mval{}, err
		}
		slot, err := w.reserve(flag)
		return w.set(slot, other), err
	case 'z', 'Z':
		n, err := w.byte()
		if err != nil {
			return mval{}, err
		}
		if err := w.skip(int64(n)); err != nil {
			return mval{}, err
		}
		slot, err := w.reserve(flag)
		return w.set(slot, other), err
	case '(', '[', '<', '>', ')':
		var n int64
		if t == ')' {
			c, err := w.byte()
			n = int64(c)
			if err != nil {
				return mval{}, err
			}
		} else {
			c, err := w.int32()
			n = int64(c)
			if err != nil {
				return mval{}, err
			}
		}
		if n < 0 {
			return mval{}, unrecognized("a marshal sequence has a negative length")
		}
		slot, err := w.reserve(flag)
		if err != nil {
			return mval{}, err
		}
		for range n {
			if _, err := w.value(); err != nil {
				return mval{}, err
			}
		}
		return w.set(slot, other), nil
	case '{':
		slot, err := w.reserve(flag)
		if err != nil {
			return mval{}, err
		}
		for {
			k, err := w.value()
			if err != nil {
				return mval{}, err
			}
			if k.kind == mNull {
				return w.set(slot, other), nil
			}
			if _, err := w.value(); err != nil {
				return mval{}, err
			}
		}
	case 'r':
		i, err := w.int32()
		if err != nil {
			return mval{}, err
		}
		if i < 0 || int(i) >= len(w.refs) {
			return mval{}, unrecognized("a marshal reference (%d) names no earlier object", i)
		}
		return w.refs[i], nil
	}
	if t == 'R' {
		return mval{}, unrecognized("marshal type 'R' (a Python 2 string reference): the file was written by Python 2's marshal")
	}
	return mval{}, unrecognized("marshal type %q is not one pstats data holds", rune(t))
}

func (w *marshalWalk) textFloat() (float64, error) {
	n, err := w.byte()
	if err != nil {
		return 0, err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(w.r, b); err != nil {
		return 0, err
	}
	v, perr := strconv.ParseFloat(string(b), 64)
	if perr != nil {
		return 0, unrecognized("a marshal float %q is not a number", b)
	}
	return v, nil
}

func pstatsHeader(h *header) error {
	r, c, err := h.stream()
	if err != nil {
		return err
	}
	defer c.Close()
	w := &marshalWalk{r: r}
	b, err := w.byte()
	if err != nil {
		return truncated("the marshal data", err)
	}
	if b&^mFlagRef != '{' {
		return unrecognized("the file does not start with a marshal dict, as pstats data does")
	}
	if _, err := w.reserve(b&mFlagRef != 0); err != nil {
		return err
	}
	var functions int64
	var prim, calls, tt float64
	for {
		if functions&0x3ff == 0 {
			if err := h.ctx.Err(); err != nil {
				return err
			}
		}
		k, err := w.value()
		if err != nil {
			return truncated("the marshal dict", err)
		}
		if k.kind == mNull {
			break
		}
		b, err := w.byte()
		if err != nil {
			return truncated("the marshal dict", err)
		}
		t := b &^ mFlagRef
		var n int64
		switch t {
		case '(':
			c, err := w.int32()
			if err != nil {
				return truncated("the marshal dict", err)
			}
			n = int64(c)
		case ')':
			c, err := w.byte()
			if err != nil {
				return truncated("the marshal dict", err)
			}
			n = int64(c)
		default:
			return unrecognized("function entry %d is not a tuple (primitive calls, calls, total time, cumulative time, callers)", functions)
		}
		if n != 5 {
			return unrecognized("function entry %d is a tuple of %d items, not pstats' 5", functions, n)
		}
		if _, err := w.reserve(b&mFlagRef != 0); err != nil {
			return err
		}
		var nums [4]float64
		for i := range 4 {
			v, err := w.value()
			if err != nil {
				return truncated("the marshal dict", err)
			}
			if v.kind != 'n' {
				return unrecognized("function entry %d has a non-numeric count or time", functions)
			}
			nums[i] = v.num
		}
		if _, err := w.value(); err != nil {
			return truncated("the marshal dict", err)
		}
		functions++
		prim += nums[0]
		calls += nums[1]
		tt += nums[2]
	}
	h.field("function_count", functions)
	h.field("total_calls", numberValue(calls))
	h.field("primitive_calls", numberValue(prim))
	h.field("total_time_seconds", tt)
	return nil
}

// numberValue is an integral count as an integer.
func numberValue(v float64) any {
	if v == math.Trunc(v) && math.Abs(v) <= 1<<53-1 {
		return int64(v)
	}
	return v
}
