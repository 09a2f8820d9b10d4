package preview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

const readBufferBytes = 256 << 10

// textReader yields one row per line: {line, text, input_sha256}. The trailing LF is
// removed; CR is kept. Invalid UTF-8 bytes are replaced.
type textReader struct {
	f      io.ReadCloser
	r      *bufio.Reader
	src    Source
	index  int
	line   int64
	buf    []byte
	digest string
}

func openText(src Source, index int) (*textReader, error) {
	f, err := openStream(src, index)
	if err != nil {
		return nil, err
	}
	return &textReader{f: f, r: bufio.NewReaderSize(f, readBufferBytes), src: src, index: index, digest: src.SHA256}, nil
}

func (t *textReader) Close() error { return t.f.Close() }

// skip counts line ends on buffered reads without building rows.
func (t *textReader) skip(n int64) (int64, error) {
	var done int64
	partial := false // a long line's earlier chunks were read
	for done < n {
		chunk, err := t.r.ReadSlice('\n')
		switch err {
		case nil:
			done, t.line, partial = done+1, t.line+1, false
		case bufio.ErrBufferFull:
			partial = true
		case io.EOF:
			if len(chunk) > 0 || partial {
				done, t.line = done+1, t.line+1
			}
			return done, io.EOF
		default:
			return done, err
		}
	}
	return done, nil
}

// readLine reads one line, LF included, of at most max bytes; it counts the line.
func (t *textReader) readLine(max int, hint string) ([]byte, error) {
	t.buf = t.buf[:0]
	for {
		chunk, err := t.r.ReadSlice('\n')
		if len(t.buf)+len(chunk) > max {
			return nil, limitError(t.index, t.line+1, int64(max), fmt.Sprintf("line %d of source %d is longer than %d bytes%s", t.line+1, t.index, max, hint))
		}
		t.buf = append(t.buf, chunk...)
		switch err {
		case nil:
			t.line++
			return t.buf, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(t.buf) == 0 {
				return nil, io.EOF
			}
			t.line++
			return t.buf, nil
		default:
			return nil, err
		}
	}
}

func (t *textReader) next() (json.RawMessage, error) {
	line, err := t.readLine(MaxTextLineBytes+1, "; preview it with text_fragment_chars")
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	o := newObject()
	o.int("line", t.line)
	o.str("text", string(line))
	o.str("input_sha256", t.digest)
	return o.done(), nil
}

// fragmentReader yields rows of at most chars decoded characters:
// {line, fragment, text, line_terminated, input_sha256}. A fragment ends at a LF, which it
// keeps, or after chars characters.
type fragmentReader struct {
	f        io.ReadCloser
	r        *bufio.Reader
	chars    int
	line     int64
	fragment int64
	digest   string
	text     []byte
}

func openFragments(src Source, index, chars int) (*fragmentReader, error) {
	f, err := openStream(src, index)
	if err != nil {
		return nil, err
	}
	return &fragmentReader{f: f, r: bufio.NewReaderSize(f, readBufferBytes), chars: chars, line: 1, digest: src.SHA256}, nil
}

func (t *fragmentReader) Close() error { return t.f.Close() }

// read decodes the next fragment into t.text; it reports whether it ended with LF.
func (t *fragmentReader) read() (terminated bool, err error) {
	t.text = t.text[:0]
	for n := 0; n < t.chars; n++ {
		r, size, err := t.r.ReadRune()
		if err == io.EOF {
			if n == 0 {
				return false, io.EOF
			}
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if r == utf8.RuneError && size == 1 {
			r = utf8.RuneError
		}
		t.text = utf8.AppendRune(t.text, r)
		if r == '\n' {
			return true, nil
		}
	}
	return false, nil
}

func (t *fragmentReader) advance(terminated bool) (line, fragment int64) {
	line, fragment = t.line, t.fragment
	if terminated {
		t.line++
		t.fragment = 0
	} else {
		t.fragment++
	}
	return line, fragment
}

func (t *fragmentReader) skip(n int64) (int64, error) {
	return skipRows(n, func() error {
		terminated, err := t.read()
		if err == nil {
			t.advance(terminated)
		}
		return err
	})
}

func (t *fragmentReader) next() (json.RawMessage, error) {
	terminated, err := t.read()
	if err != nil {
		return nil, err
	}
	line, fragment := t.advance(terminated)
	o := newObject()
	o.int("line", line)
	o.int("fragment", fragment)
	o.str("text", string(t.text))
	o.bool("line_terminated", terminated)
	o.str("input_sha256", t.digest)
	return o.done(), nil
}
