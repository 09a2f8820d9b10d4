package prepare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
)

// PySpyVersion is the pinned py-spy release.
const PySpyVersion = "0.4.2"

// Binding is a verified managed executable: its exact path, SHA-256 and version.
type Binding struct {
	Path    string `json:"-"`
	SHA256  string `json:"sha256"`
	Version string `json:"version"`
}

// receipt is binding.json beside an installation: what was verified when it was made.
type receipt struct {
	ProviderID string `json:"provider_id"`
	Version    string `json:"version"`
	SHA256     string `json:"sha256"`
	Executable string `json:"executable"`
	Installer  string `json:"installer"`
}

// Installer installs managed collectors into Dir, the Flameox-owned tools directory.
type Installer struct {
	Dir  string
	Host Host
}

// pySpyDir is the installation directory of the pinned py-spy.
func (in *Installer) pySpyDir() string { return filepath.Join(in.Dir, "py-spy-"+PySpyVersion) }

// Existing returns the verified installation of the pinned py-spy, or nil: its receipt
// names a regular executable whose digest is unchanged and that reports the pinned version.
func (in *Installer) Existing() *Binding {
	dir := in.pySpyDir()
	f, err := os.Open(filepath.Join(dir, "binding.json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var r receipt
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&r); err != nil || r.Version != PySpyVersion || r.Executable != "bin/py-spy" {
		return nil
	}
	b, ok := verify(filepath.Join(dir, "bin", "py-spy"))
	if !ok || b.SHA256 != r.SHA256 {
		return nil
	}
	return b
}

// Verify re-checks a binding: the file is still regular, has the bound digest and
// reports the pinned version.
func Verify(b *Binding) bool {
	now, ok := verify(b.Path)
	return ok && now.SHA256 == b.SHA256
}

func verify(path string) (*Binding, bool) {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return nil, false
	}
	sum, _, err := sourcefile.Hash(path)
	if err != nil {
		return nil, false
	}
	if v := versionOf(path); v != PySpyVersion {
		return nil, false
	}
	return &Binding{Path: path, SHA256: sum, Version: PySpyVersion}, true
}

// versionOf returns the last word `exe --version` prints, or "".
func versionOf(exe string) string {
	res, err := broker.Run(context.Background(), broker.Spec{Path: exe, Args: []string{exe, "--version"}, Dir: filepath.Dir(exe),
		Env: []string{"PATH=/usr/bin:/bin"}, ExcerptBytes: 256, MaxOutputBytes: 64 << 10, Timeout: 10 * time.Second})
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		return ""
	}
	f := strings.Fields(string(res.Stdout.Excerpt))
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// forwarded are the installer controls passed on from the server's environment: the
// safe uv controls of the catalog, pip's index and cache selection, proxies and CA
// bundles. Nothing else reaches the installer but PATH and HOME.
var forwarded = []string{
	"UV_OFFLINE", "UV_CACHE_DIR", "UV_PYTHON_DOWNLOADS", "UV_NO_CONFIG",
	"PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CACHE_DIR", "PIP_NO_CACHE_DIR",
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
	"SSL_CERT_FILE", "PIP_CERT",
}

// proxyVariables are the forwarded proxy URLs. Installers read a value without a scheme
// (user:secret@host:port) as an http:// URL, so it is checked as one.
var proxyVariables = map[string]bool{"HTTPS_PROXY": true, "https_proxy": true, "HTTP_PROXY": true, "http_proxy": true,
	"ALL_PROXY": true, "all_proxy": true}

// indexVariables are the forwarded index and find-links locations: whitespace-separated
// URLs or paths. Flameox has no index variable of its own.
var indexVariables = map[string]bool{"PIP_INDEX_URL": true, "PIP_EXTRA_INDEX_URL": true, "PIP_FIND_LINKS": true}

// credentialVariable matches named-index credentials (uv's UV_INDEX_<NAME>_USERNAME and
// _PASSWORD, pip's keyring and token variables).
var credentialVariable = regexp.MustCompile(`^(UV_INDEX_[A-Z0-9_]+_(USERNAME|PASSWORD)|UV_PUBLISH_(USERNAME|PASSWORD|TOKEN)|PIP_[A-Z0-9_]*(PASSWORD|TOKEN|KEYRING[A-Z_]*))$`)

