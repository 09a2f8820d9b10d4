package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/setup"
)

// ptyRun is the flameox executable (the test binary under testscript's name, on PATH since
// TestMain) run with stdin and stderr on a pseudo-terminal and stdout on a pipe, as a
// person runs it in a terminal with stdout redirected.
type ptyRun struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	stdout bytes.Buffer

	mu     sync.Mutex
	screen bytes.Buffer // everything the terminal showed: stderr and the echo of typed input
	more   chan struct{}
	done   chan struct{}
}

// hangGuard bounds every wait for the child so that a broken prompt fails the test instead
// of hanging it; it is not a timing assertion.
const hangGuard = 60 * time.Second

func startPTY(t *testing.T, env []string, args ...string) *ptyRun {
	t.Helper()
	exe, err := exec.LookPath("flameox")
	if err != nil {
		t.Fatal(err)
	}
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	r := &ptyRun{t: t, master: master, more: make(chan struct{}, 1), done: make(chan struct{})}
	r.cmd = exec.Command(exe, args...)
	r.cmd.Env = env
	r.cmd.Stdin, r.cmd.Stderr, r.cmd.Stdout = tty, tty, &r.stdout
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() {
		defer close(r.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the child and its tty are gone
			}
		}
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
		master.Close()
	})
	return r
}

func (r *ptyRun) shown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

// waitFor waits until the terminal has shown text (after the first `after` bytes).
func (r *ptyRun) waitFor(text string, after int) int {
	r.t.Helper()
	guard := time.After(hangGuard)
	for {
		if s := r.shown(); strings.Contains(s[after:], text) {
			return strings.Index(s[after:], text) + after + len(text)
		}
		select {
		case <-r.more:
		case <-guard:
			r.t.Fatalf("the terminal never showed %q; it showed:\n%s", text, r.shown())
		}
	}
}

func (r *ptyRun) typeLine(s string) {
	r.t.Helper()
	if _, err := r.master.Write([]byte(s + "\n")); err != nil {
		r.t.Fatal(err)
	}
}

// wait returns the exit status once the child exited and the terminal output is drained.
func (r *ptyRun) wait() int {
	r.t.Helper()
	err := r.cmd.Wait()
	select {
	case <-r.done:
	case <-time.After(hangGuard):
		r.t.Fatal("the terminal output did not end")
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return 0
}

// oneJSON decodes b as exactly one JSON document, nothing before or after it.
func oneJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON document: %v\n%s", err, b)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON document:\n%s", b)
	}
	return doc
}

// cliEnv is a minimal environment: the given HOME, and PATH for the subprocesses. Its
// TMPDIR is under HOME: testscript put the flameox executable in the test's temporary
// directory, which setup would refuse to register as temporary (decision 0060).
func cliEnv(home string) []string {
	tmp := filepath.Join(home, "tmp")
	_ = os.MkdirAll(tmp, 0o755) // a capture's scratch goes there; a failure shows in the test
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb",
		"FLAMEOX_DATA_DIR=" + filepath.Join(home, "data"), "TMPDIR=" + tmp}
}

// clientFiles writes pre-existing configurations of Claude Code, Cursor and Codex (each
// with another server) and returns every client's path with its content ("" when absent).
func clientFiles(t *testing.T, home string) map[string]string {
	t.Helper()
	files := map[string]string{
		".claude.json":          "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"other\"}\n  }\n}\n",
		".cursor/mcp.json":      "{\n  // cursor servers\n  \"mcpServers\": {\n    \"other\": {\"command\": \"other\"}\n  }\n}\n",
		".codex/config.toml":    "# my codex settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other\"\n",
		".gemini/settings.json": "", // directory only: Gemini CLI is detected, its file absent
	}
	for rel, body := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return snapshot(t, home)
}

