package runtime

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// declaredFormat is the UNSUPPORTED_FORMAT failure of a declared format the operation
// does not read, which the input schema refuses first (sources[i].format enumerates the
// operation's formats): catalog §2, "A declared format not accepted by the operation
// fails with UNSUPPORTED_FORMAT before path resolution, details {operation,
// source_index, received_format, accepted_formats, recovery}". It is nil when f is
// another refusal, or the declared value is no format name at all (not a string of 1-80
// characters): that stays INVALID_INPUT.
func declaredFormat(t *Tool, f *failure.Failure, raw []byte) *failure.Failure {
	if len(f.FieldPath) != 3 || f.FieldPath[0] != "sources" || f.FieldPath[2] != "format" || f.Details["error_type"] != "schema_enum" {
		return nil
	}
	i, ok := f.FieldPath[1].(int)
	if !ok || i < 0 {
		return nil
	}
	var args struct {
		Sources []map[string]any `json:"sources"`
	}
	if json.Unmarshal(raw, &args) != nil || i >= len(args.Sources) {
		return nil
	}
	got, ok := args.Sources[i]["format"].(string)
	if n := utf8.RuneCountInString(got); !ok || n < 1 || n > 80 {
		return nil
	}
	return unsupportedFormat(t.Operation, i, got)
}

// incompatibleProvider is the UNSUPPORTED_FORMAT failure of a capture provider that
// exists but writes nothing the capture tool's operation reads: catalog §4.4,
// "incompatible pair → UNSUPPORTED_FORMAT details {provider_id, output_formats,
// operation, accepted_formats, compatible_capture_providers}". It is nil for a provider
// the tool accepts and for a kind that names no provider (INVALID_INPUT).
func incompatibleProvider(t *Tool, id string) *failure.Failure {
	decl, ok := gen.LookupCaptureProvider(id)
	if !ok || contains(t.CaptureProviders, id) {
		return nil
	}
	var outputs []string
	for _, o := range decl.Outputs {
		if !contains(outputs, string(o.Format)) {
			outputs = append(outputs, string(o.Format))
		}
	}
	return failure.New(gen.FailureCodeUnsupportedFormat,
		"provider %q writes %s, which %s does not read (it reads %s); providers that capture for it: %s",
		id, strings.Join(outputs, ", "), t.Operation.Name, strings.Join(t.Operation.FormatStrings(), ", "),
		strings.Join(t.CaptureProviders, ", ")).
		Field(failure.Path("provider", "kind"), t.CaptureProviders).
		With("provider_id", id).With("output_formats", outputs).With("operation", string(t.Operation.Name)).
		With("accepted_formats", t.Operation.FormatStrings()).With("compatible_capture_providers", t.CaptureProviders)
}

// providerKind is the provider.kind of raw capture arguments, or "".
func providerKind(raw []byte) string {
	var args struct {
		Provider struct {
			Kind any `json:"kind"`
		} `json:"provider"`
	}
	_ = json.Unmarshal(raw, &args)
	s, _ := args.Provider.Kind.(string)
	return s
}
