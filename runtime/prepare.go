package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

// bindings are the managed collectors prepare_providers verified and bound in this
// session, by provider id. A binding is published only after its whole request succeeded;
// a failed, timed-out or cancelled preparation leaves the bindings as they were.
type bindings struct {
	mu sync.Mutex
	m  map[string]*prepare.Binding
}

func (b *bindings) get(id string) *prepare.Binding {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[id]
}

func (b *bindings) publish(add map[string]*prepare.Binding) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]*prepare.Binding{}
	}
	for k, v := range add {
		b.m[k] = v
	}
}

// ToolsDir is the Flameox-owned directory of managed collectors: beside the evidence
// store, not in it (the store's root admits only repository content), as <store>-tools.
func ToolsDir(store string) string {
	return filepath.Join(filepath.Dir(store), filepath.Base(store)+"-tools")
}

// installer is the managed-collector installer of this runtime's data directory.
func (rt *Runtime) installer() (*prepare.Installer, *failure.Failure) {
	if rt.store == nil {
		return nil, failure.Wrap(rt.storeErr, gen.FailureCodeSetupFailure,
			"there is no Flameox data directory to install managed collectors into: set FLAMEOX_DATA_DIR or HOME").
			With("reason", "no_data_directory")
	}
	return &prepare.Installer{Dir: ToolsDir(rt.store.Location().Dir), Host: rt.host}, nil
}

// prepared is the executable bound for the managed provider id in this session, for a
// collector's admission: the session binding, else a verified installation in the tools
// directory (which a one-shot CLI capture finds after `flameox prepare`), bound now.
func (rt *Runtime) prepared(id string) *providers.Executable {
	if p, ok := rt.providers.Tools().Lookup(gen.PreparableProvider(id)); !ok || p.Class != prepare.Managed {
		return nil
	}
	b := rt.bindings.get(id)
	if b == nil {
		in, f := rt.installer()
		if f != nil {
			return nil
		}
		if b = in.ExistingOf(id); b == nil {
			return nil
		}
		rt.bindings.publish(map[string]*prepare.Binding{id: b})
	}
	return &providers.Executable{Path: b.Path, SHA256: b.SHA256}
}

// Prepare is prepare_providers: it installs or reuses and verifies the requested managed
// collectors, binds them for this session when every one succeeded, and reports what
// the other providers need on this machine, from the records the families registered.
func (rt *Runtime) Prepare(ctx context.Context, a gen.PrepareProvidersArguments) (*gen.PrepareProvidersResult, *failure.Failure) {
	ids := slices.Clone(a.ProviderIds)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	res := &gen.PrepareProvidersResult{Status: "complete", RequestedProviders: ids,
		PreparedManagedProviders: []gen.PreparableProvider{}, ExternalRequirements: []gen.ProviderRequirement{},
		WorkloadRequirements: []gen.ProviderRequirement{},
		Preparation:          gen.Preparation{Status: "not_applicable", Installed: []gen.PreparableProvider{}},
		Launcher:             gen.Launcher{Command: "flameox", Args: []string{"mcp", "serve"}},
		ActivationStatus:     "not_applicable"}
	a.ApplyDefaults()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(a.TimeoutSeconds)*time.Second)
	defer cancel()
	bound := map[string]*prepare.Binding{}
	tools := rt.providers.Tools()
	for _, id := range ids {
		// The schema admits only the contract's ids, and the registry has a record of
		// each (Verify).
		p, _ := tools.Lookup(id)
		switch p.Class {
		case prepare.Managed:
			in, f := rt.installer()
			if f != nil {
				return nil, f
			}
			progress(ctx, 0, 1, "preparing "+string(id))
			b, installed, f := in.Prepare(ctx, string(id), os.Environ())
			if f != nil {
				return nil, f.With("provider_id", string(id))
			}
			progress(ctx, 1, 1, "prepared "+string(id))
			bound[string(id)] = b
			res.PreparedManagedProviders = append(res.PreparedManagedProviders, id)
			if installed {
				res.Preparation.Installed = append(res.Preparation.Installed, id)
			}
			if r, ok := prepare.WorkloadRequirement(p); ok {
				res.WorkloadRequirements = append(res.WorkloadRequirements, r)
			}
		case prepare.Workload:
			res.WorkloadRequirements = append(res.WorkloadRequirements, prepare.Requirement(p, rt.host))
		default:
			res.ExternalRequirements = append(res.ExternalRequirements, prepare.Requirement(p, rt.host))
		}
	}
	if len(bound) > 0 {
		rt.bindings.publish(bound)
		res.Preparation.Status, res.ActivationStatus = "prepared", "ready"
	}
	return res, nil
}

