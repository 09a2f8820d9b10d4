package trace

import (
	"context"
	"runtime"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// pipeline decodes on a goroutine of its own and nests on the caller's, when more than
// one CPU runs Go code. A Perfetto decoder fills batches of records of its sink calls
// (reused, never allocated per event) that the caller replays, in order, into the
// Nester (decodePipelined); a Chrome trace is parsed on the goroutine and dispatched on
// the caller's (chrome.DecodeStaged). Results are those of the plain sequence: the Nester
// sees the same calls in the same order.
var pipeline = runtime.GOMAXPROCS(0) > 1

const (
	pipeBatch   = 1024 // records per batch
	pipeBatches = 4    // batches in flight
)

type recKind uint8

const (
	recSlice recKind = iota
	recOpen
	recClose
	recTrack
	recThread
	recProcess
)

// pipeRec is one call the decoder made on its sink (160 bytes, copied once on each
// side). Track, thread and process records keep the pid and tid in ts and dur.
type pipeRec struct {
	kind               recKind
	async              bool
	phase              byte // a slice's phase: 'X', 'B' or 'b'
	id, ts, dur, track int64
	name, cat          string
	args               tracemodel.PackedArgs
}

// phases are the Event.Phase strings of pipeRec.phase.
var phases = [256]string{'X': "X", 'B': "B", 'b': "b"}

// pipeSink is the decoder side: a Sink and Opener that records calls into batches.
type pipeSink struct {
	ctx  context.Context
	cur  []pipeRec
	full chan []pipeRec
	free chan []pipeRec
}

func (p *pipeSink) add() (*pipeRec, error) {
	if len(p.cur) == cap(p.cur) {
		if err := p.flush(); err != nil {
			return nil, err
		}
	}
	p.cur = p.cur[:len(p.cur)+1]
	return &p.cur[len(p.cur)-1], nil
}

// flush hands the current batch over and takes an empty one; it gives up when the
// caller has stopped reading (ctx done).
func (p *pipeSink) flush() error {
	if len(p.cur) == 0 {
		return nil
	}
	select {
	case p.full <- p.cur:
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	select {
	case p.cur = <-p.free:
		p.cur = p.cur[:0]
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	return nil
}

func (p *pipeSink) Slice(e *tracemodel.Event) error {
	var a tracemodel.PackedArgs
	a.Pack(&e.Args)
	return p.SlicePacked(e.ID, e.TS, e.Dur, e.Track, e.Name, e.Category, e.Phase, &a)
}

// SlicePacked is Slice with the arguments packed (tracemodel.PackedSink).
func (p *pipeSink) SlicePacked(id, ts, dur, track int64, name, cat, phase string, args *tracemodel.PackedArgs) error {
	r, err := p.add()
	if err != nil {
		return err
	}
	*r = pipeRec{kind: recSlice, id: id, ts: ts, dur: dur, track: track, name: name, cat: cat, phase: phaseByte(phase), args: *args}
	return nil
}

// The calls that return nothing record what they can; a failed hand-over (the caller
// has stopped) surfaces at the decoder's next Slice or at the end.
func (p *pipeSink) Open(id, track, ts int64) {
	if r, err := p.add(); err == nil {
		*r = pipeRec{kind: recOpen, id: id, track: track, ts: ts}
	}
}

func (p *pipeSink) Close(id int64) {
	if r, err := p.add(); err == nil {
		*r = pipeRec{kind: recClose, id: id}
	}
}

func (p *pipeSink) Track(t tracemodel.Track) {
	if r, err := p.add(); err == nil {
		*r = pipeRec{kind: recTrack, id: t.ID, ts: t.PID, dur: t.TID, name: t.Name, async: t.Async}
	}
}

func (p *pipeSink) ThreadName(pid, tid int64, name string) {
	if r, err := p.add(); err == nil {
		*r = pipeRec{kind: recThread, ts: pid, dur: tid, name: name}
	}
}

func (p *pipeSink) ProcessName(pid int64, name string) {
	if r, err := p.add(); err == nil {
		*r = pipeRec{kind: recProcess, ts: pid, name: name}
	}
}

// decodePipelined runs decode on a goroutine with a recording sink and replays its
// calls into nest on this one. An error of nest (the visitor's) stops the decoder and
// is returned; otherwise decode's error is. It returns once the goroutine has ended.
func decodePipelined(ctx context.Context, nest *tracemodel.Nester, decode func(ctx context.Context, sink tracemodel.Sink) error) error {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pipeSink{ctx: dctx, full: make(chan []pipeRec, pipeBatches), free: make(chan []pipeRec, pipeBatches)}
	p.cur = make([]pipeRec, 0, pipeBatch)
	for i := 0; i < pipeBatches; i++ {
		p.free <- make([]pipeRec, 0, pipeBatch)
	}
	return tracemodel.HandOver(cancel, p.full, p.free, func() error {
		err := decode(dctx, p)
		if err == nil {
			err = p.flush()
		}
		return err
	}, func(batch []pipeRec) error { return replay(nest, batch) })
}

// phaseByte is phase's pipeRec.phase. Decoders deliver only the phases the phases
// table names; any other is a programming error.
func phaseByte(phase string) byte {
	if len(phase) != 1 || phases[phase[0]] == "" {
		panic("trace: slice phase " + phase)
	}
	return phase[0]
}

func replay(nest *tracemodel.Nester, batch []pipeRec) error {
	for i := range batch {
		r := &batch[i]
		switch r.kind {
		case recSlice:
			if err := nest.SlicePacked(r.id, r.ts, r.dur, r.track, r.name, r.cat, phases[r.phase], &r.args); err != nil {
				return err
			}
		case recOpen:
			nest.Open(r.id, r.track, r.ts)
		case recClose:
			nest.Close(r.id)
		case recTrack:
			nest.Track(tracemodel.Track{ID: r.id, PID: r.ts, TID: r.dur, Name: r.name, Async: r.async})
		case recThread:
			nest.ThreadName(r.ts, r.dur, r.name)
		case recProcess:
			nest.ProcessName(r.ts, r.name)
		}
	}
	return nil
}
