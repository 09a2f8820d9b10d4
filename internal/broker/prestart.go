package broker

import "sync"

// Prestarted is a containment helper started ahead of the invocation it will run: its
// process, its scope and its task bound are made while the caller still admits the
// invocation (a capture validates its request, resolves and hashes its executables and
// makes its scratch meanwhile), and Run hands it the invocation when Spec.Prestarted
// carries it. Only Linux has one (a subreaper helper); elsewhere Prestart returns nil.
// Another task bound is written to its cgroup before the workload starts; a helper that
// does not fit the invocation otherwise (Direct, no task bound, an RLIMIT_NPROC bound of
// another size, an invocation message over 64 kB) is abandoned and the invocation
// started as without it.
type Prestarted struct {
	mu   sync.Mutex
	impl *prestarted // nil once taken
}

// Prestart starts a helper ahead for an invocation with the default task bound; nil
// where none can be started. The caller passes it to Run in Spec.Prestarted, and calls
// Abandon once Run has returned (or when no invocation follows): Abandon ends a helper
// that Run did not take.
func Prestart() *Prestarted {
	impl := prestart(taskBound(Spec{}))
	if impl == nil {
		return nil
	}
	return &Prestarted{impl: impl}
}

// take returns the helper once, and nil after that (or for nil).
func (p *Prestarted) take() *prestarted {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	impl := p.impl
	p.impl = nil
	return impl
}

// Abandon ends the helper unless Run has taken it: it exits having started nothing, and
// its scope and task bound are removed. It may be called more than once, and on nil.
func (p *Prestarted) Abandon() {
	if impl := p.take(); impl != nil {
		impl.abandon()
	}
}
