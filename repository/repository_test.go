package repository

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
)

// The test binary doubles as a publisher process for the multi-process tests.
const helperEnv = "FLAMEOX_REPOSITORY_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "publish":
		helperPublish(false)
	case "publish-and-hang":
		helperPublish(true)
	case "rescue-and-hang":
		helperRescue()
	}
}

// helperPublish publishes the bundle of the file $SOURCE into the store $STORE, after
// waiting for $GO to exist so that several helpers start together. With hang, it stops
// between staging and rename, says so on stdout, and waits to be killed.
func helperPublish(hang bool) {
	for os.Getenv("GO_FILE") != "" {
		if _, err := os.Stat(os.Getenv("GO_FILE")); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if hang {
		testHookBeforeRename = func(stage string) {
			if strings.Contains(filepath.Base(stage), "evidence-") {
				fmt.Println("staged", stage)
				select {}
			}
		}
	}
	s := Open(Location{Dir: os.Getenv("STORE"), Source: SourceExplicit})
	ev, f := s.Publish(testBundle(os.Getenv("SOURCE")))
	if f != nil {
		fmt.Println("failure", f.Code, f.Message)
		os.Exit(1)
	}
	fmt.Println("published", ev.ID)
	os.Exit(0)
}

var fixedTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testBundle describes a preview of the file at path, as the runtime would.
func testBundle(path string) *Bundle {
	sum, size, err := sourcefile.Hash(path)
	if err != nil {
		panic(err)
	}
	return &Bundle{
		Kind:            "analysis",
		Operation:       gen.OperationNamePreviewArtifact,
		Provider:        gen.StoredProvider{ID: "flameox", Version: "test"},
		Sources:         []SourceFile{{Path: path, SHA256: sum, Size: size, Format: gen.FormatText, Role: "input"}},
		AnalysisSources: []int64{0},
		AnalysisRequest: gen.AnalysisRequestRecord{
			Operation: gen.OperationNamePreviewArtifact,
			Inputs:    []gen.RecordedInput{{SHA256: sum, Format: gen.FormatText, Path: &path, Role: "input"}},
			Arguments: map[string]any{"offset": 0},
		},
		Coverage:  gen.StoredCoverage{RowsReturned: 1, RowsObserved: 1, Complete: true},
		Data:      []byte(`{"status":"complete"}`),
		CreatedAt: fixedTime,
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// newStore returns a store with two published bundles, A and B, of different files.
func newStore(t *testing.T) (s *Store, a, b *Evidence) {
	t.Helper()
	dir := t.TempDir()
	s = Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
	var f any
	a, fa := s.Publish(testBundle(writeFile(t, dir, "a.txt", "alpha\n")))
	b, fb := s.Publish(testBundle(writeFile(t, dir, "b.txt", "bravo\n")))
	if fa != nil || fb != nil {
		t.Fatal(fa, fb, f)
	}
	return s, a, b
}

func TestPublishAndRead(t *testing.T) {
	s, a, b := newStore(t)
	if a.ID == b.ID {
		t.Fatal("two inputs gave one evidence id")
	}
	for _, level := range []Level{LevelManifest, LevelData, LevelArtifacts, LevelFull} {
		ev, f := s.Read(a.ID, level)
		if f != nil {
			t.Fatalf("level %d: %v", level, f)
		}
		if diff := cmp.Diff(a.Manifest, ev.Manifest); diff != "" {
			t.Errorf("read differs from published:\n%s", diff)
		}
	}
	ids, f := s.Inventory()
	if f != nil {
		t.Fatal(f)
	}
	want := []string{a.ID, b.ID}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("inventory:\n%s", diff)
	}
	// Publishing the same bundle again validates and returns the same evidence.
	again, fl := s.Publish(testBundle(*a.Manifest.Body.AnalysisRequest.Inputs[0].Path))
	if fl != nil || again.ID != a.ID {
		t.Fatalf("republish = %v, %v", again, fl)
	}
	for _, p := range []string{s.loc.Dir, s.path("artifacts"), s.path("evidence", "sha256")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s mode = %v", p, st.Mode())
		}
	}
	entries, _ := os.ReadDir(s.path(".staging"))
	if len(entries) != 0 {
		t.Errorf("staging left behind: %v", entries)
	}
}

func TestPublishRefusesAChangedInput(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "a.txt", "alpha\n")
	b := testBundle(src)
	writeFile(t, dir, "a.txt", "changed\n")
	s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
	if _, f := s.Publish(b); f == nil || f.Code != gen.FailureCodeMissingOrChangedInput {
		t.Fatalf("got %v", f)
	}
	// The store may exist now, but nothing is published and no staging is left.
	got := snapshot(t, s.loc.Dir)
	want := map[string]string{".": "dir", "artifacts": "dir", "artifacts/sha256": "dir", "evidence": "dir",
		"evidence/sha256": "dir", "repository.json": got["repository.json"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a refused publication left entries (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(s.path(".staging")); len(entries) != 0 {
		t.Errorf("staging left behind: %v", entries)
	}
}

// TestPublishRefusesAChangedSecondSource changes the second of two sources: the first
// source's new artifact is staged but never placed.
func TestPublishRefusesAChangedSecondSource(t *testing.T) {
	dir := t.TempDir()
	a := testBundle(writeFile(t, dir, "a.txt", "alpha\n"))
	b := testBundle(writeFile(t, dir, "b.txt", "bravo\n"))
	a.Sources = append(a.Sources, b.Sources[0])
	a.Sources[1].Role = "input-0002"
	a.Sources[0].Role = "input-0001"
	writeFile(t, dir, "b.txt", "changed\n")
	s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
	_, f := s.Publish(a)
	if f == nil || f.Code != gen.FailureCodeMissingOrChangedInput || f.Details["source_index"] != 1 {
		t.Fatalf("got %v", f)
	}
	if entries, _ := os.ReadDir(s.path("artifacts", "sha256")); len(entries) != 0 {
		t.Errorf("an artifact was published: %v", entries)
	}
}

func TestReadMissing(t *testing.T) {
	s := Open(Location{Dir: filepath.Join(t.TempDir(), "absent"), Source: SourceExplicit})
	if _, f := s.Read(strings.Repeat("a", 64), LevelFull); f == nil || f.Code != gen.FailureCodeMissingEvidence {
		t.Fatalf("absent store: %v", f)
	}
	ids, f := s.Inventory()
	if f != nil || len(ids) != 0 {
		t.Fatalf("absent store inventory = %v, %v", ids, f)
	}
	page, f := s.Query(Filter{}, "", 50)
	if f != nil || page.InventoryDigest != InventoryDigest(nil) || len(page.Evidence) != 0 {
		t.Fatalf("absent store query = %+v, %v", page, f)
	}
}

// TestCorruptionFailsClosed applies one corruption at a time to bundle A and checks the
// typed failure, that B stays readable, and that nothing was repaired.
func TestCorruptionFailsClosed(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(t *testing.T, s *Store, a *Evidence)
		code    gen.FailureCode
		problem string
		// storeWide corruptions fail every read, B included.
		storeWide bool
	}{
		{"flipped payload byte", func(t *testing.T, s *Store, a *Evidence) {
			flip(t, s.PayloadPath(a.Manifest.Body.Artifacts[0].SHA256), 2)
		}, gen.FailureCodeRepositoryCorruption, "payload_digest", false},
		{"truncated payload", func(t *testing.T, s *Store, a *Evidence) {
			if err := os.Truncate(s.PayloadPath(a.Manifest.Body.Artifacts[0].SHA256), 2); err != nil {
				t.Fatal(err)
			}
		}, gen.FailureCodeRepositoryCorruption, "payload_digest", false},
		{"edited manifest", func(t *testing.T, s *Store, a *Evidence) {
			replace(t, filepath.Join(a.dir, "manifest.json"), `"complete":true`, `"complete":false`)
		}, gen.FailureCodeRepositoryCorruption, "manifest_identity", false},
		{"manifest that is not JSON", func(t *testing.T, s *Store, a *Evidence) {
			replace(t, filepath.Join(a.dir, "manifest.json"), `{`, `[`)
		}, gen.FailureCodeRepositoryCorruption, "unparseable_document", false},
		{"manifest of an unknown format", func(t *testing.T, s *Store, a *Evidence) {
			replace(t, filepath.Join(a.dir, "manifest.json"), FormatVersion+`"}`, `flameox-go/9"}`)
		}, gen.FailureCodeUnsupportedRepositoryFormat, "", false},
		{"artifact document of an unknown format", func(t *testing.T, s *Store, a *Evidence) {
			replace(t, s.path(append(artifactRel(a.Manifest.Body.Artifacts[0].SHA256), "artifact.json")...), FormatVersion, "flameox-go/9")
		}, gen.FailureCodeUnsupportedRepositoryFormat, "", false},
		{"edited data file", func(t *testing.T, s *Store, a *Evidence) {
			replace(t, filepath.Join(a.dir, "data", "analysis.json"), "complete", "COMPLETE")
		}, gen.FailureCodeRepositoryCorruption, "data_digest", false},
		{"extra file in a bundle", func(t *testing.T, s *Store, a *Evidence) {
			writeFile(t, a.dir, "notes.txt", "x")
		}, gen.FailureCodeRepositoryCorruption, "unexpected_entry", false},
		{"missing artifact", func(t *testing.T, s *Store, a *Evidence) {
			if err := os.RemoveAll(s.path(artifactRel(a.Manifest.Body.Artifacts[0].SHA256)...)); err != nil {
				t.Fatal(err)
			}
		}, gen.FailureCodeRepositoryCorruption, "missing_artifact", false},
		{"symlinked data file", func(t *testing.T, s *Store, a *Evidence) {
			p := filepath.Join(a.dir, "data", "analysis.json")
			if err := os.Rename(p, p+".moved"); err != nil {
				t.Fatal(err)
			}
			// The link target is outside the bundle and has the right bytes.
			target := filepath.Join(t.TempDir(), "analysis.json")
			b, _ := os.ReadFile(p + ".moved")
			os.WriteFile(target, b, 0o600)
			os.Remove(p + ".moved")
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, gen.FailureCodeRepositoryCorruption, "symlink", false},
		{"symlinked artifact directory", func(t *testing.T, s *Store, a *Evidence) {
			p := s.path(artifactRel(a.Manifest.Body.Artifacts[0].SHA256)...)
			moved := filepath.Join(t.TempDir(), "moved")
			if err := os.Rename(p, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, p); err != nil {
				t.Fatal(err)
			}
		}, gen.FailureCodeRepositoryCorruption, "symlink", false},
		{"repository.json of an unknown format", func(t *testing.T, s *Store, a *Evidence) {
			replace(t, s.path("repository.json"), FormatVersion, "flameox-go/9")
		}, gen.FailureCodeUnsupportedRepositoryFormat, "", true},
		{"missing repository.json", func(t *testing.T, s *Store, a *Evidence) {
			if err := os.Remove(s.path("repository.json")); err != nil {
				t.Fatal(err)
			}
		}, gen.FailureCodeRepositoryCorruption, "missing_repository_document", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a, b := newStore(t)
			tt.corrupt(t, s, a)
			before := snapshot(t, s.loc.Dir)
			_, f := s.Read(a.ID, LevelFull)
			if f == nil || f.Code != tt.code {
				t.Fatalf("read A: got %v, want %s", f, tt.code)
			}
			if tt.problem != "" && f.Details["problem"] != tt.problem {
				t.Errorf("problem = %v, want %s", f.Details["problem"], tt.problem)
			}
			for _, k := range []string{"configuration_source", "store_identifier", "local_diagnostic"} {
				if f.Details[k] == nil {
					t.Errorf("details lack %s: %v", k, f.Details)
				}
			}
			if strings.Contains(fmt.Sprint(f.Message, f.Details), s.loc.Dir) {
				t.Errorf("the failure names the store path: %s %v", f.Message, f.Details)
			}
			_, fb := s.Read(b.ID, LevelFull)
			if tt.storeWide != (fb != nil) {
				t.Errorf("read B: %v (store-wide corruption: %v)", fb, tt.storeWide)
			}
			// A publication into a corrupt store publishes nothing over the damage.
			s.Publish(testBundle(*a.Manifest.Body.AnalysisRequest.Inputs[0].Path))
			s.Read(a.ID, LevelFull)
			if diff := cmp.Diff(before, snapshot(t, s.loc.Dir)); diff != "" {
				t.Errorf("the corruption was repaired or changed:\n%s", diff)
			}
		})
	}
}

func TestInventoryRejectsStrayEntries(t *testing.T) {
	s, _, _ := newStore(t)
	writeFile(t, s.path("evidence", "sha256"), "README", "x")
	if _, f := s.Inventory(); f == nil || f.Details["problem"] != "inventory_topology" {
		t.Fatalf("got %v", f)
	}
}

// TestConcurrentPublishersOfTheSameEvidence runs two processes that publish the same
// bundle at the same moment: one renames into place, the other finds the entry, validates
// it and reports the same evidence. No staging is left and the bundle reads complete.
func TestConcurrentPublishersOfTheSameEvidence(t *testing.T) {
	for round := 0; round < 5; round++ {
		dir := t.TempDir()
		src := writeFile(t, dir, "big.txt", strings.Repeat("0123456789abcdef\n", 1<<16))
		store := filepath.Join(dir, "store")
		goFile := filepath.Join(dir, "go")
		var procs []*exec.Cmd
		var outs []*strings.Builder
		for i := 0; i < 2; i++ {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=publish", "STORE="+store, "SOURCE="+src, "GO_FILE="+goFile)
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			procs, outs = append(procs, cmd), append(outs, out)
		}
		time.Sleep(20 * time.Millisecond)
		writeFile(t, dir, "go", "")
		var ids []string
		for i, p := range procs {
			if err := p.Wait(); err != nil {
				t.Fatalf("publisher %d: %v\n%s", i, err, outs[i])
			}
			ids = append(ids, strings.TrimSpace(strings.TrimPrefix(outs[i].String(), "published ")))
		}
		if ids[0] != ids[1] {
			t.Fatalf("publishers disagree: %v", ids)
		}
		s := Open(Location{Dir: store, Source: SourceExplicit})
		if _, f := s.Read(ids[0], LevelFull); f != nil {
			t.Fatal(f)
		}
		inv, _ := s.Inventory()
		if len(inv) != 1 {
			t.Fatalf("inventory = %v", inv)
		}
		if entries, _ := os.ReadDir(filepath.Join(store, ".staging")); len(entries) != 0 {
			t.Errorf("staging left behind: %v", entries)
		}
	}
}

// TestKilledPublisher kills a publisher between staging and rename: readers see no
// bundle, evidence published before stays intact, the next publisher removes the
// abandoned staging (its owner is provably gone) and publishes the bundle completely.
func TestKilledPublisher(t *testing.T) {
	s, a, _ := newStore(t)
	before := snapshot(t, filepath.Join(s.loc.Dir, "artifacts"))
	dir := t.TempDir()
	src := writeFile(t, dir, "c.txt", "charlie\n")
	stage := killStaged(t, "publish-and-hang", "STORE="+s.loc.Dir, "SOURCE="+src)

	if _, err := os.Stat(stage); err != nil {
		t.Fatalf("the killed publisher's staging should remain until cleaned: %v", err)
	}
	ids, f := s.Inventory()
	if f != nil || len(ids) != 2 {
		t.Fatalf("inventory after the kill = %v, %v", ids, f)
	}
	if _, f := s.Read(a.ID, LevelFull); f != nil {
		t.Fatalf("earlier evidence damaged: %v", f)
	}
	// A live owner's staging is kept: this process owns one it is not using.
	live := filepath.Join(s.loc.Dir, ".staging", ownerName())
	os.MkdirAll(live, 0o700)

	s2 := Open(s.loc)
	ev, f := s2.Publish(testBundle(src))
	if f != nil {
		t.Fatal(f)
	}
	if _, err := os.Stat(filepath.Dir(stage)); !os.IsNotExist(err) {
		t.Errorf("abandoned staging of a dead owner was not removed: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live owner's staging was removed: %v", err)
	}
	if _, f := s2.Read(ev.ID, LevelFull); f != nil {
		t.Fatal(f)
	}
	after := snapshot(t, filepath.Join(s.loc.Dir, "artifacts"))
	for k, v := range before {
		if after[k] != v {
			t.Errorf("preserved artifact %s changed", k)
		}
	}
}

// killStaged starts the test binary as the helper mode, waits until it says that it
// staged a bundle, kills it with SIGKILL and returns the staging directory it named.
func killStaged(t *testing.T, mode string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err != nil || !strings.HasPrefix(line, "staged ") {
		t.Fatalf("helper said %q, %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "staged "))
}

func TestOwnerGone(t *testing.T) {
	self := ownerName()
	if ownerGone(self) {
		t.Error("this process is reported gone")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%d-%d-abc", cmd.Process.Pid, 0)
	if !ownerGone(dead) {
		t.Error("an exited process is not reported gone")
	}
	reused := fmt.Sprintf("%d-%d-abc", os.Getpid(), processStart(os.Getpid())+1)
	if processStart(os.Getpid()) != 0 && !ownerGone(reused) {
		t.Error("a pid with another start time is not reported gone")
	}
	for _, bad := range []string{"", "x-1-a", "12", "-1-0-a"} {
		if ownerGone(bad) {
			t.Errorf("%q is reported gone", bad)
		}
	}
}

func TestFromEnvironment(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want Location
		err  bool
	}{
		{map[string]string{"FLAMEOX_DATA_DIR": "/data/fx", "HOME": "/home/u"}, Location{"/data/fx", SourceEnvironment}, false},
		{map[string]string{"FLAMEOX_DATA_DIR": "~/fx", "HOME": "/home/u"}, Location{"/home/u/fx", SourceEnvironment}, false},
		{map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/u"}, Location{"/xdg/flameox", SourcePlatformDefault}, false},
		{map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/home/u"}, Location{"/home/u/.local/share/flameox", SourcePlatformDefault}, false},
		{map[string]string{}, Location{}, true},
	}
	for _, tt := range tests {
		got, err := FromEnvironment(func(k string) string { return tt.env[k] })
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%v: got %v, %v", tt.env, got, err)
		}
	}
}

func TestSelect(t *testing.T) {
	s, a, _ := newStore(t)
	ev, _ := s.Read(a.ID, LevelManifest)
	sel, f := ev.Select(nil, nil)
	if f != nil || sel.SHA256 != a.Manifest.Body.Artifacts[0].SHA256 || sel.Selector != Selector(a.ID, "logical", 0) {
		t.Fatalf("default selection = %+v, %v", sel, f)
	}
	art := Selector(a.ID, "artifact", 0)
	if sel, f := ev.Select(&art, nil); f != nil || sel.Role != "input" {
		t.Fatalf("artifact selection = %+v, %v", sel, f)
	}
	other := strings.Repeat("e", 64)
	if _, f := ev.Select(&other, []any{"sources", 0}); f == nil || f.Code != gen.FailureCodeMissingEvidence {
		t.Fatalf("unknown selector: %v", f)
	}
}

func flip(t *testing.T, p string, off int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func replace(t *testing.T, p, old, new string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%q is not in %s", old, p)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// snapshot maps every path under root (links not followed) to its content or link target.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case strings.HasPrefix(rel, ".staging"):
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		default:
			out[rel] = "dir"
		}
		return nil
	})
	return out
}

// TestPlaceNeverReplaces checks the publication rename: an existing entry, even an empty
// directory, is never replaced, and the existing entry is handed to validation instead.
func TestPlaceNeverReplaces(t *testing.T) {
	s := Open(Location{Dir: t.TempDir(), Source: SourceExplicit})
	rel := []string{"evidence", "sha256", "ab", "entry"}
	for i, pre := range []func(dest string){
		func(dest string) { os.MkdirAll(dest, 0o700) },                                   // an empty directory
		func(dest string) { os.MkdirAll(dest, 0o700); writeFile(t, dest, "first", "1") }, // a published entry
	} {
		dest := s.path(rel...)
		os.RemoveAll(dest)
		pre(dest)
		before := snapshot(t, dest)
		stage := filepath.Join(t.TempDir(), "stage")
		os.Mkdir(stage, 0o700)
		writeFile(t, stage, "second", "2")
		validated := false
		if f := s.place(stage, rel, func() *failure.Failure { validated = true; return nil }); f != nil {
			t.Fatalf("case %d: %v", i, f)
		}
		if !validated {
			t.Errorf("case %d: the existing entry was not validated", i)
		}
		if diff := cmp.Diff(before, snapshot(t, dest)); diff != "" {
			t.Errorf("case %d: the existing entry was replaced:\n%s", i, diff)
		}
	}
}
