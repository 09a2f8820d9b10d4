package gpu

import (
	"os/exec"
	"path/filepath"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// sanitizerFile is the XML log compute-sanitizer --save writes in the execution directory.
const sanitizerFile = "compute-sanitizer.xml"

// sanitizerErrorExit is the collector's exit when the sanitizer reported an error.
const sanitizerErrorExit = "99"

const sanitizerRemediation = "Install the CUDA Toolkit or NVIDIA's standalone Compute Sanitizer and put the directory holding compute-sanitizer on PATH (usually /usr/local/cuda/bin or /usr/local/cuda/compute-sanitizer), then retry."

var sanitizerCollector = providers.Collect(providers.CollectorSpec[gen.ComputeSanitizerProvider]{Kind: "compute-sanitizer", File: sanitizerFile,
	Admit: func([]providers.Case) (*providers.Executable, error) {
		exe, err := exec.LookPath("compute-sanitizer")
		if err != nil {
			return nil, providers.HostToolUnavailable("compute-sanitizer", sanitizerRemediation)
		}
		return providers.Bind(exe, func() error {
			return providers.HostToolUnavailable("compute-sanitizer", "The compute-sanitizer executable cannot be read; reinstall the CUDA Toolkit.")
		})
	},
	Command: sanitizerCommand})

// sanitizerCommand is `compute-sanitizer --tool T --xml --save F --error-exitcode 99
// --print-limit 0 <argv...>`: every error is printed and saved (the default print limit
// of 100 silently truncates), and exit 99 tells the sanitizer's verdict apart from the
// workload's own exit, which compute-sanitizer otherwise passes through.
func sanitizerCommand(o *gen.ComputeSanitizerProvider, exe *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{exe.Path, "--tool", o.Tool, "--xml", "--save", filepath.Join(dir, sanitizerFile),
		"--error-exitcode", sanitizerErrorExit, "--print-limit", "0", c.Executable.Path}
	return append(argv, c.Argv[1:]...)
}
