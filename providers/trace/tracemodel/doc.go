// Package tracemodel is what the trace format readers and the trace analyzers share: the
// slices a decoder reads (Event, with its Args) on its tracks (Track), delivered in file
// order to a Sink (and to an Opener when slices arrive at their end), the decoder's
// counts (Stats), and the Nester, which orders a decoder's slices by start and gives
// each its parent and depth on its track in bounded memory.
//
// A format reader (providers/trace/perfetto, ...) imports this package and
// providers/internal, never providers/trace; providers/trace opens each input through
// its format table and hands the reader a Sink (decision 0064).
//
// Files: model.go (Event, Args, Track, Sink, Opener, Stats), packed.go (PackedArgs:
// Args by value, and PackedSink), nest.go (the Nester and its reorder queue),
// handover.go (HandOver: a producer goroutine and its consumer, batch by batch), topk.go
// (TopK: the k smallest items under an order, in bounded memory, which the family's
// ranked pages and the Nsight Systems reader's native pages select with).
package tracemodel
