package repository

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// helperRescue rescues the bundle of $SOURCE to $DEST and stops before the bundle is
// renamed into the rescue's staging store, says so on stdout, and waits to be killed.
func helperRescue() {
	testHookBeforeRename = func(stage string) {
		if strings.Contains(filepath.Base(stage), "evidence-") {
			fmt.Println("staged", stage)
			select {}
		}
	}
	_, f := Rescue(os.Getenv("DEST"), Location{Dir: os.Getenv("STORE"), Source: SourceExplicit}, testBundle(os.Getenv("SOURCE")))
	fmt.Println("failure", f)
	os.Exit(1)
}

// TestKilledRescueStagingIsRemoved kills a rescue (kill -9) after it staged its new store
// beside the destination: the staging store stays behind. The next rescue into the same
// parent removes it, because its owner is provably gone, and keeps what is not provably
// abandoned: the staging of a live owner, a staging name without an owner, and a link
// named like a dead owner's staging (and the directory it points to).
func TestKilledRescueStagingIsRemoved(t *testing.T) {
	dir := t.TempDir()
	active := Location{Dir: filepath.Join(dir, "active"), Source: SourceExplicit}
	parent := filepath.Join(dir, "rescues")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	src := writeFile(t, dir, "a.txt", "alpha\n")

	killStaged(t, "rescue-and-hang", "STORE="+active.Dir, "SOURCE="+src, "DEST="+filepath.Join(parent, "first"))
	leaked, _ := filepath.Glob(filepath.Join(parent, rescuePrefix+"*"))
	if len(leaked) != 1 {
		t.Fatalf("the killed rescue left %v, want its staging store", leaked)
	}

	live := filepath.Join(parent, rescuePrefix+ownerName())
	ownerless := filepath.Join(parent, rescuePrefix+randomHex(12))
	other := filepath.Join(dir, "other")
	link := filepath.Join(parent, rescuePrefix+deadOwner(t))
	for _, d := range []string{live, ownerless, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, d, "keep.txt", "precious\n")
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}

	ev, f := Rescue(filepath.Join(parent, "second"), active, testBundle(src))
	if f != nil {
		t.Fatal(f)
	}
	if _, err := os.Lstat(leaked[0]); !os.IsNotExist(err) {
		t.Errorf("the killed rescue's staging store was not removed: %v", err)
	}
	for _, p := range []string{live, ownerless, other} {
		if b, err := os.ReadFile(filepath.Join(p, "keep.txt")); err != nil || string(b) != "precious\n" {
			t.Errorf("%s was changed: %q, %v", p, b, err)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link named like a dead owner's staging was removed: %v", err)
	}
	if f := CheckRescued(filepath.Join(parent, "second"), ev.ID); f != nil {
		t.Fatal(f)
	}
	entries, _ := os.ReadDir(parent)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // second, live, ownerless, link
		t.Errorf("the rescue parent holds %v", names)
	}
}
