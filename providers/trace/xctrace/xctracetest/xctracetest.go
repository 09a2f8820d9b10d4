// Package xctracetest holds what the tests of the xctrace reader and of the trace family
// share: the fixtures under providers/trace/testdata/xctrace, real `xctrace export`
// output with the baselines Microsoft's independent reader
// (Microsoft-Performance-Tools-Apple's InstrumentsProcessor) made of them
// (testdata/xctrace/PROVENANCE.md says where each comes from). It is imported by tests
// only.
package xctracetest

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Path is the fixture name's path.
func Path(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "xctrace", name)
}

// Open opens the fixture name, decompressed when it is gzipped (*.gz).
func Open(t testing.TB, name string) io.Reader {
	t.Helper()
	f, err := os.Open(Path(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if !strings.HasSuffix(name, ".gz") {
		return f
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// Baseline reads one table of a Microsoft baseline: the CSV lines after the line naming
// the table, up to the next table name.
func Baseline(t testing.TB, name, table string) [][]string {
	t.Helper()
	sc := bufio.NewScanner(Open(t, name))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out [][]string
	in := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, ",") {
			in = line == table
			continue
		}
		if in {
			out = append(out, strings.Split(line, ","))
		}
	}
	return out
}

// Atoi is a baseline's integer.
func Atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
