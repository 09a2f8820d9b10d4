package tracemodel

import (
	"context"
	"fmt"
)

// HandOver runs produce on a goroutine of its own, which sends batches to full and
// returns, and consume on the caller's, for each batch in order, returning each batch
// to free (when free has room). full is closed when produce returns. An error of
// consume cancels produce's context (through cancel), is returned, and no later batch is
// consumed; otherwise produce's error is returned. A panic of produce is raised again
// here. HandOver returns, or passes a panic of consume on, once produce has returned.
//
// The trace readers pipeline with it: a Trace Event parser hands parsed events to the
// goroutine that dispatches them, and the trace family a recording of a decoder's Sink
// calls to the goroutine that nests them.
func HandOver[B any](cancel context.CancelFunc, full, free chan B, produce func() error, consume func(B) error) error {
	var perr error
	var panicked any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(full)
		defer func() {
			if r := recover(); r != nil {
				panicked = fmt.Errorf("trace decoder panic: %v", r)
			}
		}()
		perr = produce()
	}()
	defer func() {
		// A panic of consume (a sink's or visitor's) waits for produce as a return
		// does, so that nothing it reads is closed under it.
		if p := recover(); p != nil {
			cancel()
			for range full {
			}
			<-done
			panic(p)
		}
	}()
	var cerr error
	for batch := range full {
		if cerr == nil {
			if cerr = consume(batch); cerr != nil {
				cancel() // the producer stops at its next hand-over or context check
			}
		}
		select {
		case free <- batch:
		default:
		}
	}
	<-done
	if panicked != nil {
		panic(panicked)
	}
	if cerr != nil {
		return cerr
	}
	return perr
}
