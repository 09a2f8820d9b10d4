package setup

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Launcher is the stdio command a client runs to start Flameox.
type Launcher struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// ServeLauncher launches executable (absolute) as `mcp serve`.
func ServeLauncher(executable string) Launcher {
	return Launcher{Command: executable, Args: []string{"mcp", "serve"}}
}

// Actions of a plan.
const (
	ActionCreate         = "create"
	ActionUpdate         = "update"
	ActionAlreadyCurrent = "already_current"
	ActionRefused        = "refused"
)

// maxConfigBytes bounds a configuration file read for editing.
const maxConfigBytes = 64 << 20

// Plan is the edit planned for one client: what the file will become and the digest of
// the bytes it was planned from.
type Plan struct {
	Client
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Warnings are non-fatal findings about the existing entry (a disabled entry, a
	// custom launcher that is replaced).
	Warnings []Warning `json:"warnings,omitempty"`
	// Existing is the flameox entry the file held when it was planned.
	Existing Configured `json:"-"`

	existed bool
	sum     [32]byte
	mode    fs.FileMode
	content []byte
}

// entry is the flameox entry for a client: {command, args} for most clients, OpenCode's
// {type:"local", command:[cmd, args...], enabled:true} (an existing enabled flag is kept),
// VS Code's {type:"stdio", command, args}.
func entry(c Client, l Launcher) []member {
	if c.ID == "vscode" {
		return []member{{name: "type", value: "stdio"}, {name: "command", value: l.Command}, {name: "args", value: l.Args}}
	}
	if c.ID == "opencode" {
		return []member{
			{name: "type", value: "local"},
			{name: "command", value: append([]string{l.Command}, l.Args...)},
			{name: "enabled", value: true, onlyIfAbsent: true},
		}
	}
	return []member{{name: "command", value: l.Command}, {name: "args", value: l.Args}}
}

// PlanClient reads the client's file and plans the edit; nothing is written. A file that
// cannot be edited safely, or whose flameox entry is not a stdio launcher (an HTTP
// server is not turned into a stdio one), is planned as refused with a reason; a
// disabled entry is planned with a warning (it stays disabled).
func PlanClient(c Client, l Launcher) Plan {
	p := Plan{Client: c, mode: 0o600}
	st, err := os.Lstat(c.Path)
	var src []byte
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.Action = ActionCreate
	case err != nil:
		return p.refused("unreadable", "the configuration file cannot be inspected")
	case st.Mode()&fs.ModeSymlink != 0:
		return p.refused("symlink", "the configuration file is a symbolic link; edit its target by hand or replace the link with a file")
	case !st.Mode().IsRegular():
		return p.refused("not_regular_file", "the configuration path is not a regular file")
	default:
		p.existed, p.mode = true, st.Mode().Perm()
		src, err = readBounded(c.Path)
		if err != nil {
			var r *refusal
			if errors.As(err, &r) {
				return p.refused(r.reason, r.message)
			}
			return p.refused("unreadable", "the configuration file cannot be read")
		}
		p.sum = sha256.Sum256(src)
		p.Action = ActionUpdate
	}
	var out []byte
	var changed bool
	if c.Format == TOML {
		out, changed, err = editTOML(src, c.section, entry(c, l))
	} else {
		out, changed, err = editJSON(src, c.section, entry(c, l))
	}
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return p.refused(r.reason, r.message)
		}
		return p.refused("unsupported_layout", err.Error())
	}
	if p.existed {
		if p.Existing, err = readEntry(c, src); err != nil {
			return p.refused("invalid_syntax", "the file cannot be parsed")
		}
	}
	if t := p.Existing.NotStdio; t != "" {
		return p.refused(WarnNotStdio, NotStdioMessage(t))
	}
	if p.Existing.Disabled {
		p.Warnings = append(p.Warnings, DisabledWarning(c))
	}
	if !changed && p.existed {
		p.Action = ActionAlreadyCurrent
	}
	p.content = out
	return p
}

func (p Plan) refused(reason, message string) Plan {
	p.Action, p.Reason, p.Message = ActionRefused, reason, message
	return p
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigBytes {
		return nil, refuse("too_large", "the configuration file is larger than 64 MiB")
	}
	return b, nil
}

// ErrChanged is returned by Apply when the file changed after it was planned.
var ErrChanged = errors.New("the configuration file changed after setup planned its edit")

// Apply writes a create or update plan atomically: a temporary file in the same
// directory, synced, then renamed over the path after checking that the path is still
// what was planned from (absent, or a regular file with the planned digest). It returns
// ErrChanged when it is not; the file is then left as it is.
func Apply(p Plan) error {
	if p.Action != ActionCreate && p.Action != ActionUpdate {
		return nil
	}
	dir := filepath.Dir(p.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(p.Path)+".flameox-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := tmp.Write(p.content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(p.mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := unchanged(p); err != nil {
		return err
	}
	if err := os.Rename(name, p.Path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// unchanged re-checks the path against the plan just before the rename.
func unchanged(p Plan) error {
	st, err := os.Lstat(p.Path)
	if !p.existed {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return ErrChanged
	}
	if err != nil || !st.Mode().IsRegular() {
		return ErrChanged
	}
	b, err := readBounded(p.Path)
	if err != nil || !bytes.Equal(sumOf(b), p.sum[:]) {
		return ErrChanged
	}
	return nil
}

func sumOf(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
