package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// NoSource marks an error that no single input caused.
const NoSource = -1

// DecodeError is a malformed native input (DECODE_FAILURE).
type DecodeError struct {
	// Source is the input index, or NoSource.
	Source  int
	Message string
	// Details are reported as they are beside source_index (for example row).
	Details map[string]any
	Err     error
}

func (e *DecodeError) Error() string { return e.Message }
func (e *DecodeError) Unwrap() error { return e.Err }

// LimitError is an input beyond a decoder bound (LIMIT_EXCEEDED).
type LimitError struct {
	Source  int
	Message string
	// Limit is the bound in Unit; zero when the bound is not a number.
	Limit   int64
	Unit    string
	Details map[string]any
}

func (e *LimitError) Error() string { return e.Message }

// FieldError is an operation field the inputs do not admit (INVALID_INPUT at Field).
type FieldError struct {
	// Field is the field path, for example ["sample_type"].
	Field []any
	// Accepted are the values the field accepts here, when they are known.
	Accepted []string
	Message  string
	Details  map[string]any
}

func (e *FieldError) Error() string { return e.Message }

// UnsupportedError is an input whose content this reader does not support
// (UNSUPPORTED_FORMAT), though its format is accepted.
type UnsupportedError struct {
	Source  int
	Message string
	Details map[string]any
	// Remediation, when there is a step that makes the input one the reader supports, is
	// that step for the caller to take (the failure's operator_action next action).
	Remediation string
}

func (e *UnsupportedError) Error() string { return e.Message }

// InputError is an input that could not be read (MISSING_OR_CHANGED_INPUT).
type InputError struct {
	Source  int
	Message string
	Err     error
}

func (e *InputError) Error() string { return e.Message }
func (e *InputError) Unwrap() error { return e.Err }

// OffsetError is a page start at or beyond the population.
type OffsetError struct {
	Offset    int64
	Available int64
}

func (e *OffsetError) Error() string {
	return "the offset is at or beyond the available rows"
}

// UnavailableError is a missing external capability (UNAVAILABLE_CAPABILITY): a
// collector or decoder executable, or a module, that is not installed here.
type UnavailableError struct {
	// Provider is the provider id that needs it.
	Provider string
	// Executable or Module names what is missing.
	Executable string
	Module     string
	Message    string
	// Remediation says how to install it; it is the operator's next action.
	Remediation string
	Details     map[string]any
	// Preparable is true when prepare_providers can install it (a managed collector):
	// the state is retryable after that call rather than the operator's to fix.
	Preparable bool
}

func (e *UnavailableError) Error() string { return e.Message }

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	// An open value (a trace bound) keeps its number exact.
	dec.UseNumber()
	return dec.Decode(v)
}

// AtSource attributes a decoder error of a multi-source analysis to input i: it sets
// the source index and says which source in the message. Other errors pass unchanged.
func AtSource(err error, i int) error {
	prefix := fmt.Sprintf("source %d: ", i)
	switch e := err.(type) {
	case *DecodeError:
		e.Source, e.Message = i, prefix+e.Message
	case *LimitError:
		e.Source, e.Message = i, prefix+e.Message
	case *UnsupportedError:
		e.Source, e.Message = i, prefix+e.Message
	}
	return err
}

// UniqueItems is a FieldError at the second place of an item that the list at field
// repeats ("activities lists cpu twice"), with the accepted values; nil when every item
// is distinct. JSON Schema's uniqueItems is not in the published schemas, so collectors
// check it themselves.
func UniqueItems(field []any, items []any, accepted []string) error {
	seen := map[any]bool{}
	for i, a := range items {
		if seen[a] {
			return &FieldError{Field: append(append([]any{}, field...), i), Accepted: accepted,
				Message: fmt.Sprintf("%v lists %v twice", field[len(field)-1], a)}
		}
		seen[a] = true
	}
	return nil
}
