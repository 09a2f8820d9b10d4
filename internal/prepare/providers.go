// Package prepare owns provider preparation (catalog §3.2, the prepare_providers tool):
// the preparable provider set, what each provider needs outside Flameox as detected on
// this machine, and the bounded installation, verification and binding of the managed
// providers Flameox can install itself, py-spy and memray's reader, into a Flameox-owned
// tools directory.
//
// It never runs a system package manager or asks for privileges: host tools and the
// workload interpreter's packages get guidance for this operating system, nothing more.
package prepare

import (
	"bufio"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
)

// Class is what preparing a provider means for Flameox.
type Class int

const (
	// Managed providers are collectors and readers Flameox installs, verifies and binds itself.
	Managed Class = iota
	// HostTool providers are executables the operator installs; Flameox detects them.
	HostTool
	// Workload providers are packages of the workload's own interpreter, probed by a capture.
	Workload
	// BuiltIn providers are formats Flameox reads natively; nothing is needed.
	BuiltIn
)

// Provider is one preparable provider.
type Provider struct {
	ID    gen.PreparableProvider
	Class Class
	// Executables are the names a host tool is found by on PATH, in order.
	Executables []string
	// Variable names the environment variable that points Flameox at the executable.
	Variable string
	// Install is the guidance per operating-system family (see Family), "" for any other.
	Install map[string]string
	// Note is guidance that holds everywhere: what the provider is used for.
	Note string
	// Formats are the formats a managed provider's installation reads (memray's reader);
	// the runtime hands its binding to their analyses unless Variable is set.
	Formats []gen.Format
	// Workload is what a managed provider also needs in the workload's interpreter,
	// reported as a workload requirement when it is prepared; "" for nothing.
	Workload string
}

