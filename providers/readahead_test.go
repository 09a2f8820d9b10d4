package providers

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAheadContent reads inputs around the chunk size through the read-ahead
// reader with reads of several sizes (one byte included) and requires the bytes
// written, then io.EOF.
func TestReadAheadContent(t *testing.T) {
	for _, n := range []int{0, 1, readAheadChunk - 1, readAheadChunk, readAheadChunk + 1, (readAheadChunks+2)*readAheadChunk + 3} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*13 + i>>16)
		}
		for _, step := range []int{1, 4093, readAheadChunk, 3 * readAheadChunk} {
			if step == 1 && n > 2*readAheadChunk {
				continue
			}
			r := newReadAhead(io.NopCloser(iotest.HalfReader(bytes.NewReader(want))))
			var got []byte
			buf := make([]byte, step)
			var err error
			for err == nil {
				var k int
				k, err = r.Read(buf)
				got = append(got, buf[:k]...)
			}
			if err != io.EOF || !bytes.Equal(got, want) {
				t.Errorf("%d bytes read %d at a time: %d bytes, %v", n, step, len(got), err)
			}
			if _, err := r.Read(buf); err != io.EOF {
				t.Errorf("%d bytes: a read after the end = %v, want io.EOF", n, err)
			}
			if err := r.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestReadAheadErrors checks that the source's error arrives after every byte read
// before it, unchanged: a truncated gzip stream stays io.ErrUnexpectedEOF (io.ReadFull
// would make a short final chunk one), and a failing reader's error is its own.
func TestReadAheadErrors(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), readAheadChunk/8)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(content)
	zw.Close()
	zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()-12]))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	tests := []struct {
		name string
		src  io.Reader
		want error
		// min is the fewest bytes that must arrive before the error.
		min int
	}{
		{"truncated gzip", zr, io.ErrUnexpectedEOF, 1},
		{"failing reader", io.MultiReader(bytes.NewReader(content[:readAheadChunk+5]), iotest.ErrReader(boom)), boom, readAheadChunk + 5},
		{"no progress", emptyReader{}, io.ErrNoProgress, 0},
	}
	for _, tt := range tests {
		r := newReadAhead(io.NopCloser(tt.src))
		got, err := io.ReadAll(r)
		if !errors.Is(err, tt.want) || len(got) < tt.min || !bytes.Equal(got, content[:len(got)]) {
			t.Errorf("%s: %d bytes, %v; want at least %d bytes, then %v", tt.name, len(got), err, tt.min, tt.want)
		}
		r.Close()
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// TestReadAheadClose closes a reader that has read one chunk of a large input: Close
// returns once the goroutine has ended, closes the file, and a later Read fails.
func TestReadAheadClose(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 32*readAheadChunk), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadAhead(context.Background(), Input{Path: p}, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, readAheadChunk)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(buf); err == nil {
		t.Error("a read after Close succeeded")
	}
}

// TestReadAheadBounds checks OpenBounded's limits through the read-ahead reader: more
// bytes than the bound is a LimitError, and a cancelled context stops the reads.
func TestReadAheadBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 3*readAheadChunk), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadAhead(context.Background(), Input{Index: 2, Path: p}, readAheadChunk+1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != readAheadChunk+1 || le.Source != 2 {
		t.Errorf("over the bound: %v", err)
	}
	r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r, err = OpenReadAhead(ctx, Input{Path: p}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
	r.Close()
}

// spySource is a source that records Close and can panic after some reads.
type spySource struct {
	io.Reader
	closed    bool
	panicRead int // the read that panics (0: none)
	reads     int
}

func (s *spySource) Read(p []byte) (int, error) {
	if s.reads++; s.reads == s.panicRead {
		panic("source broke")
	}
	return s.Reader.Read(p)
}

func (s *spySource) Close() error { s.closed = true; return nil }

// TestReadAheadCloseEndsEverything closes read-ahead readers before any read, in the
// middle, and at the end: each time the goroutine has ended (done is closed) and the
// source is closed when Close returns, and a second Close is harmless.
func TestReadAheadCloseEndsEverything(t *testing.T) {
	content := bytes.Repeat([]byte{7}, 10*readAheadChunk)
	for _, read := range []int{0, readAheadChunk + 3, len(content) + 1} {
		src := &spySource{Reader: bytes.NewReader(content)}
		r := newReadAhead(src)
		if _, err := io.ReadFull(r, make([]byte, min(read, len(content)))); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.done:
		default:
			t.Errorf("after reading %d bytes: Close returned before its goroutine ended", read)
		}
		if !src.closed {
			t.Errorf("after reading %d bytes: Close left the source open", read)
		}
		if err := r.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
	}
}

// TestReadAheadPanic: a source that panics on its goroutine does not crash the process
// there; the caller's Read raises it, after the bytes read before it.
func TestReadAheadPanic(t *testing.T) {
	content := bytes.Repeat([]byte{7}, 3*readAheadChunk)
	r := newReadAhead(&spySource{Reader: bytes.NewReader(content), panicRead: 2})
	defer r.Close()
	got := 0
	defer func() {
		v := recover()
		if v == nil || !strings.Contains(fmt.Sprint(v), "source broke") || got != readAheadChunk {
			t.Errorf("recovered %v after %d bytes; want the source's panic after %d", v, got, readAheadChunk)
		}
	}()
	buf := make([]byte, 1000)
	for {
		n, err := r.Read(buf)
		got += n
		if err != nil {
			t.Fatalf("Read returned %v after %d bytes instead of panicking", err, got)
		}
	}
}
