package providers

import (
	"cmp"
	"fmt"
	"slices"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
)

// Tool registers t, the record of a preparable provider the registering family uses
// (decision 0068); a second record of the same id is an error Verify reports.
func (r *Registry) Tool(t prepare.Tool) {
	i, dup := slices.BinarySearchFunc(r.tools, t.ID, func(t prepare.Tool, id gen.PreparableProvider) int {
		return cmp.Compare(t.ID, id)
	})
	if dup {
		r.errs = append(r.errs, fmt.Errorf("preparable provider %s has two records", t.ID))
		return
	}
	r.tools = slices.Insert(r.tools, i, t)
}

// Tools returns the registered records, sorted by id: the preparable set.
func (r *Registry) Tools() prepare.Tools { return slices.Clone(r.tools) }

// verifyTools checks that every preparable provider of the contract has a record and
// that no record has an id outside it.
func (r *Registry) verifyTools() []error {
	var errs []error
	for _, id := range gen.PreparableProviderValues() {
		if _, ok := r.tools.Lookup(id); !ok {
			errs = append(errs, fmt.Errorf("preparable provider %s has no record", id))
		}
	}
	for _, t := range r.tools {
		if !slices.Contains(gen.PreparableProviderValues(), t.ID) {
			errs = append(errs, fmt.Errorf("record %s is registered but is not a preparable provider of the contract", t.ID))
		}
	}
	return errs
}

// Locate returns t's executable on this host (prepare.Tool.Locate): the path its
// variable names when set, else the first of its executables on PATH.
func Locate(t prepare.Tool) (string, bool) { return t.Locate(prepare.ThisHost()) }

// Unavailable is the unavailable state of host tool or managed provider t on this host,
// worded from its record for the family's need (prepare.Tool.Missing): retryable after
// prepare_providers for a managed provider, the operator's to fix otherwise.
func Unavailable(t prepare.Tool, n prepare.Need) *UnavailableError {
	msg, rem := t.Missing(prepare.ThisHost(), n)
	e := &UnavailableError{Provider: string(t.ID), Message: msg, Remediation: rem, Preparable: t.Class == prepare.Managed}
	if len(t.Executables) > 0 {
		e.Executable = t.Executables[0]
	}
	return e
}

// LocateAndBind locates t and binds it (Bind); the unavailable state for need n when it
// is not there or cannot be read.
func LocateAndBind(t prepare.Tool, n prepare.Need) (*Executable, error) {
	unavailable := func() error { return Unavailable(t, n) }
	exe, ok := Locate(t)
	if !ok {
		return nil, unavailable()
	}
	return Bind(exe, unavailable)
}
