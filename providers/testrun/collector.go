package testrun

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

//go:embed python/flameox_pytest_plugin.py
var pytestPlugin []byte

const (
	pytestStream      = "pytest.jsonl"
	observationStream = "observations.jsonl"
)

func pytestUnavailable(why string) error {
	return &providers.UnavailableError{Provider: "pytest", Module: "pytest",
		Message:     "the pytest provider needs pytest in the workload's Python: " + why,
		Remediation: "Install pytest for the workload's interpreter (pip install pytest, or Debian's python3-pytest for /usr/bin/python3), then retry."}
}

// isPytest reports whether argv is `python* -m pytest ...`.
func isPytest(argv []string) bool {
	return len(argv) >= 3 && strings.HasPrefix(filepath.Base(argv[0]), "python") && argv[1] == "-m" && argv[2] == "pytest"
}

var pytestCollector = providers.Collect(providers.CollectorSpec[gen.PytestProvider]{Kind: "pytest", File: pytestStream,
	Admit: func(cases []providers.Case) (*providers.Executable, error) {
		for _, c := range cases {
			if !isPytest(c.Argv) {
				return nil, &providers.FieldError{Field: c.ArgvField, Accepted: []string{"python -m pytest ..."},
					Message: "the pytest provider runs `python* -m pytest ...`: argv must be a Python interpreter, -m and pytest, then pytest's arguments"}
			}
			// The interpreter is asked as the workload names it (a virtual environment's
			// python is a symlink whose directory holds pyvenv.cfg); a relative path is
			// relative to the target's cwd, which a probe does not share.
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
			if _, ok := providers.Probe(exe, "-c", "import pytest"); !ok {
				return nil, pytestUnavailable(filepath.Base(c.Argv[0]) + " cannot import pytest")
			}
		}
		return nil, nil
	},
	// pytest loads the plugin by name (-p) from the directory put on PYTHONPATH, which
	// pytest-xdist workers inherit.
	Command: func(_ *gen.PytestProvider, _ *providers.Executable, c providers.Case, _ string) []string {
		argv := append([]string{c.Argv[0], "-m", "pytest", "-p", "flameox_pytest_plugin"}, c.Argv[3:]...)
		return argv
	},
	Env: func(_ *gen.PytestProvider, dir string) map[string]string {
		lib := filepath.Join(dir, "python")
		if err := os.MkdirAll(lib, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(lib, "flameox_pytest_plugin.py"), pytestPlugin, 0o644)
		}
		return map[string]string{
			"FLAMEOX_PYTEST_OUTPUT": filepath.Join(dir, pytestStream),
			"PYTHONPATH":            lib,
		}
	}})

var observationsCollector = providers.Collect(providers.CollectorSpec[gen.ObservationsProvider]{Kind: "observations", File: observationStream,
	Env: func(_ *gen.ObservationsProvider, dir string) map[string]string {
		return map[string]string{"FLAMEOX_OBSERVATIONS_PATH": filepath.Join(dir, observationStream)}
	}})
