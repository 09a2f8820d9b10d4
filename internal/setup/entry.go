package setup

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

// Configured is what a client's file holds under its flameox entry.
type Configured struct {
	// Present is true when the file has a flameox entry at all.
	Present bool
	// Launcher is the entry's command and arguments (OpenCode's command list split into
	// the command and the rest); empty when the entry names no command.
	Launcher Launcher
	// NotStdio names the transport of an entry that is not a stdio launcher ("http",
	// "sse", "remote", or "url" for an entry with a URL and no type); "" for stdio.
	NotStdio string
	// Disabled is true when the entry is switched off (disabled: true, or enabled: false).
	Disabled bool
	// Problem says why a file could not be read (unreadable, symlink, invalid_syntax).
	Problem string
}

// Warning is a non-fatal finding about a client's entry, in the plan (setup) or the
// client's state (update), and on stderr.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Warning codes.
const (
	// WarnDisabled: the entry is disabled; its launcher is updated and it stays disabled.
	WarnDisabled = "disabled_entry"
	// WarnCustomLauncher: the entry ran something Recognize does not recognize as Flameox.
	WarnCustomLauncher = "custom_launcher"
	// WarnNotStdio: the entry is an HTTP (or other non-stdio) server; it is left as it is.
	WarnNotStdio = "not_stdio"
)

// DisabledWarning is the warning of a disabled entry whose launcher is written anyway.
func DisabledWarning(c Client) Warning {
	return Warning{Code: WarnDisabled, Message: "the flameox entry is disabled in " + c.Name +
		"; its launcher is updated and it stays disabled, so " + c.Name + " does not start Flameox until you enable it there"}
}

// NotStdioMessage says why an entry of transport t is not rewritten.
func NotStdioMessage(t string) string {
	return "the flameox entry is not a stdio launcher (its transport is " + t + "), so it is left as it is; " +
		"remove or rename that entry to register this flameox"
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
	cf, err := readEntry(c, src)
	if err != nil {
		return Configured{Problem: "invalid_syntax"}
	}
	return cf
}

// readEntry parses src (the client's format) and describes its flameox entry.
func readEntry(c Client, src []byte) (Configured, error) {
	var doc map[string]any
	if len(strings.TrimSpace(string(src))) == 0 {
		return Configured{}, nil
	}
	if c.Format == TOML {
		if err := toml.Unmarshal(src, &doc); err != nil {
			return Configured{}, err
		}
	} else {
		std, err := hujson.Standardize(append([]byte{}, src...))
		if err != nil {
			return Configured{}, err
		}
		if err := json.Unmarshal(std, &doc); err != nil {
			return Configured{}, err
		}
	}
	section, _ := doc[c.section].(map[string]any)
	e, ok := section["flameox"].(map[string]any)
	if !ok {
		return Configured{Present: section["flameox"] != nil}, nil
	}
	out := Configured{Present: true, Disabled: e["disabled"] == true || e["enabled"] == false}
	if t, ok := e["type"].(string); ok {
		if lt := strings.ToLower(t); lt != "stdio" && lt != "local" {
			out.NotStdio = t
		}
	} else {
		for _, k := range []string{"url", "serverUrl", "httpUrl"} {
			if e[k] != nil {
				out.NotStdio = "url"
			}
		}
	}
	var argv []string
	if c.ID == "opencode" {
		argv = stringList(e["command"])
	} else if cmd, ok := e["command"].(string); ok {
		argv = append([]string{cmd}, stringList(e["args"])...)
	}
	if len(argv) > 0 {
		out.Launcher = Launcher{Command: argv[0], Args: argv[1:]}
	}
	return out, nil
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
