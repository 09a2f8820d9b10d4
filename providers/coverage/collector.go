package coverage

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// dataFile is the coverage data the capture writes, in the execution directory.
const dataFile = ".coverage"

// rcFile is Flameox's coverage.py configuration, written into the execution directory
// and passed with --rcfile, so that the project's .coveragerc, setup.cfg, tox.ini or
// pyproject.toml (and COVERAGE_RCFILE) cannot redirect or split the data file.
const rcFile = "coverage.ini"

// rcText is the whole configuration: one data file, never parallel-mode suffixes.
const rcText = `# Written by Flameox for one coverage capture (docs/decisions/0018-coverage-evidence.md).
# The project's own coverage configuration is not read; the provider's branch, source,
# include and omit options are passed on the command line.
[run]
parallel = False
`

// minVersion is the oldest coverage.py whose coverage run takes --data-file.
var minVersion = "(6, 3)"

func coverageUnavailable(why string) error {
	return &providers.UnavailableError{Provider: "coverage", Module: "coverage",
		Message:     "the coverage provider needs coverage.py 6.3 or later in the workload's Python: " + why,
		Remediation: "Install coverage.py for the workload's interpreter (python -m pip install 'coverage>=6.3', or Debian's python3-coverage for /usr/bin/python3), then retry."}
}

func python(base string) bool { return strings.HasPrefix(base, "python") }

// admit checks every case's argv: a Python interpreter, then a script or -m MODULE,
// and asks the interpreter for coverage.py before anything runs.
func admit(cases []providers.Case) (*providers.Executable, error) {
	if err := providers.RequireArgv0(cases, "coverage", "a Python interpreter (python, python3, python3.12, ...)", python); err != nil {
		return nil, err
	}
	for _, c := range cases {
		field := append(append([]any{}, c.ArgvField...), 1)
		switch {
		case len(c.Argv) < 2:
			return nil, &providers.FieldError{Field: field, Accepted: []string{"SCRIPT [ARGS...]", "-m MODULE [ARGS...]"},
				Message: "the coverage provider runs `<python> -m coverage run ... SCRIPT` or `... -m MODULE`: argv needs a script or -m MODULE after the interpreter"}
		case c.Argv[1] == "-m" && len(c.Argv) < 3:
			return nil, &providers.FieldError{Field: append(append([]any{}, c.ArgvField...), 2), Accepted: []string{"MODULE"},
				Message: "the coverage provider runs -m MODULE: argv names no module after -m"}
		case c.Argv[1] != "-m" && strings.HasPrefix(c.Argv[1], "-"):
			return nil, &providers.FieldError{Field: field, Accepted: []string{"SCRIPT [ARGS...]", "-m MODULE [ARGS...]"},
				Message: "coverage run takes a script path or -m MODULE after the interpreter; interpreter options such as -c, -u or -X are not passed through"}
		}
	}
	for _, c := range cases {
		// The interpreter is asked as the workload names it: a virtual environment's
		// python is a symlink whose own directory holds pyvenv.cfg, so probing the
		// resolved file would ask the base interpreter instead. A relative path is
		// relative to the target's cwd, which a probe does not share; coverage run
		// answers for it.
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
		base := filepath.Base(c.Argv[0])
		if _, ok := providers.Probe(exe, "-c", "import coverage"); !ok {
			return nil, coverageUnavailable(base + " cannot import coverage")
		}
		if _, ok := providers.Probe(exe, "-c", "import sys, coverage; sys.exit(0 if coverage.version_info >= "+minVersion+" else 3)"); !ok {
			return nil, coverageUnavailable(base + " has a coverage.py older than 6.3")
		}
	}
	return nil, nil
}

// command is `<argv[0]> -m coverage run --data-file F --rcfile R [--branch] [--source a,b]
// [--include ...] [--omit ...] <argv[1:]...>`; it writes the rcfile into dir.
func command(o *gen.CoverageProvider, _ *providers.Executable, c providers.Case, dir string) []string {
	rc := filepath.Join(dir, rcFile)
	_ = os.WriteFile(rc, []byte(rcText), 0o644) // a missing rcfile fails coverage run, visibly
	argv := []string{c.Argv[0], "-m", "coverage", "run", "--data-file", filepath.Join(dir, dataFile), "--rcfile", rc}
	if o.Branch {
		argv = append(argv, "--branch")
	}
	for _, opt := range []struct {
		flag string
		list []string
	}{{"--source", o.Source}, {"--include", o.Include}, {"--omit", o.Omit}} {
		if len(opt.list) > 0 {
			argv = append(argv, opt.flag+"="+strings.Join(opt.list, ","))
		}
	}
	return append(argv, c.Argv[1:]...)
}

var collector = providers.Collect(providers.CollectorSpec[gen.CoverageProvider]{Kind: "coverage", File: dataFile,
	Admit: admit, Command: command})
