package providers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/sourcefile"
)

// Case is one bound case of a capture: its argv as given and its resolved executable.
type Case struct {
	Name string
	// Argv is the case's argv as given.
	Argv []string
	// Executable is argv[0] resolved and hashed at admission.
	Executable Executable
	// Named is argv[0] as the workload names it, made absolute (found on PATH, or joined
	// to the target's cwd) but not resolved through symbolic links; "" when unknown.
	Named string
	// ArgvField is the field path of this case's argv, for field errors.
	ArgvField []any
}

// Launch is the path a wrapping collector runs for the workload: argv[0] as the
// workload names it, so that an interpreter that finds its environment from its own
// path (a virtual environment's python, a symbolic link to the base interpreter
// beside pyvenv.cfg) runs in that environment, as it would unwrapped. The file it
// reaches is the one Executable bound. Without Named it is Executable.Path.
func (c Case) Launch() string {
	if c.Named != "" {
		return c.Named
	}
	return c.Executable.Path
}

// Executable is an exact executable file and its SHA-256.
type Executable struct {
	Path   string
	SHA256 string
}

// Collector is one capture provider: how it wraps a workload and where its native
// artifact lands. Its kind, output role and format and whose exit it reports are
// declared in CUE (captureProviders); the collector states only what running it takes.
type Collector interface {
	// Kind is the provider kind, as declared in CUE.
	Kind() string
	// File is the native artifact's name in the execution directory; empty when the
	// console (stdout and stderr) is the artifact.
	File() string
	// Admit checks availability and every case's argv before anything runs. It returns
	// the collector executable that wraps the workload, or nil when the workload runs
	// itself. prepared is the executable prepare_providers bound for this provider in
	// the session (a managed collector), or nil.
	Admit(cases []Case, prepared *Executable) (*Executable, error)
	// Options decodes the provider object (schema-valid) into its typed options.
	Options(provider map[string]any) (Options, error)
	// Reader is the executable that should read the artifact case c writes (an
	// interpreter whose packages decode it), or nil.
	Reader(c Case) *Executable
}

// Options is a collector with its typed options decoded.
type Options interface {
	// Command is the argv to launch for case c, writing into dir; exe is what Admit
	// returned.
	Command(exe *Executable, c Case, dir string) []string
	// Env are variables added under the caller's overrides for an execution in dir.
	Env(dir string) map[string]string
}

// CollectorSpec describes a collector whose options are P, a generated provider type.
type CollectorSpec[P any] struct {
	Kind string
	File string
	// Admit is optional: nil admits every case and wraps nothing.
	Admit func(cases []Case) (*Executable, error)
	// AdmitPrepared replaces Admit for a managed collector, which prepare_providers can
	// install: prepared is its session binding, or nil.
	AdmitPrepared func(cases []Case, prepared *Executable) (*Executable, error)
	// Command is optional: nil runs the case's argv unchanged.
	Command func(opts *P, exe *Executable, c Case, dir string) []string
	// Env is optional: the variables an execution in dir adds for the workload.
	Env func(opts *P, dir string) map[string]string
	// Check is optional: a rule across the decoded options that the schema cannot state,
	// answered with a FieldError.
	Check func(opts *P) error
	// Reader is optional: the executable that reads the artifact case c writes; the
	// runtime records it for the session and hands it to the analyzer as Input.Reader.
	Reader func(c Case) *Executable
	// MissingHint is optional: what the workload must do for the collector to write its
	// artifact, said when a run wrote none (the torch-profiler's steps).
	MissingHint string
	// Directory says that File names a directory, not a file: the runtime creates it
	// empty before each run, and the artifact is the directory, kept and analysed as a
	// directory source of the output's format, which must be a directory format
	// (decision 0063). An NVBench --jsonbin run writes results.json beside its
	// per-sample files there.
	Directory bool
}

// DirectoryArtifact is a collector whose native artifact is a directory (File names it).
type DirectoryArtifact interface {
	Directory() bool
}

// MissingHinter is a collector that says what a run that wrote no artifact lacked.
type MissingHinter interface {
	MissingHint() string
}

