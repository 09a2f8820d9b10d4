package sourcefile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHashDirectory(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"b.parquet": "bravo", "a/x.parquet": "xray", "a/y/z.bin": ""}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	members, sum, size, err := HashDirectory(context.Background(), dir, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	digest := func(s string) string { d := sha256.Sum256([]byte(s)); return hex.EncodeToString(d[:]) }
	want := []Member{{"a/x.parquet", digest("xray"), 4}, {"a/y/z.bin", digest(""), 0}, {"b.parquet", digest("bravo"), 5}}
	if d := cmp.Diff(want, members); d != "" {
		t.Fatalf("members (-want +got):\n%s", d)
	}
	// The bundle digest, computed independently: path bytes then the raw digest, sorted.
	h := sha256.New()
	for _, m := range want {
		raw, _ := hex.DecodeString(m.SHA256)
		h.Write([]byte(m.Rel))
		h.Write(raw)
	}
	if sum != hex.EncodeToString(h.Sum(nil)) || size != 9 {
		t.Errorf("digest %s size %d", sum, size)
	}

	for _, c := range []struct {
		name  string
		files int64
		bytes int64
		setup func()
		want  error
	}{
		{"too many files", 2, 100, nil, ErrTooManyFiles},
		{"too many bytes", 10, 8, nil, ErrTooLarge},
		{"a link", 10, 100, func() { os.Symlink("/etc/passwd", filepath.Join(dir, "a", "link")) }, ErrNotRegular},
	} {
		if c.setup != nil {
			c.setup()
		}
		if _, _, _, err := HashDirectory(context.Background(), dir, c.files, c.bytes); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, _, _, err := HashDirectory(context.Background(), filepath.Join(dir, "b.parquet"), 10, 100); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a file as a directory: %v", err)
	}
}

func TestMaterialize(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "one"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(src, "two"), []byte("22"), 0o644)
	members, sum, _, err := HashDirectory(context.Background(), src, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := Materialize(dst, members, func(m Member) string { return filepath.Join(src, filepath.FromSlash(m.Rel)) }); err != nil {
		t.Fatal(err)
	}
	_, again, _, err := HashDirectory(context.Background(), dst, 10, 100)
	if err != nil || again != sum {
		t.Fatalf("materialized digest %s, want %s (%v)", again, sum, err)
	}
	bad := []Member{{Rel: "../escape", SHA256: members[0].SHA256, Size: 1}}
	if err := Materialize(filepath.Join(t.TempDir(), "x"), bad, func(Member) string { return "" }); err == nil {
		t.Error("a member path leaving the directory was materialized")
	}
}
