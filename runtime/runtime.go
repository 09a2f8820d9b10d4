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
	"sync"

	"github.com/flameox/flameox/contracts"
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/runtime/canon"
	"github.com/flameox/flameox/runtime/failure"
	"github.com/flameox/flameox/runtime/validate"
)

// Version is the Flameox implementation version; it is bound into continuations.
const Version = "0.2.0-go.1"

// MaxSessionAnalyses bounds the session analysis cache.
const MaxSessionAnalyses = 64

// Tool is one catalog entry with its exact schema bytes.
type Tool struct {
	Name         string
	Title        string
	Description  string
	Family       string
	Operation    gen.OperationDecl
	Annotations  Annotations
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	input        *validate.Schema
}

// Annotations are MCP behaviour hints.
type Annotations struct {
	ReadOnlyHint    bool  `json:"readOnlyHint"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  bool  `json:"idempotentHint"`
	OpenWorldHint   bool  `json:"openWorldHint"`
}

// Runtime is AnalysisRuntime.
type Runtime struct {
	limits  gen.EffectiveLimits
	tools   []*Tool
	byName  map[string]*Tool
	session string

	mu    sync.Mutex
	cache *lru
}

// New builds a runtime whose server ceilings are the contract defaults lowered by startup.
// startup is the raw --limits JSON (nil or empty for none); it is validated against the
// RequestLimits contract.
func New(startup []byte) (*Runtime, error) {
	rt := &Runtime{limits: gen.LimitDefaults, byName: map[string]*Tool{}, cache: newLRU(MaxSessionAnalyses)}
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
	return rt, nil
}

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

type catalogFile struct {
	Tools []struct {
		Name         string      `json:"name"`
		Title        string      `json:"title"`
		Description  string      `json:"description"`
		Family       string      `json:"family"`
		Operation    string      `json:"operation"`
		Annotations  Annotations `json:"annotations"`
		InputSchema  string      `json:"input_schema"`
		OutputSchema string      `json:"output_schema"`
	} `json:"tools"`
}

func (rt *Runtime) loadCatalog() error {
	b, err := fs.ReadFile(contracts.FS, "catalog.json")
	if err != nil {
		return err
	}
	var cat catalogFile
	if err := json.Unmarshal(b, &cat); err != nil {
		return err
	}
	for _, c := range cat.Tools {
		op, ok := gen.LookupOperation(c.Operation)
		if !ok {
			return fmt.Errorf("catalog tool %s names unknown operation %s", c.Name, c.Operation)
		}
		if _, ok := analyzers[op.Name]; !ok {
			return fmt.Errorf("catalog tool %s has no analyzer in this build", c.Name)
		}
		in, err := fs.ReadFile(contracts.FS, c.InputSchema)
		if err != nil {
			return err
		}
		out, err := fs.ReadFile(contracts.FS, c.OutputSchema)
		if err != nil {
			return err
		}
		v, err := validate.Compile(c.Name+".input.json", in)
		if err != nil {
			return fmt.Errorf("tool %s: %w", c.Name, err)
		}
		t := &Tool{Name: c.Name, Title: c.Title, Description: c.Description, Family: c.Family, Operation: op,
			Annotations: c.Annotations, InputSchema: in, OutputSchema: out, input: v}
		rt.tools = append(rt.tools, t)
		rt.byName[t.Name] = t
	}
	return nil
}

// Call runs the named tool on raw JSON arguments.
func (rt *Runtime) Call(ctx context.Context, name string, raw []byte) (*Result, *failure.Failure) {
	t, ok := rt.byName[name]
	if !ok {
		return nil, failure.New(gen.FailureCodeUnknownTool, "there is no tool named %q", name).
			Field(failure.Path(), rt.ToolNames())
	}
	inst, f := t.input.Validate(raw)
	if f != nil {
		return nil, f
	}
	req, f := rt.admit(t, inst)
	if f != nil {
		return nil, f
	}
	res, f := analyzers[t.Operation.Name](ctx, rt, req)
	if f != nil {
		return nil, f
	}
	rt.remember(req, res)
	return res, nil
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
	rt.cache.put(res.AnalysisID, res)
}

// Analysis returns a cached session analysis by handle.
func (rt *Runtime) Analysis(id string) (*Result, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.cache.get(id)
}
