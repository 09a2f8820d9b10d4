// Package providers is the seam between the runtime and the evidence families. It says
// what an analyzer, a collector and a format detector are, holds the shared error types
// they return (mapped to failures by the runtime in one place), and the Registry that
// each family fills with one Register call. It imports only generated contracts and
// internal leaves; the runtime imports it and no family package.
//
// A family package (providers/cpu, providers/bench, ...) decodes its formats, registers an
// analyzer per operation it implements, a collector per capture provider and a detector
// per format, and knows nothing of transports, continuations or envelopes.
package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
)

// Input is one resolved, hashed source handed to an analyzer, in request order.
type Input struct {
	// Index is the source's position in the request.
	Index int
	// Path is the native file (a stored payload for evidence sources).
	Path     string
	Format   gen.Format
	SHA256   string
	Size     int64
	Producer *string
	// Members are the files of a directory input (Path is the directory), sorted by
	// relative path; nil for a file.
	Members []sourcefile.Member
	// Reader is the executable that reads this input when a capture of this session wrote
	// it and its collector named one (memray: the workload's Python, as the workload named
	// it). The runtime sets it from its own capture records, never from a request.
	Reader *Executable
}

// Request is what an analyzer of fields F receives: its typed fields with defaults
// applied, the resolved inputs and the effective limits.
type Request[F any] struct {
	Fields *F
	Inputs []Input
	Limits gen.EffectiveLimits
}

// Analysis is an analyzer's answer: who read the inputs, the operation-level figures, a
// lazy row population and the limitations that depend on the inputs. The runtime adds
// the operation's and each input format's static limitations (declared in CUE), binds
// the request identity, pages Rows and builds the envelope.
type Analysis struct {
	// Provider identifies the reader; an empty Version is the Flameox version.
	Provider gen.Provider
	// Metrics are the operation-level figures; nil for none.
	Metrics map[string]any
	// Rows is the ordered population; only the returned page is ever encoded.
	Rows Rows
	// Limitations are dynamic limitations, after the static ones.
	Limitations []string
	// OwnLimitations is set when the rows are another view than the operation's own
	// (an Nsight Systems export's raw tables): the operation's and its formats' static
	// limitations describe rows that are not returned, so Limitations are the whole list.
	OwnLimitations bool
	// Implementation names external decoder executables (name -> SHA-256) bound into
	// the request identity, so a continuation fails when the decoder changes.
	Implementation map[string]string
	// Offset is the first row when the request has no continuation; OffsetField names
	// the operation field it came from (empty when there is none).
	Offset      int64
	OffsetField string
}

// Analyzer runs one operation.
type Analyzer interface {
	// Operation is the operation the analyzer implements.
	Operation() gen.OperationName
	// Admit decodes the caller's operation fields (schema-valid JSON values) into the
	// typed model, defaults applied, before any source is read.
	Admit(fields map[string]any) (Admitted, error)
}

// Admitted is an analysis with its fields decoded.
type Admitted interface {
	// Fields returns the typed fields, part of the request identity.
	Fields() any
	// Run analyses the resolved inputs.
	Run(ctx context.Context, in []Input, limits gen.EffectiveLimits) (*Analysis, error)
}

// AnalyzerFunc is the function an analyzer of fields F runs.
type AnalyzerFunc[F any] func(ctx context.Context, req *Request[F]) (*Analysis, error)

// Analyze returns the analyzer of op whose fields are F, a generated fields type.
func Analyze[F any](op gen.OperationName, run AnalyzerFunc[F]) Analyzer {
	return &analyzer[F]{op: op, run: run}
}

// AnalyzeChecked is Analyze with a rule across the fields that the schema cannot state
// (a window's end after its start): check runs at admission, before any source is read
// or any workload runs, and returns a FieldError naming the field.
func AnalyzeChecked[F any](op gen.OperationName, run AnalyzerFunc[F], check func(*F) error) Analyzer {
	return &analyzer[F]{op: op, run: run, check: check}
}

type analyzer[F any] struct {
	op    gen.OperationName
	run   AnalyzerFunc[F]
	check func(*F) error
}

func (a *analyzer[F]) Operation() gen.OperationName { return a.op }

func (a *analyzer[F]) Admit(fields map[string]any) (Admitted, error) {
	f, err := DecodeTyped[F](fields)
	if err != nil {
		return nil, err
	}
	if a.check != nil {
		if err := a.check(f); err != nil {
			return nil, err
		}
	}
	return &admitted[F]{a: a, fields: f}, nil
}

type admitted[F any] struct {
	a      *analyzer[F]
	fields *F
}

func (x *admitted[F]) Fields() any { return x.fields }

func (x *admitted[F]) Run(ctx context.Context, in []Input, limits gen.EffectiveLimits) (*Analysis, error) {
	return x.a.run(ctx, &Request[F]{Fields: x.fields, Inputs: in, Limits: limits})
}

// DecodeTyped decodes schema-valid JSON values into a new T: contract defaults first
// (so an explicit zero survives), then the given values, unknown fields refused.
func DecodeTyped[T any](values map[string]any) (*T, error) {
	t := new(T)
	if d, ok := any(t).(interface{ ApplyDefaults() }); ok {
		d.ApplyDefaults()
	}
	b, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	if err := strictDecode(b, t); err != nil {
		return nil, &FieldError{Message: fmt.Sprintf("the fields do not match the %T contract", *t)}
	}
	return t, nil
}

// Nullable returns nil for the zero value and v otherwise: a null row field.
func Nullable[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// captureProducer prefixes the producer of an artifact captured in an experiment.
const captureProducer = "flameox-capture block="

// CaptureProducer is the producer identity the runtime gives an artifact that a capture
// experiment produced in block for case name.
func CaptureProducer(block int64, name string) string {
	return fmt.Sprintf("%s%d case=%s", captureProducer, block, name)
}

// CaptureCase returns the experiment case and block that produced the input, when its
// producer says so.
func (in Input) CaptureCase() (name string, block int64, ok bool) {
	if in.Producer == nil {
		return "", 0, false
	}
	rest, ok := strings.CutPrefix(*in.Producer, captureProducer)
	if !ok {
		return "", 0, false
	}
	b, name, ok := strings.Cut(rest, " case=")
	if !ok {
		return "", 0, false
	}
	block, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return name, block, true
}
