package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/ahead"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
)

// captureTransport are the capture-tool fields that are not operation fields.
var captureTransport = map[string]bool{"target": true, "provider": true, "preserve": true,
	"limits": true, "page_size": true, "experiment": true}

// maxCaptureSources bounds the captured artifacts of one request.
const maxCaptureSources = 32

// diagnosticExcerptBytes bounds each in-memory console excerpt.
const diagnosticExcerptBytes = 4096

// ProgressFunc receives progress of long work: done of total steps, and a message.
type ProgressFunc func(done, total float64, message string)

type progressKey struct{}

// WithProgress returns a context whose capture work reports progress to f.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progress(ctx context.Context, done, total int, msg string) {
	if f, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && f != nil {
		f(float64(done), float64(total), msg)
	}
}

// captureRequest is an admitted capture: every invocation bound before anything runs.
type captureRequest struct {
	// ahead is the helper started for the first execution (nil: none).
	ahead *CaptureHelper
	// workloadCeiling is the server's (Runtime.workloadCeiling) when admitted.
	workloadCeiling float64
	tool            *Tool
	analysis        *Tool
	target          gen.DirectTarget
	providerID      string
	preserve        bool
	experiment      *gen.Experiment
	fields          map[string]any // operation fields as given
	limits          gen.EffectiveLimits
	pageSize        *int64
	rawLimits       *gen.RequestLimits
	cases           []boundCase
	oracle          *boundCommand
	runs            []plannedRun
	started         time.Time
	// coll is the provider; exe its bound executable when it wraps the workload.
	coll *boundCollector
	exe  *providers.Executable
}

// boundCollector is the capture provider of a request: its collector with typed
// options, and the outputs and exit ownership the contract declares for it.
type boundCollector struct {
	providers.Collector
	opts providers.Options
	// scope says whose exit the launched process reports: workload or collector.
	scope string
	// console is set when stdout and stderr are the artifacts (the direct provider);
	// otherwise role and format describe the one native artifact.
	console bool
	role    string
	format  gen.Format
	// directory is set when the native artifact is a directory (File names it), analysed
	// as a directory source of format (decision 0063).
	directory bool
	// outputs counts the analysed artifacts of one execution.
	outputs int
	// verdicts are exit statuses that report a verdict about the workload (pytest's 1:
	// tests failed), not a failed run.
	verdicts []int64
}

// verdict reports whether the launched process's exit status code is a verdict.
func (b *boundCollector) verdict(code int) bool {
	return slices.Contains(b.verdicts, int64(code))
}

// bindCollector looks up the collector of kind and decodes its options.
func (rt *Runtime) bindCollector(kind string, provider map[string]any) (*boundCollector, *failure.Failure) {
	c, ok := rt.providers.LookupCollector(kind)
	decl, declared := gen.LookupCaptureProvider(kind)
	if !ok || !declared {
		return nil, failure.New(gen.FailureCodeInternalFailure, "capture provider %s has no collector in this build", kind)
	}
	opts, err := c.Options(provider)
	if err != nil {
		// A rule across the provider's fields (a collector's Check) names its field.
		var fe *providers.FieldError
		if errors.As(err, &fe) && len(fe.Field) > 0 {
			return nil, failure.Invalid(fe.Field, fe.Accepted, "%s", fe.Message)
		}
		return nil, failure.Invalid(failure.Path("provider"), nil, "the provider fields do not match the tool schema")
	}
	b := &boundCollector{Collector: c, opts: opts, scope: decl.ReturncodeScope, console: c.File() == "", outputs: len(decl.Outputs),
		verdicts: decl.VerdictReturncodes}
	if !b.console {
		b.role, b.format = decl.Outputs[0].Role, decl.Outputs[0].Format
		if d, ok := c.(providers.DirectoryArtifact); ok && d.Directory() {
			if !rt.providers.IsDirectoryFormat(b.format) {
				return nil, failure.New(gen.FailureCodeInternalFailure,
					"capture provider %s writes a directory, but its output format %s is not a directory format in this build", kind, b.format)
			}
			b.directory = true
		}
	}
	return b, nil
}

// boundCommand is an argv bound to an exact executable.
type boundCommand struct {
	argv []string
	// path is argv[0] resolved to its file; named is argv[0] made absolute without
	// resolving links (what a wrapping collector launches).
	path, named string
	sha256      string
}

// unchanged reports whether the command still reaches the file admission bound: the
// file has its digest and, where a wrapping collector launches argv[0] as named, the
// name still resolves to that file (a link retargeted since admission would run
// another binary under the recorded digest).
func (b boundCommand) unchanged() bool {
	if b.named != "" && b.named != b.path {
		if p, err := filepath.EvalSymlinks(b.named); err != nil || p != b.path {
			return false
		}
	}
	sum, _, err := sourcefile.Hash(b.path)
	return err == nil && sum == b.sha256
}

// boundCase is one case with its argv bound and its merged environment.
type boundCase struct {
	name    string
	command boundCommand
	env     map[string]string
}

// plannedRun is one execution in run order.
type plannedRun struct {
	sequence int
	caseIdx  int
	block    int
}

// captureProvenance is what preservation records about a capture.
type captureProvenance struct {
	request    map[string]any
	executions []gen.Execution
}

// Capture runs a capture tool on schema-valid arguments; ahead is the containment helper
// started for its first execution (nil for none).
func (rt *Runtime) capture(ctx context.Context, t *Tool, inst any, ahead *CaptureHelper) (any, *failure.Failure) {
	cr, f := rt.admitCapture(t, inst)
	if f != nil {
		return nil, f
	}
	cr.ahead = ahead
	return rt.runCapture(ctx, cr)
}

// A capture's first execution runs under a containment helper started while the capture
// is validated and admitted (broker.Prestart): the helper is the flameox binary
// re-executed, whose start (a few milliseconds of a trivial capture) then overlaps the
// admission instead of following it (decision 0067, fifth addendum). Later executions,
// and an execution the helper does not fit (no task bound: broker.Prestarted), start
// theirs as before.

// CaptureHelper is a containment helper being started for a capture's first execution.
// One goroutine at a time uses it.
type CaptureHelper struct {
	ready chan *broker.Prestarted
	taken bool
}

// prestartHelper is broker.Prestart, unless a test replaces it.
var prestartHelper = broker.Prestart

// StartCaptureHelper starts the containment helper of a capture call to come, on another
// goroutine: a caller that knows a capture follows before its runtime exists (the CLI's
// capture command) starts it first and gives it to New (WithCaptureHelper), so that the
// runtime's own start overlaps the helper's too. The helper a `flameox capture` process
// started while it initialized (package ahead) is the one it returns, once.
func StartCaptureHelper() *CaptureHelper {
	if c := ahead.Take(); c != nil {
		return &CaptureHelper{ready: c}
	}
	c := make(chan *broker.Prestarted, 1)
	go func() { c <- prestartHelper() }()
	return &CaptureHelper{ready: c}
}

// take returns the helper once it has started (nil where none could start), once: nil
// after the first call, and for nil.
func (h *CaptureHelper) take() *broker.Prestarted {
	if h == nil || h.taken {
		return nil
	}
	h.taken = true
	return <-h.ready
}

// Abandon ends the helper unless an execution took it; nil does nothing.
func (h *CaptureHelper) Abandon() { h.take().Abandon() }

// WithCaptureHelper gives the runtime's next capture call the helper h instead of one it
// starts when called; Close abandons h when no capture took it.
func WithCaptureHelper(h *CaptureHelper) Option {
	return func(rt *Runtime) { rt.nextHelper.Store(h) }
}

// WithSpareCaptureHelper keeps one containment helper started ahead of the next capture
// call: once a capture call has ended, the next call's helper starts and waits, with its
// scope and task group, so that the next capture's first execution finds it ready rather
// than starting it while the capture is admitted. Only the helper is ready: it holds no
// workload, and its task group the default bound until a capture with another takes it
// (broker.Prestarted); Close ends it. mcp serve keeps one; a one-shot CLI call starts its
// own ahead of its only capture (WithCaptureHelper).
func WithSpareCaptureHelper() Option {
	return func(rt *Runtime) { rt.spareHelper = true }
}

// captureHelper returns the helper of a capture call: the one WithCaptureHelper gave or
// the spare, else one started now.
func (rt *Runtime) captureHelper() *CaptureHelper {
	if h := rt.nextHelper.Swap(nil); h != nil {
		return h
	}
	return StartCaptureHelper()
}

