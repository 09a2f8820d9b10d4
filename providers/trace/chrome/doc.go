// Package chrome reads Trace Event JSON (Chrome DevTools and chrome://tracing, Kineto's
// torch.profiler traces, JAX), the trace_event format of the Chromium project's "Trace
// Event Format" document, natively and streaming, into the trace model: its slices (X
// events, B/E and async b/e pairs) on thread and async tracks, with the process and
// thread names of its M events, delivered in file order to a tracemodel.Sink (Decode;
// DecodeStaged parses on a goroutine of its own), with its counts (tracemodel.Stats).
//
// It imports the trace model (providers/trace/tracemodel) and providers/internal, never
// providers/trace, whose format table opens Trace Event sources with it (decision 0064).
//
// Files, by what they own:
//
//	decode.go    Decode, Limits, the parser: the document, its events and their members
//	members.go   the members and arguments read (keys, numbers, ids), the rest skipped
//	fast.go      the fast path: an event whose text is in the buffer, read in one pass
//	scan.go      the JSON scanner: strings, numbers and skipped values, bounded
//	decimal.go   exact µs-to-ns scaling of a decimal number's text
//	dispatch.go  dispatching a parsed event: tracks, B/E matching, interning, slices
//	stage.go     DecodeStaged: parsing and dispatching on two goroutines
package chrome
