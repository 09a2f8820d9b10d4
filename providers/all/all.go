// Package all wires every evidence family into one provider registry. It is the list
// file: a new family adds its Register call here, and cmd/flameox is the only place that
// hands the result to the runtime.
package all

import (
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/bench"
	"github.com/flameox/flameox/providers/coverage"
	"github.com/flameox/flameox/providers/cpu"
	"github.com/flameox/flameox/providers/gpu"
	"github.com/flameox/flameox/providers/inference"
	"github.com/flameox/flameox/providers/kernelval"
	"github.com/flameox/flameox/providers/memory"
	"github.com/flameox/flameox/providers/ncu"
	"github.com/flameox/flameox/providers/preview"
	"github.com/flameox/flameox/providers/static"
	"github.com/flameox/flameox/providers/testrun"
	"github.com/flameox/flameox/providers/trace"
)

// families register in this order; a format detector registered earlier wins a tie.
var families = []func(*providers.Registry){
	preview.Register,
	cpu.Register,
	bench.Register,
	inference.Register,
	trace.Register,
	testrun.Register,
	static.Register,
	coverage.Register,
	kernelval.Register,
	ncu.Register,
	gpu.Register,
	memory.Register,
}

// Registry returns a registry holding every family's analyzers, collectors and format
// detectors.
func Registry() *providers.Registry {
	r := providers.NewRegistry()
	for _, register := range families {
		register(r)
	}
	return r
}