// afterCapture ends the helper of a capture call that no execution took, and starts the
// spare for the next call where the runtime keeps one, both after the call has answered
// (Close waits for them).
func (rt *Runtime) afterCapture(h *CaptureHelper) {
	rt.ending.Add(1)
	go func() {
		defer rt.ending.Done()
		h.Abandon()
		if !rt.spareHelper || rt.helpersClosed.Load() || rt.nextHelper.Load() != nil {
			return
		}
		spare := StartCaptureHelper()
		switch {
		case !rt.nextHelper.CompareAndSwap(nil, spare):
			spare.Abandon() // another call's spare came first
		case rt.helpersClosed.Load():
			// Close came meanwhile and may have missed it.
			if rt.nextHelper.CompareAndSwap(spare, nil) {
				spare.Abandon()
			}
		}
	}()
}

// admitCapture performs every admission step before scratch is allocated or a process
// starts: provider compatibility, arguments, operation fields, source counts, invocation
// binding (cwd, executables and their digests, environment policy), provenance size.
func (rt *Runtime) admitCapture(t *Tool, inst any) (*captureRequest, *failure.Failure) {
	obj, _ := normalizeNumbers(inst).(map[string]any)
	cr := &captureRequest{tool: t, fields: map[string]any{}, started: time.Now(), workloadCeiling: rt.workloadCeiling}
	tr := map[string]any{}
	for k, v := range obj {
		if captureTransport[k] {
			tr[k] = v
		} else {
			cr.fields[k] = v
		}
	}
	var transport struct {
		Target     gen.DirectTarget   `json:"target"`
		Provider   map[string]any     `json:"provider"`
		Preserve   bool               `json:"preserve"`
		Limits     *gen.RequestLimits `json:"limits"`
		PageSize   *int64             `json:"page_size"`
		Experiment *gen.Experiment    `json:"experiment"`
	}
	if err := decodeInto(tr, &transport); err != nil {
		return nil, failure.Invalid(failure.Path(), nil, "arguments do not match the tool schema")
	}
	cr.analysis = rt.byName[string(t.Operation.Name)]
	cr.providerID, _ = transport.Provider["kind"].(string)
	if !contains(t.CaptureProviders, cr.providerID) {
		if f := incompatibleProvider(t, cr.providerID); f != nil {
			return nil, f
		}
		return nil, failure.Invalid(failure.Path("provider", "kind"), t.CaptureProviders,
			"provider.kind must be one of %s", strings.Join(t.CaptureProviders, ", ")).
			With("operation", string(t.Operation.Name)).With("accepted_formats", t.Operation.FormatStrings()).
			With("compatible_capture_providers", t.CaptureProviders)
	}
	coll, f := rt.bindCollector(cr.providerID, transport.Provider)
	if f != nil {
		return nil, f
	}
	cr.coll = coll
	cr.target, cr.preserve, cr.experiment = transport.Target, transport.Preserve, transport.Experiment
	cr.target.ApplyDefaults()
	cr.rawLimits, cr.pageSize = transport.Limits, transport.PageSize
	lim, f := rt.effectiveLimits(transport.Limits, transport.PageSize)
	if f != nil {
		return nil, f
	}
	cr.limits = lim
	if _, f := rt.admitFields(t, cr.fields); f != nil {
		return nil, f
	}
	if b := cr.target.Budget; b != nil {
		if f := admitWorkloadTimeout(b.TimeoutSeconds, rt.workloadCeiling); f != nil {
			return nil, f
		}
	}
	if f := sourceCount(t.Operation, cr.coll.outputs, cr.experiment); f != nil {
		return nil, f
	}

	st, err := os.Stat(cr.target.Cwd)
	if err != nil || !st.IsDir() {
		return nil, failure.Invalid(failure.Path("target", "cwd"), nil, "target.cwd must be an existing directory")
	}
	targetEnv := map[string]string{}
	for k, v := range cr.target.Environment {
		s, _ := v.(string)
		if environmentBlocked(k, s) {
			return nil, blockedEnv(failure.Path("target", "environment", k), k)
		}
		targetEnv[k] = s
	}
	type caseDecl struct {
		name string
		argv []string
		env  map[string]any
		path []any
	}
	decls := []caseDecl{{name: "default", argv: cr.target.Argv}}
	blocks := 1
	if cr.experiment != nil {
		cr.experiment.ApplyDefaults()
		decls = nil
		names := map[string]bool{}
		for i, c := range cr.experiment.Cases {
			if names[c.Name] {
				return nil, failure.Invalid(failure.Path("experiment", "cases", i, "name"), nil, "experiment case names must be unique; %q repeats", c.Name)
			}
			names[c.Name] = true
			argv := c.Argv
			if len(argv) == 0 {
				argv = cr.target.Argv
			}
			decls = append(decls, caseDecl{name: c.Name, argv: argv, env: c.Environment, path: failure.Path("experiment", "cases", i)})
		}
		blocks = int(cr.experiment.Blocks)
	}
	for i, d := range decls {
		env := map[string]string{}
		for k, v := range targetEnv {
			env[k] = v
		}
		for k, v := range d.env {
			s, _ := v.(string)
			if environmentBlocked(k, s) {
				return nil, blockedEnv(append(append([]any{}, d.path...), "environment", k), k)
			}
			env[k] = s
		}
		if len(env) > 32 {
			return nil, failure.Invalid(append(append([]any{}, d.path...), "environment"), nil,
				"case %q has %d environment overrides after merging with target.environment; at most 32 are allowed", d.name, len(env))
		}
		argvPath := failure.Path("target", "argv", 0)
		if d.path != nil && d.argv != nil && len(cr.experiment.Cases[i].Argv) > 0 {
			argvPath = append(append([]any{}, d.path...), "argv", 0)
		}
		cmd, f := bindCommand(d.argv, cr.target.Cwd, argvPath)
		if f != nil {
			return nil, f
		}
		cr.cases = append(cr.cases, boundCase{name: d.name, command: *cmd, env: env})
	}
	if cr.experiment != nil && len(cr.experiment.SemanticOracle) > 0 {
		cmd, f := bindCommand(cr.experiment.SemanticOracle, cr.target.Cwd, failure.Path("experiment", "semantic_oracle", 0))
		if f != nil {
			return nil, f
		}
		cr.oracle = cmd
	}
	exe, err := cr.coll.Admit(cr.providerCases(), rt.prepared(cr.coll.Kind()))
	if err != nil {
		return nil, preparable(providerFailure(context.Background(), err, nil), err, t.Name)
	}
	cr.exe = exe
	cr.runs = planRuns(len(cr.cases), blocks, cr.experiment)
	prov, err := canon.Marshal(cr.provenanceRequest())
	if err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the capture request has no canonical form")
	}
	if int64(len(prov)) > cr.limits.MaxProvenanceBytes {
		return nil, failure.New(gen.FailureCodeLimitExceeded,
			"the capture request needs %d bytes of provenance; limits.max_provenance_bytes is %d", len(prov), cr.limits.MaxProvenanceBytes).
			Field(failure.Path("limits", "max_provenance_bytes"), nil).With("field", "max_provenance_bytes").
			With("requested", len(prov)).With("effective_ceiling", cr.limits.MaxProvenanceBytes)
	}
	return cr, nil
}

// providerCases projects the bound cases for the collector.
func (cr *captureRequest) providerCases() []providers.Case {
	out := make([]providers.Case, len(cr.cases))
	for i, c := range cr.cases {
		field := failure.Path("target", "argv")
		if cr.experiment != nil && len(cr.experiment.Cases[i].Argv) > 0 {
			field = failure.Path("experiment", "cases", i, "argv")
		}
		out[i] = providers.Case{Name: c.name, Argv: c.command.argv, ArgvField: field, Named: c.command.named,
			Executable: providers.Executable{Path: c.command.path, SHA256: c.command.sha256}}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func blockedEnv(path []any, name string) *failure.Failure {
	return failure.Invalid(path, nil, "environment override %q is blocked by policy (loader, interpreter-startup and credential variables are refused)", name).
		With("variable", name)
}

// bindCommand resolves argv[0] to an exact executable: a name without a slash through
// PATH, else a path relative to cwd. It records the executable's SHA-256.
func bindCommand(argv []string, cwd string, path []any) (*boundCommand, *failure.Failure) {
	name := argv[0]
	var resolved string
	if strings.Contains(name, "/") {
		resolved = name
		if !filepath.IsAbs(resolved) {
			resolved = filepath.Join(cwd, resolved)
		}
	} else {
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, failure.Invalid(path, nil, "argv[0] %q is not an executable on PATH; give an absolute path or install it", name).
				With("executable", name)
		}
		resolved = p
	}
	named := filepath.Clean(resolved)
	resolved, err := filepath.EvalSymlinks(resolved)
	var st os.FileInfo
	if err == nil {
		st, err = os.Stat(resolved)
	}
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return nil, failure.Invalid(path, nil, "argv[0] %q does not resolve to an executable file", filepath.Base(name)).
			With("executable", filepath.Base(name))
	}
	sum, _, err := sourcefile.Hash(resolved)
	if err != nil {
		return nil, failure.Invalid(path, nil, "the executable of argv[0] cannot be read")
	}
	return &boundCommand{argv: argv, path: resolved, named: named, sha256: sum}, nil
}