// Reasons a forwarded URL is refused, as details.reason of the SETUP_FAILURE.
const (
	reasonCredentialURL   = "credential_url"   // userinfo: user:secret@ or user@
	reasonCredentialQuery = "credential_query" // an index URL's query string, where tokens travel
	reasonUnparsableURL   = "unparsable_url"   // a value that cannot be checked is not passed on
)

// asURL parses a proxy or index value as the installers read it: a value without "://"
// is taken as if "http://" preceded it, so user:secret@host:port has userinfo.
func asURL(v string) (*url.URL, error) {
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	return url.Parse(v)
}

// urlRefusal returns the reason a forwarded variable's value may not reach an
// installer, or "". Proxy values (with or without a scheme) may carry no userinfo;
// index values may carry neither userinfo nor a query string, except absolute paths,
// which are local directories.
func urlRefusal(name, value string) string {
	proxy, index := proxyVariables[name], indexVariables[name]
	if !proxy && !index {
		return ""
	}
	for _, part := range strings.Fields(value) {
		if index && filepath.IsAbs(part) {
			continue
		}
		u, err := asURL(part)
		switch {
		case err != nil:
			return reasonUnparsableURL
		case u.User != nil:
			return reasonCredentialURL
		case index && u.RawQuery != "":
			return reasonCredentialQuery
		}
	}
	return ""
}

// urlRefusals are the messages of the refusals urlRefusal reports; each names the
// variable and never its value.
var urlRefusals = map[string]string{
	reasonCredentialURL:   "%s carries credentials in its URL",
	reasonCredentialQuery: "%s carries a query string in its index URL, where tokens travel",
	reasonUnparsableURL:   "%s is not a URL Flameox can check for credentials",
}

// environment is the installer's environment, or the SETUP_FAILURE of a policy refusal:
// index credentials in the environment are never passed to an installer, and a
// preparation that would depend on them is refused rather than run without them.
func (in *Installer) environment(environ []string) ([]string, *failure.Failure) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if credentialVariable.MatchString(strings.ToUpper(name)) {
			return nil, failure.New(gen.FailureCodeSetupFailure,
				"the environment holds index credentials (%s); Flameox does not pass credentials to installers: unset it, or install py-spy %s yourself and set FLAMEOX_PY_SPY to it", name, PySpyVersion).
				With("refused_variable", name).With("reason", "credential_variable")
		}
	}
	env := []string{"PATH=" + in.Host.Getenv("PATH")}
	if h := in.Host.Getenv("HOME"); h != "" {
		env = append(env, "HOME="+h)
	}
	for _, name := range forwarded {
		v := in.Host.Getenv(name)
		if v == "" {
			continue
		}
		if reason := urlRefusal(name, v); reason != "" {
			return nil, failure.New(gen.FailureCodeSetupFailure,
				urlRefusals[reason]+"; Flameox does not pass credentials to installers: use a proxy or index without them, or install py-spy %s yourself and set FLAMEOX_PY_SPY to it", name, PySpyVersion).
				With("refused_variable", name).With("reason", reason)
		}
		env = append(env, name+"="+v)
	}
	return env, nil
}

// tool is an installer command line.
type tool struct {
	name string
	argv func(target string) []string
}

// installer picks uv, else python3 with pip, whichever exists.
func (in *Installer) installer() (*tool, string) {
	spec := "py-spy==" + PySpyVersion
	if uv, err := in.Host.LookPath("uv"); err == nil {
		return &tool{name: "uv", argv: func(target string) []string {
			return []string{"uv", "pip", "install", "--quiet", "--target", target, spec}
		}}, uv
	}
	if py, err := in.Host.LookPath("python3"); err == nil {
		return &tool{name: "pip", argv: func(target string) []string {
			return []string{"python3", "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
				"--no-warn-script-location", "--quiet", "--target", target, spec}
		}}, py
	}
	return nil, ""
}

