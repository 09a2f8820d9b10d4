package workerproc

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRelease: a worker whose reply is whole removes its request and its working
// directory with what the analysis left there, and keeps the reply and the scratch
// directory, which the caller removes; a request file outside a worker's scratch
// directory removes nothing.
func TestRelease(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := Scratch()
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	req, reply, left := filepath.Join(dir, "request.json"), filepath.Join(dir, "reply.json"), filepath.Join(tmp, "sqlite-temp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{req, reply, left} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(tmp)
	Release(req)
	for _, c := range []struct {
		path string
		kept bool
	}{{req, false}, {tmp, false}, {left, false}, {reply, true}, {dir, true}} {
		if _, err := os.Stat(c.path); (err == nil) != c.kept {
			t.Errorf("%s: kept %v, want %v", c.path, err == nil, c.kept)
		}
	}

	other := filepath.Join(t.TempDir(), "elsewhere")
	os.MkdirAll(filepath.Join(other, "tmp"), 0o700)
	os.WriteFile(filepath.Join(other, "request.json"), nil, 0o600)
	Release(filepath.Join(other, "request.json"))
	if _, err := os.Stat(filepath.Join(other, "tmp")); err != nil {
		t.Errorf("a directory outside a worker's scratch was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "request.json")); err != nil {
		t.Errorf("a request outside a worker's scratch was removed: %v", err)
	}
}

// TestLikely: what the sizes and first bytes of paths say before a request is read.
func TestLikely(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small, half := write("small.txt", []byte("a line\n")), write("half.txt", make([]byte, InProcessBytes/2+1))
	big := write("big.txt", make([]byte, InProcessBytes+1))
	gz, parquet := write("small.gz", []byte{0x1f, 0x8b, 8, 0}), write("t.parquet", []byte("PAR1"))

	type likelyCase struct {
		name  string
		paths []string
		want  bool
	}
	cases := []likelyCase{
		{"small", []string{small}, false},
		{"none", nil, false},
		{"missing", []string{filepath.Join(dir, "missing")}, false},
		{"at the in-process size", []string{half}, false},
		{"over it", []string{big}, true},
		{"together over it", []string{half, half}, true},
		{"directory", []string{dir}, true},
		{"gzip", []string{gz}, true},
		{"parquet", []string{parquet}, true},
	}
	if fifo := filepath.Join(dir, "fifo"); mkfifo(fifo) == nil {
		// Opening it would wait for a writer: the test would hang.
		cases = append(cases, likelyCase{"a FIFO, which is not opened", []string{fifo}, false})
	}
	for _, c := range cases {
		if got := Likely(c.paths); got != c.want {
			t.Errorf("%s: Likely = %v, want %v", c.name, got, c.want)
		}
	}
}
