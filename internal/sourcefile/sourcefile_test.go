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
