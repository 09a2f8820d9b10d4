package update

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/setup"
)

// fakeFlameox writes a FAKE flameox executable at path that prints version for
// --version and a one-tool catalog for anything else (mcp inspect).
func fakeFlameox(t *testing.T, path, version string) {
	t.Helper()
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"flameox " + version + "\"; exit 0; fi\necho '{\"tool_count\":1}'\n"
	writeFile(t, path, script, 0o755)
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// world is a temporary HOME whose Codex entry runs a fake flameox v0.0.1, a data
// directory beside which a fake v0.0.2 is already installed (so Install reuses it and no
// go install runs), and the options of a run in it.
type world struct {
	root, codex, old, store string
	opts                    Options
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{root: t.TempDir()}
	home := filepath.Join(w.root, "home")
	w.codex = filepath.Join(home, ".codex", "config.toml")
	w.old = filepath.Join(w.root, "old", "flameox")
	w.store = filepath.Join(w.root, "store")
	fakeFlameox(t, w.old, "v0.0.1")
	fakeFlameox(t, filepath.Join(VersionsDir(w.store), "v0.0.2", "flameox"), "v0.0.2")
	writeFile(t, w.codex, "# mine\n[mcp_servers.flameox]\ncommand = \""+w.old+"\"\nargs = [\"mcp\", \"serve\"]\n", 0o600)
	w.opts = Options{
		Env:     setup.Env{Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }, Cwd: w.root},
		Running: "v0.0.3",
		GOPROXY: proxyWith(t, map[string]string{"list": "v0.0.1\nv0.0.2\n"}),
		DataDir: func() (string, error) { return w.store, nil },
	}
	return w
}

func (w *world) installed() string { return filepath.Join(VersionsDir(w.store), "v0.0.2", "flameox") }

func setupFailure(t *testing.T, err error) *failure.Failure {
	t.Helper()
	var f *failure.Failure
	if !errors.As(err, &f) || f.Code != gen.FailureCodeSetupFailure {
		t.Fatalf("error %v is not a SETUP_FAILURE", err)
	}
	return f
}

// steps records what the workflow tells its progress.
type steps []string

func (s *steps) Update(_, _ float64, message string) { *s = append(*s, message) }
func (s *steps) Done()                               { *s = append(*s, "done") }

const unrecognizedMessage = "the flameox entry does not run a Flameox executable (an absolute path whose --version says Flameox) as `mcp serve`; update leaves it as it is"

// Run installs the latest release (here the one already installed) and repoints the
// configured client to it, keeping the file's comment; an unrecognized entry is left.
func TestRunRepointsClients(t *testing.T) {
	w := newWorld(t)
	cursor := filepath.Join(w.root, "home", ".cursor", "mcp.json")
	writeFile(t, cursor, `{"mcpServers": {"flameox": {"command": "uvx", "args": ["flameox"]}}}`, 0o600)
	var prog steps
	w.opts.Progress = &prog
	rep, err := Run(context.Background(), w.opts)
	if err != nil {
		t.Fatal(err)
	}
	prev, target, source := "v0.0.1", "v0.0.2", "module_proxy"
	want := &Report{TargetVersion: &target, TargetSource: &source, RunningVersion: "v0.0.3", UpdateAvailable: true,
		InstallPath: w.installed(), Installed: true, RestartRequired: true,
		Clients: []ClientState{
			{ID: "cursor", Name: "Cursor", Path: cursor, Command: "uvx", Status: "unrecognized", Reason: "custom_launcher",
				Message: unrecognizedMessage, Warnings: []setup.Warning{{Code: "custom_launcher", Message: unrecognizedMessage}}},
			{ID: "codex", Name: "Codex", Path: w.codex, Command: w.old, PreviousVersion: &prev, Status: "updated"},
		},
		NextAction: &setup.NextAction{Kind: "reconnect_mcp", Clients: []string{"codex"},
			Message: "Restart or reconnect the changed clients so that they start the new Flameox; running sessions keep their current servers."},
	}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("report\n%+v\nwant\n%+v", rep, want)
	}
	if got := readFile(t, w.codex); !strings.HasPrefix(got, "# mine\n") || !strings.Contains(got, `command = "`+w.installed()+`"`) {
		t.Errorf("codex file:\n%s", got)
	}
	wantSteps := steps{"finding the configured clients", "resolving the latest release on the module proxy",
		"checking for an installed flameox v0.0.2", "done", "repointing the Codex configuration", "repointed 1 client", "done"}
	if !reflect.DeepEqual(prog, wantSteps) {
		t.Errorf("progress %q, want %q", prog, wantSteps)
	}

	// The client now runs the target: a check finds it current.
	w.opts.Check, w.opts.Progress = true, nil
	rep, err = Run(context.Background(), w.opts)
	if err != nil || rep.Clients[1].Status != "already_current" || rep.UpdateAvailable {
		t.Fatalf("check after update: %v %+v", err, rep)
	}
}