// snapshot reads every client's configuration path under home.
func snapshot(t *testing.T, home string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rel := range []string{".claude.json", ".cursor/mcp.json", ".config/opencode/opencode.jsonc",
		".codex/config.toml", ".gemini/settings.json", ".gemini/config/mcp_config.json"} {
		b, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[rel] = string(b)
	}
	return out
}

func number(id string) string {
	for i, x := range setup.ClientIDs {
		if x == id {
			return strconv.Itoa(i + 1)
		}
	}
	panic(id)
}

// TestSetupInteractive answers setup's multi-select on a pseudo-terminal and checks which
// files changed (read back from disk), that stdout is exactly the JSON report, and that the
// prompt and the progress went to the terminal.
func TestSetupInteractive(t *testing.T) {
	tests := []struct {
		name    string
		answers []string // selection, then the confirmation when one is asked
		exit    int
		changed []string // client files that must differ afterwards; all others unchanged
		clients []any    // the report's clients[].id; nil: no report on stdout
	}{
		{name: "select two by number and confirm", answers: []string{number("cursor") + ", " + number("codex"), "y"},
			changed: []string{".cursor/mcp.json", ".codex/config.toml"}, clients: []any{"cursor", "codex"}},
		{name: "select by id and space, create absent file", answers: []string{"gemini " + number("claude"), "yes"},
			changed: []string{".claude.json", ".gemini/settings.json"}, clients: []any{"claude", "gemini"}},
		{name: "invalid answer asks again", answers: []string{"9", number("codex"), "y"},
			changed: []string{".codex/config.toml"}, clients: []any{"codex"}},
		{name: "empty selection cancels", answers: []string{""}, exit: 1},
		{name: "declined confirmation cancels", answers: []string{number("cursor"), "n"}, exit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			before := clientFiles(t, home)
			r := startPTY(t, cliEnv(home), "setup")
			at := r.waitFor("empty to cancel: ", 0)
			listing := r.shown()
			for _, id := range []string{"claude", "cursor", "codex"} {
				if !regexpLine(listing, "("+id+") [detected]") {
					t.Errorf("client %s is not marked detected:\n%s", id, listing)
				}
			}
			if regexpLine(listing, "(antigravity) [detected]") {
				t.Errorf("antigravity is marked detected without its files:\n%s", listing)
			}
			for i, a := range tt.answers {
				if i > 0 {
					prompt := "[y/N] "
					if tt.answers[i-1] == "9" {
						prompt = "empty to cancel: "
					}
					at = r.waitFor(prompt, at)
				}
				r.typeLine(a)
			}
			if code := r.wait(); code != tt.exit {
				t.Fatalf("exit status %d, want %d; terminal:\n%s\nstdout:\n%s", code, tt.exit, r.shown(), r.stdout.String())
			}
			after := snapshot(t, home)
			for rel := range before {
				if contains(tt.changed, rel) == (before[rel] == after[rel]) {
					t.Errorf("%s changed=%v, want %v:\n%s", rel, before[rel] != after[rel], contains(tt.changed, rel), after[rel])
				}
			}
			if tt.clients == nil {
				if r.stdout.Len() != 0 {
					t.Errorf("a cancelled setup printed on stdout:\n%s", r.stdout.String())
				}
				// A failure on a terminal is sentences ending in its code (decision 0061).
				if !strings.Contains(r.shown(), "flameox: setup was cancelled at the prompt; nothing was written. (CANCELLED)") {
					t.Errorf("no CANCELLED failure on the terminal:\n%s", r.shown())
				}
				return
			}
			rep := oneJSON(t, r.stdout.Bytes())
			var ids []any
			for _, c := range rep["clients"].([]any) {
				ids = append(ids, c.(map[string]any)["id"])
			}
			if diff := cmp.Diff(tt.clients, ids); diff != "" {
				t.Errorf("report clients (-want +got):\n%s", diff)
			}
			for _, rel := range tt.changed {
				if !strings.Contains(after[rel], rep["command"].(string)) {
					t.Errorf("%s does not name the launcher:\n%s", rel, after[rel])
				}
			}
			if strings.HasPrefix(before[".codex/config.toml"], "#") && contains(tt.changed, ".codex/config.toml") &&
				!strings.HasPrefix(after[".codex/config.toml"], "# my codex settings\n") {
				t.Errorf("the Codex comment did not survive:\n%s", after[".codex/config.toml"])
			}
			if !strings.Contains(r.shown(), "\rflameox: [") || !strings.Contains(r.shown(), "configured ") {
				t.Errorf("no progress on the terminal:\n%q", r.shown())
			}
		})
	}
}

