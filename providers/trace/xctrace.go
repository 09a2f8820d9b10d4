package trace

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// The xctrace provider records an Instruments trace of the workload with `xcrun xctrace
// record` on macOS, and the xctrace format reads it (decision 0062): an export's XML
// (package xctrace) on every host, a .trace bundle (a directory) on macOS through `xcrun
// xctrace export` (xctracesource.go). Off macOS xcrun does not exist: capture and
// bundles answer with the unavailable state, before anything runs.

// xctraceDir is the directory artifact the collector writes into: the runtime creates it
// empty before the run, and `xctrace record --output xctrace/capture.trace` creates the
// bundle in it (an existing directory given to --output would get a uniquely named trace
// inside it instead).
const (
	xctraceDir    = "xctrace"
	xctraceBundle = "capture.trace"
)

// xctraceTemplate is the contract's default template (CUE: template *"Metal System Trace").
const xctraceTemplate = "Metal System Trace"

// xctraceHost is the host's operating system, and lookXcrun finds xcrun; tests replace them.
var (
	xctraceHost = runtime.GOOS
	lookXcrun   = func() (string, error) { return exec.LookPath("xcrun") }
	// findXctrace asks xcrun for xctrace's path (`xcrun --find xctrace`): "" when it has
	// none (the selected developer directory is the Command Line Tools, which lack it).
	findXctrace = func(xcrun string) string {
		res, ok := providers.Probe(xcrun, "--find", "xctrace")
		if !ok {
			return ""
		}
		return strings.TrimSpace(string(res.Stdout.Excerpt))
	}
)

// xctraceTools are xcrun, which runs xctrace, and the xctrace it runs, both bound.
type xctraceTools struct{ xcrun, xctrace *providers.Executable }

// bindXctrace finds and binds xcrun and the xctrace it selects, on macOS only.
func bindXctrace() (*xctraceTools, error) {
	if xctraceHost != "darwin" {
		return nil, xctraceUnavailable(xctraceHost)
	}
	p, err := lookXcrun()
	if err != nil {
		return nil, xctraceMissing("xcrun is not on PATH")
	}
	xcrun, err := providers.Bind(p, func() error { return xctraceMissing("xcrun cannot be read") })
	if err != nil {
		return nil, err
	}
	x := findXctrace(xcrun.Path)
	if x == "" || !filepath.IsAbs(x) {
		return nil, xctraceMissing("xcrun finds no xctrace (xcrun --find xctrace fails: the selected developer directory has none)")
	}
	xctrace, err := providers.Bind(x, func() error { return xctraceMissing("the xctrace xcrun finds cannot be read") })
	if err != nil {
		return nil, err
	}
	return &xctraceTools{xcrun: xcrun, xctrace: xctrace}, nil
}

// xctraceUnavailable is the xctrace provider's unavailable state on a host goos that is
// not macOS.
func xctraceUnavailable(goos string) *providers.UnavailableError {
	return &providers.UnavailableError{Provider: "xctrace", Executable: "xcrun",
		Message:     "xctrace records and exports Instruments traces with xcrun xctrace, which exists only on macOS; this host runs " + goos,
		Remediation: "Capture on a Mac with Xcode, or capture here with the torch-profiler, rocprofv3 or nsight-systems provider. An Instruments trace exported on a Mac (xcrun xctrace export --input T.trace --xpath '/trace-toc/run[@number=\"1\"]/data/table' --output T.xml) is read here: analyse T.xml with format xctrace."}
}

// xctraceMissing is the unavailable state on macOS without a usable xcrun xctrace.
func xctraceMissing(why string) *providers.UnavailableError {
	return &providers.UnavailableError{Provider: "xctrace", Executable: "xcrun",
		Message:     "xcrun xctrace is needed to record and export Instruments traces: " + why,
		Remediation: "Install Xcode (xctrace ships with it; the Command Line Tools alone lack it) and select it (sudo xcode-select --switch /Applications/Xcode.app), check that xcrun --find xctrace prints its path, then retry."}
}

// xctraceCommand is `xcrun xctrace record --template T --output DIR/xctrace/capture.trace
// --no-prompt --target-stdout - --launch -- argv` (catalog §3.1, with --no-prompt so that
// no privacy prompt waits for a person, and --target-stdout - so that the workload's
// output reaches the console the capture keeps).
func xctraceCommand(o *gen.XctraceProvider, exe *providers.Executable, c providers.Case, dir string) []string {
	template := o.Template
	if template == "" {
		template = xctraceTemplate
	}
	argv := []string{exe.Path, "xctrace", "record", "--template", template,
		"--output", filepath.Join(dir, xctraceDir, xctraceBundle), "--no-prompt", "--target-stdout", "-",
		"--launch", "--", c.Launch()}
	return append(argv, c.Argv[1:]...)
}

// xctraceCollector is the catalog's xctrace capture provider: admitted on macOS where
// xcrun finds xctrace; its artifact is the directory holding the bundle.
var xctraceCollector = providers.Collect(providers.CollectorSpec[gen.XctraceProvider]{Kind: "xctrace", File: xctraceDir, Directory: true,
	Admit: func([]providers.Case) (*providers.Executable, error) {
		t, err := bindXctrace()
		if err != nil {
			return nil, err
		}
		return t.xcrun, nil
	},
	Command: xctraceCommand})