// planRuns lists executions in run order: per block, the cases in a seeded random order
// (math/rand/v2 PCG seeded with the experiment seed and the block number).
func planRuns(cases, blocks int, e *gen.Experiment) []plannedRun {
	var runs []plannedRun
	for b := 1; b <= blocks; b++ {
		order := make([]int, cases)
		for i := range order {
			order[i] = i
		}
		if e != nil {
			shuffle(e.Seed, int64(b), order)
		}
		for _, c := range order {
			runs = append(runs, plannedRun{sequence: len(runs) + 1, caseIdx: c, block: b})
		}
	}
	return runs
}

// provenanceRequest is the durable capture request: the full target, provider,
// operation fields and experiment.
func (cr *captureRequest) provenanceRequest() map[string]any {
	target := map[string]any{"argv": cr.target.Argv, "cwd": cr.target.Cwd, "environment": cr.target.Environment,
		"console_output": cr.target.ConsoleOutput, "provider_id": cr.providerID}
	if cr.target.Budget != nil {
		target["budget"] = cr.target.Budget
	}
	var experiment any
	if cr.experiment != nil {
		experiment = cr.experiment
	}
	mode := "single"
	if cr.experiment != nil {
		mode = "experiment"
	}
	return map[string]any{"target": target, "analysis_arguments": cr.fields, "capture_arguments": map[string]any{},
		"mode": mode, "experiment": experiment, "operation": string(cr.tool.Operation.Name)}
}

// execution is one run's outcome and its captured files.
type execution struct {
	record gen.Execution
	// stdout and stderr are the retained console files ("" when only excerpts were kept).
	stdout string
	stderr string
	// artifact is the native artifact ("" when it is missing or was rejected); reader is
	// the executable its collector named to read it.
	artifact string
	reader   *providers.Executable
	ok       bool
	wall     *int64
	// detached is set when the containment of the execution or of its oracle could leave
	// a process of it running after it ended (broker.GapDetachedDescendants).
	detached bool
}

// reservation is the scratch a capture reserves before it runs (catalog 6.2): per
// execution, max_output_bytes for each bounded output it keeps (the full console, when
// kept; the native artifacts, whose directory the broker bounds by max_output_bytes), and
// its files (stdout and stderr when kept, and the provider's artifacts). The oracle's
// console is kept only as excerpts.
func (cr *captureRequest) reservation() (bytes, files int64) {
	execs := int64(len(cr.runs))
	var outputs, perRun int64
	if cr.coll.console || cr.target.ConsoleOutput == "full" {
		outputs, perRun = 1, 2
	}
	if !cr.coll.console {
		outputs++
		perRun += int64(cr.coll.outputs)
	}
	return execs * outputs * cr.limits.MaxOutputBytes, execs * perRun
}

// runCapture executes the admitted capture, analyses its artifacts and builds the result.
func (rt *Runtime) runCapture(ctx context.Context, cr *captureRequest) (any, *failure.Failure) {
	bytes, files := cr.reservation()
	dir, f := rt.scratch.reserve(bytes, files, rt.evictScratch)
	if f != nil {
		return nil, f
	}
	settled := false
	defer func() {
		if !settled {
			rt.scratch.settle(dir)
		}
	}()
	// While the workload runs, what the analysis would first pay is paid on another core:
	// its tool's input schema compiled, encoding/json's encoders of the execution records
	// the provenance is measured with and of the result, whose page budget is measured
	// by encoding it (about 0.3 ms the first time in a process).
	go func() {
		if cr.analysis != nil {
			cr.analysis.validator()
		}
		json.Marshal(gen.Execution{})
		json.Marshal(&Result{})
	}()
	total := len(cr.runs)
	if cr.oracle != nil {
		total *= 2
	}
	var runs []*execution
	// Progress reports each finished step once, so its values strictly increase.
	step := 0
	progress(ctx, step, total, "capture admitted")
	for _, run := range cr.runs {
		c := cr.cases[run.caseIdx]
		ex, f := rt.execute(ctx, cr, dir.path, run, c)
		if f != nil {
			return nil, f
		}
		step++
		progress(ctx, step, total, fmt.Sprintf("captured %s block %d", c.name, run.block))
		if cr.oracle != nil {
			if ex.ok {
				rt.runOracle(ctx, cr, ex, c)
			}
			step++
			progress(ctx, step, total, fmt.Sprintf("oracle of %s block %d", c.name, run.block))
		}
		runs = append(runs, ex)
		if ctx.Err() != nil {
			return nil, failure.New(gen.FailureCodeCancelled, "the capture was cancelled; every process was terminated").
				With("execution_count", len(runs))
		}
	}
	res, f := rt.analyseCapture(ctx, cr, dir.path, runs)
	rt.scratch.settle(dir)
	settled = true
	return res, f
}

