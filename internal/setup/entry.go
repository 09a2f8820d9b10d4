package setup

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// Configured is what a client's file holds under its flameox entry.
type Configured struct {
	// Present is true when the file has a flameox entry at all.
	Present bool
	// Launcher is the entry's command and arguments (OpenCode's command list split into
	// the command and the rest).
	Launcher Launcher
	// Recognized is true when the launcher is a Flameox executable that update may
	// repoint: an absolute path whose base name is flameox (flameox.exe), run as
	// `mcp serve`.
	Recognized bool
	// Problem says why a file could not be read (unreadable, symlink, invalid_syntax).
	Problem string
}

// ReadConfigured reads the client's flameox entry without changing anything. A missing
// file or section is Present=false; a file that cannot be read or parsed sets Problem.
func ReadConfigured(c Client) Configured {
	st, err := os.Lstat(c.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Configured{}
	case err != nil:
		return Configured{Problem: "unreadable"}
	case st.Mode()&fs.ModeSymlink != 0:
		return Configured{Problem: "symlink"}
	case !st.Mode().IsRegular():
		return Configured{Problem: "not_regular_file"}
	}
	src, err := readBounded(c.Path)
	if err != nil {
		return Configured{Problem: "unreadable"}
	}
	var doc map[string]any
	if c.Format == TOML {
		if err := toml.Unmarshal(src, &doc); err != nil {
			return Configured{Problem: "invalid_syntax"}
		}
	} else {
		std, err := hujson.Standardize(src)
		if err != nil || json.Unmarshal(std, &doc) != nil {
			return Configured{Problem: "invalid_syntax"}
		}
	}
	section, _ := doc[c.section].(map[string]any)
	e, ok := section["flameox"].(map[string]any)
	if !ok {
		return Configured{Present: section["flameox"] != nil}
	}
	out := Configured{Present: true}
	var argv []string
	if c.ID == "opencode" {
		argv = stringList(e["command"])
	} else if cmd, ok := e["command"].(string); ok {
		argv = append([]string{cmd}, stringList(e["args"])...)
	}
	if len(argv) == 0 {
		return out
	}
	out.Launcher = Launcher{Command: argv[0], Args: argv[1:]}
	base := filepath.Base(argv[0])
	out.Recognized = filepath.IsAbs(argv[0]) && (base == "flameox" || base == "flameox.exe") &&
		len(argv) == 3 && argv[1] == "mcp" && argv[2] == "serve"
	return out
}

// stringList returns v as a list of strings, or nil when it is not one.
func stringList(v any) []string {
	xs, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		s, ok := x.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}
