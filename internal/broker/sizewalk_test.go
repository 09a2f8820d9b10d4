package broker

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// pythonTreeSize is the independent figure: Python's os.walk over root, not following
// links, summing lstat's size of every regular file but those in skip.
const pythonTreeSize = `
import os, stat, sys
root, skip = sys.argv[1], set(sys.argv[2:])
total = 0
for d, dirs, files in os.walk(root, followlinks=False):
    for n in files + dirs:
        p = os.path.join(d, n)
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode) and p not in skip:
            total += st.st_size
print(total)
`

// TestWritableSizeMatchesPython: the walk sums what Python's os.walk and lstat sum over a
// tree of nested directories, empty and large files, links to files and directories
// (neither followed), a FIFO and a skipped file; a tree past walkEntryBound entries is
// measured partially and said to be.
func TestWritableSizeMatchesPython(t *testing.T) {
	py := testtool.Require(t, "python3")
	root := t.TempDir()
	write := func(rel string, n int) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for d := range 12 {
		for f := range 30 {
			write(filepath.Join("a"+strconv.Itoa(d), "b"+strconv.Itoa(d%3), "f"+strconv.Itoa(f)), d*1000+f)
		}
	}
	write("empty", 0)
	write("deep/1/2/3/4/5/6/7/8/9/10/file", 123457)
	skipped := write("console/stdout", 99999)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"link-file": outside, "link-dir": filepath.Dir(outside), "dangling": filepath.Join(root, "gone")} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mkfifo(filepath.Join(root, "fifo")); err != nil {
		t.Fatal(err)
	}
	truthOf := func(root string, skip ...string) int64 {
		out, err := exec.Command(py, append([]string{"-c", pythonTreeSize, root}, skip...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	truth := func(skip ...string) int64 { return truthOf(root, skip...) }
	if size, complete := writableSize([]string{root}); size != truth() || !complete {
		t.Errorf("writableSize = %d, complete %v; Python sums %d", size, complete, truth())
	}
	if size, complete := measure([]string{root}, map[string]bool{skipped: true}); size != truth(skipped) || !complete {
		t.Errorf("measure skipping the console file = %d, complete %v; Python sums %d", size, complete, truth(skipped))
	}
	// A root that does not resolve leaves the check partial, and the roots after it are
	// still measured.
	a1, a2 := filepath.Join(root, "a1"), filepath.Join(root, "a2")
	if size, complete := writableSize([]string{filepath.Join(root, "gone"), a1, a2}); size != truthOf(a1)+truthOf(a2) || complete {
		t.Errorf("a missing root, then two directories: %d, complete %v; want %d and a partial check", size, complete, truthOf(a1)+truthOf(a2))
	}
	if size, complete := writableSize([]string{filepath.Join(root, "deep", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "file")}); size != 123457 || !complete {
		t.Errorf("a file root: %d, complete %v; want its size", size, complete)
	}

	// Past the bound: 10,001 entries under the root, so the root itself and 10,000 more
	// pass it, and the sum is of the entries visited before.
	big := t.TempDir()
	for d := range 20 {
		sub := filepath.Join(big, "d"+strconv.Itoa(d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 500 {
			if err := os.WriteFile(filepath.Join(sub, strconv.Itoa(f)), []byte("12345678"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if size, complete := writableSize([]string{big}); complete || size >= 20*500*8 || size <= 0 {
		t.Errorf("a tree past the bound: %d, complete %v; want part of %d and a partial check", size, complete, 20*500*8)
	}
}
