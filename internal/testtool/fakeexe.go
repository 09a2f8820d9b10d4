package testtool

import (
	"os"
	"path/filepath"
	"testing"
)

// FakeExecutable writes a shell script that exits 0 as dir/name with mode (0o755 for an
// executable, 0o644 for a file PATH lookups pass over), creating dir, and returns its
// path: a stand-in for a host tool that a lookup finds and a bind hashes.
func FakeExecutable(t testing.TB, dir, name string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}
