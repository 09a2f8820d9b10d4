package memory

import (
	"fmt"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

var collectors = []providers.Collector{
	providers.Collect(providers.CollectorSpec[gen.NodeHeapProfileProvider]{Kind: "node-heap-profile", File: "profile.heapprofile",
		Admit: func(cases []providers.Case) (*providers.Executable, error) {
			return nil, providers.RequireArgv0(cases, "node-heap-profile", "a Node.js interpreter (node)", func(base string) bool {
				return base == "node" || base == "nodejs"
			})
		},
		Command: func(_ *gen.NodeHeapProfileProvider, _ *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{c.Argv[0], "--heap-prof", "--heap-prof-dir=" + dir, "--heap-prof-name=profile.heapprofile"}
			return append(argv, c.Argv[1:]...)
		}}),
	providers.Collect(providers.CollectorSpec[gen.MemrayProvider]{Kind: "memray", File: memrayFile,
		Admit:   admitMemray,
		Command: memrayCommand,
		Reader:  memrayReaderOf}),
}

// memrayFile is the capture memray run writes in the execution directory.
const memrayFile = "memory.bin"

// admitMemray checks every case is `<python> <target…>` and that the workload's Python,
// asked as the workload names it, imports memray, before anything runs.
func admitMemray(cases []providers.Case) (*providers.Executable, error) {
	for _, c := range cases {
		field := append([]any{}, c.ArgvField...)
		if len(c.Argv) < 2 {
			return nil, &providers.FieldError{Field: field,
				Message: "the memray provider runs <python> <script or -m module or -c code> [args]: argv needs at least two elements"}
		}
		base := filepath.Base(c.Argv[0])
		if !strings.HasPrefix(base, "python") {
			return nil, &providers.FieldError{Field: append(field, 0),
				Message: fmt.Sprintf("the memray provider wraps a Python interpreter (python3, a virtual environment's python); argv[0] is %q", base)}
		}
		exe, ok := workloadPython(c.Argv[0])
		if !ok {
			if strings.Contains(c.Argv[0], "/") {
				return nil, &providers.FieldError{Field: append(field, 0),
					Message: "the memray provider needs argv[0] as an absolute path or a name on PATH, so the interpreter that reads the capture is the workload's"}
			}
			return nil, providers.HostToolUnavailable(base, "Install "+base+" or name the interpreter by absolute path, then retry.")
		}
		res, ok := providers.Probe(exe, "-c", "import memray; print(memray.__version__)")
		if !ok {
			return nil, &providers.UnavailableError{Provider: "memray", Module: "memray",
				Message:     "the memray provider needs memray>=" + minMemray + " in the workload's Python: " + base + " cannot import memray",
				Remediation: "Install memray in the workload's interpreter (" + base + " -m pip install 'memray>=" + minMemray + "'), then retry."}
		}
		if v := strings.TrimSpace(string(res.Stdout.Excerpt)); !memrayVersionOK(v) {
			return nil, &providers.UnavailableError{Provider: "memray", Module: "memray",
				Message:     fmt.Sprintf("the memray provider needs memray>=%s in the workload's Python; %s has memray %q", minMemray, base, v),
				Remediation: "Upgrade memray in the workload's interpreter (" + base + " -m pip install -U 'memray>=" + minMemray + "'), then retry.",
				Details:     map[string]any{"found_version": v, "required": ">=" + minMemray}}
		}
	}
	return nil, nil
}

// memrayReaderOf names the workload's Python, as the workload named it, to read the
// capture it writes (decision 0021): the interpreter that wrote a capture has the memray
// that reads it. Its digest is the one admission bound.
func memrayReaderOf(c providers.Case) *providers.Executable {
	named, ok := workloadPython(c.Argv[0])
	if !ok {
		return nil
	}
	return &providers.Executable{Path: named, SHA256: c.Executable.SHA256}
}

// memrayCommand is <python> -m memray run --output DIR/memory.bin [--native] <argv[1:]…>.
func memrayCommand(o *gen.MemrayProvider, _ *providers.Executable, c providers.Case, dir string) []string {
	argv := []string{c.Argv[0], "-m", "memray", "run", "--output", filepath.Join(dir, memrayFile)}
	if o.Native {
		argv = append(argv, "--native")
	}
	return append(argv, c.Argv[1:]...)
}
