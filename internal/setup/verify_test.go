package setup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeExe writes a FAKE executable (a shell script) at path.
func fakeExe(t *testing.T, path, script string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeFlameox answers --version with version and mcp inspect with a one-tool catalog.
func fakeFlameox(t *testing.T, path, version string) string {
	return fakeExe(t, path, `if [ "$1" = --version ]; then echo "flameox version `+version+`"; exit 0; fi
if [ "$1 $2" = "mcp inspect" ]; then echo '{"tool_count": 1}'; exit 0; fi
exit 2
`)
}

// Temporary: the temporary directory, the go build cache and go-build work directories
// are temporary, with symbolic links resolved; anything else is not.
func TestTemporary(t *testing.T) {
	root := t.TempDir()
	tmp, cache, home := filepath.Join(root, "tmp"), filepath.Join(root, "cache", "go-build"), filepath.Join(root, "home")
	for _, d := range []string{tmp, cache, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "tmplink")
	if err := os.Symlink(tmp, link); err != nil {
		t.Fatal(err)
	}
	inTmp := fakeFlameox(t, filepath.Join(tmp, "x", "flameox"), "1.0.0")
	linked := filepath.Join(home, "bin", "flameox")
	if err := os.MkdirAll(filepath.Dir(linked), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inTmp, linked); err != nil {
		t.Fatal(err)
	}
	for exe, want := range map[string]string{
		inTmp:                           "the temporary directory",
		linked:                          "the temporary directory", // resolves into it
		filepath.Join(link, "flameox"):  "the temporary directory", // through a linked TMPDIR
		filepath.Join(cache, "ab", "x"): "the Go build cache",
		filepath.Join(home, "go-build123", "b001", "exe", "flameox"): "a go command work directory (go-build123)",
		filepath.Join(home, "go", "bin", "flameox"):                  "",
		filepath.Join(home, "go-builder", "flameox"):                 "",
		filepath.Join(root, "tmpfoo", "flameox"):                     "", // a sibling with the same prefix
	} {
		got := Temporary(exe, link, cache)
		if want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("Temporary(%s) = %q, want %q...", exe, got, want)
		}
	}
	if got := Temporary(inTmp, "", ""); got != "" {
		t.Errorf("no temporary directory known: %q", got)
	}
	if GoCache(func(k string) string { return map[string]string{"GOCACHE": "off"}[k] }) != "" ||
		GoCache(func(k string) string { return map[string]string{"GOCACHE": "/c"}[k] }) != "/c" {
		t.Error("GoCache")
	}
}

