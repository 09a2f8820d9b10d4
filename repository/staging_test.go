package repository

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// deadOwner returns a staging owner name whose process is provably gone: a pid above the
// kernel's pid_max.
func deadOwner(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%d-0-%s", 1<<30, randomHex(8))
	if !ownerGone(name) {
		t.Fatalf("owner %s is not reported gone", name)
	}
	return name
}

// TestStagingThatIsNotARealDirectoryIsRefused replaces .staging of a store (a new one and
// one with evidence) by a link to another directory, or by a file. The other directory
// holds what looks like a dead owner's staging; before the fix, initialization created
// this process's staging through the link and the abandoned-staging cleanup removed the
// other directory's contents. Publication must fail as REPOSITORY_CORRUPTION and leave
// the other directory as it was.
func TestStagingThatIsNotARealDirectoryIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		publish bool // the store holds evidence before .staging is replaced
		link    bool // .staging becomes a link (else a regular file)
		problem string
	}{
		{"link in a store with evidence", true, true, "symlink"},
		{"link in a new store", false, true, "symlink"},
		{"file in a store with evidence", true, false, "unexpected_entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "store")
			if tc.publish {
				if _, f := Open(Location{Dir: store, Source: SourceExplicit}).Publish(testBundle(writeFile(t, dir, "a.txt", "alpha\n"))); f != nil {
					t.Fatal(f)
				}
			} else if err := os.Mkdir(store, 0o700); err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(dir, "other")
			victim := filepath.Join(other, deadOwner(t))
			if err := os.MkdirAll(victim, 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, victim, "keep.txt", "precious\n")
			writeFile(t, other, "top.txt", "precious\n")
			staging := filepath.Join(store, ".staging")
			os.RemoveAll(staging)
			if tc.link {
				if err := os.Symlink(other, staging); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, store, ".staging", "not a directory\n")
			}

			_, f := Open(Location{Dir: store, Source: SourceExplicit}).Publish(testBundle(writeFile(t, dir, "b.txt", "bravo\n")))
			if f == nil || f.Code != gen.FailureCodeRepositoryCorruption || f.Details["problem"] != tc.problem {
				t.Errorf("publication with a %s .staging = %v, want REPOSITORY_CORRUPTION %s", tc.name, f, tc.problem)
			}
			for _, p := range []string{filepath.Join(victim, "keep.txt"), filepath.Join(other, "top.txt")} {
				if b, err := os.ReadFile(p); err != nil || string(b) != "precious\n" {
					t.Errorf("%s outside the store was changed: %q, %v", p, b, err)
				}
			}
			if entries, _ := os.ReadDir(other); len(entries) != 2 {
				t.Errorf("the other directory now holds %d entries, want 2", len(entries))
			}
		})
	}
}
