package providers

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
)

// OpenReadAhead is OpenBounded for a reader that reads a large input whole: the file
// is read (and gzip decompressed) on a goroutine of its own, up to readAheadChunks
// chunks ahead of the caller, so that reading and decompressing overlap decoding. The
// bounds and the cancellation are OpenBounded's, applied as the caller reads. Close
// stops the goroutine and waits for it.
func OpenReadAhead(ctx context.Context, in Input, maxBytes int64) (io.ReadCloser, error) {
	f, err := OpenInput(in)
	if err != nil {
		return nil, err
	}
	return &boundedReader{ReadCloser: newReadAhead(f), ctx: ctx, in: in, max: maxBytes}, nil
}

const (
	readAheadChunk  = 256 << 10
	readAheadChunks = 4
)

// chunks recycles the read-ahead buffers: a request may read many small traces.
var chunks = sync.Pool{New: func() any { b := make([]byte, readAheadChunk); return &b }}

// chunk is what the goroutine read into one buffer, and the error that ended its read
// (io.EOF at the end).
type chunk struct {
	b   []byte
	err error
}

// readAhead reads src on a goroutine into a ring of buffers; Read copies out of the
// oldest filled one.
type readAhead struct {
	src  io.ReadCloser
	full chan chunk
	free chan []byte
	stop chan struct{}
	done chan struct{}
	// cur is the unread part of the chunk being read, err the error that follows it.
	cur    []byte
	held   []byte
	err    error
	closed bool
	cerr   error
	// bufs are the buffers, returned to chunks by Close.
	bufs [readAheadChunks]*[]byte
	// panicked is the source's panic, set before full is closed.
	panicked error
}

func newReadAhead(src io.ReadCloser) *readAhead {
	r := &readAhead{src: src, full: make(chan chunk, readAheadChunks), free: make(chan []byte, readAheadChunks),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := range r.bufs {
		r.bufs[i] = chunks.Get().(*[]byte)
		r.free <- *r.bufs[i]
	}
	go r.fill()
	return r
}

// fill reads whole chunks until an error (io.EOF included) or stop. A panic of the
// source is kept for Read to raise on the caller's goroutine, after the chunks before it.
func (r *readAhead) fill() {
	defer close(r.done)
	defer close(r.full)
	defer func() {
		if v := recover(); v != nil {
			r.panicked = fmt.Errorf("read-ahead source panic: %v", v)
		}
	}()
	for {
		var b []byte
		select {
		case b = <-r.free:
		case <-r.stop:
			return
		}
		n, err := fillChunk(r.src, b)
		select {
		case r.full <- chunk{b: b[:n], err: err}:
		case <-r.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (r *readAhead) Read(p []byte) (int, error) {
	if r.closed {
		return 0, os.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.held != nil {
			r.free <- r.held[:cap(r.held)]
			r.held = nil
		}
		c, ok := <-r.full
		if !ok {
			if r.panicked != nil {
				panic(r.panicked)
			}
			return 0, os.ErrClosed
		}
		r.cur, r.held, r.err = c.b, c.b, c.err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// fillChunk reads src until b is full or src reports an error, which it returns as
// src did (unlike io.ReadFull, a truncated gzip stream's io.ErrUnexpectedEOF stays that);
// a hundred empty reads in a row are io.ErrNoProgress.
func fillChunk(src io.Reader, b []byte) (int, error) {
	n, empty := 0, 0
	for n < len(b) {
		k, err := src.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
		if k > 0 {
			empty = 0
		} else if empty++; empty == 100 {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// Close stops the goroutine, waits for it to end its read, closes the file and
// recycles the buffers; a later Read returns os.ErrClosed. Close and Read are not
// called concurrently.
func (r *readAhead) Close() error {
	if r.closed {
		return r.cerr
	}
	r.closed = true
	close(r.stop)
	<-r.done
	r.cerr = r.src.Close()
	for _, b := range r.bufs {
		chunks.Put(b)
	}
	r.cur, r.held = nil, nil
	return r.cerr
}
