package sourcefile

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestHashAndCopyVerified(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	content := []byte("native bytes\n")
	if err := os.WriteFile(src, content, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(content)
	sum, size, err := Hash(src)
	if err != nil || sum != hex.EncodeToString(want[:]) || size != int64(len(content)) {
		t.Fatalf("Hash = %s %d %v", sum, size, err)
	}
	tests := []struct {
		name string
		sum  string
		size int64
		err  error
	}{
		{"exact", sum, size, nil},
		{"grown since hashing", sum, size - 1, ErrChanged},
		{"shrunk since hashing", sum, size + 1, ErrChanged},
		{"other content", hex.EncodeToString(make([]byte, 32)), size, ErrChanged},
	}
	for i, tt := range tests {
		dst := filepath.Join(dir, "dst", tt.name)
		os.MkdirAll(filepath.Dir(dst), 0o700)
		err := CopyVerified(src, dst, tt.sum, tt.size)
		if !errors.Is(err, tt.err) {
			t.Errorf("%d %s: err = %v, want %v", i, tt.name, err, tt.err)
		}
		if tt.err == nil {
			b, _ := os.ReadFile(dst)
			if string(b) != string(content) {
				t.Errorf("%s: copy = %q", tt.name, b)
			}
		}
	}
	// The destination must be new: an existing file is never overwritten.
	if err := CopyVerified(src, src, sum, size); err == nil {
		t.Error("CopyVerified overwrote an existing file")
	}
}

func TestOpenStream(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	os.WriteFile(plain, []byte("hello\n"), 0o644)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("hello\n"))
	zw.Close()
	packed := filepath.Join(dir, "packed.txt.gz")
	os.WriteFile(packed, buf.Bytes(), 0o644)
	bad := filepath.Join(dir, "bad.gz")
	os.WriteFile(bad, []byte{0x1f, 0x8b, 0, 0}, 0o644)
	for _, p := range []string{plain, packed} {
		r, err := OpenStream(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != "hello\n" {
			t.Errorf("%s reads %q", p, b)
		}
	}
	if _, err := OpenStream(bad); !errors.Is(err, ErrBadGzip) {
		t.Errorf("bad gzip: %v", err)
	}
}

// TestCopyHashingAcrossBuffers copies inputs around the two-buffer boundaries and checks
// the digest and bytes against crypto/sha256 over the same content; a failing writer
// returns its error without leaving the hashing goroutine blocked.
func TestCopyHashingAcrossBuffers(t *testing.T) {
	for _, n := range []int{0, 1, BufferBytes - 1, BufferBytes, BufferBytes + 1, 2 * BufferBytes, 5*BufferBytes + 7} {
		content := make([]byte, n)
		for i := range content {
			content[i] = byte(i*131 + i/7)
		}
		var out bytes.Buffer
		sum, copied, err := copyHashing(&out, bytes.NewReader(content))
		want := sha256.Sum256(content)
		if err != nil || copied != int64(n) || sum != hex.EncodeToString(want[:]) || !bytes.Equal(out.Bytes(), content) {
			t.Errorf("%d bytes: sum %s, copied %d, err %v", n, sum, copied, err)
		}
	}
	boom := errors.New("disk full")
	if _, _, err := copyHashing(&failAfter{n: BufferBytes + 3, err: boom}, bytes.NewReader(make([]byte, 4*BufferBytes))); !errors.Is(err, boom) {
		t.Errorf("a failing writer gave %v", err)
	}
}

// failAfter accepts n bytes, then fails every write with err.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, f.err
	}
	f.n -= len(p)
	return len(p), nil
}

// TestHashSizes hashes files around the buffer size, where Hash switches from one
// sequential pass to hashing on a goroutine while the next chunk is read, against
// crypto/sha256 over the same bytes.
func TestHashSizes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, BufferBytes - 1, BufferBytes, BufferBytes + 1, 2 * BufferBytes, 3*BufferBytes + 7} {
		content := make([]byte, n)
		for i := range content {
			content[i] = byte(i*7 + i>>20)
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		want := sha256.Sum256(content)
		sum, size, err := Hash(p)
		if err != nil || sum != hex.EncodeToString(want[:]) || size != int64(n) {
			t.Errorf("%d bytes: Hash = %s %d %v, want %x", n, sum, size, err, want)
		}
	}
}

func TestIsGzip(t *testing.T) {
	for _, tt := range []struct {
		head []byte
		want bool
	}{
		{nil, false},
		{[]byte{0x1f}, false},
		{[]byte{0x1f, 0x8b}, true},
		{[]byte{0x1f, 0x8b, 8, 0}, true},
		{[]byte{0x8b, 0x1f}, false},
		{[]byte("PAR1"), false},
	} {
		if got := IsGzip(tt.head); got != tt.want {
			t.Errorf("IsGzip(% x) = %v", tt.head, got)
		}
	}
}
