package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"

	"github.com/flameox/flameox/internal/broker"
)

// Bounds of one subprocess's output: each stream keeps its first MaxOutput bytes, and a
// process that prints more than maxObserved bytes in all is stopped (output_limit).
const (
	MaxOutput   = 1 << 20
	maxObserved = 8 << 20
)

// Bounds of the checks that run a Flameox executable.
const (
	versionTimeout = 5 * time.Second
	inspectTimeout = 30 * time.Second
)

// Exec runs argv through the subprocess broker (decision 0028): env (nil: the process
// environment), the context's deadline as the wall-clock bound and its cancellation, its
// own contained process tree terminated whole on every exit, and bounded output. It
// returns the first MaxOutput bytes of stdout and stderr, and an error unless the process
// exited 0 within its bounds (ctx.Err() when the deadline or a cancellation ended it).
// setup and update run every executable through it.
func Exec(ctx context.Context, env []string, argv ...string) (stdout, stderr []byte, err error) {
	path := argv[0]
	if !filepath.IsAbs(path) {
		if path, err = exec.LookPath(path); err != nil {
			return nil, nil, fmt.Errorf("%s is not on PATH", filepath.Base(argv[0]))
		}
	}
	if env == nil {
		env = os.Environ()
	}
	spec := broker.Spec{Path: path, Args: argv, Env: env, ExcerptBytes: MaxOutput, MaxOutputBytes: maxObserved}
	if d, ok := ctx.Deadline(); ok {
		if spec.Timeout = time.Until(d); spec.Timeout <= 0 {
			return nil, nil, context.DeadlineExceeded
		}
	}
	res, err := broker.Run(ctx, spec)
	if res != nil {
		stdout, stderr = res.Stdout.Excerpt, res.Stderr.Excerpt
	}
	switch {
	case ctx.Err() != nil:
		return stdout, stderr, ctx.Err()
	case err != nil:
		return stdout, stderr, fmt.Errorf("%s could not be started", filepath.Base(path))
	case res.Cancelled:
		return stdout, stderr, context.Canceled
	case res.Limit != nil && res.Limit.Kind == "timeout":
		return stdout, stderr, context.DeadlineExceeded
	case res.Limit != nil:
		return stdout, stderr, fmt.Errorf("%s was stopped at its %s bound", filepath.Base(path), res.Limit.Kind)
	case res.ExitCode == nil:
		return stdout, stderr, fmt.Errorf("%s did not exit normally", filepath.Base(path))
	case *res.ExitCode != 0:
		return stdout, stderr, fmt.Errorf("%s exited with status %d", filepath.Base(path), *res.ExitCode)
	}
	return stdout, stderr, nil
}

// Canonical returns v as a canonical semantic version with a leading v ("0.2.0-go.1" is
// "v0.2.0-go.1"), or "" when it is not one.
func Canonical(v string) string {
	v = strings.TrimSpace(v)
	if v != "" && v[0] != 'v' {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return ""
	}
	return semver.Canonical(v)
}

// Identity is what an executable's `--version` says: whether it is Flameox (its output's
// first word is flameox, as `flameox version 0.2.0` and every release print it, whatever
// the executable is named) and the canonical version it names ("" when none).
type Identity struct {
	Flameox bool
	Version string
	// Err says why nothing was read (the executable failed, timed out, printed nothing).
	Err error
}

// Identify runs `exe --version` through the broker (5 s within ctx).
func Identify(ctx context.Context, exe string) Identity {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, _, err := Exec(ctx, os.Environ(), exe, "--version")
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%s --version did not answer within %s", exe, versionTimeout)
		}
		return Identity{Err: err}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return Identity{Err: fmt.Errorf("%s --version printed nothing", exe)}
	}
	return Identity{Flameox: strings.EqualFold(f[0], "flameox"), Version: Canonical(f[len(f)-1])}
}

// ServeShape reports whether l has the shape of a Flameox launcher: an absolute path to
// an existing executable file, run with exactly `mcp serve`. It reads the file system
// only; Recognize also asks the executable.
func ServeShape(l Launcher) bool {
	if !filepath.IsAbs(l.Command) || !slices.Equal(l.Args, []string{"mcp", "serve"}) {
		return false
	}
	st, err := os.Stat(l.Command)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	return goruntime.GOOS == "windows" || st.Mode().Perm()&0o111 != 0
}

// Recognize is the one rule setup and update share for "this entry runs Flameox": the
// launcher has the serve shape (ServeShape) and its executable's --version says Flameox,
// whatever the executable is named. It returns the version the executable reports.
func Recognize(ctx context.Context, l Launcher) (Identity, bool) {
	if !ServeShape(l) {
		return Identity{}, false
	}
	id := Identify(ctx, l.Command)
	return id, id.Flameox
}