// preparable turns the unavailable state of a managed provider that prepare_providers
// can install into the retryable state of catalog §3.2: call prepare_providers with the
// provider id, then retry the same tool. Any other failure passes unchanged.
func preparable(f *failure.Failure, err error, tool string) *failure.Failure {
	var na *providers.UnavailableError
	if !errors.As(err, &na) || !na.Preparable {
		return thenRetry(f, tool)
	}
	return retryAfterPreparing(f, na.Provider, tool)
}

// retryAfterPreparing makes f retryable with the next action that prepares provider and
// then retries tool ("" when the tool that called the failing step is not known yet:
// thenRetry names it).
func retryAfterPreparing(f *failure.Failure, provider, tool string) *failure.Failure {
	f.Retryable = true
	ct := &gen.CallTool{Kind: "call_tool", Tool: "prepare_providers", Arguments: map[string]any{"provider_ids": []string{provider}},
		Message: "Call prepare_providers to install and bind the pinned " + provider + " for this session, then retry " + sameCall + " with the same arguments."}
	f.NextAction = &gen.NextAction{CallTool: ct}
	return thenRetry(f, tool)
}

// sameCall stands for the tool to retry in a next action's message until thenRetry names it.
const sameCall = "the same call"

// thenRetry names tool as the call to retry after f's prepare_providers next action when
// it names none: an analysis failure is built below the tool that called it (in an
// analysis worker, perhaps), and the runtime adds it on the way out.
func thenRetry(f *failure.Failure, tool string) *failure.Failure {
	if f == nil || tool == "" || f.NextAction == nil || f.NextAction.CallTool == nil {
		return f
	}
	ct := f.NextAction.CallTool
	if ct.Tool != "prepare_providers" || ct.ThenRetry != nil {
		return f
	}
	t := tool
	ct.ThenRetry = &t
	ct.Message = strings.Replace(ct.Message, "then retry "+sameCall, "then retry "+tool, 1)
	return f
}

// managedReaders hands each input that no capture of this session recorded a reader for
// the session's binding of the managed provider that reads its format (memray's reader),
// unless the operator named the reader (the provider's variable) or the bound file
// changed since it was verified, in which case the analysis finds its own reader and,
// failing that, is retryable after prepare_providers.
func (rt *Runtime) managedReaders(in []resolved) {
	tools := rt.providers.Tools()
	for i := range in {
		if in[i].reader != nil {
			continue
		}
		p, ok := tools.ReaderOf(in[i].format)
		if !ok || p.Variable != "" && rt.host.Getenv(p.Variable) != "" {
			continue
		}
		exe := rt.prepared(string(p.ID))
		if exe == nil || !prepare.Unchanged(&prepare.Binding{Path: exe.Path, SHA256: exe.SHA256}) {
			continue
		}
		in[i].reader = exe
	}
}

// unknownProvider words the schema's enum failure of provider_ids[i] as the catalog
// does: the unknown id and the ids to choose from.
func unknownProvider(f *failure.Failure, raw []byte) {
	if len(f.FieldPath) != 2 || f.FieldPath[0] != "provider_ids" || f.Details["error_type"] != "schema_enum" {
		return
	}
	i, ok := f.FieldPath[1].(int)
	var a struct {
		ProviderIDs []any `json:"provider_ids"`
	}
	if !ok || json.Unmarshal(raw, &a) != nil || i < 0 || i >= len(a.ProviderIDs) {
		return
	}
	id, _ := json.Marshal(a.ProviderIDs[i])
	f.Message = fmt.Sprintf("unknown provider %s; choose one of: %s", id, strings.Join(f.AcceptedValues, ", "))
}

// maxReaders bounds the session's reader records; the oldest go first.
const maxReaders = 4096

// readers records, per captured artifact of this session (its path in session scratch,
// which only Flameox writes), the executable its collector named to read it. Only the
// runtime records: no request can name a reader.
type readers struct {
	mu    sync.Mutex
	m     map[string]providers.Executable
	order []string
}

func (r *readers) record(path string, exe providers.Executable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]providers.Executable{}
	}
	path = filepath.Clean(path)
	if _, ok := r.m[path]; !ok {
		r.order = append(r.order, path)
	}
	r.m[path] = exe
	for len(r.order) > maxReaders {
		delete(r.m, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *readers) get(path string) *providers.Executable {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[filepath.Clean(path)]; ok {
		return &e
	}
	return nil
}
