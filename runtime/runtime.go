// Package runtime is AnalysisRuntime: the process-lifespan owner of the tool registry,
// request admission and validation, limits, source resolution, pagination and
// continuations, and the session analysis cache. The CLI and the MCP server are thin
// projections over it; they own no state.
package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flameox/flameox/contracts"
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/broker"
	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/validate"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/repository"
)

// Version is the Flameox implementation version; it is bound into continuations, so
// it changes with every change to what a page of rows holds for the same request (a
// column added, removed or computed differently), and a continuation issued before the
// change is refused (it binds another request) instead of paging on with other rows
// (decision 0035). go.2: OTLP table rows gained flags. go.3: trace call-graph edges and
// metrics, Perfetto slices, slices that end before they start, and empty pages.
const Version = "0.2.0-go.7"

// implementation is the version continuations bind: Version, except in tests that mint
// a continuation under another one.
var implementation = Version

// MaxSessionAnalyses bounds the session analysis cache.
const MaxSessionAnalyses = 64

// Tool is one catalog entry with its exact schema bytes.
type Tool struct {
	Name        string
	Title       string
	Description string
	Family      string
	// Toolset is the group a server loads the tool with (--toolsets); lifecycle tools are
	// evidence.
	Toolset   gen.Toolset
	Operation gen.OperationDecl // zero for a lifecycle tool
	// CaptureProviders are the provider kinds a capture tool offers.
	CaptureProviders []string
	Annotations      Annotations
	// inputSchema and outputSchema read the contract's schemas (contracts/tools) on first
	// use: a call reads only its own tool's, not the catalog's 480 kB.
	inputSchema, outputSchema func() json.RawMessage

	// The input validator is compiled on the tool's first call: a CLI call or an MCP
	// start compiles nothing it does not use.
	inputOnce sync.Once
	input     *validate.Schema
	inputErr  error
	// ceilings are the server's, which its published schema states (publishCeilings);
	// the schema is written on first use, so a start publishes nothing it does not use.
	ceilings      *gen.EffectiveLimits
	publishOnce   sync.Once
	published     json.RawMessage
	hasCeilings   bool
	publishFailed error
}

// InputSchema is the contract's input schema (contracts/tools): its limits carry the
// contract's hard maxima. Input is the schema this server publishes and validates.
func (t *Tool) InputSchema() json.RawMessage { return t.inputSchema() }

// OutputSchema is the contract's output schema (contracts/tools), as tools/list carries it.
func (t *Tool) OutputSchema() json.RawMessage { return t.outputSchema() }

// embeddedSchema returns a function that reads the embedded contract file name once, on
// its first call; loadCatalog has checked that the file is there.
func embeddedSchema(name string) func() json.RawMessage {
	return sync.OnceValue(func() json.RawMessage {
		b, _ := fs.ReadFile(contracts.FS, name)
		return b
	})
}

// Input is the input schema this server publishes in tools/list and validates requests
// against: InputSchema with the server's ceilings as the maxima of page_size and limits
// (decision 0043), for a tool that has limits.
func (t *Tool) Input() json.RawMessage {
	t.publishOnce.Do(func() {
		t.published = t.InputSchema()
		if t.ceilings == nil {
			return
		}
		b, ok, err := withCeilings(t.published, *t.ceilings)
		switch {
		case err != nil:
			t.publishFailed = err
		case ok:
			t.published, t.hasCeilings = b, true
		}
	})
	return t.published
}

// validator returns the compiled input schema.
func (t *Tool) validator() (*validate.Schema, *failure.Failure) {
	t.inputOnce.Do(func() {
		in := t.Input()
		if t.inputErr = t.publishFailed; t.inputErr == nil {
			t.input, t.inputErr = validate.Compile(t.Name+".input.json", in)
		}
	})
	if t.inputErr != nil {
		return nil, failure.Wrap(t.inputErr, gen.FailureCodeInternalContractFailure, "the input schema of %s does not compile", t.Name)
	}
	return t.input, nil
}