// Providers is the preparable set, sorted by id.
var Providers = []Provider{
	{ID: gen.PreparableProviderAiperf, Class: BuiltIn,
		Note: "Flameox reads AIPerf per-request exports (profile_export.jsonl) natively; run aiperf yourself and pass its export as a source."},
	{ID: gen.PreparableProviderComputeSanitizer, Class: HostTool, Executables: []string{"compute-sanitizer"},
		Install: map[string]string{
			"":       "Install the NVIDIA CUDA Toolkit (compute-sanitizer ships with it) and put its bin directory on PATH.",
			"debian": "Install the CUDA Toolkit from NVIDIA's CUDA apt repository (apt-get install cuda-toolkit) and put /usr/local/cuda/bin on PATH.",
			"fedora": "Install the CUDA Toolkit from NVIDIA's CUDA dnf repository (dnf install cuda-toolkit) and put /usr/local/cuda/bin on PATH.",
		},
		Note: "It needs an NVIDIA GPU and driver to run a workload."},
	{ID: gen.PreparableProviderMemray, Class: Managed, Variable: "FLAMEOX_MEMRAY_PYTHON", Formats: []gen.Format{gen.FormatMemray},
		Note:     "Flameox installs memray " + MemrayVersion + " with python3 -m pip or uv into a virtual environment in its own tools directory and reads memray captures with it (unless FLAMEOX_MEMRAY_PYTHON names another Python).",
		Workload: "A memray capture runs memray inside the workload: the workload's Python interpreter needs memray>=1.17 (<python> -m pip install 'memray>=1.17'); a capture reads its file with that interpreter."},
	{ID: gen.PreparableProviderNsightCompute, Class: HostTool, Executables: []string{"ncu"}, Variable: "FLAMEOX_NCU",
		Install: map[string]string{
			"":       "Install NVIDIA Nsight Compute (with the CUDA Toolkit, or from developer.nvidia.com/nsight-compute) so that ncu is on PATH, or set FLAMEOX_NCU to it.",
			"debian": "Install NVIDIA Nsight Compute from NVIDIA's CUDA apt repository (apt-get install nsight-compute) so that ncu is on PATH, or set FLAMEOX_NCU to it.",
			"fedora": "Install NVIDIA Nsight Compute from NVIDIA's CUDA dnf repository (dnf install nsight-compute) so that ncu is on PATH, or set FLAMEOX_NCU to it.",
		},
		Note: "Profiling kernels may need access to GPU performance counters (NVreg_RestrictProfilingToAdminUsers=0 or root)."},
	{ID: gen.PreparableProviderNsightSystems, Class: HostTool, Executables: []string{"nsys"}, Variable: "FLAMEOX_NSYS",
		Install: map[string]string{
			"":       "Install NVIDIA Nsight Systems (from developer.nvidia.com/nsight-systems) so that nsys is on PATH, or set FLAMEOX_NSYS to it.",
			"debian": "Install NVIDIA Nsight Systems from NVIDIA's CUDA apt repository (apt-get install nsight-systems-cli) so that nsys is on PATH, or set FLAMEOX_NSYS to it.",
			"fedora": "Install NVIDIA Nsight Systems from NVIDIA's CUDA dnf repository (dnf install nsight-systems-cli) so that nsys is on PATH, or set FLAMEOX_NSYS to it.",
		},
		Note: "Flameox reads its SQLite exports natively and converts .nsys-rep files with nsys."},
	{ID: gen.PreparableProviderNvbench, Class: BuiltIn,
		Note: "NVBench is a C++ library: build the benchmark with it (github.com/NVIDIA/nvbench); Flameox runs the benchmark executable you name and reads its JSON natively."},
	{ID: gen.PreparableProviderOtlp, Class: BuiltIn,
		Note: "Flameox reads OTLP/JSON and OTLP/protobuf trace exports natively; nothing to install."},
	{ID: gen.PreparableProviderPerf, Class: HostTool, Executables: []string{"perf"}, Variable: "FLAMEOX_PERF",
		Install: map[string]string{
			"":       "perf is part of Linux (tools/perf): install your distribution's perf package so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"debian": "apt-get install linux-perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"ubuntu": "apt-get install linux-tools-common linux-tools-$(uname -r), so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"fedora": "dnf install perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"arch":   "pacman -S perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"alpine": "apk add perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"suse":   "zypper install perf, so that perf is on PATH, or set FLAMEOX_PERF to it.",
			"darwin": "perf runs only on Linux; use the py-spy, cprofile, node-cpu-profile or go-test providers here.",
		},
		Note: "Sampling other processes may need kernel.perf_event_paranoid <= 2."},
	{ID: gen.PreparableProviderPerfetto, Class: HostTool, Executables: []string{"trace_processor_shell", "trace_processor"}, Variable: "FLAMEOX_TRACE_PROCESSOR",
		Install: map[string]string{
			"": "Download Trace Processor (curl -LO https://get.perfetto.dev/trace_processor) and make it executable, on PATH as trace_processor_shell, or set FLAMEOX_TRACE_PROCESSOR to it.",
		},
		Note: "Flameox reads Perfetto protobuf traces natively; Trace Processor is used only for what the native reader does not decode."},
	{ID: gen.PreparableProviderPySpy, Class: Managed, Executables: []string{"py-spy"}, Variable: "FLAMEOX_PY_SPY",
		Note: "Flameox installs py-spy " + PySpyVersion + " with python3 -m pip or uv into its own tools directory."},
	{ID: gen.PreparableProviderRocprofv3, Class: HostTool, Executables: []string{"rocprofv3"},
		Install: map[string]string{
			"":       "Install ROCm's rocprofiler-sdk (rocprofv3) from AMD's ROCm packages so that rocprofv3 is on PATH.",
			"debian": "Install rocprofiler-sdk from AMD's ROCm apt repository (apt-get install rocprofiler-sdk) so that rocprofv3 is on PATH.",
			"ubuntu": "Install rocprofiler-sdk from AMD's ROCm apt repository (apt-get install rocprofiler-sdk) so that rocprofv3 is on PATH.",
			"fedora": "Install rocprofiler-sdk from AMD's ROCm dnf repository (dnf install rocprofiler-sdk) so that rocprofv3 is on PATH.",
		},
		Note: "It needs an AMD GPU with ROCm to run a workload."},
	{ID: gen.PreparableProviderTorch, Class: Workload,
		Note: "The workload's Python interpreter needs torch>=2.7 (<python> -m pip install 'torch>=2.7'); the torch-profiler provider probes it before a capture."},
	{ID: gen.PreparableProviderTriton, Class: Workload,
		Note: "The workload's Python interpreter needs triton (it comes with CUDA builds of torch); Flameox reads the autotune cache natively."},
}

