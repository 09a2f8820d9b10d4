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
	"sync"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
)

// PySpyVersion is the pinned py-spy release.
const PySpyVersion = "0.4.2"

// MemrayVersion is the pinned memray release of Flameox's memray reader (decision 0053):
// the catalog asks memray>=1.17 and pins none; 1.20.0 is the release decision 0021 checked
// the reader script against.
const MemrayVersion = "1.20.0"

// Binding is a verified managed executable: its exact path, SHA-256 and version. For a
// provider installed as a virtual environment, Path is the environment's python as it
// is run (a symbolic link whose directory makes the environment) and SHA256 is the
// digest of the interpreter it resolves to.
type Binding struct {
	Provider string `json:"-"`
	Path     string `json:"-"`
	SHA256   string `json:"sha256"`
	Version  string `json:"version"`
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

// managed is how Flameox installs, finds and verifies one managed provider.
type managed struct {
	id, version string
	// exe is the bound executable, relative to the installation directory, slash-separated.
	exe string
	// link allows exe to be a symbolic link (a virtual environment's python); otherwise
	// it must be a regular executable file.
	link bool
	// probe are the arguments after exe that print "... VERSION" when it is usable.
	probe []string
	// yourself is the operator's alternative to preparation, said in refusals.
	yourself string
	// build runs the installer commands that make the installation in lib.
	build func(in *Installer, r *runner, lib string) *failure.Failure
}

// managedProviders are the providers prepare_providers installs, by id.
var managedProviders = map[string]*managed{
	"py-spy": {id: "py-spy", version: PySpyVersion, exe: "bin/py-spy", probe: []string{"--version"},
		yourself: "install py-spy " + PySpyVersion + " yourself and set FLAMEOX_PY_SPY to it",
		build:    buildPySpy},
	"memray": {id: "memray", version: MemrayVersion, exe: "venv/bin/python", link: true,
		probe:    []string{"-I", "-c", "import memray; print('memray', memray.__version__)"},
		yourself: "install memray " + MemrayVersion + " in a Python yourself and set FLAMEOX_MEMRAY_PYTHON to it",
		build:    buildMemray},
}

func lookupManaged(id string) (*managed, *failure.Failure) {
	m, ok := managedProviders[id]
	if !ok {
		return nil, failure.New(gen.FailureCodeSetupFailure, "%s is not a provider Flameox installs", id).With("reason", "not_managed")
	}
	return m, nil
}

// dir is the installation directory of m's pinned release.
func (in *Installer) dir(m *managed) string { return filepath.Join(in.Dir, m.id+"-"+m.version) }

// Existing returns the verified installation of the pinned py-spy, or nil.
func (in *Installer) Existing() *Binding { return in.ExistingOf("py-spy") }

// ExistingOf returns the verified installation of managed provider id, or nil: its
// receipt names the executable, whose digest is unchanged and which reports the pinned
// version.
func (in *Installer) ExistingOf(id string) *Binding {
	m, ok := managedProviders[id]
	if !ok {
		return nil
	}
	dir := in.dir(m)
	f, err := os.Open(filepath.Join(dir, "binding.json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var r receipt
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&r); err != nil || r.ProviderID != m.id || r.Version != m.version || r.Executable != m.exe {
		return nil
	}
	b, ok := m.verify(filepath.Join(dir, filepath.FromSlash(m.exe)))
	if !ok || b.SHA256 != r.SHA256 {
		return nil
	}
	return b
}

// Verify re-checks a binding: the file is still there, has the bound digest and reports
// the pinned version.
func Verify(b *Binding) bool {
	m, ok := managedProviders[b.Provider]
	if !ok {
		return false
	}
	now, ok := m.verify(b.Path)
	return ok && now.SHA256 == b.SHA256
}

// Unchanged reports whether the file a binding names still has the bound digest,
// without running it.
func Unchanged(b *Binding) bool {
	sum, ok := digest(b.Path)
	return ok && sum == b.SHA256
}

// digest is the SHA-256 of the file path resolves to.
func digest(path string) (string, bool) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	sum, _, err := sourcefile.Hash(p)
	return sum, err == nil
}

func (m *managed) verify(path string) (*Binding, bool) {
	st, err := os.Lstat(path)
	if err != nil || !m.link && !st.Mode().IsRegular() {
		return nil, false
	}
	if st, err = os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return nil, false
	}
	sum, ok := digest(path)
	if !ok {
		return nil, false
	}
	if v := versionOf(path, m.probe...); v != m.version {
		return nil, false
	}
	return &Binding{Provider: m.id, Path: path, SHA256: sum, Version: m.version}, true
}

