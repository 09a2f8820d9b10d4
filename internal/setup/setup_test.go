package setup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var launcher = ServeLauncher("/opt/flameox/bin/flameox")

func codex(t *testing.T, src string) (string, Plan) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Client{ID: "codex", Name: "Codex", Path: p, Format: TOML, section: "mcp_servers"}
	return p, PlanClient(c, launcher)
}

// A table appended to a file without a final newline keeps every byte before it.
func TestTOMLAppendKeepsBytes(t *testing.T) {
	src := "# c\nmodel = \"o3\" # x\n[mcp_servers.a]\ncommand = \"a\""
	_, pl := codex(t, src)
	if pl.Action != ActionUpdate {
		t.Fatalf("action %s %s", pl.Action, pl.Message)
	}
	want := src + "\n\n[mcp_servers.flameox]\ncommand = \"/opt/flameox/bin/flameox\"\nargs = [\"mcp\", \"serve\"]\n"
	if string(pl.content) != want {
		t.Fatalf("got\n%s\nwant\n%s", pl.content, want)
	}
}

// Dotted keys that define the entry outside its table are refused, not rewritten.
func TestTOMLDottedRefused(t *testing.T) {
	_, pl := codex(t, "mcp_servers.flameox.command = \"x\"\n")
	if pl.Action != ActionRefused || pl.Reason != "unsupported_layout" {
		t.Fatalf("got %s %s", pl.Action, pl.Reason)
	}
}

// A header-only table gets its keys right after the header line.
func TestTOMLEmptyTable(t *testing.T) {
	_, pl := codex(t, "[mcp_servers.flameox] # mine\n\n[other]\nx = 1\n")
	want := "[mcp_servers.flameox] # mine\ncommand = \"/opt/flameox/bin/flameox\"\nargs = [\"mcp\", \"serve\"]\n\n[other]\nx = 1\n"
	if string(pl.content) != want {
		t.Fatalf("got\n%s", pl.content)
	}
}

