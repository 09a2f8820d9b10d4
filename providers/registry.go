package providers

import (
	"errors"
	"fmt"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
)

// Registry holds what the evidence families registered: analyzers by operation,
// collectors by capture provider kind, format detectors in registration order and the
// records of the preparable providers by id.
type Registry struct {
	analyzers  map[gen.OperationName]Analyzer
	collectors map[string]Collector
	detectors  []Detector
	amplifying map[gen.Format]bool
	tools      prepare.Tools
	errs       []error
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{analyzers: map[gen.OperationName]Analyzer{}, collectors: map[string]Collector{}}
}

// Analyzer registers a; a second analyzer of the same operation is an error Verify
// reports.
func (r *Registry) Analyzer(a Analyzer) {
	if _, dup := r.analyzers[a.Operation()]; dup {
		r.errs = append(r.errs, fmt.Errorf("operation %s has two analyzers", a.Operation()))
	}
	r.analyzers[a.Operation()] = a
}

// Collector registers c.
func (r *Registry) Collector(c Collector) {
	if _, dup := r.collectors[c.Kind()]; dup {
		r.errs = append(r.errs, fmt.Errorf("capture provider %s has two collectors", c.Kind()))
	}
	r.collectors[c.Kind()] = c
}

// Amplifying declares formats whose decoding is not bounded by the input's size: a
// SQLite database (its b-tree may visit one page any number of times), an artifact an
// external tool converts or expands. The runtime analyses them only in the analysis
// worker, however small the file (issue 40, item 1; decision 0054); every other format's
// decoder is bounded by construction by the bytes it reads.
func (r *Registry) Amplifying(formats ...gen.Format) {
	if r.amplifying == nil {
		r.amplifying = map[gen.Format]bool{}
	}
	for _, f := range formats {
		r.amplifying[f] = true
	}
}

// IsAmplifying reports whether format f was declared Amplifying.
func (r *Registry) IsAmplifying(f gen.Format) bool { return r.amplifying[f] }

// Detector registers d after the detectors already registered.
func (r *Registry) Detector(d Detector) { r.detectors = append(r.detectors, d) }

// LookupAnalyzer returns the analyzer of op.
func (r *Registry) LookupAnalyzer(op gen.OperationName) (Analyzer, bool) {
	a, ok := r.analyzers[op]
	return a, ok
}

// LookupCollector returns the collector of a capture provider kind.
func (r *Registry) LookupCollector(kind string) (Collector, bool) {
	c, ok := r.collectors[kind]
	return c, ok
}

// Verify checks the registry against the contract: every released operation has an
// analyzer, every released capture provider a collector whose artifact matches its
// declared outputs, every format a released operation accepts a detector, every
// preparable provider one record, and nothing is registered that the contract does not
// declare. The error names every gap.
func (r *Registry) Verify() error {
	errs := append(append([]error{}, r.errs...), r.verifyTools()...)
	detected := map[gen.Format]bool{}
	for _, d := range r.detectors {
		if d.Match == nil && len(d.Suffixes) == 0 && d.Directory == nil {
			errs = append(errs, fmt.Errorf("the detector of format %s has neither suffixes nor a match", d.Format))
		}
		detected[d.Format] = true
	}
	released := map[gen.OperationName]bool{}
	for _, op := range gen.Operations {
		if !op.Released {
			continue
		}
		released[op.Name] = true
		if _, ok := r.analyzers[op.Name]; !ok {
			errs = append(errs, fmt.Errorf("released operation %s has no analyzer", op.Name))
		}
		for _, f := range op.Formats {
			if !detected[f] {
				errs = append(errs, fmt.Errorf("format %s accepted by %s has no detector", f, op.Name))
				detected[f] = true
			}
		}
	}
	for op := range r.analyzers {
		if !released[op] {
			errs = append(errs, fmt.Errorf("analyzer of %s is registered but the operation is not released in the contract", op))
		}
	}
	declared := map[string]bool{}
	for _, p := range gen.CaptureProviders {
		if !p.Released {
			continue
		}
		declared[p.Kind] = true
		c, ok := r.collectors[p.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("released capture provider %s has no collector", p.Kind))
			continue
		}
		if console := c.File() == ""; console != isConsole(p) {
			errs = append(errs, fmt.Errorf("collector %s: its artifact (file %q) does not match the declared outputs", p.Kind, c.File()))
		}
	}
	for k := range r.collectors {
		if !declared[k] {
			errs = append(errs, fmt.Errorf("collector %s is registered but the capture provider is not released in the contract", k))
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return errors.New("provider registry: " + strings.Join(msgs, "; "))
	}
	return nil
}

// isConsole reports whether a provider's outputs are its console: stdout and stderr.
func isConsole(p gen.CaptureProviderDecl) bool {
	return len(p.Outputs) == 2 && p.Outputs[0].Role == "stderr" && p.Outputs[1].Role == "stdout"
}

// Detectors returns the format detectors in registration order.
func (r *Registry) Detectors() []Detector { return append([]Detector{}, r.detectors...) }
