package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/setup"
	"github.com/flameox/flameox/internal/testtool"
)

// readmeCommands returns the `go run ./cmd/flameox ...` lines of the README's sh blocks.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock && line == "```sh"
		case inBlock && strings.HasPrefix(line, "go run ./cmd/flameox "):
			out = append(out, shellSplit(t, strings.TrimPrefix(line, "go run ./cmd/flameox ")))
		}
	}
	return out
}

// shellSplit splits a README command line: words, and single-quoted words.
func shellSplit(t *testing.T, s string) []string {
	var words []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '\'' {
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				t.Fatalf("unbalanced quote in %q", s)
			}
			words, s = append(words, s[1:end+1]), s[end+2:]
			continue
		}
		w, rest, _ := strings.Cut(s, " ")
		words, s = append(words, w), rest
	}
	return words
}

// TestReadmeCommandsRunOnAFreshClone runs every command of the README's "Run it" section
// in a directory that holds only what a fresh clone ships (examples/), with no
// ../shared beside it, and a fresh evidence store. EVIDENCE_ID is the id the preserve
// command printed; `mcp serve` is only checked to be a command.
func TestReadmeCommandsRunOnAFreshClone(t *testing.T) {
	testtool.Require(t, "python3")
	clone := filepath.Join(t.TempDir(), "flameox")
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(clone, "examples"), os.DirFS(examples)); err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t)
	t.Chdir(clone)
	t.Setenv("FLAMEOX_DATA_DIR", filepath.Join(t.TempDir(), "store"))
	if len(cmds) < 7 {
		t.Fatalf("found only %d README commands", len(cmds))
	}
	evidence := ""
	for _, args := range cmds {
		if args[0] == "mcp" {
			continue
		}
		for i, a := range args {
			if a == "EVIDENCE_ID" {
				args[i] = evidence
			}
		}
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("flameox %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
		var out map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("flameox %s: not one JSON result: %v", strings.Join(args, " "), err)
		}
		if p, ok := out["preserved"].(map[string]any); ok {
			evidence = p["evidence_id"].(string)
		}
		if out["status"] != "complete" {
			t.Errorf("flameox %s: status %v", strings.Join(args, " "), out["status"])
		}
	}
	if evidence == "" {
		t.Error("no README command preserved evidence")
	}
}

// connectSection returns the README's "Connect your agent" section.
func connectSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Connect your agent\n")
	if !ok {
		t.Fatal("README has no \"Connect your agent\" section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}

// TestReadmeConnectSection runs what the README's "Connect your agent" section tells a
// new user (issue 35: "the README's connect section is exercised by a test"): its install
// line names this module's command, its setup command and every client of its table
// write the file the table names, in a fresh HOME, with an entry that runs this flameox
// as `mcp serve`; and the table lists every client setup supports.
func TestReadmeConnectSection(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the README's table gives the Linux locations")
	}
	sec := connectSection(t)
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := strings.Fields(strings.SplitN(string(mod), "\n", 2)[0])[1]
	if !strings.Contains(sec, "go install "+module+"/cmd/flameox@") {
		t.Errorf("the install line does not name %s/cmd/flameox", module)
	}
	exe, err := exec.LookPath("flameox")
	if err != nil {
		t.Fatal(err)
	}
	run := func(home string, args ...string) string {
		t.Helper()
		cmd := exec.Command(exe, args...)
		cmd.Env = cliEnv(home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flameox %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The section's own commands, as a user types them.
	var commands int
	for _, line := range strings.Split(sec, "\n") {
		if args, ok := strings.CutPrefix(strings.TrimSpace(line), "flameox "); ok {
			run(t.TempDir(), strings.Fields(args)...)
			commands++
		}
	}
	if commands == 0 {
		t.Error("the section runs no flameox command")
	}
	// Every row of the table: `| name | `id` | `path` (...) |`.
	row := regexp.MustCompile("^\\| [^|]+ \\| `([a-z-]+)` \\| `~/([^`]+)`")
	seen := map[string]bool{}
	for _, line := range strings.Split(sec, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, rel := m[1], m[2]
		seen[id] = true
		home := t.TempDir()
		run(home, "setup", "--client", id, "--yes")
		b, err := os.ReadFile(filepath.Join(home, rel))
		if err != nil {
			t.Errorf("%s: the README's file ~/%s was not written: %v", id, rel, err)
			continue
		}
		if !strings.Contains(string(b), `"`+exe+`"`) || !strings.Contains(string(b), `"mcp", "serve"`) || !strings.Contains(string(b), "flameox") {
			t.Errorf("%s: ~/%s has no flameox entry running %s mcp serve:\n%s", id, rel, exe, b)
		}
	}
	for _, id := range setup.ClientIDs {
		if !seen[id] {
			t.Errorf("the README's client table lacks %s", id)
		}
	}
}
