package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCLIFailureMatchesMCP runs the same failing py-spy capture through the CLI and the
// MCP server: the CLI prints MCP's answer (status retryable or unavailable, code,
// message, details), and where MCP's next action calls prepare_providers the CLI's names
// the `flameox prepare` command with the same providers. testscripts/prepare.txtar holds
// the CLI's line as a golden and runs the command it names.
func TestCLIFailureMatchesMCP(t *testing.T) {
	bin, dir := t.TempDir(), t.TempDir()
	if err := os.Symlink("/bin/sh", filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	// A py-spy of another version, for the operator-set FLAMEOX_PY_SPY case.
	wrong := filepath.Join(bin, "old-py-spy")
	if err := os.WriteFile(wrong, []byte("#!/bin/sh\necho py-spy 0.3.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	t.Setenv("PATH", bin)
	t.Setenv("FLAMEOX_DATA_DIR", store)
	s := connectStore(t, "", store)
	argv := []string{"capture", "--provider", "py-spy", "--operation", "rank_cpu_hotspots", "--cwd", dir, "--", "sh", "-c", "exit 0"}
	args := map[string]any{"target": map[string]any{"argv": []string{"sh", "-c", "exit 0"}, "cwd": dir},
		"provider": map[string]any{"kind": "py-spy"}}

	for _, tc := range []struct{ name, pySpy, status string }{
		{"missing py-spy", "", "retryable"},
		{"FLAMEOX_PY_SPY of another version", wrong, "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FLAMEOX_PY_SPY", tc.pySpy)
			mcpRes, isErr := s.call("capture_and_rank_cpu_hotspots", args)
			var stdout, stderr bytes.Buffer
			if code := run(argv, nil, &stdout, &stderr); code != 1 || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, stdout.String())
			}
			var cliRes map[string]any
			if err := json.Unmarshal(stderr.Bytes(), &cliRes); err != nil {
				t.Fatalf("stderr is not one JSON object: %v: %s", err, stderr.String())
			}
			if isErr || mcpRes["status"] != tc.status || cliRes["status"] != mcpRes["status"] {
				t.Fatalf("status: MCP %v (isError %v), CLI %v; want %s", mcpRes["status"], isErr, cliRes["status"], tc.status)
			}
			mcpNext, _ := mcpRes["next_action"].(map[string]any)
			cliNext, _ := cliRes["next_action"].(map[string]any)
			delete(mcpRes, "next_action")
			delete(cliRes, "next_action")
			if diff := cmp.Diff(mcpRes, cliRes); diff != "" {
				t.Errorf("the CLI's failure differs from MCP's (-mcp +cli):\n%s", diff)
			}
			if mcpNext["tool"] != "prepare_providers" {
				if diff := cmp.Diff(mcpNext, cliNext); diff != "" {
					t.Errorf("next_action differs (-mcp +cli):\n%s", diff)
				}
				return
			}
			var ids []string
			for _, id := range mcpNext["arguments"].(map[string]any)["provider_ids"].([]any) {
				ids = append(ids, id.(string))
			}
			command := "flameox prepare " + strings.Join(ids, " ")
			msg, _ := cliNext["message"].(string)
			if cliNext["kind"] != "operator_action" || !strings.HasPrefix(msg, "Run `"+command+"`") {
				t.Fatalf("CLI next_action %v, want an operator action that runs `%s`", cliNext, command)
			}
			// The command is the CLI's: prepare, with providers it accepts.
			words := strings.Fields(command)
			c, rest, err := newRootCommand(nil, nil, nil).Find(words[1:])
			if err != nil || c.Name() != "prepare" || c.ValidateArgs(rest) != nil {
				t.Fatalf("%q is not the prepare command: %v", command, err)
			}
			for _, id := range rest {
				if !slices.Contains(c.ValidArgs, id) {
					t.Errorf("flameox prepare does not accept %q", id)
				}
			}
		})
	}
}
