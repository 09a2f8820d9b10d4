package prepare

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
)

func TestFamilyOf(t *testing.T) {
	for _, c := range []struct{ release, want string }{
		{"ID=debian\nVERSION_ID=\"12\"\n", "debian"},
		{"ID=ubuntu\nID_LIKE=debian\n", "ubuntu"},
		{"ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n", "ubuntu"},
		{"ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n", "fedora"},
		{"ID=arch\n", "arch"},
		{"ID=opensuse-tumbleweed\nID_LIKE=\"opensuse suse\"\n", "suse"},
		{"ID=nixos\n", ""},
		{"", ""},
	} {
		if got := familyOf(bufio.NewScanner(strings.NewReader(c.release))); got != c.want {
			t.Errorf("%q: family %q, want %q", c.release, got, c.want)
		}
	}
}

// host is a fake machine: the executables it has, its environment and OS family.
func host(family string, env map[string]string, has ...string) Host {
	return Host{Family: family, Getenv: func(k string) string { return env[k] },
		LookPath: func(name string) (string, error) {
			for _, h := range has {
				if h == name {
					return "/opt/bin/" + name, nil
				}
			}
			return "", exec.ErrNotFound
		}}
}

// Records as a family declares them: a host tool with a variable and guidance per
// family, a managed collector, a managed reader with a workload requirement, a format
// read natively and a workload package.
var (
	hostTool = Tool{ID: "perf", Class: HostTool, Executables: []string{"perf", "perf2"}, Variable: "FLAMEOX_PERF",
		Install: map[string]string{
			"":       "Install perf so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"debian": "apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"fedora": "dnf install perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
		},
		Unsupported: map[string]string{"darwin": "perf runs only on Linux; use the py-spy provider here."},
		Note:        "Sampling may need kernel.perf_event_paranoid <= 2."}
	managedTool = Tool{ID: "py-spy", Class: Managed, Executables: []string{"py-spy"}, Variable: "FLAMEOX_PY_SPY",
		Note: "Flameox installs py-spy."}
	readerTool = Tool{ID: "memray", Class: Managed, Variable: "FLAMEOX_MEMRAY_PYTHON", Formats: []gen.Format{gen.FormatMemray},
		Note: "Flameox installs memray.", Workload: "The workload's Python needs memray>=1.17."}
	builtInTool  = Tool{ID: "otlp", Class: BuiltIn, Note: "Flameox reads OTLP natively."}
	workloadTool = Tool{ID: "torch", Class: Workload, Note: "The workload's Python needs torch."}
	testTools    = Tools{readerTool, builtInTool, hostTool, managedTool, workloadTool}
)

func TestRequirement(t *testing.T) {
	for _, c := range []struct {
		tool         Tool
		host         Host
		status, want string
	}{
		{hostTool, host("debian", nil), "missing", "apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it. Sampling"},
		{hostTool, host("ubuntu", nil), "missing", "apt-get install linux-perf"},
		{hostTool, host("fedora", nil), "missing", "dnf install perf"},
		{hostTool, host("arch", nil), "missing", "Install perf so that"},
		{hostTool, host("darwin", nil), "missing", "only on Linux"},
		{hostTool, host("debian", nil, "perf"), "available", "perf is available here. Sampling"},
		{hostTool, host("debian", nil, "perf2"), "available", "perf is available here"},
		{hostTool, host("", map[string]string{"FLAMEOX_PERF": "/x/perf"}), "available", "perf is available here"},
		{builtInTool, host("debian", nil), "built_in", "natively"},
		{workloadTool, host("debian", nil), "unverified", "needs torch"},
	} {
		r := Requirement(c.tool, c.host)
		if r.ProviderID != c.tool.ID || r.Status != c.status || !strings.Contains(r.Guidance, c.want) {
			t.Errorf("%s on %q: %+v, want status %s and guidance with %q", c.tool.ID, c.host.Family, r, c.status, c.want)
		}
		if strings.Contains(r.Guidance, "/opt/bin") || strings.Contains(r.Guidance, "/x/perf") {
			t.Errorf("%s: guidance names a host path: %q", c.tool.ID, r.Guidance)
		}
	}
}