// ReaderOf returns the managed provider whose installation reads format f, or false.
func ReaderOf(f gen.Format) (Provider, bool) {
	for _, p := range Providers {
		if p.Class == Managed && slices.Contains(p.Formats, f) {
			return p, true
		}
	}
	return Provider{}, false
}

// WorkloadRequirement is what a managed provider needs in the workload's interpreter,
// unverified (only a capture probes it), or false when it needs nothing there.
func WorkloadRequirement(p Provider) (gen.ProviderRequirement, bool) {
	if p.Class != Managed || p.Workload == "" {
		return gen.ProviderRequirement{}, false
	}
	return gen.ProviderRequirement{ProviderID: p.ID, Status: "unverified", Guidance: p.Workload}, true
}

// Lookup returns the preparable provider id, or false.
func Lookup(id gen.PreparableProvider) (Provider, bool) {
	for _, p := range Providers {
		if p.ID == id {
			return p, true
		}
	}
	return Provider{}, false
}

// Host is what detection reads from this machine; tests replace it.
type Host struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
	// Family is the operating-system family guidance is chosen for (see Family).
	Family string
}

// ThisHost is the machine Flameox runs on.
func ThisHost() Host {
	return Host{Getenv: os.Getenv, LookPath: exec.LookPath, Family: Family()}
}

// Requirement reports what provider p needs on host h: detection for a host tool,
// guidance for the others. It never names a host path.
func Requirement(p Provider, h Host) gen.ProviderRequirement {
	r := gen.ProviderRequirement{ProviderID: p.ID}
	switch p.Class {
	case BuiltIn:
		r.Status, r.Guidance = "built_in", p.Note
	case Workload:
		r.Status, r.Guidance = "unverified", p.Note
	default:
		found := p.Variable != "" && h.Getenv(p.Variable) != ""
		for _, e := range p.Executables {
			if found {
				break
			}
			_, err := h.LookPath(e)
			found = err == nil
		}
		install := p.Install[h.Family]
		if install == "" && h.Family == "ubuntu" {
			install = p.Install["debian"]
		}
		if install == "" {
			install = p.Install[""]
		}
		if found {
			r.Status, r.Guidance = "available", strings.TrimSpace(p.Executables[0]+" is available here. "+p.Note)
		} else {
			r.Status, r.Guidance = "missing", strings.TrimSpace(install+" "+p.Note)
		}
	}
	return r
}

// Family names the operating-system family for guidance: darwin, or on Linux the first
// of ID and ID_LIKE in /etc/os-release that guidance knows (debian, ubuntu, fedora,
// arch, alpine, suse); "" otherwise.
func Family() string {
	if goruntime.GOOS == "darwin" {
		return "darwin"
	}
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return ""
	}
	defer f.Close()
	return familyOf(bufio.NewScanner(f))
}

func familyOf(s *bufio.Scanner) string {
	var ids []string
	for n := 0; s.Scan() && n < 200; n++ {
		k, v, ok := strings.Cut(s.Text(), "=")
		if ok && (k == "ID" || k == "ID_LIKE") {
			ids = append(ids, strings.Fields(strings.Trim(v, `"'`))...)
		}
	}
	known := map[string]string{"debian": "debian", "ubuntu": "ubuntu", "fedora": "fedora", "rhel": "fedora", "centos": "fedora",
		"arch": "arch", "alpine": "alpine", "suse": "suse", "opensuse": "suse", "sles": "suse"}
	for _, id := range ids {
		if f, ok := known[id]; ok {
			return f
		}
	}
	return ""
}
