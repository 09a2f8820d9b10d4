// Package otlp reads OpenTelemetry trace exports, OTLP/JSON (the OTLP JSON mapping: one
// or more concatenated ExportTraceServiceRequest or TracesData objects) and OTLP/protobuf,
// natively and streaming: every span in file order, one at a time, as a Span (ids, name,
// kind, times, status, events, its resource's service.name), with the file's counts
// (Stats), through Decode. For view "tables" Decode also hands every resource, scope and
// span whole (every field, attributes included, the same from either encoding) to a
// TableSink; an error the sink or the visitor returns ends the read and comes back as it
// is. IsProto sniffs a file's first bytes for an OTLP/protobuf export, ReadAsProto
// chooses the encoding of a file known to be OTLP, and KindName and StatusName name the
// enums.
//
// It imports providers (the typed errors) and providers/internal, never providers/trace,
// whose format table opens OTLP sources with it (decision 0064).
//
// Files, by what they own:
//
//	decode.go       Decode, Span, Event, Stats, the decoder: spans, resources and scopes
//	                counted and handed on, the caller's errors passed through
//	proto.go        OTLP/protobuf: the framing (protowalk.Reader), each record handed to
//	                pbrecords.go
//	pbrecords.go    the records in protobuf, decoded as proto.Unmarshal decodes the
//	                OpenTelemetry project's generated types (a test holds it to that)
//	json.go         OTLP/JSON: the streaming walk of the objects and each span's members;
//	                a span's hex ids checked before it is read whole
//	jsonrecords.go  the records in OTLP/JSON, read as protojson reads proto3's JSON
//	                mapping (a test holds it to that), ids hex
//	records.go      TableSink and the whole records it receives (view "tables")
//	sniff.go        IsProto: is this the start of a protobuf export; ReadAsProto
//	enums.go        KindName, StatusName: trace.proto's enum names
//
// The protobuf runtime and the generated types are test-only: the binary does not pay
// their initialization at every start (decision 0067).
package otlp