// execute runs one invocation through the broker.
func (rt *Runtime) execute(ctx context.Context, cr *captureRequest, dir string, run plannedRun, c boundCase) (*execution, *failure.Failure) {
	exdir := filepath.Join(dir, fmt.Sprintf("capture-%04d", run.sequence))
	if err := os.Mkdir(exdir, 0o700); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "the capture scratch could not be written")
	}
	ex := &execution{}
	full := cr.coll.console || cr.target.ConsoleOutput == "full"
	if full {
		ex.stdout, ex.stderr = filepath.Join(exdir, "stdout"), filepath.Join(exdir, "stderr")
	}
	argv := cr.coll.opts.Command(cr.exe, cr.providerCases()[run.caseIdx], exdir)
	launch := boundCommand{argv: argv, path: c.command.path, sha256: c.command.sha256}
	var collectorSHA *string
	if cr.exe != nil {
		launch = boundCommand{argv: argv, path: cr.exe.Path, sha256: cr.exe.SHA256}
		collectorSHA = &cr.exe.SHA256
	}
	rec := gen.Execution{
		Sequence: int64(run.sequence), Case: c.name, Block: int64(run.block), Argv: c.command.argv,
		CaptureArgv: launch.argv, Cwd: cr.target.Cwd, ExecutableSHA256: launch.sha256,
		CollectorExecutableSHA256: collectorSHA, WorkloadExecutableSHA256: c.command.sha256, ReturncodeScope: cr.coll.scope,
		MissingArtifactRoles: []string{}, ArtifactRejections: []gen.ArtifactRejection{},
	}
	// The binaries must still be the ones admission bound.
	for _, b := range []boundCommand{c.command, launch} {
		if !b.unchanged() {
			return nil, failure.New(gen.FailureCodeMissingOrChangedInput,
				"an executable of case %q changed after admission; nothing more was run", c.name).With("case", c.name)
		}
	}
	if cr.coll.directory {
		// The collector writes into its artifact directory, which it may not create itself
		// (NVBench opens results.json there with std::ofstream).
		if err := os.MkdirAll(filepath.Join(exdir, cr.coll.File()), 0o700); err != nil {
			return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "the capture scratch could not be written")
		}
	}
	spec := rt.brokerSpec(cr, c, launch, exdir, ex.stdout, ex.stderr)
	spec.Prestarted = cr.ahead.take()
	res, err := runBroker(ctx, spec)
	spec.Prestarted.Abandon() // one Run did not take
	if errors.Is(err, broker.ErrUncontained) {
		return nil, uncontained(cr.providerID)
	}
	if err != nil && !errors.Is(err, broker.ErrStart) {
		return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "the capture could not run")
	}
	rec.Containment = containment(res)
	ex.detached = leavesDetached(res)
	rec.Limit = executionLimit(res.Limit)
	if rec.Limit != nil && rec.Limit.Kind == "timeout" && cr.serverDeadline() {
		rec.Limit.Recovery = serverDeadlineRecovery
	}
	if res.Started {
		w := res.WallTime.Nanoseconds()
		rec.WallTimeNS, ex.wall = &w, &w
	}
	if res.ExitCode != nil {
		code := int64(*res.ExitCode)
		rec.Returncode = &code
		if cr.coll.scope == "workload" {
			rec.WorkloadReturncode = &code
		}
	}
	if full {
		var ioErr *string
		if res.Stdout.IOError != nil || res.Stderr.IOError != nil {
			s := "the console could not be written completely to scratch"
			ioErr = &s
		}
		rec.OutputStreams = &gen.OutputStreams{StdoutBytes: res.Stdout.Retained, StderrBytes: res.Stderr.Retained,
			StdoutOmittedBytes: res.Stdout.Observed - res.Stdout.Retained, StderrOmittedBytes: res.Stderr.Observed - res.Stderr.Retained,
			StdoutComplete: res.Stdout.Complete, StderrComplete: res.Stderr.Complete, IoError: ioErr}
		for _, p := range []string{ex.stdout, ex.stderr} {
			if _, err := os.Stat(p); err != nil {
				// The start failed before the console files were created.
				os.WriteFile(p, nil, 0o600)
			}
		}
	} else {
		d := diagnostics(res)
		rec.ConsoleDiagnostics = &d
	}
	switch {
	case err != nil:
		rec.FailureCode = strp("EXECUTION_FAILURE")
	case res.Cancelled:
		rec.FailureCode = strp("CANCELLED")
	case res.Limit != nil && res.Limit.Kind == "timeout":
		rec.FailureCode = strp("EXECUTION_TIMEOUT")
	case res.Limit != nil:
		rec.FailureCode = strp("LIMIT_EXCEEDED")
	case res.ExitCode == nil || *res.ExitCode != 0 && !cr.coll.verdict(*res.ExitCode):
		rec.FailureCode = strp("EXECUTION_FAILURE")
	}
	if !cr.coll.console {
		p := filepath.Join(exdir, cr.coll.File())
		role := fmt.Sprintf("capture-%04d/%s", run.sequence, cr.coll.role)
		st, err := os.Lstat(p)
		missing := func() {
			rec.MissingArtifactRoles = append(rec.MissingArtifactRoles, role)
			if rec.FailureCode == nil {
				rec.FailureCode = strp("CAPTURE_ARTIFACT_MISSING")
			}
		}
		reject := func(msg string) {
			rec.ArtifactRejections = append(rec.ArtifactRejections, gen.ArtifactRejection{Role: role,
				Code: "CAPTURE_ARTIFACT_REJECTED", Message: msg})
			if rec.FailureCode == nil {
				rec.FailureCode = strp("CAPTURE_ARTIFACT_REJECTED")
			}
		}
		switch {
		case err != nil:
			missing()
		case cr.coll.directory && st.IsDir():
			files, why := checkArtifactDirectory(ctx, p, cr.limits.MaxInputFiles, cr.limits.MaxInputBytes, maxRoleRunes-len(role)-1)
			switch {
			case why != "":
				// A rejected directory is discarded (catalog §3.1): it is neither analysed nor
				// preserved, and its files do not hold the session scratch.
				os.RemoveAll(p)
				reject(why)
			case files == 0:
				missing()
			default:
				ex.artifact = p
				ex.reader = cr.coll.Reader(cr.providerCases()[run.caseIdx])
			}
		case cr.coll.directory:
			reject("the captured artifact is not a directory (a symbolic link, file or special file stands where the collector's output directory was)")
		case !st.Mode().IsRegular():
			reject("the captured artifact is not a regular file")
		default:
			ex.artifact = p
			ex.reader = cr.coll.Reader(cr.providerCases()[run.caseIdx])
		}
	}
	ex.ok = rec.FailureCode == nil
	rec.Status = "failed"
	if ex.ok {
		rec.Status = "succeeded"
	}
	ex.record = rec
	return ex, nil
}

func strp(s string) *string { return &s }

// artifactDirBatch is how many entries one read of an artifact directory lists.
const artifactDirBatch = 256

// maxRoleRunes bounds an evidence role (contracts #Role); a directory artifact's member
// is preserved under the role <execution role>:<relative path>.
const maxRoleRunes = 256

// memberName reports whether rel, a member's relative POSIX path, fits an evidence role
// (contracts #Role: A-Z, a-z, 0-9, '.', '_', '-', ':' and '/') within max characters.
func memberName(rel string, max int) bool {
	if len(rel) > max {
		return false
	}
	for i := 0; i < len(rel); i++ {
		switch c := rel[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-', c == ':', c == '/':
		default:
			return false
		}
	}
	return true
}

// checkArtifactDirectory checks a collector's directory artifact at dir (a directory,
// not a link: the caller checked) within the bounds of a directory source: it holds
// regular files and directories only (no symbolic link, device, socket or pipe), at
// most maxFiles regular files of at most maxBytes together, and at most maxFiles
// directories; and every file's relative path can name it in evidence (memberName
// within maxRel characters), so that an accepted artifact can always be preserved.
// Nothing is followed and no file is opened: the walk lists each directory through an
// os.Root at dir, a batch of entries at a time, and stops at the first entry past a
// bound, so a directory of a million files costs a few batches. It returns the number
// of regular files, or why the directory is refused.
func checkArtifactDirectory(ctx context.Context, dir string, maxFiles, maxBytes int64, maxRel int) (int64, string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, "the captured artifact directory could not be read"
	}
	defer root.Close()
	var files, dirs, bytes int64
	pending := []string{"."}
	for len(pending) > 0 {
		rel := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		d, err := root.Open(rel)
		if err != nil {
			return 0, "the captured artifact directory could not be read"
		}
		for {
			if ctx.Err() != nil {
				d.Close()
				return 0, "the capture was cancelled while its artifact directory was checked"
			}
			entries, err := d.ReadDir(artifactDirBatch)
			for _, e := range entries {
				switch t := e.Type(); {
				case t.IsDir():
					if dirs++; dirs > maxFiles {
						d.Close()
						return 0, fmt.Sprintf("the captured artifact directory holds more than %d directories (limits.max_input_files)", maxFiles)
					}
					pending = append(pending, path.Join(rel, e.Name()))
				case t.IsRegular():
					if files++; files > maxFiles {
						d.Close()
						return 0, fmt.Sprintf("the captured artifact directory holds more than limits.max_input_files (%d files)", maxFiles)
					}
					if !memberName(path.Join(rel, e.Name()), maxRel) {
						d.Close()
						return 0, fmt.Sprintf("the captured artifact directory holds a file whose path cannot be recorded as evidence: member paths use only A-Z, a-z, 0-9, '.', '_', '-', ':' and '/', within %d characters", maxRel)
					}
					info, err := e.Info()
					if err != nil {
						d.Close()
						return 0, "the captured artifact directory changed while it was checked"
					}
					if bytes += info.Size(); bytes > maxBytes {
						d.Close()
						return 0, fmt.Sprintf("the captured artifact directory holds more than limits.max_input_bytes (%d bytes)", maxBytes)
					}
				default:
					d.Close()
					return 0, "the captured artifact directory holds a symbolic link or special file; a directory artifact holds regular files and directories only, and no link is followed"
				}
			}
			if errors.Is(err, io.EOF) || err == nil && len(entries) == 0 {
				break
			}
			if err != nil {
				d.Close()
				return 0, "the captured artifact directory could not be read"
			}
		}
		d.Close()
	}
	return files, ""
}

