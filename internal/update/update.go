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

	"github.com/flameox/flameox/internal/setup"
)

// Module is the Go module whose cmd/flameox is installed.
const Module = "github.com/flameox/flameox"

// Bounds of the release lookup.
const (
	ProxyTimeout  = 10 * time.Second
	MaxProxyBytes = 1 << 20
)

// Canonical returns v as a canonical semantic version with a leading v ("0.2.0-go.1" is
// "v0.2.0-go.1"), or "" when it is not one (setup.Canonical).
func Canonical(v string) string { return setup.Canonical(v) }

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

// maxOutput is what Exec keeps of each stream.
const maxOutput = setup.MaxOutput

// Exec runs argv through the subprocess broker (setup.Exec, decision 0028): the context's
// deadline and cancellation, a contained process tree, bounded output.
func Exec(ctx context.Context, env []string, argv ...string) (stdout, stderr []byte, err error) {
	return setup.Exec(ctx, env, argv...)
}

// ProbeVersion runs `exe --version` (5 s) and returns the canonical version it prints
// (its last field), or "" when it prints none.
func ProbeVersion(ctx context.Context, exe string) string {
	return setup.Identify(ctx, exe).Version
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

// Verify checks that exe reports version and serves a tool catalog (`mcp inspect`):
// setup.VerifyExecutable, the check setup makes of the executable it registers.
func Verify(ctx context.Context, exe, version string) error {
	if st, err := os.Stat(exe); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("go install did not produce a flameox executable")
	}
	return setup.VerifyExecutable(ctx, exe, version)
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	s := lines[len(lines)-1]
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
