package setup

import (
	"errors"
	"os"
	"path/filepath"
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