// Collect returns the collector spec describes.
func Collect[P any](spec CollectorSpec[P]) Collector { return &collector[P]{spec} }

type collector[P any] struct{ spec CollectorSpec[P] }

func (c *collector[P]) Kind() string        { return c.spec.Kind }
func (c *collector[P]) MissingHint() string { return c.spec.MissingHint }
func (c *collector[P]) File() string        { return c.spec.File }
func (c *collector[P]) Directory() bool     { return c.spec.Directory }

func (c *collector[P]) Admit(cases []Case, prepared *Executable) (*Executable, error) {
	if c.spec.AdmitPrepared != nil {
		return c.spec.AdmitPrepared(cases, prepared)
	}
	if c.spec.Admit == nil {
		return nil, nil
	}
	return c.spec.Admit(cases)
}

func (c *collector[P]) Reader(cs Case) *Executable {
	if c.spec.Reader == nil {
		return nil
	}
	return c.spec.Reader(cs)
}

func (c *collector[P]) Options(provider map[string]any) (Options, error) {
	p, err := DecodeTyped[P](provider)
	if err != nil {
		return nil, err
	}
	if c.spec.Check != nil {
		if err := c.spec.Check(p); err != nil {
			return nil, err
		}
	}
	return &options[P]{c: c, p: p}, nil
}

type options[P any] struct {
	c *collector[P]
	p *P
}

func (o *options[P]) Command(exe *Executable, c Case, dir string) []string {
	if o.c.spec.Command == nil {
		return c.Argv
	}
	return o.c.spec.Command(o.p, exe, c, dir)
}

func (o *options[P]) Env(dir string) map[string]string {
	if o.c.spec.Env == nil {
		return nil
	}
	return o.c.spec.Env(o.p, dir)
}

// RequireArgv0 checks that every case's argv[0] base name satisfies ok; want says
// what the provider wraps.
func RequireArgv0(cases []Case, provider, want string, ok func(base string) bool) error {
	for _, c := range cases {
		if base := filepath.Base(c.Argv[0]); !ok(base) {
			return &FieldError{Field: append(append([]any{}, c.ArgvField...), 0),
				Message: fmt.Sprintf("the %s provider wraps %s; argv[0] is %q", provider, want, base)}
		}
	}
	return nil
}

// Bind resolves and hashes the executable at exe; unavailable is returned when it
// cannot be read.
func Bind(exe string, unavailable func() error) (*Executable, error) {
	p, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, unavailable()
	}
	sum, _, err := sourcefile.Hash(p)
	if err != nil {
		return nil, unavailable()
	}
	return &Executable{Path: p, SHA256: sum}, nil
}

// probeTimeout bounds one probe. An import of PyTorch takes seconds on an idle machine
// and several times that on a loaded one; a probe that times out reports the module
// missing, so the bound is generous: it only keeps a hung interpreter from holding the
// request.
const probeTimeout = 60 * time.Second

// Probe runs a short, bounded command (probeTimeout, 64 KiB of output) in a throwaway
// directory and returns its result when it exits 0.
func Probe(exe string, args ...string) (*broker.Result, bool) {
	dir, err := os.MkdirTemp("", "flameox-probe-")
	if err != nil {
		return nil, false
	}
	defer os.RemoveAll(dir)
	res, err := broker.Run(context.Background(), broker.Spec{Path: exe, Args: append([]string{exe}, args...), Dir: dir,
		Env: []string{"PATH=" + os.Getenv("PATH")}, ExcerptBytes: 256, MaxOutputBytes: 64 << 10, Timeout: probeTimeout})
	return res, err == nil && res.ExitCode != nil && *res.ExitCode == 0
}

// VersionOf returns the last word `exe --version` prints, or "".
func VersionOf(exe string) string {
	res, ok := Probe(exe, "--version")
	if !ok {
		return ""
	}
	f := strings.Fields(string(res.Stdout.Excerpt))
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// HostToolUnavailable is the unavailable state of a missing host tool.
func HostToolUnavailable(tool, remediation string) *UnavailableError {
	return &UnavailableError{Provider: tool, Executable: tool, Remediation: remediation,
		Message: tool + " is not installed or not on PATH"}
}
