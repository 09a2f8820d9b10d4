package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// runStdoutTTY runs the flameox executable with stdout on a pseudo-terminal (stdin empty,
// stderr on a pipe) and returns the exit status, what the terminal showed (its \r\n made
// \n) and stderr.
func runStdoutTTY(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	exe, err := exec.LookPath("flameox")
	if err != nil {
		t.Fatal(err)
	}
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	defer master.Close()
	var screen, errb bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, strings.NewReader(""), tty, &errb
	err = cmd.Start()
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("the terminal output did not end")
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, strings.ReplaceAll(screen.String(), "\r\n", "\n"), errb.String()
}

// runPiped runs the flameox executable with stdout and stderr on pipes.
func runPiped(t *testing.T, env []string, args ...string) (int, []byte, string) {
	t.Helper()
	exe, err := exec.LookPath("flameox")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.Bytes(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.Bytes(), errb.String()
}

// TestSetupOutputTerminalOrPipe: with stdout on a terminal setup ends with a short summary
// for a person; with --json, or stdout on a pipe, the report is one JSON document.
func TestSetupOutputTerminalOrPipe(t *testing.T) {
	home := t.TempDir()
	clientFiles(t, home)
	env := cliEnv(home)
	code, screen, stderr := runStdoutTTY(t, env, "setup", "--client", "codex", "--client", "vscode", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, screen, stderr)
	}
	for _, want := range []string{"Dry run: nothing was prepared or written. With --yes, setup would register Flameox ",
		"  Codex    update  " + home + "/.codex/config.toml\n", "  VS Code  create  " + home + "/.config/Code/User/mcp.json\n"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the summary lacks %q:\n%s", want, screen)
		}
	}
	code, screen, stderr = runStdoutTTY(t, env, "setup", "--client", "codex", "--client", "vscode", "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, screen, stderr)
	}
	for _, want := range []string{") is registered with:\n", "  Codex    updated  ", "  VS Code  created  ",
		"Restart or reconnect Codex and VS Code so that they start Flameox.\n"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the summary lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "{") {
		t.Errorf("the summary holds JSON:\n%s", screen)
	}
	// --json on the terminal: the report.
	code, screen, _ = runStdoutTTY(t, env, "setup", "--client", "codex", "--yes", "--json")
	if doc := oneJSON(t, []byte(screen)); code != 0 || doc["clients"].([]any)[0].(map[string]any)["status"] != "already_current" {
		t.Errorf("--json on a terminal: %d\n%s", code, screen)
	}
	// A pipe: the report.
	code, out, _ := runPiped(t, env, "setup", "--client", "codex", "--yes")
	if doc := oneJSON(t, out); code != 0 || doc["verified"] != true {
		t.Errorf("piped: %d\n%s", code, out)
	}
	// A refusal is a sentence on stderr, whatever stdout is, beside the typed failure.
	if err := os.WriteFile(home+"/.cursor/mcp.json", []byte(`{"mcpServers": {"flameox": {"url": "http://127.0.0.1:1/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, screen, stderr = runStdoutTTY(t, env, "setup", "--client", "cursor", "--yes")
	if code != 1 || !strings.Contains(screen, "Nothing was written; setup planned to register Flameox") ||
		!strings.Contains(screen, "  Cursor  refused (not_stdio)  ") ||
		!strings.Contains(stderr, "flameox: Cursor was not configured: the flameox entry is not a stdio launcher (its transport is url)") ||
		!strings.Contains(stderr, `"code":"SETUP_FAILURE"`) {
		t.Errorf("refused: %d\n%s\n%s", code, screen, stderr)
	}
}

// TestUpdateOutputTerminalOrPipe: update --check's summary on a terminal, its report on a
// pipe, both when the release lookup fails.
func TestUpdateOutputTerminalOrPipe(t *testing.T) {
	home := t.TempDir()
	clientFiles(t, home)
	env := cliEnv(home)
	if code, out, stderr := runPiped(t, env, "setup", "--client", "codex", "--yes"); code != 0 {
		t.Fatalf("setup: %s %s", out, stderr)
	}
	env = append(env, "GOPROXY=off")
	code, screen, stderr := runStdoutTTY(t, env, "update", "--check")
	if code != 1 || !strings.Contains(screen, "The latest release could not be resolved: GOPROXY's first entry is \"off\"") ||
		!strings.Contains(screen, "  Codex  v0.") || !strings.Contains(stderr, `"reason":"release_lookup_failed"`) {
		t.Errorf("terminal: %d\n%s\n%s", code, screen, stderr)
	}
	code, out, _ := runPiped(t, env, "update", "--check")
	if doc := oneJSON(t, out); code != 1 || doc["target_version"] != nil || doc["release_lookup_error"] == nil {
		t.Errorf("piped: %d\n%s", code, out)
	}
}