// VerifyExecutable checks the executable a client will run before any file names it: it
// is a regular file, its --version says Flameox at version (canonical comparison), and
// `exe mcp inspect` prints a tool catalog with at least one tool. The error is a
// sentence that says which check failed.
func VerifyExecutable(ctx context.Context, exe, version string) error {
	if st, err := os.Stat(exe); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not an executable file", exe)
	}
	id := Identify(ctx, exe)
	switch {
	case ctx.Err() != nil:
		return timeoutError(ctx, "checking its version")
	case id.Err != nil:
		return fmt.Errorf("%s does not report its version: %v", exe, id.Err)
	case !id.Flameox:
		return fmt.Errorf("%s --version does not say Flameox", exe)
	case id.Version == "" || id.Version != Canonical(version):
		return fmt.Errorf("%s reports version %q, not %s", exe, id.Version, version)
	}
	ictx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	out, stderr, err := Exec(ictx, os.Environ(), exe, "mcp", "inspect")
	if ctx.Err() != nil {
		return timeoutError(ctx, "listing its tools")
	}
	var doc struct {
		ToolCount int `json:"tool_count"`
	}
	if err != nil || json.Unmarshal(out, &doc) != nil || doc.ToolCount < 1 {
		msg := fmt.Sprintf("%s does not list its tools with `mcp inspect`", exe)
		if why := FailureMessage(stderr); why != "" {
			msg += ": " + why
		} else if err != nil {
			msg += " (" + err.Error() + ")"
		}
		return errors.New(msg)
	}
	return nil
}

func timeoutError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("cancelled while %s", what)
	}
	return fmt.Errorf("the --timeout-seconds budget ran out while %s", what)
}

// maxQuoted bounds what a failure quotes of a subprocess's stderr.
const maxQuoted = 2048

// FailureMessage is the message of the typed failure a flameox subprocess printed on
// stderr (its last JSON line with a message), else its last nonempty line, bounded.
func FailureMessage(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var f struct {
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(lines[i]), &f) == nil && f.Message != "" {
			return bound(f.Message)
		}
	}
	return bound(strings.TrimSpace(lines[len(lines)-1]))
}

func bound(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "…"
	}
	return s
}

// goBuildDir is a directory the go command builds in and removes: go run's and go test's
// work directories (go-build123456789).
var goBuildDir = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^go-build[0-9]+$`) })

// Temporary reports why exe cannot be registered because it lives somewhere temporary: in
// a go command work directory (a path element go-buildNNN: go run, go test), under the go
// build cache goCache, or under the temporary directory tempDir (os.TempDir of this
// process, which follows TMPDIR, TEMP or TMP). Paths are compared as given and with
// symbolic links resolved. "" means exe is not temporary.
func Temporary(exe, tempDir, goCache string) string {
	resolved := exe
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		resolved = r
	}
	for _, p := range []string{exe, resolved} {
		for _, el := range strings.Split(filepath.ToSlash(p), "/") {
			if goBuildDir().MatchString(el) {
				return "a go command work directory (" + el + "), which go run and go test remove"
			}
		}
	}
	if goCache != "" && (under(exe, goCache) || under(resolved, goCache)) {
		return "the Go build cache (" + goCache + "), which go clean and cache trimming remove"
	}
	if tempDir != "" && (under(exe, tempDir) || under(resolved, tempDir)) {
		return "the temporary directory (" + tempDir + ")"
	}
	return ""
}

// under reports whether path is root or inside it, root taken as given and with its
// symbolic links resolved.
func under(path, root string) bool {
	roots := []string{root}
	if r, err := filepath.EvalSymlinks(root); err == nil && r != root {
		roots = append(roots, r)
	}
	for _, root := range roots {
		root, path := filepath.Clean(root), filepath.Clean(path)
		if goruntime.GOOS == "windows" || goruntime.GOOS == "darwin" {
			root, path = strings.ToLower(root), strings.ToLower(path)
		}
		rel, err := filepath.Rel(root, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// GoCache is the go build cache this process would use: GOCACHE, else the default under
// the user cache directory; "" when unknown or off.
func GoCache(getenv func(string) string) string {
	switch v := getenv("GOCACHE"); {
	case v == "off":
		return ""
	case v != "" && filepath.IsAbs(v):
		return v
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "go-build")
	}
	return ""
}

// Advisory is a non-fatal note of the report.
type Advisory struct {
	Kind    string  `json:"kind"`
	Path    string  `json:"path"`
	Version *string `json:"version"`
	Message string  `json:"message"`
}

// PathAdvisory is the advisory for another flameox first on PATH (lookPath("flameox"))
// that reports a different version than the one registered (exe at version), or nil.
// setup never upgrades or removes that independently managed CLI.
func PathAdvisory(ctx context.Context, exe, version string, lookPath func(string) (string, error)) *Advisory {
	other, err := lookPath("flameox")
	if err != nil || !filepath.IsAbs(other) || sameFile(other, exe) {
		return nil
	}
	id := Identify(ctx, other)
	if id.Flameox && id.Version != "" && id.Version == Canonical(version) {
		return nil
	}
	a := &Advisory{Kind: "path_cli_version", Path: other}
	said := "does not report a Flameox version"
	if id.Flameox && id.Version != "" {
		v := id.Version
		a.Version, said = &v, "is version "+v
	}
	a.Message = fmt.Sprintf("The flameox first on PATH (%s) %s, not the %s registered here (%s): commands typed in a shell run that one. "+
		"It is managed separately; setup neither upgrades nor removes it.", other, said, version, exe)
	return a
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
