// Package setup registers the running flameox executable as a stdio MCP server in the
// global configuration of the supported coding agents (catalog §11). It plans every
// edit before writing any, keeps each user's file intact outside the one flameox entry
// (JSONC comments, TOML comments and layout, other servers, the entry's own extra keys),
// refuses files it cannot edit safely, and replaces each file atomically after checking
// that it did not change since it was planned.
package setup

import (
	"os"
	"path/filepath"
	goruntime "runtime"
)

// Format is a configuration file format.
type Format string

const (
	JSON  Format = "json"
	JSONC Format = "jsonc"
	TOML  Format = "toml"
)

// Client is one supported MCP client with its resolved configuration path.
type Client struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Format   Format `json:"format"`
	Detected bool   `json:"detected"`
	// section is the top-level key (JSON) or table (TOML) that holds the servers.
	section string
}

// ClientIDs lists the supported clients: catalog order, then the clients added since
// (decision 0060), so that the prompt's numbers of the first six stay.
var ClientIDs = []string{"claude", "cursor", "opencode", "codex", "gemini", "antigravity", "vscode", "claude-desktop"}

// Env is what path resolution reads: the environment, the working directory that
// relative override paths are resolved against, and the operating system whose
// locations apply (GOOS; "" is the running one).
type Env struct {
	Getenv func(string) string
	Cwd    string
	GOOS   string
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return goruntime.GOOS
	}
	return e.GOOS
}

// OSEnv is the process environment and working directory.
func OSEnv() (Env, error) {
	cwd, err := os.Getwd()
	return Env{Getenv: os.Getenv, Cwd: cwd}, err
}

func (e Env) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(e.Cwd, p)
}

// dirOr returns the nonempty override variable (made absolute) or def.
func (e Env) dirOr(name, def string) string {
	if v := e.Getenv(name); v != "" {
		return e.abs(v)
	}
	return def
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// Clients resolves every supported client's configuration path and detection (catalog
// §11.1). home is $HOME; an empty home is refused by the caller.
func Clients(e Env, home string) []Client {
	var out []Client
	// Claude Code: ${CLAUDE_CONFIG_DIR:-~}/.claude.json; detected by ${CLAUDE_CONFIG_DIR:-~/.claude} or the file.
	claudeDir := e.dirOr("CLAUDE_CONFIG_DIR", home)
	claude := filepath.Join(claudeDir, ".claude.json")
	claudeMarker := e.dirOr("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude"))
	out = append(out, Client{ID: "claude", Name: "Claude Code", Path: claude, Format: JSON, section: "mcpServers",
		Detected: exists(claudeMarker) || exists(claude)})

	cursorDir := filepath.Join(home, ".cursor")
	out = append(out, Client{ID: "cursor", Name: "Cursor", Path: filepath.Join(cursorDir, "mcp.json"), Format: JSON,
		section: "mcpServers", Detected: exists(cursorDir)})

	out = append(out, openCode(e, home))

	codexDir := e.dirOr("CODEX_HOME", filepath.Join(home, ".codex"))
	codex := filepath.Join(codexDir, "config.toml")
	out = append(out, Client{ID: "codex", Name: "Codex", Path: codex, Format: TOML, section: "mcp_servers",
		Detected: exists(codexDir) || exists(codex)})

	geminiDir := filepath.Join(e.dirOr("GEMINI_CLI_HOME", home), ".gemini")
	gemini := filepath.Join(geminiDir, "settings.json")
	out = append(out, Client{ID: "gemini", Name: "Gemini CLI", Path: gemini, Format: JSON, section: "mcpServers",
		Detected: exists(geminiDir) || exists(gemini)})

	ag := filepath.Join(home, ".gemini", "config", "mcp_config.json")
	out = append(out, Client{ID: "antigravity", Name: "Google Antigravity", Path: ag, Format: JSON, section: "mcpServers",
		Detected: exists(filepath.Join(home, ".agent")) || exists(filepath.Join(home, ".gemini", "antigravity")) || exists(ag)})

	// VS Code's user mcp.json (JSONC, top-level "servers", entries with "type": "stdio") and
	// Claude Desktop's claude_desktop_config.json ("mcpServers") live in the per-user
	// application-data directory of each operating system (appData).
	app := appData(e, home)
	codeDir := filepath.Join(app, "Code")
	vscode := filepath.Join(codeDir, "User", "mcp.json")
	out = append(out, Client{ID: "vscode", Name: "VS Code", Path: vscode, Format: JSONC, section: "servers",
		Detected: exists(codeDir) || exists(vscode)})
	desktopDir := filepath.Join(app, "Claude")
	out = append(out, Client{ID: "claude-desktop", Name: "Claude Desktop", Path: filepath.Join(desktopDir, "claude_desktop_config.json"),
		Format: JSON, section: "mcpServers", Detected: exists(desktopDir)})
	return out
}

// appData is the per-user application-data directory VS Code and Claude Desktop keep
// their settings in: ~/Library/Application Support on macOS, %APPDATA% (default
// ~\AppData\Roaming) on Windows, and ${XDG_CONFIG_HOME:-~/.config} elsewhere (Electron's
// choice on Linux; Claude Desktop has no official Linux build, and its community builds
// use the same directory).
func appData(e Env, home string) string {
	switch e.goos() {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support")
	case "windows":
		return e.dirOr("APPDATA", filepath.Join(home, "AppData", "Roaming"))
	}
	return e.dirOr("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
}

// openCode resolves OpenCode's file: OPENCODE_CONFIG_DIR, then OPENCODE_CONFIG (a file),
// then the global directory under ${XDG_CONFIG_HOME:-~/.config}. Within a directory an
// existing opencode.jsonc wins over opencode.json; the global directory also admits
// config.json; the default is opencode.jsonc.
func openCode(e Env, home string) Client {
	c := Client{ID: "opencode", Name: "OpenCode", Format: JSONC, section: "mcp"}
	names := []string{"opencode.jsonc", "opencode.json"}
	var dir string
	switch {
	case e.Getenv("OPENCODE_CONFIG_DIR") != "":
		dir = e.abs(e.Getenv("OPENCODE_CONFIG_DIR"))
	case e.Getenv("OPENCODE_CONFIG") != "":
		c.Path = e.abs(e.Getenv("OPENCODE_CONFIG"))
		c.Detected = exists(c.Path) || exists(filepath.Dir(c.Path))
		return c
	default:
		dir = filepath.Join(e.dirOr("XDG_CONFIG_HOME", filepath.Join(home, ".config")), "opencode")
		names = append(names, "config.json")
	}
	c.Path = filepath.Join(dir, "opencode.jsonc")
	for _, n := range names {
		if p := filepath.Join(dir, n); exists(p) {
			c.Path = p
			break
		}
	}
	c.Detected = exists(dir)
	return c
}
