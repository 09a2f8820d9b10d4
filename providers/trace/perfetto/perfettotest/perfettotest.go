// Package perfettotest holds what the tests of the Perfetto reader and of the trace
// family share: a protobuf writer for hand-built traces (Writer), a generated trace
// (Generate), and a trace decoded into a tracemodeltest.Recorder (Decode). It is imported
// by tests only.
package perfettotest

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// Decode decodes the trace b under lim as source 7 into a Recorder.
func Decode(t testing.TB, b []byte, lim perfetto.Limits) (*tracemodel.Stats, *perfetto.Info, *tracemodeltest.Recorder, error) {
	t.Helper()
	rec := tracemodeltest.NewRecorder()
	st, info, err := perfetto.Decode(context.Background(), bytes.NewReader(b), 7, lim, rec)
	return st, info, rec, err
}

// Writer builds protobuf bytes: a trace is a run of Packet calls. B holds what was
// written.
type Writer struct{ B []byte }

// Varint, Fixed64, Str and Msg write field num: a varint, a fixed64, a string, and the
// message fn writes.
func (w *Writer) Varint(num protowire.Number, v uint64) {
	w.B = protowire.AppendTag(w.B, num, protowire.VarintType)
	w.B = protowire.AppendVarint(w.B, v)
}

func (w *Writer) Fixed64(num protowire.Number, v uint64) {
	w.B = protowire.AppendTag(w.B, num, protowire.Fixed64Type)
	w.B = protowire.AppendFixed64(w.B, v)
}

func (w *Writer) Str(num protowire.Number, s string) {
	w.B = protowire.AppendTag(w.B, num, protowire.BytesType)
	w.B = protowire.AppendString(w.B, s)
}

func (w *Writer) Msg(num protowire.Number, fn func(*Writer)) {
	var m Writer
	fn(&m)
	w.B = protowire.AppendTag(w.B, num, protowire.BytesType)
	w.B = protowire.AppendBytes(w.B, m.B)
}

// Packet writes a TracePacket (Trace.packet, field 1), the one fn writes.
func (w *Writer) Packet(fn func(*Writer)) { w.Msg(1, fn) }

// Generate writes a trace of `tracks` thread tracks, each on its own sequence with
// interned names and categories, holding `n` nests of `depth` SLICE_BEGIN/SLICE_END
// pairs, interleaved across tracks.
func Generate(tracks, n, depth int) []byte {
	var w Writer
	for tr := 1; tr <= tracks; tr++ {
		w.Packet(func(p *Writer) {
			p.Varint(10, uint64(tr))
			p.Varint(13, 1)
			p.Msg(59, func(d *Writer) { d.Msg(11, func(e *Writer) { e.Varint(11, uint64(1000+tr)) }) })
			p.Msg(60, func(d *Writer) {
				d.Varint(1, uint64(1000+tr))
				d.Msg(4, func(t *Writer) { t.Varint(1, 1); t.Varint(2, uint64(tr)); t.Str(5, "thread-"+strconv.Itoa(tr)) })
			})
			p.Msg(12, func(id *Writer) {
				id.Msg(1, func(e *Writer) { e.Varint(1, 1); e.Str(2, "gen") })
				for k := 1; k <= depth; k++ {
					id.Msg(2, func(e *Writer) { e.Varint(1, uint64(k)); e.Str(2, "function_"+strconv.Itoa(k)) })
				}
			})
		})
	}
	ts := uint64(1_000_000)
	for i := 0; i < n; i++ {
		for tr := 1; tr <= tracks; tr++ {
			for k := 1; k <= depth; k++ {
				ts += 10
				w.Packet(func(p *Writer) {
					p.Varint(8, ts)
					p.Varint(10, uint64(tr))
					p.Msg(11, func(te *Writer) { te.Varint(9, 1); te.Varint(10, uint64(k)); te.Varint(3, 1) })
				})
			}
			for k := depth; k >= 1; k-- {
				ts += 10
				w.Packet(func(p *Writer) {
					p.Varint(8, ts)
					p.Varint(10, uint64(tr))
					p.Msg(11, func(te *Writer) { te.Varint(9, 2) })
				})
			}
		}
	}
	return w.B
}
