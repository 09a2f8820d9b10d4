package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
)

// collector builds the invocations of one capture provider and names the native
// artifact it leaves in the execution directory.
type collector struct {
	kind string
	// scope says whose exit the launched process reports: workload or collector.
	scope string
	// role and file name the native artifact; empty for the direct provider.
	role   string
	file   string
	format gen.Format
	// admit checks availability and the argv shape of every case before anything runs,
	// and returns the bound collector executable, if any.
	admit func(cr *captureRequest) (*boundCommand, *failure.Failure)
	// command returns the argv to launch for case c writing into exdir.
	command func(cr *captureRequest, c boundCase, exdir string) []string
	// env are variables the provider adds under the caller's overrides, for an execution
	// writing into exdir.
	env func(exdir string) map[string]string
}

// collectors are the capture providers this build implements.
var collectors = map[string]*collector{
	"direct": {kind: "direct", scope: "workload"},
	"perf": {kind: "perf", scope: "collector", role: "cpu-profile", file: "perf.data", format: gen.FormatPerfData,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			exe, err := perfExecutable()
			if err != nil {
				return nil, perfUnavailable()
			}
			return bindCollector(exe, "perf", perfUnavailable)
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			freq, graph := int64(99), "dwarf"
			if v, ok := cr.providerFields["frequency"].(int64); ok {
				freq = v
			}
			if v, ok := cr.providerFields["call_graph"].(string); ok {
				graph = v
			}
			argv := []string{cr.collector.path, "record", "--freq", strconv.FormatInt(freq, 10), "--call-graph", graph,
				"--output", filepath.Join(exdir, "perf.data"), "--", c.command.path}
			return append(argv, c.command.argv[1:]...)
		}},
	"node-cpu-profile": {kind: "node-cpu-profile", scope: "workload", role: "cpu-profile", file: "profile.cpuprofile", format: gen.FormatCpuprofile,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			return nil, requireArgv0(cr, "node-cpu-profile", "a Node.js interpreter (node)", func(base string) bool {
				return base == "node" || base == "nodejs"
			})
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			argv := []string{c.command.argv[0], "--cpu-prof", "--cpu-prof-dir=" + exdir, "--cpu-prof-name=profile.cpuprofile"}
			return append(argv, c.command.argv[1:]...)
		}},
	"cprofile": {kind: "cprofile", scope: "workload", role: "cpu-profile", file: "profile.pstats", format: gen.FormatPstats,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			return nil, requireArgv0(cr, "cprofile", "a Python interpreter (python, python3, python3.12, ...)", func(base string) bool {
				return strings.HasPrefix(base, "python")
			})
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			argv := []string{c.command.argv[0], "-m", "cProfile", "-o", filepath.Join(exdir, "profile.pstats")}
			return append(argv, c.command.argv[1:]...)
		}},
	"go-test": {kind: "go-test", scope: "workload", role: "cpu-profile", file: "cpu.pprof", format: gen.FormatPprof,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			for i, c := range cr.cases {
				if filepath.Base(c.command.argv[0]) != "go" || len(c.command.argv) < 2 || c.command.argv[1] != "test" {
					return nil, failure.Invalid(casePath(cr, i, 1), []string{"go test ..."},
						"the go-test provider runs `go test PACKAGE [flags]`; argv must start with go test")
				}
			}
			return nil, nil
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			// The test binary goes to scratch, not the working directory.
			argv := []string{c.command.argv[0], "test", "-cpuprofile", filepath.Join(exdir, "cpu.pprof"), "-o", filepath.Join(exdir, "test.bin")}
			return append(argv, c.command.argv[2:]...)
		},
		// The go command needs HOME for its build and module caches.
		env: func(string) map[string]string {
			if h := os.Getenv("HOME"); h != "" {
				return map[string]string{"HOME": h}
			}
			return nil
		}},
	"benchmark-samples": {kind: "benchmark-samples", scope: "workload", role: "benchmark", file: "benchmark-samples.json", format: gen.FormatSamples,
		command: func(cr *captureRequest, c boundCase, exdir string) []string { return c.command.argv },
		env: func(exdir string) map[string]string {
			return map[string]string{"FLAMEOX_BENCHMARK_OUTPUT": filepath.Join(exdir, "benchmark-samples.json")}
		}},
	"nvbench": {kind: "nvbench", scope: "workload", role: "benchmark", file: "nvbench.json", format: gen.FormatNvbench,
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			return append(append([]string{}, c.command.argv...), "--json", filepath.Join(exdir, "nvbench.json"))
		}},
	"hyperfine": {kind: "hyperfine", scope: "collector", role: "benchmark", file: "hyperfine.json", format: gen.FormatHyperfine,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			exe, err := exec.LookPath("hyperfine")
			if err != nil {
				return nil, hostToolUnavailable("hyperfine", "Install hyperfine (Debian/Ubuntu: apt-get install hyperfine; or cargo install hyperfine), then retry.")
			}
			return bindCollector(exe, "hyperfine", func() *failure.Failure {
				return hostToolUnavailable("hyperfine", "The hyperfine executable cannot be read; reinstall it.")
			})
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			runs, warmup := int64(10), int64(1)
			if v, ok := cr.providerFields["runs"].(int64); ok {
				runs = v
			}
			if v, ok := cr.providerFields["warmup"].(int64); ok {
				warmup = v
			}
			argv := []string{cr.collector.path, "--shell=none", "--style", "none", "--runs", strconv.FormatInt(runs, 10),
				"--warmup", strconv.FormatInt(warmup, 10), "--export-json", filepath.Join(exdir, "hyperfine.json")}
			if name, ok := cr.providerFields["name"].(string); ok {
				argv = append(argv, "--command-name", name)
			}
			words := append([]string{c.command.path}, c.command.argv[1:]...)
			return append(argv, shellWords(words))
		}},
	"pyperf": {kind: "pyperf", scope: "collector", role: "benchmark", file: "pyperf.json", format: gen.FormatPyperf,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			exe, err := exec.LookPath("python3")
			if err != nil {
				return nil, pyperfUnavailable("python3 is not on PATH")
			}
			b, f := bindCollector(exe, "python3", func() *failure.Failure { return pyperfUnavailable("python3 cannot be read") })
			if f != nil {
				return nil, f
			}
			if !probePython(b.path, "import pyperf") {
				return nil, pyperfUnavailable("the python3 on PATH cannot import pyperf")
			}
			return b, nil
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			get := func(k string, d int64) string {
				if v, ok := cr.providerFields[k].(int64); ok {
					return strconv.FormatInt(v, 10)
				}
				return strconv.FormatInt(d, 10)
			}
			name := "command"
			if v, ok := cr.providerFields["name"].(string); ok {
				name = v
			}
			argv := []string{cr.collector.path, "-m", "pyperf", "command", "--quiet", "--output", filepath.Join(exdir, "pyperf.json"),
				"--processes", get("processes", 1), "--values", get("values", 3), "--warmups", get("warmups", 1),
				"--loops", get("loops", 0), "--name", name, "--", c.command.path}
			return append(argv, c.command.argv[1:]...)
		}},
	"py-spy": {kind: "py-spy", scope: "collector", role: "cpu-profile", file: "profile.speedscope.json", format: gen.FormatPySpy,
		admit: func(cr *captureRequest) (*boundCommand, *failure.Failure) {
			exe := os.Getenv("FLAMEOX_PY_SPY")
			if exe == "" {
				p, err := exec.LookPath("py-spy")
				if err != nil {
					return nil, pySpyUnavailable("py-spy is not installed or not on PATH")
				}
				exe = p
			}
			b, f := bindCollector(exe, "py-spy", func() *failure.Failure { return pySpyUnavailable("the py-spy executable cannot be read") })
			if f != nil {
				return nil, f
			}
			if v := collectorVersion(b.path); v != pySpyVersion {
				return nil, pySpyUnavailable("py-spy reports version "+strconv.Quote(v)+", not the pinned "+pySpyVersion).
					With("found_version", v)
			}
			return b, nil
		},
		command: func(cr *captureRequest, c boundCase, exdir string) []string {
			rate := int64(100)
			if v, ok := cr.providerFields["rate"].(int64); ok {
				rate = v
			}
			argv := []string{cr.collector.path, "record", "--format", "speedscope", "--output", filepath.Join(exdir, "profile.speedscope.json"),
				"--rate", strconv.FormatInt(rate, 10)}
			for _, flag := range []string{"gil", "native", "subprocesses"} {
				if v, _ := cr.providerFields[flag].(bool); v {
					argv = append(argv, "--"+flag)
				}
			}
			argv = append(argv, "--", c.command.path)
			return append(argv, c.command.argv[1:]...)
		}},
}

