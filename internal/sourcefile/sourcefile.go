// Package sourcefile owns native-source identities: streaming SHA-256 hashing of an
// explicit file and the bounded, verified copy that preservation uses.
package sourcefile

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// BufferBytes is the read size for hashing and copying; large reads keep hashing near the
// speed of crypto/sha256 on memory.
const BufferBytes = 1 << 20

// buffers recycles read buffers: a capture hashes several small files per call.
var buffers = sync.Pool{New: func() any { b := make([]byte, BufferBytes); return &b }}

// Hash returns the SHA-256 and size of the file at path in one streaming pass. A file
// larger than one buffer is hashed on a goroutine of its own while the next chunk is
// read (copyHashing), so the reads cost no hashing time.
func Hash(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > BufferBytes {
		return copyHashing(io.Discard, f)
	}
	h := sha256.New()
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	// The file is wrapped so that CopyBuffer reads into buf: *os.File's WriteTo would
	// copy through a buffer of its own, 32 KiB at a time.
	n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// ErrChanged reports that a copied source no longer has its recorded digest or size.
var ErrChanged = errors.New("sourcefile: source changed")

// CopyVerified copies the file at src to a new file dst (mode 0600), reading at most
// size+1 bytes, and checks the copy against the recorded digest and size before it syncs
// dst. A mismatch returns ErrChanged and leaves dst for the caller to discard.
func CopyVerified(src, dst, sum string, size int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	got, n, err := copyHashing(out, io.LimitReader(in, size+1))
	if err != nil {
		out.Close()
		return err
	}
	if n != size || got != sum {
		out.Close()
		return fmt.Errorf("%w: copied %d bytes", ErrChanged, n)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyHashing copies r to w and returns the SHA-256 of what it copied. The digest is
// computed on a goroutine of its own while the main one reads and writes, so hashing
// overlaps the copy's I/O; two buffers alternate, and a buffer is read into again only
// after its previous chunk has been hashed.
func copyHashing(w io.Writer, r io.Reader) (string, int64, error) {
	h := sha256.New()
	work := make(chan []byte, 2)
	hashed := make(chan struct{}, 2)
	go func() {
		for b := range work {
			h.Write(b)
			hashed <- struct{}{}
		}
	}()
	b0, b1 := buffers.Get().(*[]byte), buffers.Get().(*[]byte)
	defer buffers.Put(b0)
	defer buffers.Put(b1)
	bufs := [2][]byte{*b0, *b1}
	inflight := 0
	finish := func() {
		close(work)
		for ; inflight > 0; inflight-- {
			<-hashed
		}
	}
	var n int64
	for i := 0; ; i++ {
		if inflight == len(bufs) {
			<-hashed // the chunk last read into this buffer is hashed
			inflight--
		}
		b := bufs[i%len(bufs)]
		k, rerr := io.ReadFull(r, b)
		if k > 0 {
			work <- b[:k]
			inflight++
			if _, err := w.Write(b[:k]); err != nil {
				finish()
				return "", n, err
			}
			n += int64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			finish()
			return "", n, rerr
		}
	}
	finish()
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// IsGzip reports whether head starts with gzip's magic number (RFC 1952: ID1 0x1f,
// ID2 0x8b).
func IsGzip(head []byte) bool { return len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b }

// ErrBadGzip reports a file that starts like gzip but is not a valid gzip stream.
var ErrBadGzip = errors.New("sourcefile: invalid gzip stream")

// OpenStream opens path for sequential reading, transparently decompressing a gzip file,
// so a .json.gz or .log.gz artifact reads as its content. The file's identity (SHA-256,
// size, max_input_bytes) stays that of the native, compressed bytes.
func OpenStream(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(2); !IsGzip(head) {
		return readCloser{br, f}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %v", ErrBadGzip, err)
	}
	return readCloser{zr, f}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}
