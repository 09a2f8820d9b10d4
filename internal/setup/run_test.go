package setup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// fakeHome is a temporary HOME with a Codex file (a comment and another server) and no
// other client's file; it returns the supported clients resolved in it.
func fakeHome(t *testing.T) []Client {
	t.Helper()
	home := t.TempDir()
	env := Env{Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}, Cwd: home}
	write(t, filepath.Join(home, ".codex", "config.toml"), "# mine\n[mcp_servers.other]\ncommand = \"other\"\n")
	clients, err := Locate(env)
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func pathOf(clients []Client, id string) string {
	for _, c := range clients {
		if c.ID == id {
			return c.Path
		}
	}
	return ""
}

// run is Run with a verification that accepts the (fake) launcher, unless o has one.
func run(o Options) (*Report, error) {
	if o.Verify == nil {
		o.Verify = func(context.Context, Launcher) error { return nil }
	}
	return Run(context.Background(), o)
}

// steps records what a workflow tells its progress.
type steps []string

func (s *steps) Update(done, total float64, message string) {
	*s = append(*s, fmt.Sprintf("%g/%g %s", done, total, message))
}
func (s *steps) Done() { *s = append(*s, "done") }

func asFailure(t *testing.T, err error) *failure.Failure {
	t.Helper()
	var f *failure.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a typed failure", err)
	}
	if f.Code != gen.FailureCodeSetupFailure {
		t.Fatalf("code %s, want SETUP_FAILURE", f.Code)
	}
	return f
}