// Recognize is the shared rule: an absolute executable run as exactly `mcp serve` whose
// --version says Flameox, whatever its name.
func TestRecognize(t *testing.T) {
	dir := t.TempDir()
	renamed := fakeFlameox(t, filepath.Join(dir, "fx-renamed"), "0.0.3")
	other := fakeExe(t, filepath.Join(dir, "flameox"), "echo 'uv 0.5.0'\n")
	ctx := context.Background()
	if id, ok := Recognize(ctx, ServeLauncher(renamed)); !ok || id.Version != "v0.0.3" {
		t.Errorf("a renamed Flameox is not recognized: %+v %v", id, ok)
	}
	for name, l := range map[string]Launcher{
		"named flameox but not Flameox": ServeLauncher(other),
		"relative":                      {Command: "fx-renamed", Args: []string{"mcp", "serve"}},
		"other arguments":               {Command: renamed, Args: []string{"serve"}},
		"missing":                       ServeLauncher(filepath.Join(dir, "gone")),
	} {
		if _, ok := Recognize(ctx, l); ok {
			t.Errorf("%s: recognized %+v", name, l)
		}
	}
	if err := os.Chmod(renamed, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := Recognize(ctx, ServeLauncher(renamed)); ok {
		t.Error("a file that is not executable is recognized")
	}
}

// VerifyExecutable checks the version and the catalog, and says which failed; the
// context's deadline bounds it.
func TestVerifyExecutable(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	good := fakeFlameox(t, filepath.Join(dir, "good"), "0.2.0-go.5")
	if err := VerifyExecutable(ctx, good, "0.2.0-go.5"); err != nil {
		t.Fatal(err)
	}
	if err := VerifyExecutable(ctx, good, "0.2.1"); err == nil || !strings.Contains(err.Error(), `reports version "v0.2.0-go.5", not 0.2.1`) {
		t.Errorf("version mismatch: %v", err)
	}
	noTools := fakeExe(t, filepath.Join(dir, "notools"), `if [ "$1" = --version ]; then echo "flameox version 1.0.0"; exit 0; fi
echo '{"code":"INVALID_INPUT","message":"no tools here"}' >&2; exit 1
`)
	if err := VerifyExecutable(ctx, noTools, "1.0.0"); err == nil || !strings.HasSuffix(err.Error(), "does not list its tools with `mcp inspect`: no tools here") {
		t.Errorf("no catalog: %v", err)
	}
	notFlameox := fakeExe(t, filepath.Join(dir, "other"), "echo 'other 1.0.0'\n")
	if err := VerifyExecutable(ctx, notFlameox, "1.0.0"); err == nil || !strings.Contains(err.Error(), "--version does not say Flameox") {
		t.Errorf("not Flameox: %v", err)
	}
	slow := fakeExe(t, filepath.Join(dir, "slow"), `if [ "$1" = --version ]; then echo "flameox version 1.0.0"; exit 0; fi
sleep 30
`)
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	if err := VerifyExecutable(tctx, slow, "1.0.0"); err == nil || !strings.Contains(err.Error(), "--timeout-seconds budget ran out while listing its tools") {
		t.Errorf("timeout: %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Error("the deadline did not end the verification")
	}
}

// PathAdvisory: another flameox first on PATH with another version is advised about; the
// same file, or the same version, is not.
func TestPathAdvisory(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	exe := fakeFlameox(t, filepath.Join(dir, "mine", "flameox"), "1.0.0")
	old := fakeFlameox(t, filepath.Join(dir, "path", "flameox"), "0.9.0")
	same := fakeFlameox(t, filepath.Join(dir, "same", "flameox"), "1.0.0")
	look := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	a := PathAdvisory(ctx, exe, "1.0.0", look(old))
	if a == nil || a.Kind != "path_cli_version" || a.Path != old || a.Version == nil || *a.Version != "v0.9.0" ||
		!strings.Contains(a.Message, "setup neither upgrades nor removes it") {
		t.Fatalf("advisory %+v", a)
	}
	for name, lp := range map[string]func(string) (string, error){
		"the same file":    look(exe),
		"the same version": look(same),
		"none on PATH":     func(string) (string, error) { return "", errors.New("not found") },
	} {
		if a := PathAdvisory(ctx, exe, "1.0.0", lp); a != nil {
			t.Errorf("%s: %+v", name, a)
		}
	}
}

// Run refuses a temporary launcher before planning; a failing verification or
// preparation writes nothing; the preparation runs after the confirmation, with the
// providers, and its guidance reaches the report.
func TestRunChecksBeforeWriting(t *testing.T) {
	clients := fakeHome(t)
	codex := pathOf(clients, "codex")
	before := read(t, codex)
	tmp := t.TempDir()
	rep, err := Run(context.Background(), Options{Clients: clients, Select: []string{"codex"},
		Launcher: ServeLauncher(filepath.Join(tmp, "flameox")), TempDir: tmp})
	if f := asFailure(t, err); rep != nil || f.Details["reason"] != "temporary_executable" ||
		!strings.Contains(f.Message, "install flameox first") {
		t.Errorf("temporary: %v %+v", f.Message, rep)
	}

	verifyErr := errors.New("it is broken")
	rep, err = Run(context.Background(), Options{Clients: clients, Select: []string{"codex", "cursor"}, Launcher: launcher,
		Providers: []string{"otlp"},
		Verify:    func(context.Context, Launcher) error { return verifyErr },
		Prepare: func(context.Context, Launcher, []string) (*Preparation, error) {
			t.Error("prepared after a failed verification")
			return nil, nil
		}})
	if f := asFailure(t, err); f.Details["reason"] != "verification_failed" || rep == nil || rep.Verified || len(rep.Clients) != 0 ||
		f.Message != "the flameox to register failed its verification, so nothing was written: it is broken" {
		t.Errorf("verification: %q %+v", f.Message, rep)
	}

	var order []string
	rep, err = run(Options{Clients: clients, Select: []string{"codex", "cursor"}, Launcher: launcher, Providers: []string{"otlp", "py-spy"},
		Confirm: func([]Plan) error { order = append(order, "confirm"); return nil },
		Prepare: func(_ context.Context, _ Launcher, ids []string) (*Preparation, error) {
			order = append(order, "prepare "+strings.Join(ids, ","))
			return nil, errors.New("PIP_INDEX_URL carries credentials in its URL")
		}})
	if f := asFailure(t, err); f.Details["reason"] != "preparation_failed" || !rep.Verified || len(rep.Clients) != 0 {
		t.Errorf("preparation: %q %+v", f.Message, rep)
	}
	if diff := cmp.Diff([]string{"confirm", "prepare otlp,py-spy"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if read(t, codex) != before || read(t, pathOf(clients, "cursor")) != "" {
		t.Error("a failed check wrote a file")
	}
	if diff := cmp.Diff([]string{launcher.Command, "prepare", "otlp", "py-spy"}, rep.PreparationCommand); diff != "" {
		t.Errorf("preparation command (-want +got):\n%s", diff)
	}
}

// PrepareProviders runs `<exe> prepare IDS --timeout-seconds N` and reads its result; a
// failure quotes the command's typed failure.
func TestPrepareProviders(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "argv")
	exe := fakeExe(t, filepath.Join(dir, "flameox"), `echo "$@" > `+log+`
cat <<'J'
{"status": "complete", "requested_providers": ["otlp", "perf"], "prepared_managed_providers": [],
 "external_requirements": [{"provider_id": "otlp", "status": "built_in", "guidance": "native"},
  {"provider_id": "perf", "status": "missing", "guidance": "install perf"}],
 "workload_requirements": [], "activation_status": "not_applicable", "next_action": null}
J
`)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := PrepareProviders(ctx, ServeLauncher(exe), []string{"otlp", "perf"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ExternalGuidance) != 2 || p.ExternalGuidance[1].Status != "missing" || len(p.PreparedManagedProviders) != 0 {
		t.Errorf("preparation %+v", p)
	}
	if got := read(t, log); got != "prepare otlp perf --timeout-seconds 90\n" {
		t.Errorf("argv %q", got)
	}
	failing := fakeExe(t, filepath.Join(dir, "failing"),
		`echo '{"code":"SETUP_FAILURE","message":"no installer here","details":{"reason":"no_installer"}}' >&2; exit 1`+"\n")
	if _, err := PrepareProviders(ctx, ServeLauncher(failing), []string{"py-spy"}); err == nil || err.Error() != "no installer here" {
		t.Errorf("failure: %v", err)
	}
}