// brokerSpec builds the broker invocation of a command in a case environment: the
// server's PATH plus the merged overrides, the workload budget, retained console files
// bounded by max_output_bytes, and the writable-growth bound over the working directory.
func (rt *Runtime) brokerSpec(cr *captureRequest, c boundCase, cmd boundCommand, exdir, stdout, stderr string) broker.Spec {
	vars := map[string]string{}
	if cr.coll != nil {
		for k, v := range cr.coll.opts.Env(exdir) {
			vars[k] = v
		}
	}
	for k, v := range c.env {
		vars[k] = v
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	spec := broker.Spec{Path: cmd.path, Args: cmd.argv, Dir: cr.target.Cwd, Env: env,
		StdoutFile: stdout, StderrFile: stderr, ExcerptBytes: diagnosticExcerptBytes,
		MaxOutputBytes: cr.limits.MaxOutputBytes, WritableRoots: []string{cr.target.Cwd},
		MaxWritableGrowth: cr.limits.MaxOutputBytes, ReserveDir: exdir, ReserveBytes: StorageReserveBytes,
		// The collector's native output is bounded like the console (decision 0049).
		ArtifactDir: exdir, MaxArtifactBytes: cr.limits.MaxOutputBytes}
	// The server's workload ceiling bounds a workload whose request sets no timeout
	// (admission refused one above it).
	spec.Timeout = time.Duration(cr.workloadCeiling * float64(time.Second))
	if b := cr.target.Budget; b != nil {
		if b.TimeoutSeconds != nil {
			spec.Timeout = time.Duration(*b.TimeoutSeconds * float64(time.Second))
		}
		if b.MaxMemoryBytes != nil {
			spec.MaxRSSBytes = *b.MaxMemoryBytes
		}
	}
	return spec
}

// runBroker runs one capture invocation: broker.Run, unless a test fakes it.
var runBroker = broker.Run

// uncontained is the state of a capture the OS would not contain (a Windows Job Object
// could not be created or assigned, as inside a job that forbids nesting): the platform
// cannot run the provider here (seed 001: "Missing ... permissions ... or platforms do
// not change the catalog; the attempted tool returns typed remediation"). The broker
// left nothing running.
func uncontained(provider string) *failure.Failure {
	return unavailable(&providers.UnavailableError{Provider: provider,
		Message:     "this host would not contain the workload's processes (the OS refused a Job Object for it), so nothing was run",
		Remediation: "Run Flameox where it may create and assign Job Objects (not inside a job that forbids nested jobs), or record the artifact elsewhere and analyze it here.",
		Details:     map[string]any{"reason": "uncontained"}})
}

func containment(r *broker.Result) gen.Containment {
	c := gen.Containment{Termination: r.Termination, DescendantsTerminated: int64(r.DescendantsTerminated),
		ReadersSettled: r.ReadersSettled, PeakRssBytes: r.PeakRSS, RssSamples: int64(r.RSSSamples), WritableCheck: "complete"}
	if !r.WritableComplete {
		c.WritableCheck = "partial"
	}
	if r.Mechanism != "" {
		c.Mechanism = strp(r.Mechanism)
		c.Gaps = r.Gaps
	}
	return c
}

// leavesDetached reports whether a process of the invocation may outlive it: its
// containment names the detached-descendants gap (a process group alone).
func leavesDetached(r *broker.Result) bool {
	return r != nil && slices.Contains(r.Gaps, broker.GapDetachedDescendants)
}

func executionLimit(l *broker.Limit) *gen.ExecutionLimit {
	if l == nil {
		return nil
	}
	return &gen.ExecutionLimit{Kind: l.Kind, Configured: l.Configured, Observed: l.Observed, Unit: l.Unit,
		ObservationAvailable: l.Observed != nil, Recovery: l.Recovery}
}

// runOracle runs the semantic oracle after a successful capture, in the case environment
// with FLAMEOX_CAPTURE_STDOUT and FLAMEOX_CAPTURE_STDERR naming that capture's console
// files. A failing oracle fails the execution and excludes its block from comparison.
func (rt *Runtime) runOracle(ctx context.Context, cr *captureRequest, ex *execution, c boundCase) {
	env := map[string]string{}
	for k, v := range c.env {
		env[k] = v
	}
	env["FLAMEOX_CAPTURE_STDOUT"], env["FLAMEOX_CAPTURE_STDERR"] = ex.stdout, ex.stderr
	oc := boundCase{name: c.name, command: *cr.oracle, env: env}
	spec := rt.brokerSpec(cr, oc, *cr.oracle, filepath.Dir(ex.stdout), "", "")
	spec.WritableRoots, spec.MaxWritableGrowth = nil, 0
	spec.ArtifactDir, spec.MaxArtifactBytes = "", 0
	res, err := runBroker(ctx, spec)
	ex.detached = ex.detached || leavesDetached(res)
	o := &gen.SemanticOracle{Argv: cr.oracle.argv, Status: "failed", OutputStreams: diagnostics(res)}
	if err == nil && res.ExitCode != nil {
		code := int64(*res.ExitCode)
		o.Returncode = &code
	}
	if res != nil && res.Started {
		w := res.WallTime.Nanoseconds()
		o.WallTimeNS = &w
	}
	if res != nil {
		o.Limit = executionLimit(res.Limit)
	}
	if err == nil && res.ExitCode != nil && *res.ExitCode == 0 && res.Limit == nil {
		o.Status = "passed"
	} else {
		o.FailureCode = strp("SEMANTIC_ORACLE_FAILED")
		ex.ok = false
		ex.record.Status = "failed"
		ex.record.FailureCode = strp("SEMANTIC_ORACLE_FAILED")
	}
	ex.record.SemanticOracle = o
}

// diagnostics projects a broker result's in-memory excerpts.
func diagnostics(r *broker.Result) gen.ConsoleDiagnostics {
	if r == nil {
		return gen.ConsoleDiagnostics{}
	}
	return gen.ConsoleDiagnostics{
		StdoutObservedBytes: r.Stdout.Observed, StderrObservedBytes: r.Stderr.Observed,
		StdoutRetainedBytes: r.Stdout.Retained, StderrRetainedBytes: r.Stderr.Retained,
		StdoutOmittedBytes: r.Stdout.Observed - r.Stdout.Retained, StderrOmittedBytes: r.Stderr.Observed - r.Stderr.Retained,
		StdoutComplete: r.Stdout.Complete, StderrComplete: r.Stderr.Complete,
		Stdout: validText(r.Stdout.Excerpt), Stderr: validText(r.Stderr.Excerpt),
	}
}

// validText decodes b as UTF-8 with invalid bytes replaced.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// capturedSource is one captured file the capture analyses or retains; producer names
// the experiment case and block that produced a native artifact.
type capturedSource struct {
	path     string
	format   gen.Format
	role     string
	producer *string
	// reader is the executable the collector named to read the artifact.
	reader *providers.Executable
}

// analysisSources lists the captured files the operation analyses, in execution order:
// the console of the direct provider, else each native artifact.
func analysisSources(cr *captureRequest, runs []*execution) []capturedSource {
	var out []capturedSource
	for _, ex := range runs {
		n := ex.record.Sequence
		if cr.coll.console {
			out = append(out, capturedSource{path: ex.stdout, format: gen.FormatText, role: fmt.Sprintf("capture-%04d/stdout", n)},
				capturedSource{path: ex.stderr, format: gen.FormatText, role: fmt.Sprintf("capture-%04d/stderr", n)})
		} else if ex.artifact != "" {
			src := capturedSource{path: ex.artifact, format: cr.coll.format, role: fmt.Sprintf("capture-%04d/%s", n, cr.coll.role),
				reader: ex.reader}
			if cr.experiment != nil {
				p := providers.CaptureProducer(ex.record.Block, ex.record.Case)
				src.producer = &p
			}
			out = append(out, src)
		}
	}
	return out
}

// analyseCapture analyses the captured files with the operation, records the capture as
// its own session analysis (provenance included before anyone sees the handle),
// preserves it when asked, and builds the result. A failed analysis keeps the capture:
// its native files, or its console when the collector wrote nothing, stay evidence.
func (rt *Runtime) analyseCapture(ctx context.Context, cr *captureRequest, dir string, runs []*execution) (*CaptureResult, *failure.Failure) {
	sources := analysisSources(cr, runs)
	for _, s := range sources {
		if s.reader != nil {
			rt.readers.record(s.path, *s.reader)
		}
	}
	args := map[string]any{}
	for k, v := range cr.fields {
		args[k] = v
	}
	list := make([]any, len(sources))
	for i, s := range sources {
		src := map[string]any{"kind": "path", "path": s.path, "format": string(s.format)}
		if s.producer != nil {
			src["producer"] = *s.producer
		}
		list[i] = src
	}
	args["sources"] = list
	if cr.rawLimits != nil {
		args["limits"] = cr.rawLimits
	}
	if cr.pageSize != nil {
		args["page_size"] = *cr.pageSize
	}
	raw, _ := json.Marshal(args)
	extra, f := consoleSources(cr, dir, runs)
	if f != nil {
		return nil, f
	}
	executions := make([]gen.Execution, len(runs))
	sealed := true
	for i, ex := range runs {
		executions[i] = copyExecution(ex.record)
		sealed = sealed && !ex.detached
	}
	if sealed {
		// Nothing of the capture is left to change its files: they are read in place.
		ctx = withSealedScratch(ctx, dir)
	}
	prov := &captureProvenance{request: cr.provenanceRequest(), executions: executions}
	fitProvenance(prov, cr.limits.MaxProvenanceBytes)

	out := &CaptureResult{Capture: captureRecord(cr, executions)}
	var res *Result
	var req *request
	var af *failure.Failure
	if len(sources) == 0 {
		af = failure.New(gen.FailureCodeExecutionFailure, "the capture produced no %s artifact to analyse", cr.coll.format).
			With("provider_id", cr.providerID).With("missing_artifact_roles", missingRoles(executions))
	} else {
		res, req, af = rt.analyzeTool(ctx, cr.analysis.Name, raw)
	}
	if af != nil {
		if af.Code == gen.FailureCodeCancelled && ctx.Err() != nil {
			return nil, af
		}
		res, req, f = rt.failedCaptureAnalysis(ctx, cr, sources, extra, af)
		if f != nil {
			return nil, f
		}
		details := map[string]any{}
		for k, v := range af.Details {
			details[k] = v
		}
		details["analysis_source_count"] = len(req.inputs)
		out.AnalysisFailure = &gen.AnalysisFailure{Code: af.Code, Message: af.Message, Details: details}
		out.analysisField = af.FieldPath
	}
	for i := range req.inputs {
		req.inputs[i].role = sources[i].role
		res.Inputs[i].Role = sources[i].role
	}
	out.Result = *res
	out.Status = "complete"
	if out.Capture.Outcome.FailedCount > 0 || out.AnalysisFailure != nil {
		out.Status = "partial"
	}
	if cr.experiment != nil {
		rt.appendExperiment(cr, runs, out)
	}
	recorded := out.Result
	id := rt.rememberCapture(&record{result: &recorded, req: req, inputs: req.inputs, createdAt: cr.started, capture: prov,
		extra: extra, analysisFailure: out.AnalysisFailure})
	out.AnalysisID = id
	if cr.preserve {
		p, f := rt.Preserve(id)
		if f != nil {
			out.PreservationFailure = &gen.AnalysisFailure{Code: f.Code, Message: f.Message, Details: f.Details}
			out.Status = "partial"
		} else {
			out.Preserved = &gen.Preserved{EvidenceID: p.EvidenceID, ArtifactCount: p.ArtifactCount}
			out.NextPage = p.NextPage
		}
	}
	out.WorkloadFailure = workloadFailure(cr, runs)
	out.NextAction = captureNextAction(cr, out)
	return out, nil
}

// stderrTailBytes bounds the stderr tail of a workload failure summary.
const stderrTailBytes = 1024

// workloadFailure summarizes the first failed execution: its code, exit, bound, the tail
// of its stderr and where the whole stderr is.
func workloadFailure(cr *captureRequest, runs []*execution) *gen.WorkloadFailure {
	var first *execution
	failed := 0
	for _, ex := range runs {
		if ex.record.Status == "failed" {
			failed++
			if first == nil {
				first = ex
			}
		}
	}
	if first == nil {
		return nil
	}
	r := first.record
	wf := &gen.WorkloadFailure{Sequence: r.Sequence, Case: r.Case, Block: r.Block, Returncode: r.Returncode,
		ReturncodeScope: r.ReturncodeScope, FailedCount: int64(failed)}
	if r.FailureCode != nil {
		wf.Code = *r.FailureCode
	}
	if r.Limit != nil {
		k := r.Limit.Kind
		wf.LimitKind = &k
	}
	stderr := ""
	switch {
	case first.stderr != "":
		wf.StderrSource = fmt.Sprintf("capture-%04d/stderr", r.Sequence)
		if f, err := os.Open(first.stderr); err == nil {
			if st, err := f.Stat(); err == nil {
				buf := make([]byte, min(st.Size(), stderrTailBytes))
				if _, err := f.ReadAt(buf, st.Size()-int64(len(buf))); err == nil {
					stderr = string(buf)
				}
			}
			f.Close()
		}
	case r.ConsoleDiagnostics != nil:
		wf.StderrSource = fmt.Sprintf("capture.executions[%d].console_diagnostics.stderr", r.Sequence-1)
		stderr = r.ConsoleDiagnostics.Stderr
	}
	if len(stderr) > stderrTailBytes {
		stderr = stderr[len(stderr)-stderrTailBytes:]
	}
	for len(stderr) > 0 && !utf8.RuneStart(stderr[0]) {
		stderr = stderr[1:]
	}
	wf.StderrTail = validText([]byte(stderr))
	return wf
}

// missingRoles lists the artifact roles the executions did not produce.
func missingRoles(executions []gen.Execution) []string {
	var out []string
	for _, e := range executions {
		out = append(out, e.MissingArtifactRoles...)
	}
	return out
}

// failedCaptureAnalysis records a capture whose analysis failed: the captured native
// files are its analysis sources (replayable with adjusted arguments once preserved).
// When the collector wrote nothing there are none, and the table previews the console
// so the caller sees why.
func (rt *Runtime) failedCaptureAnalysis(ctx context.Context, cr *captureRequest, sources []capturedSource, extra []resolved, af *failure.Failure) (*Result, *request, *failure.Failure) {
	in := make([]resolved, 0, len(sources))
	for _, s := range sources {
		r := resolved{path: s.path, format: s.format, declared: true, role: s.role, producer: s.producer}
		var err error
		if cr.coll.directory {
			// A directory artifact is kept as the directory source its analysis would have
			// read: its members, within the bounds it was accepted under.
			r.members, r.sha256, r.size, err = sourcefile.HashDirectory(ctx, s.path, cr.limits.MaxInputFiles, cr.limits.MaxInputBytes)
		} else {
			r.sha256, r.size, err = sourcefile.Hash(s.path)
		}
		if err != nil {
			return nil, nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "a captured artifact could not be read")
		}
		in = append(in, r)
	}
	adm, f := rt.admitFields(cr.analysis, cr.fields)
	if f != nil {
		return nil, nil, f
	}
	req := &request{tool: cr.analysis, admitted: adm, fields: cr.fields, limits: cr.limits, inputs: in, started: cr.started}
	d, err := canon.Digest(map[string]any{"capture_analysis_failure": string(af.Code), "inputs": hashesOf(in)})
	if err != nil {
		return nil, nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the capture identity could not be computed")
	}
	req.digest = d
	res := &Result{Status: "complete", Operation: string(cr.tool.Operation.Name),
		Provider:    gen.Provider{ID: "flameox-capture", Version: Version},
		Inputs:      []gen.Input{},
		Limitations: []string{"The analysis of the captured artifacts failed (" + string(af.Code) + "); no analysis claims are available. The executions and their console remain evidence."},
	}
	for _, r := range in {
		p := r.path
		res.Inputs = append(res.Inputs, gen.Input{Path: &p, SHA256: r.sha256, SizeBytes: r.size, Format: r.format, Role: r.role})
	}
	rows := []json.RawMessage{}
	if len(in) == 0 && len(extra) > 0 {
		rows = rt.consolePreview(ctx, extra, cr.limits)
		res.Limitations = append(res.Limitations, "The collector wrote no native artifact; the table previews the console of the executions (stdout, then stderr, per execution) so the cause is visible. Console text is bounded: see the executions' omitted byte counts.")
	}
	res.Blocks = []any{
		MetricsBlock{Type: "metrics", Values: map[string]any{"captured_artifact_count": len(in), "analysis_succeeded": false}},
		tableBlock(rows),
	}
	res.Coverage = gen.Coverage{RowsReturned: int64(len(rows)), RowsObserved: int64(len(rows)), Complete: false}
	return res, req, nil
}