// A dry run reports the client's update and installs or writes nothing, even for an
// explicit (older) version.
func TestRunDryRunChangesNothing(t *testing.T) {
	w := newWorld(t)
	before := readFile(t, w.codex)
	w.opts.DryRun, w.opts.Version = true, "v0.0.1"
	w.opts.DataDir = func() (string, error) { return filepath.Join(w.root, "other"), nil }
	rep, err := Run(context.Background(), w.opts)
	if err != nil {
		t.Fatal(err)
	}
	if *rep.TargetSource != "explicit" || rep.Installed || !rep.UpdateAvailable || rep.Clients[0].Status != "update_available" ||
		rep.InstallPath != filepath.Join(w.root, "other-versions", "v0.0.1", "flameox") || rep.NextAction != nil {
		t.Errorf("report %+v", rep)
	}
	if readFile(t, w.codex) != before {
		t.Error("a dry run wrote the configuration")
	}
	if _, err := os.Stat(filepath.Join(w.root, "other-versions")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a dry run created the versions directory")
	}
}

// Automatic selection never downgrades a client newer than the latest release.
func TestRunNeverDowngradesAutomatically(t *testing.T) {
	w := newWorld(t)
	fakeFlameox(t, w.old, "v0.0.9")
	rep, err := Run(context.Background(), w.opts)
	if err != nil {
		t.Fatal(err)
	}
	if st := rep.Clients[0]; st.Status != "newer_than_target" || st.Reason != "no_automatic_downgrade" || rep.Installed {
		t.Errorf("report %+v", rep)
	}
}

// A file that cannot be read is reported refused before anything else; one that can be
// read but not edited safely is refused after the install, and nothing is repointed.
func TestRunRefusedClient(t *testing.T) {
	w := newWorld(t)
	claude := filepath.Join(w.root, "home", ".claude.json")
	writeFile(t, claude, `{"mcpServers": {`, 0o600)
	dotted := "mcp_servers.flameox.command = \"" + w.old + "\"\nmcp_servers.flameox.args = [\"mcp\", \"serve\"]\n"
	writeFile(t, w.codex, dotted, 0o600)
	rep, err := Run(context.Background(), w.opts)
	f := setupFailure(t, err)
	if f.Message != "update refuses to edit the configuration of codex (see the clients' reason and message); nothing was repointed" {
		t.Errorf("failure %q", f.Message)
	}
	if rep == nil || len(rep.Clients) != 2 {
		t.Fatalf("report %+v", rep)
	}
	if st := rep.Clients[0]; st.ID != "claude" || st.Status != "refused" || st.Reason != "invalid_syntax" {
		t.Errorf("claude %+v", st)
	}
	if st := rep.Clients[1]; st.ID != "codex" || st.Status != "refused" || st.Reason != "unsupported_layout" || st.Message == "" {
		t.Errorf("codex %+v", st)
	}
	if rep.RestartRequired || rep.NextAction != nil || readFile(t, w.codex) != dotted {
		t.Errorf("a refused client was repointed: %+v", rep)
	}
}

// No configured client: the report (empty) and a failure that says to run setup; a
// release lookup that cannot run fails without a report.
func TestRunFailures(t *testing.T) {
	w := newWorld(t)
	w.opts.Clients = []string{"cursor"}
	rep, err := Run(context.Background(), w.opts)
	if f := setupFailure(t, err); f.Message != "No configured Flameox MCP clients found. Run flameox setup first." ||
		rep == nil || len(rep.Clients) != 0 {
		t.Errorf("no clients: %q %+v", f.Message, rep)
	}
	// A failed release lookup still reports the configured clients (update --check always
	// prints its report), with the target null and the lookup's error.
	w.opts.Clients, w.opts.GOPROXY, w.opts.Check = nil, "off", true
	rep, err = Run(context.Background(), w.opts)
	if f := setupFailure(t, err); rep == nil || f.Details["reason"] != "release_lookup_failed" || rep.TargetVersion != nil ||
		rep.TargetSource != nil || !strings.Contains(rep.ReleaseLookupError, `"off"`) || len(rep.Clients) != 1 ||
		rep.Clients[0].Status != "configured" || *rep.Clients[0].PreviousVersion != "v0.0.1" {
		t.Errorf("GOPROXY=off: %v %+v", f.Details, rep)
	}
}
