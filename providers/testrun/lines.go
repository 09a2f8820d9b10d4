package testrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
)

// maxLine bounds one line of a pytest or observations stream (the plugin never writes
// more).
const maxLine = 64 << 10

// lineReader reads a JSON Lines stream one bounded line at a time. Blank lines are
// skipped but counted, so a line keeps its physical index.
type lineReader struct {
	r      *bufio.Reader
	buf    []byte
	lines  int
	source int
	what   string
	// terminated reports whether the last line returned ended with a newline.
	terminated bool
}

func newLineReader(r io.Reader, source int, what string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), source: source, what: what}
}

func (l *lineReader) tooLong(index int) error {
	return &providers.LimitError{Source: l.source, Unit: "bytes", Limit: maxLine,
		Message: fmt.Sprintf("line %d is longer than %d bytes, the bound of one %s line", index, maxLine, l.what),
		Details: map[string]any{"line": index}}
}

// next returns the next non-blank line without its line ending and its zero-based line
// index; io.EOF at the end. The line is valid until the next call.
func (l *lineReader) next() ([]byte, int, error) {
	for {
		l.buf = l.buf[:0]
		line, err := l.r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			l.buf = append(l.buf, line...)
			if len(l.buf) > maxLine+2 {
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
		if len(trimmed) > maxLine {
			return nil, 0, l.tooLong(index)
		}
		if len(bytes.TrimSpace(trimmed)) == 0 {
			continue
		}
		return trimmed, index, nil
	}
}

// lineError is the DecodeError of a line that is not what the format requires.
func (l *lineReader) lineError(index int, format string, args ...any) error {
	return &providers.DecodeError{Source: l.source, Details: map[string]any{"line": index},
		Message: fmt.Sprintf("line %d: ", index) + fmt.Sprintf(format, args...)}
}