// consolePreview returns the first rows of the console files, read by the preview
// analyzer as text, each row led by the role of its file.
func (rt *Runtime) consolePreview(ctx context.Context, files []resolved, limits gen.EffectiveLimits) []json.RawMessage {
	rows := []json.RawMessage{}
	a, ok := rt.providers.LookupAnalyzer(gen.OperationNamePreviewArtifact)
	if !ok {
		return rows
	}
	adm, err := a.Admit(map[string]any{})
	if err != nil {
		return rows
	}
	for _, f := range files {
		left := limits.MaxRows - int64(len(rows))
		if left <= 0 {
			break
		}
		in := providerInputs([]resolved{f})
		an, err := adm.Run(ctx, in, limits)
		if err != nil {
			continue
		}
		page, err := an.Rows.Page(ctx, 0, left, nil)
		if err != nil {
			continue
		}
		role, _ := json.Marshal(f.role)
		for _, r := range page.Rows {
			row := append([]byte(`{"role":`), role...)
			if len(r) > 2 {
				row = append(append(row, ','), r[1:]...)
			} else {
				row = append(row, '}')
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// consoleSources are the console files a capture keeps beside what it analyses (never
// analysed): the retained console of a full-mode execution, and, for an execution whose
// collector wrote no native artifact, its bounded diagnostics excerpts written to
// scratch, so that the evidence of a failed collection still shows why. The direct
// provider's console is its analysis sources.
func consoleSources(cr *captureRequest, dir string, runs []*execution) ([]resolved, *failure.Failure) {
	if cr.coll.console {
		return nil, nil
	}
	var out []resolved
	for _, ex := range runs {
		n := ex.record.Sequence
		exdir := filepath.Join(dir, fmt.Sprintf("capture-%04d", n))
		files := map[string]string{}
		switch d := ex.record.ConsoleDiagnostics; {
		case ex.stdout != "":
			files["stdout"], files["stderr"] = ex.stdout, ex.stderr
		case ex.artifact == "" && d != nil:
			for stream, text := range map[string]string{"stdout-excerpt": d.Stdout, "stderr-excerpt": d.Stderr} {
				p := filepath.Join(exdir, stream)
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "the capture scratch could not be written")
				}
				files[stream] = p
			}
		}
		for _, stream := range []string{"stdout", "stderr", "stdout-excerpt", "stderr-excerpt"} {
			p, ok := files[stream]
			if !ok {
				continue
			}
			sum, size, err := sourcefile.Hash(p)
			if err != nil {
				return nil, failure.Wrap(err, gen.FailureCodeExecutionFailure, "a captured console file could not be read")
			}
			out = append(out, resolved{path: p, size: size, sha256: sum, format: gen.FormatText, declared: true,
				role: fmt.Sprintf("capture-%04d/%s", n, stream)})
		}
	}
	return out, nil
}

func hashesOf(in []resolved) []string {
	out := make([]string, len(in))
	for i, r := range in {
		out[i] = r.sha256
	}
	return out
}

// captureRecord summarizes the executions.
func captureRecord(cr *captureRequest, executions []gen.Execution) gen.CaptureRecord {
	rec := gen.CaptureRecord{Status: "complete", Mode: "single", RequestedOperation: cr.tool.Operation.Name,
		ProviderID: cr.providerID, Executions: executions}
	if cr.experiment != nil {
		rec.Mode = "experiment"
	}
	workload := "succeeded"
	for _, e := range executions {
		if e.Status == "succeeded" {
			rec.Outcome.SucceededCount++
		} else {
			rec.Outcome.FailedCount++
		}
		switch {
		case e.ReturncodeScope != "workload" || e.WorkloadReturncode == nil:
			if workload == "succeeded" {
				workload = "unknown"
			}
		case *e.WorkloadReturncode != 0:
			workload = "failed"
		}
	}
	rec.WorkloadStatus = workload
	rec.Outcome.ExecutionCount = int64(len(executions))
	rec.Outcome.Status = "succeeded"
	if rec.Outcome.FailedCount > 0 {
		rec.Outcome.Status = "failed"
	}
	return rec
}

// captureNextAction is the recovery step of a partial capture, chosen as the catalog's
// section 5.3 chooses it (decision 0048): an already preserved capture inspects its
// evidence (then retries the operation when the failed analysis has replayable inputs);
// an unpreserved one whose analysis failed on replayable inputs is preserve_then_analyze;
// any other unpreserved partial capture calls preserve_evidence with its handle. The
// message says what failed and what to change (the field, with the value used).
func captureNextAction(cr *captureRequest, out *CaptureResult) *gen.NextAction {
	if out.Status != "partial" {
		return nil
	}
	sources := -1 // no analysis failure
	if af := out.AnalysisFailure; af != nil {
		sources, _ = af.Details["analysis_source_count"].(int)
	}
	wf := out.WorkloadFailure
	if sources == 0 {
		out.cause = "The collector wrote no native artifact; the table previews the console and the executions say how each run ended."
		if wf != nil && wf.Returncode != nil && *wf.Returncode != 0 {
			out.cause = fmt.Sprintf("The collector wrote no native artifact: execution %d exited %d (workload_failure.stderr_tail shows why).", wf.Sequence, *wf.Returncode)
		}
		if h, ok := cr.coll.Collector.(providers.MissingHinter); ok && h.MissingHint() != "" {
			out.cause += " " + h.MissingHint()
		}
	}
	out.fix = executionFix(out, cr.serverDeadline())

	// What failed, and what to change.
	var what []string
	switch {
	case out.fix != nil && sources == 0:
		what = append(what, "The collector wrote no native artifact, so nothing was analysed.", out.fix.Message)
	case out.fix != nil:
		what = append(what, out.fix.Message)
	case sources == 0:
		what = append(what, out.cause+" Fix the provider fields or the workload (target.argv) so that the collector writes its artifact, then capture again.")
	case wf != nil:
		what = append(what, fmt.Sprintf("Execution %d (case %s, block %d) failed with %s; capture.executions[%d] says how.",
			wf.Sequence, wf.Case, wf.Block, wf.Code, wf.Sequence-1))
	}
	if sources > 0 {
		change := "the " + cr.analysis.Name + " arguments that caused it"
		if name := failure.FieldName(out.analysisField); name != "" {
			change = name
		}
		what = append(what, fmt.Sprintf("The analysis of the captured artifacts failed (%s: %s); change %s.",
			out.AnalysisFailure.Code, strings.TrimSuffix(out.AnalysisFailure.Message, "."), change))
	}
	if pf := out.PreservationFailure; pf != nil {
		what = append(what, "Preservation failed ("+string(pf.Code)+": "+strings.TrimSuffix(pf.Message, ".")+
			"); the capture is still a live analysis of this session: fix the cause first, or rescue_evidence it into a new store directory.")
	}
	msg := strings.Join(what, " ")
	if msg != "" {
		msg += " "
	}

	if out.Preserved != nil {
		a := &gen.CallTool{Kind: "call_tool", Tool: "inspect_evidence",
			Arguments: map[string]any{"evidence_id": out.Preserved.EvidenceID},
			Message:   msg + "The capture is preserved as evidence " + out.Preserved.EvidenceID + "; call inspect_evidence with these arguments to read its executions and artifacts"}
		if sources > 0 {
			a.ThenRetry = strp(cr.analysis.Name)
			a.Message += ", then call " + cr.analysis.Name + " with its analysis_sources and the adjusted arguments"
		}
		a.Message += "."
		return &gen.NextAction{CallTool: a}
	}
	if sources > 0 {
		return &gen.NextAction{PreserveThenAnalyze: &gen.PreserveThenAnalyze{Kind: "preserve_then_analyze",
			PreserveArguments: map[string]any{"analysis_id": out.AnalysisID},
			Message: msg + "Call preserve_evidence with preserve_arguments, then inspect_evidence with the evidence_id it returns, and call " +
				cr.analysis.Name + " with that evidence's analysis_sources and the adjusted arguments."}}
	}
	return &gen.NextAction{CallTool: &gen.CallTool{Kind: "call_tool", Tool: "preserve_evidence",
		Arguments: map[string]any{"analysis_id": out.AnalysisID},
		Message:   msg + "Call preserve_evidence with these arguments first to keep this run's executions and console as evidence before the session ends."}}
}

// Cause says, without session handles, why the capture has no analysable artifact and
// what the workload or collector needs; "" when it has one. A CLI, which cannot use
// next_action's preserve_evidence handle, tells its user this instead.
func (r *CaptureResult) Cause() string { return r.cause }

// Fix is the change a failed execution calls for, without session handles: the field
// (absent when none fixes it) and a message that says what failed with the value used;
// nil when no execution failed in a way the request can fix. A CLI, whose next step is
// a command rather than an MCP tool, names it in its own next action.
func (r *CaptureResult) Fix() *gen.AdjustRequest { return r.fix }

// CaptureResult is the result of a capture tool.
type CaptureResult struct {
	Result
	Capture         gen.CaptureRecord    `json:"capture"`
	AnalysisFailure *gen.AnalysisFailure `json:"analysis_failure"`
	// PreservationFailure says why requested preservation failed; the capture is still
	// a live session analysis.
	PreservationFailure *gen.AnalysisFailure `json:"preservation_failure,omitempty"`
	// WorkloadFailure leads with the first failed execution.
	WorkloadFailure *gen.WorkloadFailure `json:"workload_failure,omitempty"`
	// cause says why a capture has no analysable artifact (see Cause).
	cause string
	// fix is what a failed execution calls for (see Fix).
	fix *gen.AdjustRequest
	// analysisField is the field the failed analysis names, if any.
	analysisField []any
	NextAction    *gen.NextAction `json:"next_action"`
}

// document is the durable capture provenance as preservation records it: the capture
// request with every execution.
func (p *captureProvenance) document() (map[string]any, *failure.Failure) {
	doc := map[string]any{}
	if err := remarshal(p.request, &doc); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the capture provenance could not be recorded")
	}
	var execs []any
	if err := remarshal(p.executions, &execs); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the capture provenance could not be recorded")
	}
	doc["executions"] = execs
	return doc, nil
}

