package protowalk

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"

	"github.com/flameox/flameox/providers/internal/protowire"
)

// ErrOverflow is a varint that does not fit 64 bits: ten bytes that all continue, or a
// tenth byte above 1.
var ErrOverflow = errors.New("protowalk: varint overflows a 64-bit integer")

// ErrWireType is a wire type whose value ValueSize cannot skip: a group, or a type
// protobuf does not define.
var ErrWireType = errors.New("protowalk: a wire type without a value to skip")

// Reader reads protobuf wire data from a stream, for a message too large to hold whole
// (a Perfetto trace's packets, an OTLP export, a pprof profile): varints and the bytes of
// length-delimited values, through a buffer. It counts the bytes consumed, so that a
// reader can say where a record starts or is cut, and keeps the error of the stream
// beneath it (Err), so that a failed read (cancellation, a limit, I/O) is told from data
// that ends or is malformed.
type Reader struct {
	br  *bufio.Reader
	src errReader
	off int64
	// buf holds the value Bytes returned last.
	buf []byte
}

// errReader records the error of the reader it wraps (io.EOF aside).
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// NewReader reads r through a buffer of size bytes.
func NewReader(r io.Reader, size int) *Reader {
	w := &Reader{src: errReader{r: r}}
	w.br = bufio.NewReaderSize(&w.src, size)
	return w
}

// Offset is the number of bytes consumed.
func (r *Reader) Offset() int64 { return r.off }

// Err is the error the stream beneath returned, other than io.EOF; nil when it has
// returned none.
func (r *Reader) Err() error { return r.src.err }

// AtEnd reports whether the stream ends here (a read error is not an end).
func (r *Reader) AtEnd() bool {
	_, err := r.br.Peek(1)
	return err == io.EOF
}

// ReadByte consumes one byte (io.ByteReader).
func (r *Reader) ReadByte() (byte, error) {
	b, err := r.br.ReadByte()
	if err == nil {
		r.off++
	}
	return b, err
}

// Varint consumes a varint, with the errors of binary.ReadUvarint: io.EOF when the
// stream ends before it, io.ErrUnexpectedEOF when it ends within it, the stream's error
// when it fails there, and ErrOverflow.
func (r *Reader) Varint() (uint64, error) {
	if r.br.Buffered() >= binary.MaxVarintLen64 {
		b, _ := r.br.Peek(binary.MaxVarintLen64)
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, ErrOverflow // ten bytes cannot cut it short
		}
		r.br.Discard(n)
		r.off += int64(n)
		return v, nil
	}
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return x, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				return x, ErrOverflow
			}
			return x | uint64(b)<<(7*i), nil
		}
		x |= uint64(b&0x7f) << (7 * i)
	}
	return x, ErrOverflow
}

// bytesStep is the size beyond which Bytes grows its buffer as the bytes arrive.
const bytesStep = 1 << 20

// Bytes consumes the next n bytes, the value of a length-delimited field, into a buffer
// the Reader reuses: they are valid until the next call of Bytes. The errors are
// io.ReadFull's (io.EOF when the stream ends before any of them, io.ErrUnexpectedEOF
// after some) or the stream's; Offset then says how many were read. A value beyond 1 MiB
// is read in steps, its buffer growing with what arrives, so that a length the stream
// does not hold costs no more memory than the bytes it does.
func (r *Reader) Bytes(n uint64) ([]byte, error) {
	if n <= uint64(cap(r.buf)) || n <= bytesStep {
		if uint64(cap(r.buf)) < n {
			r.buf = make([]byte, n)
		}
		b := r.buf[:n]
		m, err := io.ReadFull(r.br, b)
		r.off += int64(m)
		return b, err
	}
	b := r.buf[:0]
	for uint64(len(b)) < n {
		k := int(min(n-uint64(len(b)), bytesStep))
		if cap(b)-len(b) < k {
			g := make([]byte, len(b), max(2*cap(b), len(b)+k))
			copy(g, b)
			b = g
		}
		m, err := io.ReadFull(r.br, b[len(b):len(b)+k])
		b = b[:len(b)+m]
		r.off += int64(m)
		if err != nil {
			if err == io.EOF && len(b) > 0 {
				err = io.ErrUnexpectedEOF
			}
			r.buf = b[:0]
			return b, err
		}
	}
	r.buf = b[:0]
	return b, nil
}

// Discard skips the next n bytes (at most 2^62), returning how many it skipped; an
// error when the stream ended or failed first (bufio.Reader.Discard's).
func (r *Reader) Discard(n uint64) (int64, error) {
	m, err := r.br.Discard(int(min(n, 1<<62)))
	r.off += int64(m)
	return int64(m), err
}

// ValueSize begins to skip the value of a field of wire type typ: it consumes a varint
// whole (0 bytes are left), and returns the bytes a fixed32 (4), a fixed64 (8) or a
// length-delimited value (the length it consumes) leaves, for Discard once the caller has
// bounded them. The errors are Varint's, and ErrWireType for a group or an undefined
// type.
func (r *Reader) ValueSize(typ protowire.Type) (uint64, error) {
	switch typ {
	case protowire.VarintType:
		_, err := r.Varint()
		return 0, err
	case protowire.Fixed32Type:
		return 4, nil
	case protowire.Fixed64Type:
		return 8, nil
	case protowire.BytesType:
		return r.Varint()
	}
	return 0, ErrWireType
}
