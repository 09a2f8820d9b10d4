package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