// Run writes the selected clients (a new file and an edit that keeps the rest), reports
// each, tells progress each step, and asks for the reconnection of the changed clients.
func TestRunWritesSelection(t *testing.T) {
	clients := fakeHome(t)
	var prog steps
	confirmed := 0
	rep, err := run(Options{Clients: clients, Select: []string{"codex", "cursor"}, Launcher: launcher, Version: "v1",
		Confirm: func(ps []Plan) error { confirmed = len(ps); return nil }, Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if confirmed != 2 {
		t.Errorf("Confirm saw %d plans, want 2", confirmed)
	}
	var got []string
	for _, st := range rep.Clients {
		got = append(got, st.ID+":"+st.Status)
	}
	if diff := cmp.Diff([]string{"cursor:created", "codex:updated"}, got); diff != "" {
		t.Errorf("clients (-want +got):\n%s", diff)
	}
	if !rep.ClientRegistrationChanged || !rep.RestartRequired || rep.NextAction == nil ||
		!cmp.Equal(rep.NextAction.Clients, []string{"cursor", "codex"}) || rep.ResolvedVersion != "v1" {
		t.Errorf("report %+v", rep)
	}
	codex := read(t, pathOf(clients, "codex"))
	if !strings.HasPrefix(codex, "# mine\n[mcp_servers.other]\n") || !strings.Contains(codex, `command = "/opt/flameox/bin/flameox"`) {
		t.Errorf("codex file:\n%s", codex)
	}
	if !strings.Contains(read(t, pathOf(clients, "cursor")), `"/opt/flameox/bin/flameox"`) {
		t.Error("cursor file not written")
	}
	want := steps{"0/0 planning the configuration of 2 clients", "0/0 verifying flameox v1", "done", "0/2 writing the Cursor configuration",
		"1/2 writing the Codex configuration", "2/2 configured 2 clients", "done"}
	if diff := cmp.Diff(want, prog); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}

	// A second run finds both current and changes nothing.
	rep, err = run(Options{Clients: clients, Select: []string{"codex", "cursor"}, Launcher: launcher})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clients[0].Status != "already_current" || rep.Clients[1].Status != "already_current" ||
		rep.ClientRegistrationChanged || rep.NextAction != nil {
		t.Errorf("second run %+v", rep)
	}
}

// A dry run plans and writes nothing, and is not asked to confirm.
func TestRunDryRunWritesNothing(t *testing.T) {
	clients := fakeHome(t)
	before := read(t, pathOf(clients, "codex"))
	rep, err := run(Options{Clients: clients, All: true, Launcher: launcher, DryRun: true,
		Confirm: func([]Plan) error { t.Error("a dry run asked to confirm"); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Plan) != len(ClientIDs) || len(rep.Clients) != 0 || !rep.DryRun || rep.ClientRegistrationChanged {
		t.Errorf("report %+v", rep)
	}
	for _, p := range rep.Plan {
		if want := map[bool]string{true: ActionUpdate, false: ActionCreate}[p.Client == "codex"]; p.Action != want {
			t.Errorf("%s planned %s, want %s", p.Client, p.Action, want)
		}
	}
	if read(t, pathOf(clients, "codex")) != before || read(t, pathOf(clients, "cursor")) != "" {
		t.Error("a dry run wrote a file")
	}
}

// A client refused while planning stops every write, and the failure names it.
func TestRunRefusedWritesNothing(t *testing.T) {
	clients := fakeHome(t)
	write(t, pathOf(clients, "claude"), `{"mcpServers": {`)
	before := read(t, pathOf(clients, "codex"))
	rep, err := run(Options{Clients: clients, Select: []string{"claude", "codex"}, Launcher: launcher,
		Confirm: func([]Plan) error { t.Error("a refused selection asked to confirm"); return nil }})
	f := asFailure(t, err)
	if !strings.HasPrefix(f.Message, "setup refuses to edit the configuration of claude (") ||
		!cmp.Equal(f.Details["refused"], map[string]string{"claude": "invalid_syntax"}) {
		t.Errorf("failure %q %v", f.Message, f.Details)
	}
	if rep == nil || rep.Plan[0].Action != ActionRefused || rep.Plan[0].Reason != "invalid_syntax" || len(rep.Clients) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if read(t, pathOf(clients, "codex")) != before {
		t.Error("codex was written beside a refused client")
	}
}

// A file that changes between planning and writing stops the run there: the clients
// before it stay written, it is reported refused, and the failure says why.
func TestRunChangedSincePlanning(t *testing.T) {
	clients := fakeHome(t)
	codex := pathOf(clients, "codex")
	rep, err := run(Options{Clients: clients, Select: []string{"cursor", "codex"}, Launcher: launcher,
		Confirm: func([]Plan) error { write(t, codex, "model = \"o4\"\n"); return nil }})
	f := asFailure(t, err)
	if f.Details["client"] != "codex" || f.Details["reason"] != ReasonChanged ||
		f.Message != "the Codex configuration changed after setup planned its edit; run setup again" {
		t.Errorf("failure %q %v", f.Message, f.Details)
	}
	want := []ClientState{
		{ID: "cursor", Name: "Cursor", Path: pathOf(clients, "cursor"), Status: "created"},
		{ID: "codex", Name: "Codex", Path: codex, Status: "refused", Reason: ReasonChanged},
	}
	if diff := cmp.Diff(want, rep.Clients); diff != "" {
		t.Errorf("clients (-want +got):\n%s", diff)
	}
	if !cmp.Equal(rep.NextAction.Clients, []string{"cursor"}) {
		t.Errorf("next action %+v", rep.NextAction)
	}
	if read(t, codex) != "model = \"o4\"\n" {
		t.Error("the changed file was overwritten")
	}
}

// A cancelled confirmation returns its error and no report, and writes nothing.
func TestRunConfirmCancels(t *testing.T) {
	clients := fakeHome(t)
	stop := errors.New("no")
	rep, err := run(Options{Clients: clients, Select: []string{"cursor"}, Launcher: launcher,
		Confirm: func([]Plan) error { return stop }})
	if rep != nil || err != stop {
		t.Fatalf("Run = %v, %v", rep, err)
	}
	if read(t, pathOf(clients, "cursor")) != "" {
		t.Error("cursor written after a cancellation")
	}
}

// Locate refuses a HOME that is not absolute.
func TestLocateNeedsAbsoluteHome(t *testing.T) {
	for _, home := range []string{"", "rel"} {
		_, err := Locate(Env{Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }})
		if f := asFailure(t, err); f.Message != "HOME is unset or not absolute; set it to your home directory" {
			t.Errorf("HOME=%q: %q", home, f.Message)
		}
	}
}