// TestLocate: the variable when set and not empty (whatever it names), else the first of
// the executables, in their order, found on PATH, in its order; nothing otherwise. It
// runs on this machine's LookPath over a PATH of temporary directories.
func TestLocate(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("fake executables are shell scripts")
	}
	dir := t.TempDir()
	a, b, c, d, empty := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c"), filepath.Join(dir, "d"), filepath.Join(dir, "empty")
	aPerf, bPerf, cPerf2 := testtool.FakeExecutable(t, a, "perf", 0o755), testtool.FakeExecutable(t, b, "perf", 0o755), testtool.FakeExecutable(t, c, "perf2", 0o755)
	testtool.FakeExecutable(t, b, "perf2", 0o755)
	testtool.FakeExecutable(t, d, "perf", 0o644)
	for _, tc := range []struct {
		name, variable, path, want string
	}{
		{"variable set", "/named/by/variable", a, "/named/by/variable"},
		{"variable set to a missing file", filepath.Join(dir, "missing"), empty, filepath.Join(dir, "missing")},
		{"variable empty", "", a, aPerf},
		{"PATH order", "", b + string(os.PathListSeparator) + a, bPerf},
		{"executables before PATH order", "", c + string(os.PathListSeparator) + b, bPerf},
		{"second executable", "", c, cPerf2},
		{"second executable beside the first", "", b, bPerf},
		{"not executable", "", d, ""},
		{"not executable, then the second", "", d + string(os.PathListSeparator) + c, cPerf2},
		{"nothing found", "", empty, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FLAMEOX_PERF", tc.variable)
			t.Setenv("PATH", tc.path)
			got, ok := hostTool.Locate(Host{Getenv: os.Getenv, LookPath: exec.LookPath})
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("Locate = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
	if _, ok := builtInTool.Locate(host("debian", nil, "otlp")); ok {
		t.Error("a record without executables or variable located something")
	}
}

// TestMissing: the unavailable state's words come from the record: the executable and
// the family's purpose in the message, the guidance for the host's operating-system
// family (which names the variable), "then retry the same call" and the family's
// alternative in the remediation; a managed provider's remediation is prepare_providers.
func TestMissing(t *testing.T) {
	need := Need{Purpose: "to read perf.data"}
	alt := Need{Purpose: "to read perf.data", Alternative: "analyse a perf script export"}
	const missing = "perf is not installed or not on PATH; it is needed to read perf.data"
	for _, c := range []struct {
		name       string
		tool       Tool
		host       Host
		need       Need
		msg, remed string
	}{
		{"general", hostTool, host("", nil), need, missing,
			"Install perf so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call."},
		{"debian", hostTool, host("debian", nil), need, missing,
			"apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call."},
		{"ubuntu takes debian's", hostTool, host("ubuntu", nil), need, missing,
			"apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call."},
		{"fedora", hostTool, host("fedora", nil), alt, missing,
			"dnf install perf, so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call, or analyse a perf script export."},
		{"a family without its own", hostTool, host("alpine", nil), need, missing,
			"Install perf so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call."},
		{"unsupported", hostTool, host("darwin", nil), alt, missing,
			"perf runs only on Linux; use the py-spy provider here."},
		{"variable set", hostTool, host("debian", map[string]string{"FLAMEOX_PERF": "/x/perf"}), need,
			"FLAMEOX_PERF is set but does not name an executable file; perf is needed to read perf.data",
			"apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call."},
		{"why", hostTool, host("debian", nil), Need{Purpose: "to read perf.data", Why: "perf cannot be started"},
			"perf cannot be started; perf is needed to read perf.data",
			"apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it. Then retry the same call."},
		{"managed", managedTool, host("debian", nil), Need{Purpose: "to capture with the py-spy provider"},
			"py-spy is not installed or not on PATH; it is needed to capture with the py-spy provider",
			"Call prepare_providers with provider_ids [\"py-spy\"] (or run `flameox prepare py-spy`) to install the pinned py-spy, or install it yourself and set FLAMEOX_PY_SPY to it; then retry the same call."},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg, remed := c.tool.Missing(c.host, c.need)
			if msg != c.msg || remed != c.remed {
				t.Errorf("Missing =\n%q\n%q\nwant\n%q\n%q", msg, remed, c.msg, c.remed)
			}
			if strings.Contains(msg+remed, "/x/perf") {
				t.Errorf("the words name a host path: %q %q", msg, remed)
			}
		})
	}
}

