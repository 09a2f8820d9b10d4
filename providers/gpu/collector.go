package gpu

import (
	"os/exec"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

// sanitizerFile is the XML log compute-sanitizer --save writes in the execution directory.
const sanitizerFile = "compute-sanitizer.xml"

// sanitizerErrorExit is the collector's exit when the sanitizer reported an error.
const sanitizerErrorExit = "99"

// sanitizerTool is NVIDIA Compute Sanitizer's record (decision 0068): the host tool the
// compute-sanitizer provider wraps the workload in.
var sanitizerTool = prepare.Tool{ID: gen.PreparableProviderComputeSanitizer, Class: prepare.HostTool, Executables: []string{"compute-sanitizer"},
	Install: map[string]string{
		"":       "Install the NVIDIA CUDA Toolkit (compute-sanitizer ships with it) and put its bin directory on PATH.",
		"debian": "Install the CUDA Toolkit from NVIDIA's CUDA apt repository (apt-get install cuda-toolkit) and put /usr/local/cuda/bin on PATH.",
		"fedora": "Install the CUDA Toolkit from NVIDIA's CUDA dnf repository (dnf install cuda-toolkit) and put /usr/local/cuda/bin on PATH.",
	},
	Note: "It needs an NVIDIA GPU and driver to run a workload."}

// tritonTool is Triton's record: a package of the workload's own Python.
var tritonTool = prepare.Tool{ID: gen.PreparableProviderTriton, Class: prepare.Workload,
	Note: "The workload's Python interpreter needs triton (it comes with CUDA builds of torch); Flameox reads the autotune cache natively."}

var sanitizerCollector = providers.Collect(providers.CollectorSpec[gen.ComputeSanitizerProvider]{Kind: "compute-sanitizer", File: sanitizerFile,
	Admit: func([]providers.Case) (*providers.Executable, error) {
		return providers.LocateAndBind(sanitizerTool, prepare.Need{Purpose: "to capture with the compute-sanitizer provider"})
	},
	Command: sanitizerCommand})

// sanitizerCommand is `compute-sanitizer --tool T --xml --save F --error-exitcode 99
// --print-limit 0 <argv...>`: every error is printed and saved (the default print limit
// of 100 silently truncates), and exit 99 tells the sanitizer's verdict apart from the
// workload's own exit, which compute-sanitizer otherwise passes through.
func sanitizerCommand(o *gen.ComputeSanitizerProvider, exe *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{exe.Path, "--tool", o.Tool, "--xml", "--save", filepath.Join(dir, sanitizerFile),
		"--error-exitcode", sanitizerErrorExit, "--print-limit", "0", c.Launch()}
	return append(argv, c.Argv[1:]...)
}

// tritonBundle is the triton provider's artifact: every *.autotune.json entry of the
// capture's fresh cache, in path order, one JSON document a line.
const tritonBundle = "triton.autotune.jsonl"

// tritonCacheDir is the capture's own Triton cache, in the execution directory.
const tritonCacheDir = "triton-cache"

// tritonScript runs the workload, then bundles the cache entries it left and exits with
// the workload's exit: $1 is the bundle, $2 the cache directory, the rest the workload.
// Triton writes each entry with json.dumps (one line, no newline); a newline is added
// where the entry does not end with one.
const tritonScript = `out=$1; dir=$2; shift 2
"$@"
rc=$?
: > "$out" || exit 125
if [ -d "$dir" ]; then
	find "$dir" -type f -name '*.autotune.json' | LC_ALL=C sort | while IFS= read -r f; do cat "$f"; [ -z "$(tail -c 1 "$f")" ] || echo; done >> "$out"
fi
exit $rc`

func tritonUnavailable(why string) error {
	return &providers.UnavailableError{Provider: "triton", Module: "triton",
		Message:     "the triton provider needs Triton in the workload's Python: " + why,
		Remediation: "Install Triton for the workload's interpreter (pip install triton; PyTorch's CUDA wheels bring it), then retry."}
}

var tritonCollector = providers.Collect(providers.CollectorSpec[gen.TritonProvider]{Kind: "triton", File: tritonBundle,
	// The wrapper is the system's POSIX sh. A Python workload named by an absolute or
	// PATH-resolved interpreter is asked for triton before anything runs.
	Admit: func(cases []providers.Case) (*providers.Executable, error) {
		for _, c := range cases {
			base := filepath.Base(c.Argv[0])
			if !strings.HasPrefix(base, "python") {
				continue
			}
			exe := c.Argv[0]
			switch {
			case filepath.IsAbs(exe):
			case !strings.Contains(exe, "/"):
				p, err := exec.LookPath(exe)
				if err != nil {
					continue
				}
				exe = p
			default:
				continue
			}
			if _, ok := providers.Probe(exe, "-c", "import triton"); !ok {
				return nil, tritonUnavailable(base + " cannot import triton")
			}
		}
		return providers.Bind("/bin/sh", func() error {
			return providers.HostToolUnavailable("sh", "The triton provider bundles the cache with /bin/sh; install a POSIX shell there.")
		})
	},
	Command: tritonCommand,
	Env: func(_ *gen.TritonProvider, dir string) map[string]string {
		return map[string]string{"TRITON_CACHE_DIR": filepath.Join(dir, tritonCacheDir), "TRITON_CACHE_AUTOTUNING": "1"}
	}})

// tritonCommand is `/bin/sh -c SCRIPT flameox-triton BUNDLE CACHE <argv...>`.
func tritonCommand(_ *gen.TritonProvider, exe *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{exe.Path, "-c", tritonScript, "flameox-triton", filepath.Join(dir, tritonBundle), filepath.Join(dir, tritonCacheDir), c.Launch()}
	return append(argv, c.Argv[1:]...)
}