// Validate checks raw arguments against the tool's input schema. A limit above the
// published server ceiling (but within the contract) is LIMIT_EXCEEDED, as when the
// runtime lowers the limits.
func (t *Tool) Validate(raw []byte) (any, *failure.Failure) {
	v, f := t.validator()
	if f != nil {
		return nil, f
	}
	inst, f := v.Validate(raw)
	if f != nil && t.hasCeilings {
		if g := ceilingFailure(f, raw, *t.ceilings); g != nil {
			return nil, g
		}
	}
	return inst, f
}

// Annotations are a tool's MCP behaviour hints, as the catalog states them.
type Annotations = gen.CatalogAnnotations

// MaxSessionRescues bounds the remembered rescue handoffs.
const MaxSessionRescues = 64

// Runtime is AnalysisRuntime.
type Runtime struct {
	limits gen.EffectiveLimits
	// workloadCeiling bounds every capture execution's seconds (WorkloadCeilingVariable);
	// zero: none.
	workloadCeiling float64
	tools           []*Tool
	byName          map[string]*Tool
	session         string

	// store is the configured evidence store; storeErr says why there is none.
	store    *repository.Store
	storeErr error

	// providers holds the analyzers, collectors and format detectors of this build.
	providers *providers.Registry
	// captures counts the captures of this session; each has its own handle.
	captures int64

	// host is the machine preparation detects and installs on; bindings are the managed
	// collectors prepare_providers bound in this session.
	host     prepare.Host
	bindings bindings

	// readers are the executables captures of this session named to read their artifacts.
	readers readers
	// materialized holds preserved directory sources rebuilt for analysis (by digest),
	// removed with the runtime.
	materialized string

	// worker is the executable that runs analyses as child processes ("" runs them in this
	// process); isWorker is true in such a child.
	worker   string
	isWorker bool
	// workers is the budget that admits worker processes (processBudget unless a test
	// gives its own); launch starts one (broker.Run unless a test fakes it).
	workers *workerBudget
	launch  func(context.Context, broker.Spec) (*broker.Result, error)
	// spares keeps a started worker for the next analysis (WithSpareWorker); nil keeps none.
	spares *spares
	// ending counts the workers whose replies were answered before they ended (endLater),
	// and the capture helpers being ended or started after a capture call (afterCapture).
	ending sync.WaitGroup

	mu      sync.Mutex
	cache   *lru
	rescues *rescueMemo
	scratch *scratch
	// nextHelper is the helper of the next capture call: the one WithCaptureHelper gave, or
	// the spare (WithSpareCaptureHelper); spareHelper keeps one, until helpersClosed.
	nextHelper    atomic.Pointer[CaptureHelper]
	spareHelper   bool
	helpersClosed atomic.Bool
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithStore uses the evidence store at loc instead of the one the environment configures.
func WithStore(loc repository.Location) Option {
	return func(rt *Runtime) { rt.store, rt.storeErr = repository.Open(loc), nil }
}

// WithStoreDir uses the evidence store in dir, as if FLAMEOX_DATA_DIR named it.
func WithStoreDir(dir string) Option {
	return WithStore(repository.Location{Dir: dir, Source: repository.SourceExplicit})
}

// DataDirVariable is the environment variable that names the evidence store directory.
const DataDirVariable = repository.EnvironmentVariable

// New builds a runtime over the providers of reg whose server ceilings are the contract
// defaults lowered by startup. reg must cover the contract: every released operation has
// an analyzer, every released capture provider a collector and every accepted format a
// detector; a gap is an error naming it. startup is the raw --limits JSON (nil or empty
// for none); it is validated against the RequestLimits contract. The evidence store is
// the one FLAMEOX_DATA_DIR or the platform default names, unless an option says
// otherwise; nothing is created until preservation.
func New(reg *providers.Registry, startup []byte, opts ...Option) (_ *Runtime, err error) {
	if err := reg.Verify(); err != nil {
		return nil, err
	}
	rt := &Runtime{limits: gen.LimitDefaults, byName: map[string]*Tool{}, cache: newLRU(MaxSessionAnalyses),
		rescues: newRescueMemo(MaxSessionRescues), scratch: newScratch(), providers: reg, host: prepare.ThisHost()}
	sweepStaleScratch(os.TempDir(), time.Now())
	if loc, err := repository.FromEnvironment(os.Getenv); err == nil {
		rt.store = repository.Open(loc)
	} else {
		rt.storeErr = err
	}
	for _, o := range opts {
		o(rt)
	}
	if rt.worker != "" && rt.workers == nil {
		b, err := processBudget()
		if err != nil {
			return nil, err
		}
		rt.workers = b
	}
	if rt.spares != nil && rt.spares.once {
		// The worker starts ahead (WithWorkerAhead); a failure below stops it.
		rt.spares.replenish()
		defer func() {
			if err != nil {
				rt.spares.close()
			}
		}()
	}
	// A task bound the environment cannot set is refused here, not silently defaulted.
	if _, err := broker.MaxTasksFromEnvironment(os.Getenv); err != nil {
		return nil, failure.New(gen.FailureCodeInvalidInput, "%s", err.Error()).With("configuration_variable", broker.MaxTasksVariable)
	}
	ceiling, err := workloadCeiling(os.Getenv)
	if err != nil {
		return nil, failure.New(gen.FailureCodeInvalidInput, "%s", err.Error()).With("configuration_variable", WorkloadCeilingVariable)
	}
	rt.workloadCeiling = ceiling
	var sid [16]byte
	if _, err := rand.Read(sid[:]); err != nil {
		return nil, err
	}
	rt.session = hex.EncodeToString(sid[:])
	if err := rt.loadCatalog(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(startup)) > 0 {
		lim, f := rt.parseStartupLimits(startup)
		if f != nil {
			return nil, f
		}
		eff, f := lower(gen.LimitDefaults, gen.LimitMaxima, lim, nil, "startup_limit")
		if f != nil {
			return nil, f
		}
		rt.limits = eff
	}
	rt.publishCeilings()
	return rt, nil
}

// Extension is the file extension of format f as its family declares it ("" when none).
func (rt *Runtime) Extension(f gen.Format) string { return rt.providers.Extension(f) }

// Limits returns the server ceilings.
func (rt *Runtime) Limits() gen.EffectiveLimits { return rt.limits }

// Tools returns the catalog in its public order.
func (rt *Runtime) Tools() []*Tool { return rt.tools }

// Tool returns the named tool.
func (rt *Runtime) Tool(name string) (*Tool, bool) {
	t, ok := rt.byName[name]
	return t, ok
}

// ToolNames lists every tool name in catalog order.
func (rt *Runtime) ToolNames() []string {
	out := make([]string, len(rt.tools))
	for i, t := range rt.tools {
		out[i] = t.Name
	}
	return out
}

// loadCatalog loads the catalog's tools from gen.CatalogTools, which contractgen writes
// from contracts/catalog.json (the test holds the two equal): decoding the file cost
// every start 1.3-2.1 ms (issue 36).
func (rt *Runtime) loadCatalog() error {
	for _, c := range gen.CatalogTools {
		var op gen.OperationDecl
		var ok bool
		if c.Family == "lifecycle" {
			_, ok = lifecycleHandlers[c.Name]
			if !ok {
				return fmt.Errorf("catalog tool %s has no handler in this build", c.Name)
			}
		} else {
			if op, ok = gen.LookupOperation(c.Operation); !ok {
				return fmt.Errorf("catalog tool %s names unknown operation %s", c.Name, c.Operation)
			}
			if _, ok := rt.providers.LookupAnalyzer(op.Name); !ok {
				return fmt.Errorf("catalog tool %s has no analyzer in this build", c.Name)
			}
		}
		for _, name := range []string{c.InputSchema, c.OutputSchema} {
			if _, err := fs.Stat(contracts.FS, name); err != nil {
				return err
			}
		}
		t := &Tool{Name: c.Name, Title: c.Title, Description: c.Description, Family: c.Family, Toolset: c.Toolset, Operation: op,
			Annotations: c.Annotations, CaptureProviders: c.CaptureProviders,
			inputSchema: embeddedSchema(c.InputSchema), outputSchema: embeddedSchema(c.OutputSchema)}
		rt.tools = append(rt.tools, t)
		rt.byName[t.Name] = t
	}
	return nil
}

// Call runs the named tool on raw JSON arguments and returns its success envelope: a
// *Result for an analysis tool, the lifecycle tool's result otherwise.
func (rt *Runtime) Call(ctx context.Context, name string, raw []byte) (any, *failure.Failure) {
	t, ok := rt.byName[name]
	if !ok {
		return nil, UnknownTool(name, rt.ToolNames())
	}
	switch t.Family {
	case "lifecycle", "capture":
		var ahead *CaptureHelper
		if t.Family == "capture" {
			// The containment helper starts while the request is validated and admitted.
			ahead = rt.captureHelper()
			defer rt.afterCapture(ahead)
		}
		inst, f := t.Validate(raw)
		if f != nil {
			if name == "prepare_providers" {
				unknownProvider(f, raw)
			}
			if t.Family == "capture" && len(f.FieldPath) == 2 && f.FieldPath[0] == "provider" && f.FieldPath[1] == "kind" {
				if g := incompatibleProvider(t, providerKind(raw)); g != nil {
					return nil, g
				}
				// No such provider: say what the operation reads and who can capture it.
				f.With("operation", string(t.Operation.Name)).With("accepted_formats", t.Operation.FormatStrings()).
					With("compatible_capture_providers", t.CaptureProviders)
			}
			return nil, f
		}
		if t.Family == "capture" {
			return rt.capture(ctx, t, inst, ahead)
		}
		return lifecycleHandlers[name](ctx, rt, normalizeNumbers(inst))
	}
	return rt.Analyze(ctx, name, raw)
}

// UnknownTool is the UNKNOWN_TOOL failure of a call of name, listing the tools a caller
// can call (known) and the nearest of them.
func UnknownTool(name string, known []string) *failure.Failure {
	f := failure.New(gen.FailureCodeUnknownTool, "there is no tool named %q", name).
		Field(failure.Path("name"), known).With("requested_tool", name)
	if near := validate.Nearest(name, known); near != "" {
		f.Message += "; did you mean " + near + "?"
		f.With("did_you_mean", near)
	}
	return f
}

// Analyze runs the named analysis tool on raw JSON arguments and caches the result under
// its session handle.
func (rt *Runtime) Analyze(ctx context.Context, name string, raw []byte) (*Result, *failure.Failure) {
	res, req, f := rt.analyzeTool(ctx, name, raw)
	if f != nil {
		return nil, f
	}
	rt.remember(req, res)
	return res, nil
}

// analyzeTool validates, admits and analyses raw arguments of the named analysis tool
// without caching the result.
func (rt *Runtime) analyzeTool(ctx context.Context, name string, raw []byte) (*Result, *request, *failure.Failure) {
	t, ok := rt.byName[name]
	if !ok || t.Family != "analysis" {
		return nil, nil, failure.New(gen.FailureCodeUnknownOperation, "there is no analysis operation named %q", name).
			Field(failure.Path("operation"), rt.OperationNames()).With("available_operations", rt.OperationNames())
	}
	inst, f := t.Validate(raw)
	if f != nil {
		if g := declaredFormat(t, f, raw); g != nil {
			return nil, nil, g
		}
		return nil, nil, f
	}
	req, f := rt.admit(t, inst)
	if f != nil {
		return nil, nil, f
	}
	res, f := rt.analyze(ctx, req)
	if f != nil {
		return nil, nil, f
	}
	return res, req, nil
}

// OperationNames lists the analysis tools in catalog order.
func (rt *Runtime) OperationNames() []string {
	var out []string
	for _, t := range rt.tools {
		if t.Family == "analysis" {
			out = append(out, t.Name)
		}
	}
	return out
}

// CaptureOperations lists the operations that have a capture tool.
func (rt *Runtime) CaptureOperations() []string {
	var out []string
	for _, t := range rt.tools {
		if t.Family == "capture" {
			out = append(out, string(t.Operation.Name))
		}
	}
	return out
}

// record is one session analysis: its result and everything preservation needs.
type record struct {
	result    *Result
	req       *request
	inputs    []resolved
	createdAt time.Time
	// preserved is set once the analysis is preserved in the configured store.
	preserved *repository.Evidence
	// capture is the provenance of a capture's analysis; nil for plain analysis.
	capture *captureProvenance
	// analysisFailure is the failed analysis of a capture, recorded with its evidence.
	analysisFailure *gen.AnalysisFailure
	// extra are retained console files preserved with a capture but never analysed.
	extra []resolved
	// scratch are the session capture directories the record reads from.
	scratch []*scratchDir
}

// remember stores the result under its session handle.
func (rt *Runtime) remember(req *request, res *Result) {
	sum := sha256.New()
	sum.Write([]byte(rt.session))
	b, err := canon.Marshal(map[string]any{"request": req.digest, "offset": req.offset})
	if err != nil {
		return
	}
	sum.Write(b)
	res.AnalysisID = hex.EncodeToString(sum.Sum(nil))
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.cache.get(res.AnalysisID); ok {
		// The same request identity and offset: the first record, and any preservation of
		// it, stays; the lookup refreshed its recency.
		return
	}
	rt.store1(res.AnalysisID, &record{result: res, req: req, inputs: req.inputs, createdAt: req.started})
}

// store1 caches r under id, counting its use of session scratch, and releases the scratch
// of the records it evicts. The caller holds rt.mu.
func (rt *Runtime) store1(id string, r *record) {
	seen := map[*scratchDir]bool{}
	for _, in := range append(append([]resolved{}, r.inputs...), r.extra...) {
		if d := rt.scratch.owner(in.path); d != nil && !seen[d] {
			seen[d] = true
			r.scratch = append(r.scratch, d)
		}
	}
	rt.scratch.acquire(r.scratch)
	for _, old := range rt.cache.put(id, r) {
		rt.scratch.release(old.scratch)
	}
}

// evictScratch evicts least-recently-used records holding scratch until enough is true;
// their handles then report EXPIRED_SESSION_ANALYSIS.
func (rt *Runtime) evictScratch(enough func() bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, old := range rt.cache.evictUsing(func(r *record) bool { return len(r.scratch) > 0 }, enough) {
		rt.scratch.release(old.scratch)
	}
}

// Close removes the session scratch. The runtime must not be used afterwards.
func (rt *Runtime) Close() {
	rt.helpersClosed.Store(true)
	rt.spares.close()
	rt.ending.Wait()
	rt.nextHelper.Swap(nil).Abandon()
	rt.scratch.close()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.materialized != "" {
		os.RemoveAll(rt.materialized)
	}
}

// Store returns the configured evidence store, or a failure that says how to configure one.
func (rt *Runtime) Store() (*repository.Store, *failure.Failure) {
	if rt.store != nil {
		return rt.store, nil
	}
	f := failure.Wrap(rt.storeErr, gen.FailureCodeRepositoryIoFailure,
		"no evidence store is configured: neither FLAMEOX_DATA_DIR nor a user data directory is available")
	f.NextAction = &gen.NextAction{ConfigureEnvironment: &gen.ConfigureEnvironment{Kind: "configure_environment",
		Environment: map[string]any{repository.EnvironmentVariable: "<absolute directory>"},
		Message:     "Set FLAMEOX_DATA_DIR to an absolute directory and restart or reconnect Flameox."}}
	return nil, f.With("configuration_variable", repository.EnvironmentVariable)
}

// DataDir is the evidence store directory the environment selects (FLAMEOX_DATA_DIR,
// else XDG_DATA_HOME or HOME), for commands that keep files beside the store.
func DataDir() (string, error) {
	loc, err := repository.FromEnvironment(os.Getenv)
	if err != nil {
		return "", err
	}
	return loc.Dir, nil
}