// TestMemrayIsManagedWithAWorkloadRequirement: memray's reader is installed by Flameox;
// a capture still needs memray in the workload's Python, which preparation reports.
func TestMemrayIsManagedWithAWorkloadRequirement(t *testing.T) {
	p, ok := testTools.Lookup("memray")
	if !ok || p.Class != Managed {
		t.Fatalf("memray = %+v", p)
	}
	r, ok := WorkloadRequirement(p)
	if !ok || r.ProviderID != "memray" || r.Status != "unverified" || !strings.Contains(r.Guidance, "memray>=1.17") {
		t.Errorf("workload requirement = %+v, %v", r, ok)
	}
	if got, ok := testTools.ReaderOf(gen.FormatMemray); !ok || got.ID != "memray" {
		t.Errorf("reader of memray = %+v, %v", got, ok)
	}
	if _, ok := testTools.ReaderOf(gen.FormatPySpy); ok {
		t.Error("py-spy's format has a managed reader")
	}
	py, _ := testTools.Lookup("py-spy")
	if _, ok := WorkloadRequirement(py); ok {
		t.Error("py-spy has a workload requirement")
	}
	if _, ok := testTools.Lookup("valgrind"); ok {
		t.Error("Lookup found an id no record has")
	}
}

// pipHost is this machine with only python3 (no uv) and pip reading the wheels in dir.
func pipHost(t *testing.T, wheels string) (Host, []string) {
	py := testtool.RequirePip(t)
	env := map[string]string{"PATH": filepath.Dir(py) + ":/usr/bin:/bin", "HOME": t.TempDir(),
		"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheels}
	h := Host{Family: "debian", Getenv: func(k string) string { return env[k] },
		LookPath: func(name string) (string, error) {
			if name == "python3" {
				return py, nil
			}
			return "", exec.ErrNotFound
		}}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return h, environ
}

func TestInstallPySpyWithPipFromALocalWheel(t *testing.T) {
	wheels := t.TempDir()
	if _, err := testtool.PySpyWheel(wheels, PySpyVersion, testtool.FakePySpy); err != nil {
		t.Fatal(err)
	}
	h, environ := pipHost(t, wheels)
	in := &Installer{Dir: filepath.Join(t.TempDir(), "tools"), Host: h}
	if in.Existing() != nil {
		t.Fatal("an empty tools directory has an installation")
	}
	b, installed, f := in.PySpy(context.Background(), environ)
	if f != nil {
		t.Fatal(f)
	}
	exe := filepath.Join(in.Dir, "py-spy-"+PySpyVersion, "bin", "py-spy")
	if !installed || b.Path != exe || b.Version != PySpyVersion {
		t.Fatalf("binding = %+v, installed %v", b, installed)
	}
	out, err := exec.Command(exe, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "py-spy "+PySpyVersion {
		t.Fatalf("installed py-spy --version = %q, %v", out, err)
	}
	sum, _, _ := hashFile(exe)
	if b.SHA256 != sum {
		t.Errorf("binding digest %s, file %s", b.SHA256, sum)
	}
	// No staging directory is left behind.
	entries, _ := os.ReadDir(in.Dir)
	if len(entries) != 1 {
		t.Errorf("tools directory holds %v", entries)
	}

	// A second preparation reuses the verified installation without installing.
	again, installed, f := in.PySpy(context.Background(), environ)
	if f != nil || installed || again.SHA256 != b.SHA256 {
		t.Fatalf("second preparation: %+v, installed %v, %v", again, installed, f)
	}

	// A changed executable no longer verifies; preparation installs it again.
	os.WriteFile(exe, []byte("#!/bin/sh\necho py-spy 0.4.2\n# changed\n"), 0o755)
	if in.Existing() != nil || Verify(b) {
		t.Fatal("a changed executable still verifies")
	}
	fresh, installed, f := in.PySpy(context.Background(), environ)
	if f != nil || !installed || fresh.SHA256 != b.SHA256 {
		t.Fatalf("reinstall: %+v, installed %v, %v", fresh, installed, f)
	}
}

func TestInstallFailuresAreTypedAndPathFree(t *testing.T) {
	wheels := t.TempDir()
	if _, err := testtool.PySpyWheel(wheels, "0.3.14", testtool.FakePySpy); err != nil {
		t.Fatal(err)
	}
	h, environ := pipHost(t, wheels)
	tools := filepath.Join(t.TempDir(), "tools")
	in := &Installer{Dir: tools, Host: h}
	// The index holds only another version: pip fails.
	_, _, f := in.PySpy(context.Background(), environ)
	wantFailure(t, f, gen.FailureCodeSetupFailure, "installer_failed", tools, wheels)
	if f.Details["installer"] != "pip" {
		t.Errorf("details = %v", f.Details)
	}
	if in.Existing() != nil {
		t.Error("a failed installation left a binding")
	}
	if _, err := os.Lstat(tools); !os.IsNotExist(err) {
		t.Errorf("a failed installation left the tools directory it created: %v", err)
	}

	// A wheel whose py-spy reports another version installs but does not verify.
	wrong := t.TempDir()
	if _, err := testtool.PySpyWheel(wrong, PySpyVersion, "#!/bin/sh\necho py-spy 0.3.14\n"); err != nil {
		t.Fatal(err)
	}
	h, environ = pipHost(t, wrong)
	in = &Installer{Dir: tools, Host: h}
	_, _, f = in.PySpy(context.Background(), environ)
	wantFailure(t, f, gen.FailureCodeSetupFailure, "version_mismatch", tools, wrong)

	// No installer on PATH.
	in = &Installer{Dir: tools, Host: host("debian", map[string]string{"PATH": "/nowhere"})}
	_, _, f = in.PySpy(context.Background(), nil)
	wantFailure(t, f, gen.FailureCodeSetupFailure, "no_installer", tools)
}

// TestInstallMemrayWithPipFromALocalWheel installs a wheel named as memray (the FAKE
// memray package of providers/memory/testdata, not bloomberg/memray) with the real pip
// from a local index into a virtual environment in the tools directory, and verifies it
// by importing it with the environment's python.
func TestInstallMemrayWithPipFromALocalWheel(t *testing.T) {
	wheels := t.TempDir()
	if _, err := testtool.MemrayWheel(wheels, MemrayVersion); err != nil {
		t.Fatal(err)
	}
	h, environ := pipHost(t, wheels)
	in := &Installer{Dir: filepath.Join(t.TempDir(), "tools"), Host: h}
	if in.ExistingOf("memray") != nil {
		t.Fatal("an empty tools directory has an installation")
	}
	b, installed, f := in.Prepare(context.Background(), "memray", environ)
	if f != nil {
		t.Fatal(f)
	}
	py := filepath.Join(in.Dir, "memray-"+MemrayVersion, "venv", "bin", "python")
	if !installed || b.Path != py || b.Version != MemrayVersion || b.Provider != "memray" {
		t.Fatalf("binding = %+v, installed %v", b, installed)
	}
	out, err := exec.Command(py, "-I", "-c", "import memray, sys; print(memray.__version__, sys.prefix)").Output()
	if err != nil || !strings.HasPrefix(string(out), MemrayVersion+" ") || !strings.Contains(string(out), filepath.Join("memray-"+MemrayVersion, "venv")) {
		t.Fatalf("the environment's memray: %q, %v", out, err)
	}
	resolved, _ := filepath.EvalSymlinks(py)
	if sum, _, _ := hashFile(resolved); b.SHA256 != sum || !Verify(b) || !Unchanged(b) {
		t.Errorf("binding digest %s, interpreter %s", b.SHA256, sum)
	}
	receipt, _ := os.ReadFile(filepath.Join(in.Dir, "memray-"+MemrayVersion, "binding.json"))
	if !strings.Contains(string(receipt), `"executable": "venv/bin/python"`) || !strings.Contains(string(receipt), `"installer": "pip"`) {
		t.Errorf("receipt = %s", receipt)
	}
	if entries, _ := os.ReadDir(in.Dir); len(entries) != 1 {
		t.Errorf("tools directory holds %v", entries)
	}
	// A second preparation reuses it; py-spy's installation is another one.
	again, installed, f := in.Prepare(context.Background(), "memray", environ)
	if f != nil || installed || again.SHA256 != b.SHA256 {
		t.Fatalf("second preparation: %+v, installed %v, %v", again, installed, f)
	}
	if in.Existing() != nil {
		t.Error("memray's installation passes for py-spy's")
	}
	// memray gone from the environment: no longer verified, installed again.
	sites, _ := filepath.Glob(filepath.Join(in.Dir, "memray-"+MemrayVersion, "venv", "lib", "python3*", "site-packages", "memray"))
	if len(sites) != 1 {
		t.Fatalf("site-packages: %v", sites)
	}
	os.RemoveAll(sites[0])
	if in.ExistingOf("memray") != nil || Verify(b) {
		t.Fatal("an environment without memray still verifies")
	}
	if _, installed, f := in.Prepare(context.Background(), "memray", environ); f != nil || !installed {
		t.Fatalf("reinstall: installed %v, %v", installed, f)
	}
}

// TestFailedMemrayPreparationLeavesNothing: an index without the pinned memray fails the
// installer; neither the virtual environment nor the tools directory (and its parent)
// the attempt created is left.
func TestFailedMemrayPreparationLeavesNothing(t *testing.T) {
	wheels := t.TempDir()
	if _, err := testtool.MemrayWheel(wheels, "1.17.0"); err != nil {
		t.Fatal(err)
	}
	h, environ := pipHost(t, wheels)
	data := filepath.Join(t.TempDir(), "data")
	tools := filepath.Join(data, "store-tools")
	in := &Installer{Dir: tools, Host: h}
	_, _, f := in.Prepare(context.Background(), "memray", environ)
	wantFailure(t, f, gen.FailureCodeSetupFailure, "installer_failed", tools, wheels)
	if f.Details["installer"] != "pip" || !strings.Contains(f.Message, "memray=="+MemrayVersion) || !strings.Contains(f.Message, "FLAMEOX_MEMRAY_PYTHON") {
		t.Errorf("failure = %s %v", f.Message, f.Details)
	}
	if _, err := os.Lstat(data); !os.IsNotExist(err) {
		t.Errorf("a failed preparation left the directories it created: %v", err)
	}
	if _, _, f := in.Prepare(context.Background(), "otlp", environ); f == nil || f.Details["reason"] != "not_managed" {
		t.Errorf("a provider Flameox does not install: %v", f)
	}
}

func TestInstallerEnvironmentPolicy(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		refused string
	}{
		{map[string]string{"UV_INDEX_PRIVATE_PASSWORD": "hunter2"}, "UV_INDEX_PRIVATE_PASSWORD"},
		{map[string]string{"UV_INDEX_CORP_USERNAME": "me"}, "UV_INDEX_CORP_USERNAME"},
		{map[string]string{"PIP_INDEX_URL": "https://me:hunter2@pypi.example/simple"}, "PIP_INDEX_URL"},
		{map[string]string{"HTTPS_PROXY": "http://me:hunter2@proxy:3128"}, "HTTPS_PROXY"},
	} {
		in := &Installer{Dir: t.TempDir(), Host: host("debian", c.env, "python3")}
		var environ []string
		for k, v := range c.env {
			environ = append(environ, k+"="+v)
		}
		_, _, f := in.PySpy(context.Background(), environ)
		wantFailure(t, f, gen.FailureCodeSetupFailure, "", "hunter2")
		if f.Details["refused_variable"] != c.refused {
			t.Errorf("%v: refused %v", c.env, f.Details)
		}
	}
	// Only PATH, HOME and the allowlisted controls reach the installer.
	in := &Installer{Host: host("debian", map[string]string{"PATH": "/bin", "HOME": "/h", "UV_OFFLINE": "1",
		"PIP_FIND_LINKS": "/w", "AWS_SECRET_ACCESS_KEY": "x", "PYTHONPATH": "/evil", "UV_CONFIG_FILE": "/c"})}
	env, f := in.environment(managedProviders["py-spy"], nil)
	if f != nil {
		t.Fatal(f)
	}
	if d := cmp.Diff([]string{"PATH=/bin", "HOME=/h", "UV_OFFLINE=1", "PIP_FIND_LINKS=/w"}, env); d != "" {
		t.Errorf("installer environment (-want +got):\n%s", d)
	}
}

func TestInstallerEnvironmentRefusesCredentialURLs(t *testing.T) {
	for _, c := range []struct {
		name, value, reason string
	}{
		// Proxies, with and without a scheme, upper and lower case.
		{"HTTPS_PROXY", "http://me:hunter2@proxy:3128", "credential_url"},
		{"HTTPS_PROXY", "me:hunter2@proxy:3128", "credential_url"},
		{"https_proxy", "me:hunter2@proxy:3128", "credential_url"},
		{"HTTP_PROXY", "me:hunter2@proxy:3128", "credential_url"},
		{"http_proxy", "socks5://me:hunter2@proxy:1080", "credential_url"},
		{"ALL_PROXY", "me:hunter2@proxy:3128", "credential_url"},
		{"all_proxy", "http://hunter2@proxy:3128", "credential_url"},
		{"ALL_PROXY", "hunter2@proxy", "credential_url"},
		// Index URLs: userinfo, a token in the query string, either in a list.
		{"PIP_INDEX_URL", "https://me:hunter2@pypi.example/simple", "credential_url"},
		{"PIP_INDEX_URL", "https://pypi.example/simple?token=hunter2", "credential_query"},
		{"PIP_INDEX_URL", "me:hunter2@pypi.example/simple", "credential_url"},
		{"PIP_EXTRA_INDEX_URL", "https://pypi.example/simple https://me:hunter2@corp.example/simple", "credential_url"},
		{"PIP_EXTRA_INDEX_URL", "https://corp.example/simple?hunter2", "credential_query"},
		{"PIP_FIND_LINKS", "https://wheels.example/?sig=hunter2", "credential_query"},
		{"PIP_FIND_LINKS", "/w https://me:hunter2@wheels.example/", "credential_url"},
		// A value that cannot be checked is not passed on.
		{"HTTPS_PROXY", "http://me:hunter2%zz@proxy:3128", "unparsable_url"},
		{"PIP_INDEX_URL", "https://pypi.example:hunter2/simple", "unparsable_url"},
	} {
		t.Run(c.name+"/"+c.reason, func(t *testing.T) {
			in := &Installer{Dir: t.TempDir(), Host: host("debian", map[string]string{"PATH": "/bin", c.name: c.value}, "python3")}
			_, _, f := in.PySpy(context.Background(), []string{c.name + "=" + c.value})
			wantFailure(t, f, gen.FailureCodeSetupFailure, c.reason, "hunter2", c.value)
			if f.Details["refused_variable"] != c.name {
				t.Errorf("%s: refused %v", c.name, f.Details)
			}
		})
	}
}

func TestInstallerEnvironmentForwardsURLsWithoutCredentials(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"HTTPS_PROXY", "http://proxy:3128"},
		{"HTTPS_PROXY", "proxy:3128"},
		{"https_proxy", "proxy.example"},
		{"HTTP_PROXY", "[::1]:3128"},
		{"ALL_PROXY", "socks5h://proxy:1080"},
		{"all_proxy", "proxy:1080"},
		{"NO_PROXY", "localhost,.corp.example"},
		{"PIP_INDEX_URL", "https://pypi.example/simple"},
		{"PIP_INDEX_URL", "https://pypi.example/simple?"},
		{"PIP_EXTRA_INDEX_URL", "https://a.example/simple https://b.example/simple"},
		{"PIP_FIND_LINKS", "/w"},
		{"PIP_FIND_LINKS", "/srv/a@b/wheels?c"},
		{"PIP_FIND_LINKS", "file:///w ./wheels"},
	} {
		in := &Installer{Host: host("debian", map[string]string{"PATH": "/bin", c.name: c.value})}
		env, f := in.environment(managedProviders["py-spy"], []string{c.name + "=" + c.value})
		if f != nil {
			t.Errorf("%s=%s: %v", c.name, c.value, f)
			continue
		}
		if d := cmp.Diff([]string{"PATH=/bin", c.name + "=" + c.value}, env); d != "" {
			t.Errorf("installer environment (-want +got):\n%s", d)
		}
	}
}