// PySpy returns a verified binding of the pinned py-spy: the existing installation, else
// a new one made with uv or pip in a staging directory that is verified (--version) and
// renamed into place only when complete. installed reports whether it installed.
func (in *Installer) PySpy(ctx context.Context, environ []string) (b *Binding, installed bool, f *failure.Failure) {
	if b := in.Existing(); b != nil {
		return b, false, nil
	}
	env, f := in.environment(environ)
	if f != nil {
		return nil, false, f
	}
	t, exe := in.installer()
	if t == nil {
		return nil, false, failure.New(gen.FailureCodeSetupFailure,
			"neither uv nor python3 is on PATH to install py-spy %s; install one (Debian: apt-get install python3-pip), or install py-spy %s yourself and set FLAMEOX_PY_SPY to it", PySpyVersion, PySpyVersion).
			With("reason", "no_installer")
	}
	if err := os.MkdirAll(in.Dir, 0o755); err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the Flameox tools directory cannot be created").With("reason", "tools_directory")
	}
	staging, err := os.MkdirTemp(in.Dir, ".staging-py-spy-")
	if err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the Flameox tools directory is not writable").With("reason", "tools_directory")
	}
	defer os.RemoveAll(staging)
	spec := broker.Spec{Path: exe, Args: t.argv(filepath.Join(staging, "lib")), Dir: staging, Env: env,
		ExcerptBytes: 4096, MaxOutputBytes: 4 << 20}
	if d, ok := ctx.Deadline(); ok {
		spec.Timeout = time.Until(d)
		if spec.Timeout <= 0 {
			spec.Timeout = time.Millisecond
		}
	}
	res, err := broker.Run(ctx, spec)
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		return nil, false, failure.New(gen.FailureCodeCancelled, "the preparation was cancelled; nothing was bound")
	case err != nil:
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the installer (%s) could not be started", t.name).
			With("installer", t.name).With("reason", "installer_start")
	case res.Limit != nil && res.Limit.Kind == "timeout" || ctx.Err() != nil:
		return nil, false, failure.New(gen.FailureCodeSetupFailure,
			"the installation of py-spy %s did not finish within timeout_seconds; raise timeout_seconds or check the network and index settings", PySpyVersion).
			With("installer", t.name).With("reason", "timeout")
	case res.Limit != nil:
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the installer (%s) was stopped by a bound (%s)", t.name, res.Limit.Kind).
			With("installer", t.name).With("reason", res.Limit.Kind)
	case res.ExitCode == nil || *res.ExitCode != 0:
		code := -1
		if res.ExitCode != nil {
			code = *res.ExitCode
		}
		return nil, false, failure.New(gen.FailureCodeSetupFailure,
			"the installer (%s) could not install py-spy %s (exit status %d); run `%s` yourself to see why, or install it and set FLAMEOX_PY_SPY",
			t.name, PySpyVersion, code, strings.Join(t.argv("DIR"), " ")).
			With("installer", t.name).With("exit_code", code).With("reason", "installer_failed")
	}
	return in.commit(staging, t.name)
}

// commit verifies the staged installation, writes its receipt and renames it into place.
func (in *Installer) commit(staging, installer string) (*Binding, bool, *failure.Failure) {
	lib := filepath.Join(staging, "lib")
	exe := filepath.Join(lib, "bin", "py-spy")
	if st, err := os.Lstat(exe); err != nil || !st.Mode().IsRegular() {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the installer finished but left no py-spy executable").
			With("installer", installer).With("reason", "no_executable")
	}
	// Wheels do not always keep the executable bit of their scripts.
	_ = os.Chmod(exe, 0o755)
	if v := versionOf(exe); v != PySpyVersion {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the installed py-spy reports version %q, not the pinned %s", v, PySpyVersion).
			With("installer", installer).With("found_version", v).With("reason", "version_mismatch")
	}
	final := in.pySpyDir()
	sum, _, err := sourcefile.Hash(exe)
	if err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the installed py-spy cannot be read").With("reason", "unreadable")
	}
	body, _ := json.MarshalIndent(receipt{ProviderID: "py-spy", Version: PySpyVersion, SHA256: sum, Executable: "bin/py-spy", Installer: installer}, "", "  ")
	if err := os.WriteFile(filepath.Join(lib, "binding.json"), append(body, '\n'), 0o644); err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the Flameox tools directory is not writable").With("reason", "tools_directory")
	}
	if _, err := os.Lstat(final); err == nil {
		// A broken or stale installation is moved aside, then removed.
		old := final + ".old-" + randomSuffix()
		if err := os.Rename(final, old); err != nil {
			return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the previous py-spy installation cannot be replaced").With("reason", "tools_directory")
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(lib, final); err != nil {
		// Another preparation may have completed first; use its verified result.
		if b := in.Existing(); b != nil {
			return b, false, nil
		}
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the py-spy installation cannot be moved into place").With("reason", "tools_directory")
	}
	b := in.Existing()
	if b == nil {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the py-spy installation could not be verified in place").With("reason", "verification")
	}
	return b, true, nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