// size is the canonical size of the durable provenance in bytes.
func (p *captureProvenance) size() (int64, *failure.Failure) {
	doc, f := p.document()
	if f != nil {
		return 0, f
	}
	b, err := canon.Marshal(doc)
	if err != nil {
		return 0, failure.Wrap(err, gen.FailureCodeInternalFailure, "the capture provenance has no canonical form")
	}
	return int64(len(b)), nil
}

// copyExecution copies an execution record with its own console excerpts, so that
// fitting the provenance never changes what another holder sees.
func copyExecution(e gen.Execution) gen.Execution {
	if e.ConsoleDiagnostics != nil {
		d := *e.ConsoleDiagnostics
		e.ConsoleDiagnostics = &d
	}
	if e.SemanticOracle != nil {
		o := *e.SemanticOracle
		e.SemanticOracle = &o
	}
	return e
}

// fitProvenance shrinks the console excerpts of the executions (stdout, stderr and the
// oracle's) until the durable provenance fits limit bytes: each step keeps the tail of
// the longest excerpt, cut by the overflow, and counts the cut bytes as omitted. Every
// byte of text costs at least one byte of JSON, so each step removes at least what it
// cuts. When even empty excerpts do not fit, preservation refuses the provenance.
func fitProvenance(p *captureProvenance, limit int64) {
	type excerpt struct {
		text              *string
		retained, omitted *int64
		complete          *bool
	}
	var xs []excerpt
	add := func(d *gen.ConsoleDiagnostics) {
		xs = append(xs, excerpt{&d.Stdout, &d.StdoutRetainedBytes, &d.StdoutOmittedBytes, &d.StdoutComplete},
			excerpt{&d.Stderr, &d.StderrRetainedBytes, &d.StderrOmittedBytes, &d.StderrComplete})
	}
	for i := range p.executions {
		if d := p.executions[i].ConsoleDiagnostics; d != nil {
			add(d)
		}
		if o := p.executions[i].SemanticOracle; o != nil {
			add(&o.OutputStreams)
		}
	}
	for {
		size, f := p.size()
		if f != nil || size <= limit {
			return
		}
		var longest *excerpt
		for k := range xs {
			if len(*xs[k].text) > 0 && (longest == nil || len(*xs[k].text) > len(*longest.text)) {
				longest = &xs[k]
			}
		}
		if longest == nil {
			return
		}
		t := *longest.text
		cut := int(min(size-limit, int64(len(t))))
		for cut < len(t) && !utf8.RuneStart(t[cut]) {
			cut++
		}
		*longest.text = t[cut:]
		*longest.retained = max(0, *longest.retained-int64(cut))
		*longest.omitted += int64(cut)
		*longest.complete = false
	}
}