// versionOf returns the last word `exe args...` prints, or "".
func versionOf(exe string, args ...string) string {
	res, err := broker.Run(context.Background(), broker.Spec{Path: exe, Args: append([]string{exe}, args...), Dir: filepath.Dir(exe),
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
var credentialVariable = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(UV_INDEX_[A-Z0-9_]+_(USERNAME|PASSWORD)|UV_PUBLISH_(USERNAME|PASSWORD|TOKEN)|PIP_[A-Z0-9_]*(PASSWORD|TOKEN|KEYRING[A-Z_]*))$`)
})

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
func (in *Installer) environment(m *managed, environ []string) ([]string, *failure.Failure) {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if credentialVariable().MatchString(strings.ToUpper(name)) {
			return nil, failure.New(gen.FailureCodeSetupFailure,
				"the environment holds index credentials (%s); Flameox does not pass credentials to installers: unset it, or %s", name, m.yourself).
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
				urlRefusals[reason]+"; Flameox does not pass credentials to installers: use a proxy or index without them, or %s", name, m.yourself).
				With("refused_variable", name).With("reason", reason)
		}
		env = append(env, name+"="+v)
	}
	return env, nil
}

// runner runs one preparation's installer commands in its staging directory, in its
// environment and under its deadline and cancellation.
type runner struct {
	ctx     context.Context
	m       *managed
	env     []string
	staging string
	// installer names the tool that installed the package (uv or pip), for the receipt.
	installer string
}

// run runs argv (argv[0] as shown, exe the executable) for the installer named name.
func (r *runner) run(name, exe string, argv []string) *failure.Failure {
	spec := broker.Spec{Path: exe, Args: argv, Dir: r.staging, Env: r.env, ExcerptBytes: 4096, MaxOutputBytes: 4 << 20}
	if d, ok := r.ctx.Deadline(); ok {
		spec.Timeout = time.Until(d)
		if spec.Timeout <= 0 {
			spec.Timeout = time.Millisecond
		}
	}
	res, err := broker.Run(r.ctx, spec)
	switch {
	case r.ctx.Err() != nil && errors.Is(r.ctx.Err(), context.Canceled):
		return failure.New(gen.FailureCodeCancelled, "the preparation was cancelled; nothing was bound")
	case err != nil:
		return failure.Wrap(err, gen.FailureCodeSetupFailure, "the installer (%s) could not be started", name).
			With("installer", name).With("reason", "installer_start")
	case res.Limit != nil && res.Limit.Kind == "timeout" || r.ctx.Err() != nil:
		return failure.New(gen.FailureCodeSetupFailure,
			"the installation of %s %s did not finish within timeout_seconds; raise timeout_seconds or check the network and index settings", r.m.id, r.m.version).
			With("installer", name).With("reason", "timeout")
	case res.Limit != nil:
		return failure.New(gen.FailureCodeSetupFailure, "the installer (%s) was stopped by a bound (%s)", name, res.Limit.Kind).
			With("installer", name).With("reason", res.Limit.Kind)
	case res.ExitCode == nil || *res.ExitCode != 0:
		code := -1
		if res.ExitCode != nil {
			code = *res.ExitCode
		}
		// The command as the operator can run it: the staging directory is DIR.
		shown := strings.ReplaceAll(strings.Join(argv, " "), filepath.Join(r.staging, "lib"), "DIR")
		return failure.New(gen.FailureCodeSetupFailure,
			"the installer (%s) could not install %s %s (exit status %d); run `%s` yourself to see why, or %s",
			name, r.m.id, r.m.version, code, shown, r.m.yourself).
			With("installer", name).With("exit_code", code).With("reason", "installer_failed")
	}
	return nil
}

// noInstaller is the failure of a machine with neither uv nor python3 on PATH.
func noInstaller(m *managed) *failure.Failure {
	return failure.New(gen.FailureCodeSetupFailure,
		"neither uv nor python3 is on PATH to install %s %s; install one (Debian: apt-get install python3-pip), or %s", m.id, m.version, m.yourself).
		With("reason", "no_installer")
}

// buildPySpy installs the pinned py-spy wheel into lib with uv, else python3 -m pip:
// its script lands in lib/bin.
func buildPySpy(in *Installer, r *runner, lib string) *failure.Failure {
	spec := "py-spy==" + PySpyVersion
	if uv, err := in.Host.LookPath("uv"); err == nil {
		r.installer = "uv"
		return r.run("uv", uv, []string{"uv", "pip", "install", "--quiet", "--target", lib, spec})
	}
	if py, err := in.Host.LookPath("python3"); err == nil {
		r.installer = "pip"
		return r.run("pip", py, pipInstall("--target", lib, spec))
	}
	return noInstaller(r.m)
}

// pipInstall is python3 -m pip install, quiet and non-interactive, with args.
func pipInstall(args ...string) []string {
	return append([]string{"python3", "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
		"--no-warn-script-location", "--quiet"}, args...)
}

// buildMemray makes a virtual environment in lib/venv (python3 -m venv --without-pip,
// else uv venv) and installs the pinned memray into it (uv pip install --python, else
// python3 -m pip install --target its site-packages). The environment's python, run as
// lib/venv/bin/python, is memray's reader.
func buildMemray(in *Installer, r *runner, lib string) *failure.Failure {
	spec := "memray==" + MemrayVersion
	venv := filepath.Join(lib, "venv")
	uv, uvErr := in.Host.LookPath("uv")
	py, pyErr := in.Host.LookPath("python3")
	switch {
	case pyErr == nil:
		if f := r.run("venv", py, []string{"python3", "-m", "venv", "--without-pip", venv}); f != nil {
			return f
		}
	case uvErr == nil:
		if f := r.run("uv", uv, []string{"uv", "venv", "--quiet", venv}); f != nil {
			return f
		}
	default:
		return noInstaller(r.m)
	}
	if uvErr == nil {
		r.installer = "uv"
		return r.run("uv", uv, []string{"uv", "pip", "install", "--quiet", "--python", filepath.Join(venv, "bin", "python"), spec})
	}
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		return failure.New(gen.FailureCodeSetupFailure, "the virtual environment for memray has no single site-packages directory").
			With("installer", "venv").With("reason", "no_site_packages")
	}
	r.installer = "pip"
	return r.run("pip", py, pipInstall("--target", sites[0], spec))
}

// PySpy returns a verified binding of the pinned py-spy (see Prepare).
func (in *Installer) PySpy(ctx context.Context, environ []string) (*Binding, bool, *failure.Failure) {
	return in.Prepare(ctx, "py-spy", environ)
}

// Prepare returns a verified binding of managed provider id: the existing installation,
// else a new one made with uv or pip in a staging directory that is verified and renamed
// into place only when complete. installed reports whether it installed. A failed
// preparation leaves nothing behind: not its staging directory, nor the tools directory
// (and its parents) when the attempt created them.
func (in *Installer) Prepare(ctx context.Context, id string, environ []string) (b *Binding, installed bool, f *failure.Failure) {
	m, f := lookupManaged(id)
	if f != nil {
		return nil, false, f
	}
	if b := in.ExistingOf(id); b != nil {
		return b, false, nil
	}
	env, f := in.environment(m, environ)
	if f != nil {
		return nil, false, f
	}
	if _, err := in.Host.LookPath("uv"); err != nil {
		if _, err := in.Host.LookPath("python3"); err != nil {
			return nil, false, noInstaller(m)
		}
	}
	created := missingDirs(in.Dir)
	defer func() {
		if f != nil {
			for _, d := range created {
				os.Remove(d) // only if empty: another preparation may have filled it
			}
		}
	}()
	if err := os.MkdirAll(in.Dir, 0o755); err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the Flameox tools directory cannot be created").With("reason", "tools_directory")
	}
	staging, err := os.MkdirTemp(in.Dir, ".staging-"+m.id+"-")
	if err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the Flameox tools directory is not writable").With("reason", "tools_directory")
	}
	defer os.RemoveAll(staging)
	r := &runner{ctx: ctx, m: m, env: env, staging: staging}
	if f := m.build(in, r, filepath.Join(staging, "lib")); f != nil {
		return nil, false, f
	}
	return in.commit(m, staging, r.installer)
}

// missingDirs are dir and those of its parents that do not exist, deepest first: what
// os.MkdirAll(dir) would create.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); err == nil {
			return out
		}
		out = append(out, d)
		parent := filepath.Dir(d)
		if parent == d {
			return out
		}
		d = parent
	}
}

// commit verifies the staged installation, writes its receipt and renames it into place.
func (in *Installer) commit(m *managed, staging, installer string) (*Binding, bool, *failure.Failure) {
	lib := filepath.Join(staging, "lib")
	exe := filepath.Join(lib, filepath.FromSlash(m.exe))
	st, err := os.Lstat(exe)
	if err != nil || !m.link && !st.Mode().IsRegular() {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the installer finished but left no %s executable", m.id).
			With("installer", installer).With("reason", "no_executable")
	}
	if !m.link {
		// Wheels do not always keep the executable bit of their scripts.
		_ = os.Chmod(exe, 0o755)
	}
	if v := versionOf(exe, m.probe...); v != m.version {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the installed %s reports version %q, not the pinned %s", m.id, v, m.version).
			With("installer", installer).With("found_version", v).With("reason", "version_mismatch")
	}
	final := in.dir(m)
	sum, ok := digest(exe)
	if !ok {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the installed %s cannot be read", m.id).With("reason", "unreadable")
	}
	body, _ := json.MarshalIndent(receipt{ProviderID: m.id, Version: m.version, SHA256: sum, Executable: m.exe, Installer: installer}, "", "  ")
	if err := os.WriteFile(filepath.Join(lib, "binding.json"), append(body, '\n'), 0o644); err != nil {
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the Flameox tools directory is not writable").With("reason", "tools_directory")
	}
	if _, err := os.Lstat(final); err == nil {
		// A broken or stale installation is moved aside, then removed.
		old := final + ".old-" + randomSuffix()
		if err := os.Rename(final, old); err != nil {
			return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the previous %s installation cannot be replaced", m.id).With("reason", "tools_directory")
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(lib, final); err != nil {
		// Another preparation may have completed first; use its verified result.
		if b := in.ExistingOf(m.id); b != nil {
			return b, false, nil
		}
		return nil, false, failure.Wrap(err, gen.FailureCodeSetupFailure, "the %s installation cannot be moved into place", m.id).With("reason", "tools_directory")
	}
	b := in.ExistingOf(m.id)
	if b == nil {
		return nil, false, failure.New(gen.FailureCodeSetupFailure, "the %s installation could not be verified in place", m.id).With("reason", "verification")
	}
	return b, true, nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
