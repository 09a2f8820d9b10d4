package chrome

import (
	"context"
	"io"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// Batches of parsed events in flight between DecodeStaged's two goroutines.
const (
	stageEvents = 1024    // events per batch
	stageArena  = 1 << 16 // bytes of event text per batch (more for one larger event)
	stageDepth  = 4       // batches handed over and not yet returned, at most
)

// eventBatch is a batch of parsed events: their numbers in evs, their text in arena.
type eventBatch struct {
	evs   []stagedEvent
	arena []byte
}

// stagedEvent is a parsedEvent in a batch (half its size): its byte fields ph, name,
// cat, scope, id, argFile, argShapes and argName are arena[text[k]:text[k+1]] for k
// from 0 to 7. (A batch's arena holds at most one event past stageArena, and an event
// holds at most 8 strings of Limits.MaxStringBytes: DecodeStaged reads
// through Decode limits under which that could reach 4 GiB.)
type stagedEvent struct {
	ord, end, ts, dur, pid, tid int64
	argVals                     [6]int64
	text                        [9]uint32
	idKind                      byte
	hasTS                       bool
	argSet                      uint16
}

// add appends e, whose kept text is text (e.kept()), to the batch.
func (b *eventBatch) add(e *parsedEvent, text *[8][]byte) {
	b.evs = append(b.evs, stagedEvent{ord: e.ord, end: e.end, ts: e.ts, dur: e.dur, pid: e.pid, tid: e.tid,
		argVals: e.argVals, idKind: e.idKind, hasTS: e.hasTS, argSet: e.argSet})
	r := &b.evs[len(b.evs)-1]
	a := b.arena
	r.text[0] = uint32(len(a))
	for k, f := range text {
		a = append(a, f...)
		r.text[k+1] = uint32(len(a))
	}
	b.arena = a
}

// event sets e to event i of the batch; its byte fields point into the arena.
func (b *eventBatch) event(i int, e *parsedEvent) {
	r := &b.evs[i]
	e.ord, e.end, e.ts, e.dur, e.pid, e.tid = r.ord, r.end, r.ts, r.dur, r.pid, r.tid
	e.argVals, e.idKind, e.hasTS, e.argSet = r.argVals, r.idKind, r.hasTS, r.argSet
	a, t := b.arena, &r.text
	e.ph, e.name, e.cat = a[t[0]:t[1]:t[1]], a[t[1]:t[2]:t[2]], a[t[2]:t[3]:t[3]]
	e.scope, e.id = a[t[3]:t[4]:t[4]], a[t[4]:t[5]:t[5]]
	e.argFile, e.argShapes, e.argName = a[t[5]:t[6]:t[6]], a[t[6]:t[7]:t[7]], a[t[7]:t[8]:t[8]]
}

// kept returns the byte fields of e that dispatching reads, in stagedEvent's order:
// the argument strings only when their bit of argSet is set (otherwise they may hold
// an earlier event's text).
func (e *parsedEvent) kept() [8][]byte {
	f := [8][]byte{e.ph, e.name, e.cat, e.scope, e.id}
	if e.argSet&tracemodel.ArgFile != 0 {
		f[5] = e.argFile
	}
	if e.argSet&tracemodel.ArgShapes != 0 {
		f[6] = e.argShapes
	}
	if e.argSet&argName != 0 {
		f[7] = e.argName
	}
	return f
}

// eventStage is the parser's side of DecodeStaged: it copies events into batches
// and hands full ones over.
type eventStage struct {
	ctx  context.Context
	cur  *eventBatch
	full chan *eventBatch
	free chan *eventBatch
	// made counts the batches allocated; they are made as they are needed, so that a
	// small trace allocates little.
	made int
}

// add copies e into the current batch, handing the batch over first when it is full;
// it fails when the dispatching side has stopped (ctx done).
func (st *eventStage) add(e *parsedEvent) error {
	text := e.kept()
	n := 0
	for _, f := range text {
		n += len(f)
	}
	if b := st.cur; len(b.evs) == stageEvents || (len(b.evs) > 0 && len(b.arena)+n > stageArena) {
		if err := st.flush(); err != nil {
			return err
		}
	}
	st.cur.add(e, &text)
	return nil
}

// flush hands the current batch over, if it holds events, and takes an empty one: a
// returned one, or a new one while fewer than stageDepth+1 exist.
func (st *eventStage) flush() error {
	if err := st.send(); err != nil || st.cur != nil {
		return err
	}
	var b *eventBatch
	select {
	case b = <-st.free:
	default:
		if st.made <= stageDepth {
			st.made++
			st.cur = &eventBatch{}
			return nil
		}
		select {
		case b = <-st.free:
		case <-st.ctx.Done():
			return st.ctx.Err()
		}
	}
	b.evs, b.arena = b.evs[:0], b.arena[:0]
	st.cur = b
	return nil
}

// send hands the current batch over, if it holds events. cur is nil once it has gone,
// until flush takes the next one, so that no batch is handed over twice (a send after
// a failed flush, which had sent the batch and then found ctx done waiting for an empty
// one, would otherwise deliver its events again).
func (st *eventStage) send() error {
	if st.cur == nil || len(st.cur.evs) == 0 {
		return nil
	}
	select {
	case st.full <- st.cur:
		st.cur = nil
		return nil
	case <-st.ctx.Done():
		return st.ctx.Err()
	}
}

// DecodeStaged is Decode with the parsing on a goroutine of its own and the
// dispatching (and so sink, with everything it calls) on the caller's: the same calls
// on sink in the same order, the same counts, and the same error, the one of the
// earliest event that fails. The parser hands over every event it has read before it
// stops, so that a failure of dispatching or of sink at an earlier event wins over a
// parse failure at a later one, as it does in Decode.
func DecodeStaged(ctx context.Context, r io.Reader, source int, lim Limits, sink tracemodel.Sink) (*tracemodel.Stats, error) {
	if 8*(int64(lim.withDefaults().MaxStringBytes)+1)+stageArena >= 1<<32 {
		// An event's text might not fit the records' 32-bit offsets.
		return Decode(ctx, r, source, lim, sink)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := newDecoder(pctx, r, source, lim)
	disp := newDispatcher(source, d.lim, sink)
	st := &eventStage{ctx: pctx, cur: &eventBatch{}, made: 1,
		full: make(chan *eventBatch, stageDepth), free: make(chan *eventBatch, stageDepth+1)}
	d.stage = st
	var e parsedEvent
	err := tracemodel.HandOver(cancel, st.full, st.free, func() error {
		err := d.parse()
		if serr := st.send(); err == nil {
			err = serr
		}
		return err
	}, func(b *eventBatch) error {
		for i := range b.evs {
			b.event(i, &e)
			if err := disp.dispatch(&e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return disp.stats(&d.st), nil
}
