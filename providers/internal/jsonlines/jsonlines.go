// Package jsonlines reads the records of a JSON Lines stream one bounded line at a time,
// without a Scanner's token cap: AIPerf and Mooncake records, pytest events and
// observations, Triton listener records.
package jsonlines

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
)

// Reader reads one source's lines. Blank lines are skipped but counted, so a record keeps
// its physical line index (from 0).
type Reader struct {
	r      *bufio.Reader
	max    int
	buf    []byte
	lines  int
	source int
	what   string
	// terminated reports whether the last line returned ended with a newline.
	terminated bool
}

// New reads r, the source with index source, whose lines are at most max bytes; what
// names one line in messages ("AIPerf record", "pytest event line").
func New(r io.Reader, source, max int, what string) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max, source: source, what: what}
}

// Terminated reports whether the last line Next returned ended with a newline: a last
// record without one may be a truncated file.
func (l *Reader) Terminated() bool { return l.terminated }

func (l *Reader) tooLong(index int) error {
	return &providers.LimitError{Source: l.source, Unit: "bytes", Limit: int64(l.max),
		Message: fmt.Sprintf("line %d is longer than %d bytes, the bound of one %s", index, l.max, l.what),
		Details: map[string]any{"line": index}}
}

// Next returns the next non-blank line without its line ending and its line index; io.EOF
// at the end. The line is valid until the next call. A line longer than the bound is a
// *providers.LimitError; a read that fails (a damaged compressed stream) a
// *providers.DecodeError, unless it is already typed (a limit of the input, the
// context's end).
func (l *Reader) Next() ([]byte, int, error) {
	for {
		l.buf = l.buf[:0]
		line, err := l.r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			l.buf = append(l.buf, line...)
			if len(l.buf) > l.max+2 {
				return nil, 0, l.tooLong(l.lines)
			}
			line, err = l.r.ReadSlice('\n')
		}
		if len(l.buf) > 0 {
			l.buf = append(l.buf, line...)
			line = l.buf
		}
		if err != nil && !errors.Is(err, io.EOF) {
			var lim *providers.LimitError
			if errors.As(err, &lim) {
				return nil, 0, lim
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, 0, err
			}
			return nil, 0, &providers.DecodeError{Source: l.source, Err: err,
				Message: fmt.Sprintf("the input could not be read after line %d (bad compression or I/O error)", l.lines)}
		}
		if len(line) == 0 {
			return nil, 0, io.EOF
		}
		index := l.lines
		l.lines++
		l.terminated = line[len(line)-1] == '\n'
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) > l.max {
			return nil, 0, l.tooLong(index)
		}
		if len(bytes.TrimSpace(trimmed)) == 0 {
			continue
		}
		return trimmed, index, nil
	}
}