// fakeUV writes a stand-in for uv, named as such, that records its argv and
// environment and installs testtool.FakePySpy into --target, after sleeping sleep.
func fakeUV(t *testing.T, sleep string) (bin, log string) {
	bin, log = t.TempDir(), filepath.Join(t.TempDir(), "uv.log")
	script := `#!/bin/sh
# A fake uv for tests, not the real installer.
printf '%s\n' "$*" > ` + log + `
env | sort >> ` + log + `
sleep ` + sleep + `
target=""
while [ "$#" -gt 0 ]; do case "$1" in --target) target="$2"; shift 2;; *) shift;; esac; done
mkdir -p "$target/bin"
cat > "$target/bin/py-spy" <<'FAKE'
` + testtool.FakePySpy + `FAKE
`
	os.WriteFile(filepath.Join(bin, "uv"), []byte(script), 0o755)
	return bin, log
}

func TestInstallWithUVPrefersUVAndForwardsItsControls(t *testing.T) {
	bin, log := fakeUV(t, "0")
	env := map[string]string{"PATH": "/usr/bin:/bin", "UV_OFFLINE": "1", "UV_NO_CONFIG": "1"}
	h := host("debian", env, "python3")
	h.LookPath = func(name string) (string, error) {
		if name == "uv" {
			return filepath.Join(bin, "uv"), nil
		}
		return "/usr/bin/" + name, nil
	}
	in := &Installer{Dir: t.TempDir(), Host: h}
	b, installed, f := in.PySpy(context.Background(), []string{"UV_OFFLINE=1", "UV_NO_CONFIG=1"})
	if f != nil || !installed || b.Version != PySpyVersion {
		t.Fatalf("%+v %v %v", b, installed, f)
	}
	got, _ := os.ReadFile(log)
	lines := strings.Split(string(got), "\n")
	if !strings.HasPrefix(lines[0], "pip install --quiet --target ") || !strings.HasSuffix(lines[0], "/lib py-spy=="+PySpyVersion) {
		t.Errorf("uv argv = %q", lines[0])
	}
	for _, want := range []string{"UV_OFFLINE=1", "UV_NO_CONFIG=1", "PATH=/usr/bin:/bin"} {
		if !strings.Contains(string(got), "\n"+want+"\n") {
			t.Errorf("uv environment lacks %s:\n%s", want, got)
		}
	}
}

