package otlp

import "strconv"

// The names of trace.proto's enums, by value: Span.SpanKind and Status.StatusCode. The
// JSON reader accepts them for the integers.
var (
	spanKinds   = []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}
	statusCodes = []string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}
)

// KindName names a span kind (Span.Kind): SPAN_KIND_SERVER; an unknown one is the prefix
// and its number, SPAN_KIND_7.
func KindName(k int32) string { return enumName(spanKinds, "SPAN_KIND_", k) }

// StatusName names a status code (Span.StatusCode): STATUS_CODE_ERROR; an unknown one is
// the prefix and its number, STATUS_CODE_7.
func StatusName(c int32) string { return enumName(statusCodes, "STATUS_CODE_", c) }

// enumName names an enum value; an unknown one is its prefix and number (SPAN_KIND_7).
func enumName(names []string, prefix string, v int32) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return prefix + strconv.Itoa(int(v))
}
