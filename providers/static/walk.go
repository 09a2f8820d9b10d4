package static

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/flameox/flameox/providers"
)

// walker walks a JSON document token by token, so that a SARIF log is never held as a
// whole tree: objects and arrays are entered, values the reader needs are read one at a
// time, the rest skipped.
type walker struct {
	ctx   context.Context
	dec   *jsontext.Decoder
	index int
}

// fail turns a decoder error into a typed error: bounds and cancellation pass
// unchanged, malformed JSON is a DecodeError naming the byte offset, never library text.
func (w *walker) fail(err error) error {
	var le *providers.LimitError
	if errors.As(err, &le) {
		return le
	}
	if cerr := w.ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := fmt.Sprintf("the SARIF log is malformed JSON near byte %d", w.dec.InputOffset())
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "the SARIF log ends before its root object is complete"
	}
	return &providers.DecodeError{Source: w.index, Message: msg, Err: err}
}

func (w *walker) malformed(what string) error {
	return &providers.DecodeError{Source: w.index,
		Message: fmt.Sprintf("the SARIF log is malformed: %s (near byte %d)", what, w.dec.InputOffset())}
}

// null consumes a null and reports true when the next value is one.
func (w *walker) null() (bool, error) {
	if w.dec.PeekKind() != 'n' {
		return false, nil
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return false, w.fail(err)
	}
	return true, nil
}

// object enters the object that comes next and calls member for each name; member
// consumes the value. A null is an empty object; anything else is malformed (what).
func (w *walker) object(what string, member func(name string) error) error {
	if ok, err := w.null(); ok || err != nil {
		return err
	}
	if k := w.dec.PeekKind(); k != '{' {
		if k == 0 {
			_, err := w.dec.ReadToken()
			return w.fail(err)
		}
		return w.malformed(what + " is not an object")
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.fail(err)
	}
	for w.dec.PeekKind() != '}' {
		tok, err := w.dec.ReadToken()
		if err != nil {
			return w.fail(err)
		}
		if err := member(tok.String()); err != nil {
			return err
		}
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.fail(err)
	}
	return nil
}

// array enters the array that comes next and calls elem for each element; elem
// consumes it. A null is an empty array.
func (w *walker) array(what string, elem func(i int) error) error {
	if ok, err := w.null(); ok || err != nil {
		return err
	}
	if k := w.dec.PeekKind(); k != '[' {
		if k == 0 {
			_, err := w.dec.ReadToken()
			return w.fail(err)
		}
		return w.malformed(what + " is not an array")
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.fail(err)
	}
	for i := 0; w.dec.PeekKind() != ']'; i++ {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if err := elem(i); err != nil {
			return err
		}
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *walker) skip() error {
	if err := w.dec.SkipValue(); err != nil {
		return w.fail(err)
	}
	return nil
}

// value reads the next value whole; it is valid until the next read.
func (w *walker) value() (jsontext.Value, error) {
	v, err := w.dec.ReadValue()
	if err != nil {
		return nil, w.fail(err)
	}
	return v, nil
}

// end checks that nothing but white space follows the root value.
func (w *walker) end() error {
	if _, err := w.dec.ReadToken(); err != io.EOF {
		if err == nil {
			return w.malformed("data follows the root object")
		}
		return w.fail(err)
	}
	return nil
}