// TestInstallMemrayWithUV: with uv on PATH the environment is made by python3 -m venv
// and memray installed by `uv pip install --python ENV/bin/python`; the fake uv, named
// as such, writes a FAKE memray package (only __version__) into the environment.
func TestInstallMemrayWithUV(t *testing.T) {
	py := testtool.Require(t, "/usr/bin/python3")
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "uv.log")
	os.WriteFile(filepath.Join(bin, "uv"), []byte(`#!/bin/sh
# A fake uv for tests, not the real installer.
printf '%s\n' "$*" > `+log+`
py=""
while [ "$#" -gt 0 ]; do case "$1" in --python) py="$2"; shift 2;; *) shift;; esac; done
for site in "$(dirname "$py")"/../lib/python3*/site-packages; do
  mkdir -p "$site/memray" && echo '__version__ = "`+MemrayVersion+`"' > "$site/memray/__init__.py"
done
`), 0o755)
	h := host("debian", map[string]string{"PATH": "/usr/bin:/bin", "UV_OFFLINE": "1"})
	h.LookPath = func(name string) (string, error) {
		switch name {
		case "uv":
			return filepath.Join(bin, "uv"), nil
		case "python3":
			return py, nil
		}
		return "", exec.ErrNotFound
	}
	in := &Installer{Dir: t.TempDir(), Host: h}
	b, installed, f := in.Prepare(context.Background(), "memray", []string{"UV_OFFLINE=1"})
	if f != nil || !installed || b.Version != MemrayVersion {
		t.Fatalf("%+v %v %v", b, installed, f)
	}
	got, _ := os.ReadFile(log)
	if !strings.HasPrefix(string(got), "pip install --quiet --python ") || !strings.HasSuffix(string(got), "/lib/venv/bin/python memray=="+MemrayVersion+"\n") {
		t.Errorf("uv argv = %q", got)
	}
	receipt, _ := os.ReadFile(filepath.Join(in.Dir, "memray-"+MemrayVersion, "binding.json"))
	if !strings.Contains(string(receipt), `"installer": "uv"`) {
		t.Errorf("receipt = %s", receipt)
	}
}