// regexpLine reports whether some line of s contains text.
func regexpLine(s, text string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, text) {
			return true
		}
	}
	return false
}

// TestSetupNoTerminalNoPrompt: stdin not a terminal keeps the typed consent failure even
// with stderr on a terminal, and nothing is written.
func TestSetupNoTerminalNoPrompt(t *testing.T) {
	home := t.TempDir()
	before := clientFiles(t, home)
	exe, err := exec.LookPath("flameox")
	if err != nil {
		t.Fatal(err)
	}
	_, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	var out, errb bytes.Buffer
	cmd := exec.Command(exe, "setup")
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = cliEnv(home), strings.NewReader("1\ny\n"), &out, &errb
	if err := cmd.Run(); err == nil {
		t.Fatal("setup without a terminal on stdin succeeded")
	}
	if !strings.Contains(errb.String(), `"code":"INVALID_INPUT"`) || !strings.Contains(errb.String(), "detection is not consent") {
		t.Errorf("stderr is not the consent failure:\n%s", errb.String())
	}
	if diff := cmp.Diff(before, snapshot(t, home)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}
}

// TestCaptureProgress: a capture with stderr on a terminal shows the runtime's progress
// steps there while stdout stays one JSON document; with stderr on a pipe, stderr is empty.
func TestCaptureProgress(t *testing.T) {
	home := t.TempDir()
	args := []string{"capture", "--provider", "direct", "--cwd", home, "--", "sh", "-c", "echo captured"}
	r := startPTY(t, cliEnv(home), args...)
	if code := r.wait(); code != 0 {
		t.Fatalf("exit status %d; terminal:\n%s", code, r.shown())
	}
	doc := oneJSON(t, r.stdout.Bytes())
	if doc["operation"] != "preview_artifact" {
		t.Errorf("stdout is not the capture result:\n%s", r.stdout.String())
	}
	shown := r.shown()
	for _, want := range []string{"\rflameox: [1/", "capture admitted", "captured "} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal does not show %q:\n%q", want, shown)
		}
	}
	if !strings.HasSuffix(shown, "\r\n") {
		t.Errorf("the progress line is not finished with a newline:\n%q", shown)
	}

	exe, _ := exec.LookPath("flameox")
	var out, errb bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = cliEnv(home), &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	oneJSON(t, out.Bytes())
	if errb.Len() != 0 {
		t.Errorf("stderr on a pipe holds output:\n%q", errb.String())
	}
}

// TestUpdateProgress: update on a terminal shows its first step, then its failure on a line
// of its own, while stdout is the report alone.
func TestUpdateProgress(t *testing.T) {
	home := t.TempDir()
	r := startPTY(t, cliEnv(home), "update", "--check")
	if code := r.wait(); code != 1 {
		t.Fatalf("exit status %d; terminal:\n%s", code, r.shown())
	}
	rep := oneJSON(t, r.stdout.Bytes())
	if diff := cmp.Diff([]any{}, rep["clients"]); diff != "" {
		t.Errorf("report clients (-want +got):\n%s", diff)
	}
	// The progress line ends before the failure, which is a sentence on a terminal
	// (decision 0061).
	if want := "\rflameox: finding the configured clients\r\nflameox: No configured Flameox MCP clients found. Run flameox setup first. (SETUP_FAILURE)"; !strings.Contains(r.shown(), want) {
		t.Errorf("the terminal does not show %q:\n%q", want, r.shown())
	}
}
