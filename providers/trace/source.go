package trace

import (
	"context"
	"encoding/json"
	"fmt"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// The trace model (issue 37, item 1; decision 0064). A source is one trace as the
// reader of its format opened it, chosen by the format table (format.go); what an
// analyzer asks of it besides is a capability, one of the interfaces below, found by type
// assertion. An analyzer opens its input (open), asks for the capability its operation
// needs, and fails typed (unsupported) when the source lacks it: it never looks at the
// format.

// source is one trace source opened through the format table.
type source interface {
	// input is the source as the request gave it.
	input() providers.Input
	// available is nil where this host reads the source, else the typed failure that
	// says why not (an Instruments .trace bundle, which only macOS's xctrace exports).
	available() error
}

// sourceBase is what every source holds: its input, read on every host. By itself it
// is the source of a format the table has no row for, which has no capability.
type sourceBase struct{ in providers.Input }

func (b sourceBase) input() providers.Input { return b.in }

func (sourceBase) available() error { return nil }

// sliceSource is a source of slices the Nester nests (Trace Event JSON, Perfetto, Nsight
// Systems): slices decodes them into nest, recording the decoder's counts in s. The
// caller flushes nest.
type sliceSource interface {
	source
	slices(ctx context.Context, nest *tracemodel.Nester, s *scan) error
}

// preparer is a slice source read through what prepare makes of it (an nsys-rep report
// converted to its SQLite export): the input to read, the analysis that names its
// reader, and the function that removes what was made.
type preparer interface {
	source
	prepare(ctx context.Context, limits gen.EffectiveLimits) (providers.Input, *providers.Analysis, func(), error)
}

// processorSource is a source Perfetto's trace_processor_shell may read in the native
// decoder's place: admit returns the bound executable when it must (traceprocessor.go),
// nil when the native read answers.
type processorSource interface {
	source
	admit(ctx context.Context, limits gen.EffectiveLimits) (*traceProcessor, error)
}

// spanSource is a source of spans (OTLP) whose slice rows its own reader ranks, not the
// Nester: the rows of summarize_trace and of inspect_trace_window.
type spanSource interface {
	source
	summarizeSpans(f *filter) *providers.Analysis
	windowSpans(start, end int64, f *filter) *providers.Analysis
}

// operationSource ranks its own operations (summarize_trace_operations) from records
// richer than slices: OTLP spans by kind and status, an Nsight Systems export's tables. A
// slice source without it has its slices ranked (sliceOperations).
type operationSource interface {
	source
	operations(ctx context.Context, limits gen.EffectiveLimits, f *filter) (*providers.Analysis, error)
}

// lifecycleSource lists the starts, ends and events of its spans
// (summarize_trace_lifecycle).
type lifecycleSource interface {
	source
	lifecycle(ctx context.Context, limits gen.EffectiveLimits) (*providers.Analysis, error)
}

// launchSource lists its GPU kernels, memcpys and memsets with their launching calls
// (inspect_gpu_launches).
type launchSource interface {
	source
	gpuLaunches(ctx context.Context, limits gen.EffectiveLimits) (*providers.Analysis, error)
}

// tableSource has view "tables" (decision 0032) for the operations hasTables accepts:
// tables answers it with the tables f selects.
type tableSource interface {
	source
	hasTables(op gen.OperationName) bool
	tables(ctx context.Context, op gen.OperationName, f *gen.TableViewFields, limits gen.EffectiveLimits) (*providers.Analysis, error)
}

// open is in's source through the format table, or the typed failure that says this
// host does not read it.
func open(in providers.Input) (source, error) {
	s := sourceOf(in)
	if err := s.available(); err != nil {
		return nil, err
	}
	return s, nil
}

// unsupported is the failure of an analyzer whose source lacks the capability its
// operation needs.
func unsupported(in providers.Input) error {
	return &providers.UnsupportedError{Source: in.Index, Message: fmt.Sprintf("source %d: %s traces are not read by this decoder", in.Index, in.Format)}
}

// prepared is what a slice read of src reads: the input prepare makes of a preparer,
// with the analysis that names its reader and the function that removes what it made;
// src's own input, read by this family's decoders, otherwise.
func prepared(ctx context.Context, src source, limits gen.EffectiveLimits) (providers.Input, *providers.Analysis, func(), error) {
	if p, ok := src.(preparer); ok {
		return p.prepare(ctx, limits)
	}
	return src.input(), &providers.Analysis{Provider: provider()}, func() {}, nil
}

// sliceRead is prepared, then trace_processor_shell admitted where it reads the input in
// the native decoder's place (nil when the native decoder reads it): what a slice
// analyzer starts from. done removes what preparing made; on an error it has run.
func sliceRead(ctx context.Context, src source, limits gen.EffectiveLimits) (providers.Input, *providers.Analysis, *traceProcessor, func(), error) {
	in, a, done, err := prepared(ctx, src, limits)
	if err != nil {
		return in, nil, nil, nil, err
	}
	tp, err := admitTraceProcessor(ctx, in, limits)
	if err != nil {
		done()
		return in, nil, nil, nil, err
	}
	return in, a, tp, done, nil
}

// doneRows removes what prepared made (a converted report's scratch export) once a page
// is read; the analysis context removes it on any other path.
type doneRows struct {
	providers.Rows
	done func()
}

func (r doneRows) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	defer r.done()
	return r.Rows.Page(ctx, offset, limit, fits)
}