func TestInstallTimeoutAndCancellation(t *testing.T) {
	bin, _ := fakeUV(t, "30")
	h := host("debian", map[string]string{"PATH": "/usr/bin:/bin"})
	h.LookPath = func(name string) (string, error) {
		if name == "uv" {
			return filepath.Join(bin, "uv"), nil
		}
		return "", exec.ErrNotFound
	}
	in := &Installer{Dir: t.TempDir(), Host: h}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, f := in.PySpy(ctx, nil)
	wantFailure(t, f, gen.FailureCodeSetupFailure, "timeout", in.Dir)

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, _, f = in.PySpy(ctx, nil)
	wantFailure(t, f, gen.FailureCodeCancelled, "", in.Dir)
	if in.Existing() != nil {
		t.Error("a stopped installation left a binding")
	}
	if entries, _ := os.ReadDir(in.Dir); len(entries) != 0 {
		t.Errorf("a stopped installation left %v", entries)
	}
}

// wantFailure checks f's code and reason, and that its message and details name none of
// the host strings.
func wantFailure(t *testing.T, f *failure.Failure, code gen.FailureCode, reason string, hidden ...string) {
	t.Helper()
	if f == nil {
		t.Fatalf("want %s, got success", code)
	}
	if f.Code != code || reason != "" && f.Details["reason"] != reason {
		t.Fatalf("failure %s %v: %s, want %s (%s)", f.Code, f.Details, f.Message, code, reason)
	}
	env := f.Envelope()
	text := fmt.Sprint(env.Message, env.Details)
	for _, h := range hidden {
		if strings.Contains(text, h) {
			t.Errorf("failure names %q: %s", h, text)
		}
	}
}

func hashFile(p string) (string, int64, error) { return sourcefile.Hash(p) }