// pySpyVersion is the pinned py-spy release.
const pySpyVersion = "0.4.2"

func pySpyUnavailable(why string) *failure.Failure {
	f := failure.New(gen.FailureCodeUnavailableCapability, "%s; the py-spy provider needs py-spy %s", why, pySpyVersion).
		With("provider_id", "py-spy").With("missing_executable", "py-spy").With("pinned_version", pySpyVersion).
		With("remediation", "Install the pinned collector (pip install py-spy=="+pySpyVersion+" or uv tool install py-spy=="+pySpyVersion+") so that py-spy is on PATH, or set FLAMEOX_PY_SPY to it; then retry.")
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action",
		Message: "Install py-spy " + pySpyVersion + " (pip install py-spy==" + pySpyVersion + ") or set FLAMEOX_PY_SPY, then retry the same call."}}
	return f
}

// bindCollector resolves and hashes a collector executable.
func bindCollector(exe, name string, unavailable func() *failure.Failure) (*boundCommand, *failure.Failure) {
	p, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, unavailable()
	}
	sum, _, err := sourcefile.Hash(p)
	if err != nil {
		return nil, unavailable()
	}
	return &boundCommand{argv: []string{name}, path: p, sha256: sum}, nil
}

// probe runs a short, bounded command (10 s, 64 KiB of output) in a throwaway directory
// and returns its result when it exits 0.
func probe(exe string, args ...string) (*broker.Result, bool) {
	dir, err := os.MkdirTemp("", "flameox-probe-")
	if err != nil {
		return nil, false
	}
	defer os.RemoveAll(dir)
	res, err := broker.Run(context.Background(), broker.Spec{Path: exe, Args: append([]string{exe}, args...), Dir: dir,
		Env: []string{"PATH=" + os.Getenv("PATH")}, ExcerptBytes: 256, MaxOutputBytes: 64 << 10, Timeout: 10 * time.Second})
	return res, err == nil && res.ExitCode != nil && *res.ExitCode == 0
}

