// Package failure defines RuntimeFailure, the typed error every Flameox layer returns for a
// request that cannot produce trustworthy evidence. Transports project it into the
// failure envelope; it never carries raw library or exception text or host paths.
package failure

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flameox/flameox/generated/contracts"
)

// Failure is a typed, path-free runtime failure.
type Failure struct {
	Code           contracts.FailureCode
	Message        string
	Retryable      bool
	FieldPath      []any
	AcceptedValues []string
	NextAction     *contracts.NextAction
	Details        map[string]any
	// cause is kept for local debugging only; it is never serialized.
	cause error
}

func (f *Failure) Error() string { return string(f.Code) + ": " + f.Message }

// Unwrap returns the local cause, if any.
func (f *Failure) Unwrap() error { return f.cause }

// New returns a failure with code and message.
func New(code contracts.FailureCode, format string, args ...any) *Failure {
	return &Failure{Code: code, Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

// Wrap returns a failure that keeps err as its local, never-serialized cause.
func Wrap(err error, code contracts.FailureCode, format string, args ...any) *Failure {
	f := New(code, format, args...)
	f.cause = err
	return f
}

// Invalid returns an INVALID_INPUT failure for the field at path.
func Invalid(path []any, accepted []string, format string, args ...any) *Failure {
	f := New(contracts.FailureCodeInvalidInput, format, args...)
	f.FieldPath = path
	f.AcceptedValues = accepted
	return f
}

// With sets a detail and returns f.
func (f *Failure) With(key string, value any) *Failure {
	if f.Details == nil {
		f.Details = map[string]any{}
	}
	f.Details[key] = value
	return f
}

// Field sets the field path and accepted values and returns f.
func (f *Failure) Field(path []any, accepted []string) *Failure {
	f.FieldPath = path
	f.AcceptedValues = accepted
	return f
}

// Path builds a field path from keys and indices.
func Path(elems ...any) []any { return elems }

// Envelope projects f into the failure envelope. When no next action was set and the
// failure names a field, the caller is told to adjust that field.
func (f *Failure) Envelope() contracts.Failure {
	details := f.Details
	if details == nil {
		details = map[string]any{}
	}
	next := f.NextAction
	if next == nil && (f.FieldPath != nil || f.AcceptedValues != nil) {
		msg := "Adjust the request and retry: " + f.Message
		next = &contracts.NextAction{AdjustRequest: &contracts.AdjustRequest{
			Kind: "adjust_request", FieldPath: f.FieldPath, Message: msg,
		}}
	}
	return contracts.Failure{
		Status:         "failed",
		Code:           f.Code,
		Message:        f.Message,
		Retryable:      f.Retryable,
		FieldPath:      f.FieldPath,
		AcceptedValues: f.AcceptedValues,
		NextAction:     next,
		Details:        details,
	}
}

// FieldName writes a field path as a message names it: limits.max_input_bytes,
// sources[0].format; "" for none.
func FieldName(path []any) string {
	var b strings.Builder
	for _, e := range path {
		switch e := e.(type) {
		case int, int64:
			fmt.Fprintf(&b, "[%d]", e)
		case float64:
			fmt.Fprintf(&b, "[%g]", e)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, e)
		}
	}
	return b.String()
}

// Recoverable reports whether f is a non-error state (a missing capability, or a
// retryable condition) and returns its envelope: status "unavailable" or "retryable".
func (f *Failure) Recoverable() (contracts.Recoverable, bool) {
	if f.Code != contracts.FailureCodeUnavailableCapability && !f.Retryable {
		return contracts.Recoverable{}, false
	}
	status := "unavailable"
	if f.Retryable {
		status = "retryable"
	}
	details := f.Details
	if details == nil {
		details = map[string]any{}
	}
	return contracts.Recoverable{Status: status, Code: f.Code, Message: f.Message, Retryable: f.Retryable,
		NextAction: f.NextAction, Details: details}, true
}

// Unencodable is the failure of a result that JSON cannot carry: a non-finite number (an
// input value that overflows float64 in an analysis) is a typed failure of the input,
// never an internal one and never a crash.
func Unencodable(err error) *Failure {
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) {
		return Wrap(err, contracts.FailureCodeDecodeFailure,
			"the analysis produced a non-finite number (%s): an input value overflows the float64 range; remove or correct that value", uv.Str).
			With("reason", "non_finite_value")
	}
	return Wrap(err, contracts.FailureCodeInternalContractFailure, "the result could not be encoded")
}
