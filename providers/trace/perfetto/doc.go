// Package perfetto reads Perfetto protobuf traces (Perfetto, Chromium, rocprofv3's
// pftrace) natively, streaming, into the trace model: the slices of their track events,
// with their tracks and the process and thread names the trace gives, delivered to a
// tracemodel.Sink (Decode), and what it did not read or could not place (Info). IsTrace
// sniffs a file's first bytes for a trace.
//
// It reads what perfetto's trace_processor reads of track events, as it reads them
// (protos/perfetto/trace/trace_packet.proto, track_event/): packet sequences and their
// incremental state, interned strings, TracePacketDefaults, sequence-scoped clocks, track
// descriptors, legacy Chromium events. Packets of other kinds are counted by kind; the
// trace family reads a trace that holds only those through trace_processor_shell.
//
// It imports the trace model (providers/trace/tracemodel) and providers/internal, never
// providers/trace, whose format table opens Perfetto sources with it (decision 0064).
//
// Files, by what they own:
//
//	decode.go       Decode, Limits, the decoder and its errors
//	packets.go      the top-level framing (Trace.packet records, read streaming with
//	                protowalk.Reader) and the TracePacket fields: a packet's dispatch
//	sniff.go        IsTrace: is this the start of a trace
//	diagnostics.go  Info and Cut: packets not read by kind, clocks, what was skipped
//	interning.go    a packet sequence's incremental state: interned data, defaults
//	clocks.go       timestamps: builtin and sequence-scoped clocks, ClockSnapshot
//	tracks.go       track, process and thread descriptors; a slice's track
//	events.go       TrackEvent: slices begun, ended and complete, their arguments
package perfetto
