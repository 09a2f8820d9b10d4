// Package protowalk walks protobuf wire data for the readers that decode it by hand, with
// no generated code for the whole message: the Perfetto trace reader, the OTLP trace
// reader's framing and the pprof profile reader.
//
// It owns the framing and nothing of a schema: the fields of a message held in memory
// (Next and Each, a repeated integer field packed or not with Field.Varints), and the
// fields of a stream too large to hold (Reader: a varint, the bytes of a
// length-delimited value, a skip, with the offset and the stream's own error kept apart
// from the data's end). What a field number means, which wire type it must have, what a
// malformed message is called and how large a value may be are the reader's: each
// decides and words its own errors and limits.
//
// It is built on providers/internal/protowire. Files: field.go (Field, Next, Each,
// ValidNumber), reader.go (Reader).
package protowalk