// A file changed between planning and writing is left alone.
func TestApplyRefusesChangedFile(t *testing.T) {
	p, pl := codex(t, "model = \"o3\"\n")
	if err := os.WriteFile(p, []byte("model = \"o4\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Apply(pl); !errors.Is(err, ErrChanged) {
		t.Fatalf("Apply = %v, want ErrChanged", err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "model = \"o4\"\n" {
		t.Fatalf("file rewritten: %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
}

// A file created by someone else after a create was planned is not overwritten.
func TestApplyRefusesAppearedFile(t *testing.T) {
	dir := t.TempDir()
	c := Client{ID: "cursor", Name: "Cursor", Path: filepath.Join(dir, "mcp.json"), Format: JSON, section: "mcpServers"}
	pl := PlanClient(c, launcher)
	if pl.Action != ActionCreate {
		t.Fatal(pl.Action)
	}
	if err := os.WriteFile(c.Path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Apply(pl); !errors.Is(err, ErrChanged) {
		t.Fatalf("Apply = %v", err)
	}
}

// One-line objects stay on one line; a trailing comma stays; a comment after the last
// member stays after it.
func TestJSONCLayouts(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{"mcpServers": {"a": {"command": "a"}}}`,
			`{"mcpServers": {"a": {"command": "a"}, "flameox": {"command": "/opt/flameox/bin/flameox", "args": ["mcp", "serve"]}}}`},
		{"{\n  \"mcpServers\": {\n    \"a\": {}, // a\n  },\n}\n",
			"{\n  \"mcpServers\": {\n    \"a\": {}, // a\n    \"flameox\": {\n      \"command\": \"/opt/flameox/bin/flameox\",\n      \"args\": [\"mcp\", \"serve\"]\n    },\n  },\n}\n"},
		{"{\n  \"mcpServers\": {\n    \"a\": {} // a\n  }\n}\n",
			"{\n  \"mcpServers\": {\n    \"a\": {}, // a\n    \"flameox\": {\n      \"command\": \"/opt/flameox/bin/flameox\",\n      \"args\": [\"mcp\", \"serve\"]\n    }\n  }\n}\n"},
	}
	for i, c := range cases {
		out, changed, err := editJSON([]byte(c.src), "mcpServers", entry(Client{ID: "cursor"}, launcher))
		if err != nil || !changed {
			t.Fatalf("%d: %v %v", i, changed, err)
		}
		if string(out) != c.want {
			t.Errorf("%d: got\n%s\nwant\n%s", i, out, c.want)
		}
	}
}

// The clients' locations per operating system: VS Code's user mcp.json and Claude
// Desktop's file in the per-user application-data directory.
func TestClientLocationsPerOS(t *testing.T) {
	home := "/h"
	for goos, want := range map[string][2]string{
		"linux":   {"/h/.config/Code/User/mcp.json", "/h/.config/Claude/claude_desktop_config.json"},
		"freebsd": {"/x/Code/User/mcp.json", "/x/Claude/claude_desktop_config.json"},
		"darwin":  {"/h/Library/Application Support/Code/User/mcp.json", "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		"windows": {"/ad/Code/User/mcp.json", "/ad/Claude/claude_desktop_config.json"},
	} {
		vars := map[string]string{"HOME": home, "APPDATA": "/ad"}
		if goos == "freebsd" {
			vars["XDG_CONFIG_HOME"] = "/x"
		}
		env := Env{Getenv: func(k string) string { return vars[k] }, Cwd: "/", GOOS: goos}
		got := map[string]string{}
		for _, c := range Clients(env, home) {
			got[c.ID] = c.Path
		}
		if got["vscode"] != want[0] || got["claude-desktop"] != want[1] {
			t.Errorf("%s: %s, %s; want %v", goos, got["vscode"], got["claude-desktop"], want)
		}
	}
	// Windows without APPDATA: the roaming directory under the user's profile, found through
	// USERPROFILE when HOME is unset.
	env := Env{Getenv: func(k string) string { return map[string]string{"USERPROFILE": "/u"}[k] }, Cwd: "/", GOOS: "windows"}
	cs, err := Locate(env)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == "claude-desktop" && c.Path != "/u/AppData/Roaming/Claude/claude_desktop_config.json" {
			t.Errorf("windows without APPDATA: %s", c.Path)
		}
	}
}

// VS Code's entry is {type: stdio, command, args}; an HTTP entry is refused, not
// rewritten; a disabled entry is planned with a warning and stays disabled.
func TestEntryKinds(t *testing.T) {
	dir := t.TempDir()
	plan := func(c Client, src string) Plan {
		t.Helper()
		c.Path = filepath.Join(dir, c.ID+".json")
		if err := os.WriteFile(c.Path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return PlanClient(c, launcher)
	}
	vscode := Client{ID: "vscode", Name: "VS Code", Format: JSONC, section: "servers"}
	p := plan(vscode, "{\n  \"servers\": {}\n}\n")
	if want := "{\n  \"servers\": {\n    \"flameox\": {\n      \"type\": \"stdio\",\n      \"command\": \"/opt/flameox/bin/flameox\",\n      \"args\": [\"mcp\", \"serve\"]\n    }\n  }\n}\n"; string(p.content) != want {
		t.Errorf("vscode:\n%s", p.content)
	}
	for _, src := range []string{
		`{"servers": {"flameox": {"type": "http", "url": "http://x/mcp"}}}`,
		`{"servers": {"flameox": {"type": "sse", "url": "http://x/sse"}}}`,
	} {
		if p := plan(vscode, src); p.Action != ActionRefused || p.Reason != WarnNotStdio {
			t.Errorf("%s: %s %s", src, p.Action, p.Reason)
		}
	}
	cursor := Client{ID: "cursor", Name: "Cursor", Format: JSON, section: "mcpServers"}
	for _, src := range []string{`{"mcpServers": {"flameox": {"url": "http://x/mcp"}}}`, `{"mcpServers": {"flameox": {"serverUrl": "http://x"}}}`} {
		if p := plan(cursor, src); p.Action != ActionRefused || p.Reason != WarnNotStdio || !strings.Contains(p.Message, "transport is url") {
			t.Errorf("%s: %s %s %s", src, p.Action, p.Reason, p.Message)
		}
	}
	p = plan(cursor, `{"mcpServers": {"flameox": {"command": "/opt/flameox/bin/flameox", "args": ["mcp", "serve"], "disabled": true}}}`)
	if p.Action != ActionAlreadyCurrent || len(p.Warnings) != 1 || p.Warnings[0].Code != WarnDisabled {
		t.Errorf("disabled: %s %+v", p.Action, p.Warnings)
	}
	p = plan(cursor, `{"mcpServers": {"flameox": {"type": "stdio", "command": "/old", "enabled": false}}}`)
	if p.Action != ActionUpdate || len(p.Warnings) != 1 || !strings.Contains(string(p.content), `"enabled": false`) {
		t.Errorf("enabled false: %s %+v\n%s", p.Action, p.Warnings, p.content)
	}
}