// rememberCapture caches a capture's analysis as its own record and returns its handle.
// The handle covers the session and the capture's sequence in it, so two captures whose
// analysed bytes are identical never share one, and the record is complete before the
// handle is returned.
func (rt *Runtime) rememberCapture(r *record) string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.captures++
	// The handle is the session's, and the capture's number in the session makes it
	// unique there (the spec: meaningless after a restart). Its provenance, canonicalized
	// once already to fit it (fitProvenance), is not canonicalized again for it: about
	// 0.15 ms of every capture here.
	b, err := canon.Marshal(map[string]any{"request": r.req.digest, "offset": r.req.offset, "capture": rt.captures})
	if err != nil {
		b = []byte(fmt.Sprintf("%s/%d", r.req.digest, rt.captures))
	}
	sum := sha256.New()
	sum.Write([]byte(rt.session))
	sum.Write(b)
	id := hex.EncodeToString(sum.Sum(nil))
	r.result.AnalysisID = id
	rt.store1(id, r)
	return id
}

// executionFix is what the first failed execution calls for: a bound to raise (timeout,
// memory, output) with the value it had, the workload, the collector or the oracle to
// fix, with where its stderr is; nil when no execution failed in a way the request can
// fix.
func executionFix(out *CaptureResult, serverDeadline bool) *gen.AdjustRequest {
	wf := out.WorkloadFailure
	if wf == nil {
		return nil
	}
	var lim *gen.ExecutionLimit
	for _, e := range out.Capture.Executions {
		if e.Sequence == wf.Sequence {
			lim = e.Limit
		}
	}
	kind, configured := "", ""
	if lim != nil {
		kind, configured = lim.Kind, strconv.FormatFloat(lim.Configured, 'f', -1, 64)
	} else if wf.LimitKind != nil {
		kind = *wf.LimitKind
	}
	value := func(unit string) string {
		if configured == "" {
			return ""
		}
		return " (" + configured + " " + unit + ")"
	}
	fix := func(path []any, msg string) *gen.AdjustRequest {
		return &gen.AdjustRequest{Kind: "adjust_request", FieldPath: path, Message: msg}
	}
	where := fmt.Sprintf("Execution %d (case %s, block %d)", wf.Sequence, wf.Case, wf.Block)
	switch {
	case (wf.Code == "EXECUTION_TIMEOUT" || kind == "timeout") && serverDeadline:
		return fix(nil, where+" ran past this server's workload ceiling"+value("s")+" ("+WorkloadCeilingVariable+
			") and was stopped; shorten the workload, or set target.budget.timeout_seconds lower to fail sooner, then capture again.")
	case wf.Code == "EXECUTION_TIMEOUT" || kind == "timeout":
		return fix(failure.Path("target", "budget", "timeout_seconds"),
			where+" ran past target.budget.timeout_seconds"+value("s")+" and was stopped; raise target.budget.timeout_seconds (at most 86400) or shorten the workload, then capture again.")
	case kind == "memory_limit_exceeded":
		return fix(failure.Path("target", "budget", "max_memory_bytes"),
			where+" passed target.budget.max_memory_bytes"+value("bytes")+" and was stopped; raise target.budget.max_memory_bytes or reduce the workload's memory, then capture again.")
	case kind == "output_limit":
		return fix(failure.Path("limits", "max_output_bytes"),
			where+" printed more than limits.max_output_bytes"+value("bytes")+" and was stopped; make the workload print less or raise limits.max_output_bytes (within the server's ceiling), then capture again.")
	case kind == "writable_limit_exceeded":
		return fix(failure.Path("limits", "max_output_bytes"),
			where+" wrote more than limits.max_output_bytes"+value("bytes")+" under its working directory and was stopped; write less or raise limits.max_output_bytes (within the server's ceiling), then capture again.")
	case kind == "storage_reserve_exceeded":
		return fix(nil, where+" was stopped when the scratch filesystem fell below its free-space reserve"+value("bytes free")+"; free disk space there, then capture again.")
	case kind == "task_limit_exceeded":
		return fix(failure.Path("target", "argv"), where+" kept starting processes or threads past its task bound"+value("tasks")+
			" for a second (a fork or thread loop) and was stopped; bound the workload's parallelism, or start Flameox with "+broker.MaxTasksVariable+" raised, then capture again.")
	case wf.Code == "SEMANTIC_ORACLE_FAILED":
		return fix(failure.Path("experiment", "semantic_oracle"),
			"The semantic oracle rejected "+strings.ToLower(where[:1])+where[1:]+"; its block is excluded from the comparison. Fix the case or experiment.semantic_oracle, then run the experiment again.")
	case wf.Code == "EXECUTION_FAILURE" && wf.Returncode == nil:
		return fix(failure.Path("target", "argv"), where+" could not start its command; check target.argv and target.cwd, then capture again.")
	case wf.Code == "EXECUTION_FAILURE" && *wf.Returncode != 0 && wf.ReturncodeScope == "workload":
		return fix(failure.Path("target", "argv"), fmt.Sprintf(
			"The workload exited %d in %s; workload_failure.stderr_tail shows why (the whole stderr: %s). Fix the workload or target.argv, then capture again.",
			*wf.Returncode, strings.ToLower(where[:1])+where[1:], wf.StderrSource))
	case wf.Code == "EXECUTION_FAILURE" && *wf.Returncode != 0:
		return fix(failure.Path("provider"), fmt.Sprintf(
			"The collector exited %d in %s (its exit is the collector's, which may pass on the workload's); workload_failure.stderr_tail shows why (the whole stderr: %s). Fix the provider fields, the collector or target.argv, then capture again.",
			*wf.Returncode, strings.ToLower(where[:1])+where[1:], wf.StderrSource))
	}
	return nil
}