// collectorVersion returns the last word EXE --version prints, or "".
func collectorVersion(exe string) string {
	res, ok := probe(exe, "--version")
	if !ok {
		return ""
	}
	f := strings.Fields(string(res.Stdout.Excerpt))
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// casePath is the field path of argv element k of case i.
func casePath(cr *captureRequest, i, k int) []any {
	if cr.experiment != nil && len(cr.experiment.Cases[i].Argv) > 0 {
		return failure.Path("experiment", "cases", i, "argv", k)
	}
	return failure.Path("target", "argv", k)
}

// requireArgv0 checks every case's argv[0] with ok.
func requireArgv0(cr *captureRequest, provider, want string, ok func(base string) bool) *failure.Failure {
	for i, c := range cr.cases {
		if !ok(filepath.Base(c.command.argv[0])) {
			return failure.Invalid(casePath(cr, i, 0), nil, "the %s provider wraps %s; argv[0] is %q", provider, want, filepath.Base(c.command.argv[0]))
		}
	}
	return nil
}

// hostToolUnavailable is the UNAVAILABLE_CAPABILITY state of a missing host tool.
func hostToolUnavailable(tool, remediation string) *failure.Failure {
	f := failure.New(gen.FailureCodeUnavailableCapability, "%s is not installed or not on PATH", tool).
		With("provider_id", tool).With("missing_executable", tool).With("remediation", remediation)
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action", Message: remediation}}
	return f
}

func pyperfUnavailable(why string) *failure.Failure {
	remediation := "Install pyperf for the python3 on PATH (python3 -m pip install pyperf), or use the benchmark-samples or hyperfine provider; then retry."
	f := failure.New(gen.FailureCodeUnavailableCapability, "%s; the pyperf provider runs python3 -m pyperf command", why).
		With("provider_id", "pyperf").With("missing_module", "pyperf").With("remediation", remediation)
	f.NextAction = &gen.NextAction{OperatorAction: &gen.OperatorAction{Kind: "operator_action", Message: remediation}}
	return f
}

// probePython reports whether python runs code successfully (isolated mode).
func probePython(python, code string) bool {
	_, ok := probe(python, "-I", "-c", code)
	return ok
}

// shellWords quotes argv as one command line that hyperfine --shell=none splits back into
// the same words.
func shellWords(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(quoted, " ")
}
