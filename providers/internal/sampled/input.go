package sampled

import (
	"io"
	"slices"
)

// Input reads a stream through a buffer and counts the bytes consumed. The buffer starts
// small and grows to 64 KiB once a buffer's worth has been read, so that a small input
// costs little and a large one few reads. The pprof reader reads through it, and so does
// the CPU family's marshal reader (pstats).
type Input struct {
	r    io.Reader
	buf  []byte
	i, n int   // buf[i:n] is read and not consumed
	base int64 // bytes consumed before buf[0]
	err  error // the read error that ended the input
}

// NewInput reads r through a buffer.
func NewInput(r io.Reader) Input { return Input{r: r, buf: make([]byte, 4<<10)} }

// Pos is the number of bytes consumed.
func (in *Input) Pos() int64 { return in.base + int64(in.i) }

// fill makes k bytes (k <= len(buf)) available; false at the end of the input.
func (in *Input) fill(k int) bool {
	for in.n-in.i < k {
		if in.err != nil {
			return false
		}
		if in.i > 0 {
			copy(in.buf, in.buf[in.i:in.n])
			in.base += int64(in.i)
			in.n -= in.i
			in.i = 0
		}
		if in.base > int64(len(in.buf)) && len(in.buf) < 64<<10 {
			in.buf = append(in.buf, make([]byte, len(in.buf))...)
		}
		m, err := in.r.Read(in.buf[in.n:])
		in.n += m
		if err != nil {
			in.err = err
		}
	}
	return true
}

// AtEnd reports whether the input ends here (a read error is not an end).
func (in *Input) AtEnd() bool { return !in.fill(1) && in.err == io.EOF }

// Byte consumes one byte; io.ErrUnexpectedEOF at the end, or the read error.
func (in *Input) Byte() (byte, error) {
	if in.i < in.n {
		b := in.buf[in.i]
		in.i++
		return b, nil
	}
	if !in.fill(1) {
		if in.err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, in.err
	}
	b := in.buf[in.i]
	in.i++
	return b, nil
}

// Peek returns the next byte without consuming it.
func (in *Input) Peek() (byte, error) {
	if in.i < in.n {
		return in.buf[in.i], nil
	}
	if !in.fill(1) {
		return 0, io.ErrUnexpectedEOF
	}
	return in.buf[in.i], nil
}

// Buffered is what has been read and not consumed: a slice of the buffer, valid until
// the next read.
func (in *Input) Buffered() []byte { return in.buf[in.i:in.n] }

// Skip consumes n bytes of those Buffered returned (or the byte Peek returned).
func (in *Input) Skip(n int) { in.i += n }

// Take consumes n bytes: a slice of the buffer, valid until the next read, when they
// fit in it.
func (in *Input) Take(n int) ([]byte, error) {
	if n <= len(in.buf) {
		if !in.fill(n) {
			return nil, io.ErrUnexpectedEOF
		}
		b := in.buf[in.i : in.i+n]
		in.i += n
		return b, nil
	}
	b := make([]byte, 0, 1<<16)
	for len(b) < n {
		if !in.fill(1) {
			return nil, io.ErrUnexpectedEOF
		}
		c := min(n-len(b), in.n-in.i)
		b = append(b, in.buf[in.i:in.i+c]...)
		in.i += c
	}
	return b, nil
}

// Push appends v to s, doubling the capacity when s is full: a large table is then
// copied about once while it grows, not four times over as append's 1.25 factor does.
func Push[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 256))
	}
	return append(s, v)
}
