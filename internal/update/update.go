// Package update resolves Flameox releases from the Go module proxy and installs one into
// a versioned directory with `go install`, for `flameox update` (decision 0026).
package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/flameox/flameox/internal/broker"
)

// Module is the Go module whose cmd/flameox is installed.
const Module = "github.com/flameox/flameox"

// Bounds of the release lookup.
const (
	ProxyTimeout  = 10 * time.Second
	MaxProxyBytes = 1 << 20
)

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

// Compare compares two canonical versions like semver.Compare.
func Compare(a, b string) int { return semver.Compare(a, b) }

// ProxyURL returns the first entry of GOPROXY (default https://proxy.golang.org). off and
// direct have no release list: an error says to pass --version.
func ProxyURL(goproxy string) (string, error) {
	if goproxy == "" {
		goproxy = "https://proxy.golang.org,direct"
	}
	first := strings.TrimSpace(strings.FieldsFunc(goproxy, func(r rune) bool { return r == ',' || r == '|' })[0])
	switch first {
	case "off", "direct", "":
		return "", fmt.Errorf("GOPROXY's first entry is %q, which has no release list", first)
	}
	return strings.TrimRight(first, "/"), nil
}

// Latest returns the highest release (no prerelease) that the proxy lists for Module:
// <proxy>/<module>/@v/list, else <proxy>/<module>/@latest. It reads at most
// MaxProxyBytes per response within ProxyTimeout.
func Latest(ctx context.Context, proxy string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ProxyTimeout)
	defer cancel()
	list, err := fetch(ctx, proxy+"/"+Module+"/@v/list")
	if err != nil && !errors.Is(err, errNotFound) {
		return "", err
	}
	best := ""
	for _, line := range strings.Split(string(list), "\n") {
		v := strings.TrimSpace(line)
		if semver.IsValid(v) && semver.Prerelease(v) == "" && semver.Build(v) == "" && (best == "" || semver.Compare(v, best) > 0) {
			best = v
		}
	}
	if best != "" {
		return best, nil
	}
	info, err := fetch(ctx, proxy+"/"+Module+"/@latest")
	if err != nil {
		if errors.Is(err, errNotFound) {
			return "", fmt.Errorf("the module proxy lists no release of %s", Module)
		}
		return "", err
	}
	var doc struct{ Version string }
	if json.Unmarshal(info, &doc) != nil || !semver.IsValid(doc.Version) || semver.Prerelease(doc.Version) != "" {
		return "", fmt.Errorf("the module proxy's @latest for %s is not a release version", Module)
	}
	return doc.Version, nil
}

var errNotFound = errors.New("not found")

// fetch reads one proxy document: a file for file:// proxies, else an HTTP GET.
func fetch(ctx context.Context, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("GOPROXY is not a URL")
	}
	var body io.ReadCloser
	switch u.Scheme {
	case "file":
		f, err := os.Open(filepath.FromSlash(u.Path))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, errNotFound
			}
			return nil, fmt.Errorf("the module proxy file cannot be read")
		}
		body = f
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("the module proxy did not answer within %s", ProxyTimeout)
			}
			return nil, fmt.Errorf("the module proxy cannot be reached")
		}
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
			resp.Body.Close()
			return nil, errNotFound
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("the module proxy answered HTTP %d", resp.StatusCode)
		}
		body = resp.Body
	default:
		return nil, fmt.Errorf("GOPROXY scheme %q is not supported", u.Scheme)
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, MaxProxyBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the module proxy did not answer within %s", ProxyTimeout)
		}
		return nil, fmt.Errorf("the module proxy's answer cannot be read")
	}
	if len(b) > MaxProxyBytes {
		return nil, fmt.Errorf("the module proxy's answer is larger than %d bytes", MaxProxyBytes)
	}
	return b, nil
}

// Bounds of one subprocess's output: each stream keeps its first maxOutput bytes, and a
// process that prints more than maxObserved bytes in all is stopped (output_limit).
const (
	maxOutput   = 1 << 20
	maxObserved = 8 << 20
)

// Exec runs argv through the subprocess broker (decision 0028): env (nil: the process
// environment), the context's deadline as the wall-clock bound and its cancellation, its
// own contained process tree terminated whole on every exit, and bounded output. It
// returns the first maxOutput bytes of stdout and stderr, and an error unless the process
// exited 0 within its bounds (ctx.Err() when the deadline or a cancellation ended it).
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
	spec := broker.Spec{Path: path, Args: argv, Env: env, ExcerptBytes: maxOutput, MaxOutputBytes: maxObserved}
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

// ProbeVersion runs `exe --version` (5 s) and returns the canonical version it prints
// (its last field), or "" when it prints none.
func ProbeVersion(ctx context.Context, exe string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, _, err := Exec(ctx, os.Environ(), exe, "--version")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return ""
	}
	return Canonical(f[len(f)-1])
}

// Install runs `go install Module/cmd/flameox@version` with GOBIN set to a new directory
// beside dir and renames it to dir, so dir holds a complete installation or nothing. An
// existing dir whose flameox verifies is reused. It returns the installed executable.
//
// step, when not nil, is told each step (reusing, installing, verifying) as it begins.
func Install(ctx context.Context, dir, version string, step func(string)) (string, error) {
	if step == nil {
		step = func(string) {}
	}
	exe := filepath.Join(dir, "flameox")
	step("checking for an installed flameox " + version)
	if Verify(ctx, exe, version) == nil {
		return exe, nil
	}
	goexe, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no Go toolchain (go) is on PATH; install Go from https://go.dev/dl/ and run update again")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("the versions directory cannot be created")
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	if err != nil {
		return "", fmt.Errorf("the versions directory is not writable")
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "GOBIN="+tmp)
	step("installing flameox " + version + " with go install")
	_, stderr, err := Exec(ctx, env, goexe, "install", Module+"/cmd/flameox@"+version)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("go install did not finish before the timeout")
		}
		return "", fmt.Errorf("go install %s/cmd/flameox@%s failed: %s", Module, version, lastLine(stderr))
	}
	step("verifying flameox " + version)
	if err := Verify(ctx, filepath.Join(tmp, "flameox"), version); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("the installed release cannot be moved into place")
	}
	return exe, nil
}

// Verify checks that exe reports version and serves a tool catalog (`mcp inspect`).
func Verify(ctx context.Context, exe, version string) error {
	if st, err := os.Stat(exe); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("go install did not produce a flameox executable")
	}
	if got := ProbeVersion(ctx, exe); got != semver.Canonical(version) {
		return fmt.Errorf("the installed flameox reports version %q, not %s", got, version)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, _, err := Exec(ictx, os.Environ(), exe, "mcp", "inspect")
	var doc struct {
		ToolCount int `json:"tool_count"`
	}
	if err != nil || json.Unmarshal(out, &doc) != nil || doc.ToolCount < 1 {
		return fmt.Errorf("the installed flameox %s does not list its tools with mcp inspect", version)
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	s := lines[len(lines)-1]
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
