package trace

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/perfetto/perfettotest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// The traces here are built by hand; the expected figures are computed from their bytes
// with the semantics of Perfetto's trace_processor (proto_trace_reader.cc,
// track_event_tokenizer.cc), never read back from the decoder.

// Sequence flags (TracePacket.SequenceFlags).
const (
	flagCleared = 1 // SEQ_INCREMENTAL_STATE_CLEARED
	flagNeeds   = 2 // SEQ_NEEDS_INCREMENTAL_STATE
)

// trackDesc writes a TrackDescriptor of uuid for thread (pid, tid) named name.
func trackDesc(p *perfettotest.Writer, uuid uint64, pid, tid uint64, name string) {
	p.Msg(60, func(d *perfettotest.Writer) {
		d.Varint(1, uuid)
		d.Msg(4, func(t *perfettotest.Writer) { t.Varint(1, pid); t.Varint(2, tid); t.Str(5, name) })
	})
}

// internName writes interned event name iid.
func internName(p *perfettotest.Writer, iid uint64, name string) {
	p.Msg(12, func(id *perfettotest.Writer) {
		id.Msg(2, func(e *perfettotest.Writer) { e.Varint(1, iid); e.Str(2, name) })
	})
}

// clearedSequence writes the first packet of sequence 1: incremental state cleared,
// thread track 100 (pid 10, tid 11, "T1"), and names interned with iids 1, 2, ...
func clearedSequence(w *perfettotest.Writer, names ...string) {
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, flagCleared)
		trackDesc(p, 100, 10, 11, "T1")
		for i, n := range names {
			internName(p, uint64(i+1), n)
		}
	})
}

// typed writes a packet of sequence seq with flags and timestamp ts holding a typed
// TrackEvent (1 SLICE_BEGIN, 2 SLICE_END) on track, named by nameIID when not 0.
func typed(w *perfettotest.Writer, seq, flags, ts, typ, track, nameIID uint64, extra func(*perfettotest.Writer)) {
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, seq)
		p.Varint(13, flags)
		p.Varint(8, ts)
		if extra != nil {
			extra(p)
		}
		p.Msg(11, func(te *perfettotest.Writer) {
			te.Varint(9, typ)
			te.Varint(11, track)
			if nameIID != 0 {
				te.Varint(10, nameIID)
			}
		})
	})
}

type sliceFigures struct {
	Name    string
	TS, Dur int64
}

func figures(rec *tracemodeltest.Recorder) []sliceFigures {
	var out []sliceFigures
	for _, s := range rec.Slices {
		out = append(out, sliceFigures{s.Name, s.TS, s.Dur})
	}
	return out
}

func limitationsOf(st *tracemodel.Stats, info *perfetto.Info) string {
	s := &scan{stats: st, perfetto: info}
	return strings.Join(s.limitations(), "\n")
}

// TestPerfettoIncrementalState: trace_processor holds a sequence's incremental state
// invalid from the sequence's start and from a packet with previous_packet_dropped until
// the next SEQ_INCREMENTAL_STATE_CLEARED; packets with SEQ_NEEDS_INCREMENTAL_STATE are
// dropped meanwhile, and interned data arriving then is not kept.
func TestPerfettoIncrementalState(t *testing.T) {
	t.Run("loss", func(t *testing.T) {
		var w perfettotest.Writer
		w.Packet(func(p *perfettotest.Writer) {
			p.Varint(10, 1)
			p.Varint(13, flagCleared)
			p.Varint(8, 0)
			trackDesc(p, 100, 10, 11, "T1")
			internName(p, 1, "Alpha")
		})
		typed(&w, 1, flagNeeds, 1000, 1, 100, 1, nil)
		typed(&w, 1, flagNeeds, 2000, 2, 100, 0, nil)
		// A loss: the next two packets need the (now invalid) state and are dropped.
		typed(&w, 1, flagNeeds, 3000, 1, 100, 1, func(p *perfettotest.Writer) { p.Varint(42, 1) })
		typed(&w, 1, flagNeeds, 4000, 2, 100, 0, nil)
		st, info, rec, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]sliceFigures{{"Alpha", 1000, 1000}}, figures(rec)); diff != "" {
			t.Errorf("slices (-want +got):\n%s", diff)
		}
		if info.InvalidStatePackets != 2 || st.UnmatchedEnds != 0 || st.UnfinishedBegins != 0 {
			t.Errorf("invalid-state packets %d, stats %+v", info.InvalidStatePackets, st)
		}
		if l := limitationsOf(st, info); !strings.Contains(l, "2 packets that need their sequence's incremental state came while it was invalid") {
			t.Errorf("limitations %q", l)
		}
	})
	t.Run("wrapped", func(t *testing.T) {
		// The ring buffer overwrote the sequence's clearing packet: its first packets
		// need state that never came; the descriptor (no flag) is read.
		var w perfettotest.Writer
		w.Packet(func(p *perfettotest.Writer) { p.Varint(10, 2); p.Varint(8, 0); trackDesc(p, 200, 20, 21, "T2") })
		typed(&w, 2, flagNeeds, 1000, 1, 200, 5, nil)
		typed(&w, 2, flagNeeds, 2000, 2, 200, 0, nil)
		w.Packet(func(p *perfettotest.Writer) {
			p.Varint(10, 2)
			p.Varint(13, flagCleared)
			p.Varint(8, 2500)
			internName(p, 5, "Gamma")
		})
		typed(&w, 2, flagNeeds, 3000, 1, 200, 5, nil)
		typed(&w, 2, flagNeeds, 4000, 2, 200, 0, nil)
		_, info, rec, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]sliceFigures{{"Gamma", 3000, 1000}}, figures(rec)); diff != "" {
			t.Errorf("slices (-want +got):\n%s", diff)
		}
		if info.InvalidStatePackets != 2 || rec.Threads[[2]int64{20, 21}] != "T2" {
			t.Errorf("invalid-state packets %d, threads %v", info.InvalidStatePackets, rec.Threads)
		}
	})
	t.Run("interned while invalid", func(t *testing.T) {
		// After a loss trace_processor keeps the interned data it had and ignores new
		// entries until the next clear; a packet that does not need the state is read.
		var w perfettotest.Writer
		w.Packet(func(p *perfettotest.Writer) {
			p.Varint(10, 3)
			p.Varint(13, flagCleared)
			trackDesc(p, 300, 30, 31, "T3")
			internName(p, 1, "Alpha")
		})
		w.Packet(func(p *perfettotest.Writer) { p.Varint(10, 3); p.Varint(42, 1); internName(p, 1, "Stale") })
		typed(&w, 3, 0, 1000, 1, 300, 1, nil)
		typed(&w, 3, 0, 1500, 2, 300, 0, nil)
		_, info, rec, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]sliceFigures{{"Alpha", 1000, 500}}, figures(rec)); diff != "" || info.InvalidStatePackets != 0 {
			t.Errorf("invalid-state packets %d, slices (-want +got):\n%s", info.InvalidStatePackets, diff)
		}
	})
}

// legacyEvent writes a packet of sequence seq holding a TrackEvent with a legacy event
// of phase, named by nameIID, timed by fields (timestamp_delta_us = 1,
// timestamp_absolute_us = 16) and, when ts is not 0, a packet timestamp.
func legacyEvent(w *perfettotest.Writer, seq uint64, ts uint64, phase byte, nameIID uint64, fields func(*perfettotest.Writer)) {
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, seq)
		p.Varint(13, flagNeeds)
		if ts != 0 {
			p.Varint(8, ts)
		}
		p.Msg(11, func(te *perfettotest.Writer) {
			fields(te)
			if nameIID != 0 {
				te.Varint(10, nameIID)
			}
			te.Msg(6, func(l *perfettotest.Writer) { l.Varint(2, uint64(phase)) })
		})
	})
}

// TestPerfettoLegacyTimestamps: TrackEvent.timestamp_delta_us advances the reference a
// ThreadDescriptor set; timestamp_absolute_us is a one-off that leaves it alone; both
// take precedence over the packet timestamp and are on the MONOTONIC clock; a delta
// without a reference is not resolved (track_event_tokenizer.cc).
func TestPerfettoLegacyTimestamps(t *testing.T) {
	var w perfettotest.Writer
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, flagCleared)
		p.Msg(44, func(td *perfettotest.Writer) { td.Varint(1, 7); td.Varint(2, 8); td.Str(5, "Main"); td.Varint(6, 1000) })
		p.Msg(12, func(id *perfettotest.Writer) {
			id.Msg(2, func(e *perfettotest.Writer) { e.Varint(1, 1); e.Str(2, "Outer") })
			id.Msg(2, func(e *perfettotest.Writer) { e.Varint(1, 2); e.Str(2, "Other") })
			id.Msg(2, func(e *perfettotest.Writer) { e.Varint(1, 3); e.Str(2, "Late") })
		})
	})
	legacyEvent(&w, 1, 0, 'B', 1, func(te *perfettotest.Writer) { te.Varint(1, 10) })      // 1000+10 = 1010 us
	legacyEvent(&w, 1, 0, 'I', 2, func(te *perfettotest.Writer) { te.Varint(16, 5000) })   // one-off 5000 us
	legacyEvent(&w, 1, 0, 'E', 0, func(te *perfettotest.Writer) { te.Varint(1, 10) })      // 1010+10 = 1020 us
	legacyEvent(&w, 1, 7e6, 'B', 3, func(te *perfettotest.Writer) { te.Varint(1, 10) })    // 1030 us, not 7e6 ns
	legacyEvent(&w, 1, 8e6, 'E', 0, func(te *perfettotest.Writer) { te.Varint(16, 2000) }) // 2000 us, not 8e6 ns
	// Sequence 2 has no ThreadDescriptor: its delta has no reference.
	w.Packet(func(p *perfettotest.Writer) { p.Varint(10, 2); p.Varint(13, flagCleared) })
	legacyEvent(&w, 2, 0, 'B', 0, func(te *perfettotest.Writer) { te.Varint(1, 5) })
	st, info, rec, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []sliceFigures{{"Outer", 1_010_000, 10_000}, {"Late", 1_030_000, 970_000}}
	if diff := cmp.Diff(want, figures(rec)); diff != "" {
		t.Errorf("slices (-want +got):\n%s", diff)
	}
	if info.UnresolvedTimestamps != 1 || st.UnfinishedBegins != 0 || st.Instants != 1 {
		t.Errorf("unresolved %d, stats %+v", info.UnresolvedTimestamps, st)
	}
	if diff := cmp.Diff(map[uint32]int64{3: 5}, info.Clocks); diff != "" || info.MixedClocks {
		t.Errorf("clocks (-want +got):\n%s", diff)
	}
}

// TestPerfettoDefaultClock: a packet timestamp without a clock id is on the trace's
// clock, BOOTTIME unless a ClockSnapshot names another primary_trace_clock; it and the
// same clock named explicitly are one domain.
func TestPerfettoDefaultClock(t *testing.T) {
	trace := func(primary uint64, explicit uint64) []byte {
		var w perfettotest.Writer
		w.Packet(func(p *perfettotest.Writer) {
			p.Varint(10, 1)
			p.Varint(13, flagCleared)
			trackDesc(p, 100, 1, 2, "T")
			if primary != 0 {
				p.Msg(6, func(cs *perfettotest.Writer) {
					cs.Msg(1, func(c *perfettotest.Writer) { c.Varint(1, 3); c.Varint(2, 100) })
					cs.Msg(1, func(c *perfettotest.Writer) { c.Varint(1, 6); c.Varint(2, 200) })
					cs.Varint(2, primary)
				})
			}
		})
		typed(&w, 1, flagNeeds, 1000, 1, 100, 0, nil)
		typed(&w, 1, flagNeeds, 2000, 2, 100, 0, func(p *perfettotest.Writer) { p.Varint(58, explicit) })
		return w.B
	}
	for _, c := range []struct {
		name              string
		primary, explicit uint64
		want              uint32
	}{
		{"boottime by default", 0, 6, 6},
		{"primary_trace_clock monotonic", 3, 3, 3},
	} {
		st, info, _, err := perfettotest.Decode(t, trace(c.primary, c.explicit), perfetto.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[uint32]int64{c.want: 2}, info.Clocks); diff != "" || info.MixedClocks {
			t.Errorf("%s: clocks (-want +got):\n%s", c.name, diff)
		}
		if l := limitationsOf(st, info); strings.Contains(l, "clock domain") {
			t.Errorf("%s: limitations %q", c.name, l)
		}
	}
}

// TestPerfettoOutOfRange: timestamps that leave int64 nanoseconds are counted and said,
// never wrapped.
func TestPerfettoOutOfRange(t *testing.T) {
	// A sequence clock (id 64, incremental, 2^62 ns per unit) at 1 beside BOOTTIME
	// 1000: the events at +3 and +5 units are 3*2^62 and 8*2^62 ns after 1000 ns.
	var clk perfettotest.Writer
	clk.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 2)
		p.Varint(13, flagCleared)
		p.Msg(6, func(cs *perfettotest.Writer) {
			cs.Msg(1, func(c *perfettotest.Writer) { c.Varint(1, 6); c.Varint(2, 1000) })
			cs.Msg(1, func(c *perfettotest.Writer) { c.Varint(1, 64); c.Varint(2, 1); c.Varint(3, 1); c.Varint(4, 1<<62) })
		})
		trackDesc(p, 200, 3, 4, "T")
	})
	typed(&clk, 2, flagNeeds, 3, 1, 200, 0, func(p *perfettotest.Writer) { p.Varint(58, 64) })
	typed(&clk, 2, flagNeeds, 5, 2, 200, 0, func(p *perfettotest.Writer) { p.Varint(58, 64) })

	// A legacy X at 1000 ns lasting 2^63/1000+5 us: its end is past 2^63-1 ns.
	var x perfettotest.Writer
	x.Packet(func(p *perfettotest.Writer) { p.Varint(10, 1); p.Varint(13, flagCleared); trackDesc(p, 100, 1, 2, "T") })
	x.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(8, 1000)
		p.Msg(11, func(te *perfettotest.Writer) {
			te.Varint(11, 100)
			te.Str(23, "x")
			te.Msg(6, func(l *perfettotest.Writer) { l.Varint(2, 'X'); l.Varint(3, math.MaxInt64/1000+5) })
		})
	})

	// A begin at 2^64-5 ns, past 2^63-1; its end at 5000 ns then has no open begin.
	var huge perfettotest.Writer
	huge.Packet(func(p *perfettotest.Writer) { p.Varint(10, 1); p.Varint(13, flagCleared); trackDesc(p, 100, 1, 2, "T") })
	typed(&huge, 1, flagNeeds, math.MaxUint64-4, 1, 100, 0, nil)
	typed(&huge, 1, flagNeeds, 5000, 2, 100, 0, nil)

	for _, c := range []struct {
		name      string
		in        []byte
		want      int64
		unmatched int64
	}{
		{"sequence clock multiplier", clk.B, 2, 0},
		{"legacy duration", x.B, 1, 0},
		{"timestamp at 2^64-5", huge.B, 1, 1},
	} {
		st, info, rec, err := perfettotest.Decode(t, c.in, perfetto.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(rec.Slices) != 0 || info.OutOfRangeTimestamps != c.want || info.UnresolvedTimestamps != 0 ||
			info.NegativeDurations != 0 || st.UnmatchedEnds != c.unmatched {
			t.Errorf("%s: slices %+v, info %+v, stats %+v", c.name, rec.Slices, info, st)
		}
		l := limitationsOf(st, info)
		if !strings.Contains(l, "beyond 2^63-1 ns") || strings.Contains(l, "sequence clock no ClockSnapshot") {
			t.Errorf("%s: limitations %q", c.name, l)
		}
	}
}

// scanSink records slices and names what it is told in a scan, as a read does.
type scanSink struct {
	names
	slices []tracemodel.Event
}

func (s *scanSink) Slice(e *tracemodel.Event) error { s.slices = append(s.slices, *e); return nil }

// TestPerfettoLateDescriptor: a TrackDescriptor after its track's first slice still names
// the track's thread and process (trace_processor reads descriptors before the events),
// and so does a parent's descriptor after the first slice of a track below it.
func TestPerfettoLateDescriptor(t *testing.T) {
	var w perfettotest.Writer
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, flagCleared)
		// Track 700, an async track below 800, described before its slice.
		p.Msg(60, func(d *perfettotest.Writer) { d.Varint(1, 700); d.Varint(5, 800); d.Str(2, "async") })
	})
	slice := func(track, ts uint64) {
		typed(&w, 1, flagNeeds, ts, 1, track, 0, nil)
		typed(&w, 1, flagNeeds, ts+1000, 2, track, 0, nil)
	}
	slice(500, 1000)
	slice(700, 5000)
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, flagNeeds)
		trackDesc(p, 500, 30, 31, "late-thread")
	})
	process := func(uuid, pid uint64, name string) {
		w.Packet(func(p *perfettotest.Writer) {
			p.Varint(10, 1)
			p.Varint(13, flagNeeds)
			p.Msg(60, func(d *perfettotest.Writer) {
				d.Varint(1, uuid)
				d.Msg(3, func(pd *perfettotest.Writer) { pd.Varint(1, pid); pd.Str(6, name) })
			})
		})
	}
	process(600, 30, "late-process")
	process(800, 40, "parent-process")
	s := &scan{tracks: map[int64]tracemodel.Track{}, threads: map[[2]int64]string{}, processes: map[int64]string{}}
	sink := &scanSink{names: names{s}}
	if _, _, err := perfetto.Decode(context.Background(), strings.NewReader(string(w.B)), 0, perfetto.Limits{}, sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.slices) != 2 {
		t.Fatalf("slices %+v", sink.slices)
	}
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	type pair struct{ Thread, Process string }
	var got []pair
	for _, sl := range sink.slices {
		got = append(got, pair{str(s.threadName(sl.Track)), str(s.processName(sl.Track))})
	}
	want := []pair{{"late-thread", "late-process"}, {"<nil>", "parent-process"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s\ntracks %+v", diff, s.tracks)
	}
}

// TestPerfettoUnreadKinds: the unread-packet limitation counts and lists the same kinds:
// data kinds, not the bookkeeping ones (trace config, trace stats).
func TestPerfettoUnreadKinds(t *testing.T) {
	w := perfettotest.Writer{B: perfettotest.Generate(1, 1, 1)}
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 9)
		p.Msg(1, func(f *perfettotest.Writer) { f.Varint(1, 0) })
	})
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 9)
		p.Msg(33, func(c *perfettotest.Writer) { c.Varint(3, 1) })
	})
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 9)
		p.Msg(35, func(c *perfettotest.Writer) { c.Varint(1, 1) })
	})
	st, info, _, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l := limitationsOf(st, info)
	if !strings.Contains(l, "1 data packets were not read natively (packets skipped by kind: ftrace_events 1);") {
		t.Errorf("limitations %q", l)
	}
}

// TestPerfettoCut: a trace that ends within a record keeps its complete packets and
// says where it ends, in Perfetto's terms; one cut before any slice is a decode failure.
func TestPerfettoCut(t *testing.T) {
	good := perfettotest.Generate(1, 2, 1) // 1 descriptor packet + 2 begin/end pairs: 5 packets, 2 slices
	for _, c := range []struct {
		name string
		tail []byte
		want perfetto.Cut
		says string
	}{
		{"within a packet", []byte{0x0a, 100, 1, 2, 3}, perfetto.Cut{Offset: int64(len(good)), Packets: 5, Declared: 100, Present: 3},
			"declares 100 bytes and holds 3; the 5 complete packets before it"},
		{"within a length", []byte{0x0a, 0x80}, perfetto.Cut{Offset: int64(len(good)), Packets: 5, Declared: -1},
			"ends within the header of the record at byte"},
		{"within another record", []byte{0x12, 9, 1}, perfetto.Cut{Offset: int64(len(good)), Packets: 5, Declared: 9, Present: 1},
			"declares 9 bytes and holds 1"},
	} {
		st, info, rec, err := perfettotest.Decode(t, append(append([]byte{}, good...), c.tail...), perfetto.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if info.Cut == nil || *info.Cut != c.want || len(rec.Slices) != 2 {
			t.Errorf("%s: cut %+v, slices %d", c.name, info.Cut, len(rec.Slices))
		}
		l := limitationsOf(st, info)
		if !strings.Contains(l, "The Perfetto trace is cut short") || !strings.Contains(l, c.says) || strings.Contains(l, "Trace Event") {
			t.Errorf("%s: limitations %q", c.name, l)
		}
	}

	// Through the analyzer: a cut trace with slices is read and said; a 60 MiB first
	// packet holding 4 bytes is a decode failure, not an empty success.
	t.Setenv("FLAMEOX_TRACE_PROCESSOR", filepath.Join(t.TempDir(), "absent"))
	dir := t.TempDir()
	analyze := func(b []byte) (*providers.Page, error) {
		path := filepath.Join(dir, "t.pftrace")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		in := providers.Input{Path: path, Format: gen.FormatPerfetto}
		a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Fields: &gen.TraceSliceFields{}, Inputs: []providers.Input{in}})
		if err != nil {
			return nil, err
		}
		return a.Rows.Page(context.Background(), 0, 10, nil)
	}
	p, err := analyze(append(append([]byte{}, good...), 0x0a, 100, 1, 2, 3))
	if err != nil || len(p.Rows) != 2 || !strings.Contains(strings.Join(p.Limitations, "\n"), "cut short") {
		t.Errorf("cut trace with slices: %v %+v", err, p)
	}
	_, err = analyze([]byte{0x0a, 0x80, 0x80, 0x80, 0x1e, 0x50, 0x01, 0x68, 0x01})
	var de *providers.DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Message, "declares 62914560 bytes and holds 4") || strings.Contains(de.Message, dir) {
		t.Errorf("cut first packet: %v", err)
	}
}

// TestPerfettoNegativeIntervals: an end before its begin, and a legacy complete event
// with a negative duration, are no slices: counted and said, not delivered (a window,
// which lists zero-length slices, listed them with duration 0); the slices around them
// are read.
func TestPerfettoNegativeIntervals(t *testing.T) {
	var w perfettotest.Writer
	clearedSequence(&w, "Neg", "Ok")
	typed(&w, 1, flagNeeds, 5000, 1, 100, 1, nil) // begin Neg at 5000
	typed(&w, 1, flagNeeds, 4000, 2, 100, 0, nil) // its end at 4000
	typed(&w, 1, flagNeeds, 6000, 1, 100, 2, nil) // Ok 6000..7000
	typed(&w, 1, flagNeeds, 7000, 2, 100, 0, nil)
	// A legacy complete event (phase X) with duration_us -1, timed by its packet.
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, flagNeeds)
		p.Varint(8, 8000)
		p.Msg(11, func(te *perfettotest.Writer) {
			te.Varint(11, 100)
			te.Varint(10, 1)
			te.Msg(6, func(l *perfettotest.Writer) { l.Varint(2, 'X'); l.Varint(3, uint64(1<<64-1)) }) // duration_us -1
		})
	})
	st, info, rec, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]sliceFigures{{"Ok", 6000, 1000}}, figures(rec)); diff != "" {
		t.Errorf("slices (-want +got):\n%s", diff)
	}
	if info.NegativeDurations != 2 || st.UnmatchedEnds != 0 || st.UnfinishedBegins != 0 {
		t.Errorf("negative %d, stats %+v", info.NegativeDurations, st)
	}
	if l := limitationsOf(st, info); !strings.Contains(l, "ended before they began") || !strings.Contains(l, "not listed") {
		t.Errorf("limitations %q", l)
	}
}

// TestPerfettoUndefinedInterned: a name id the sequence never defined reads as empty and
// is counted and said (trace_processor reads it as null, silently).
func TestPerfettoUndefinedInterned(t *testing.T) {
	var w perfettotest.Writer
	clearedSequence(&w, "Known")
	typed(&w, 1, flagNeeds, 1000, 1, 100, 1, nil)
	typed(&w, 1, flagNeeds, 2000, 2, 100, 0, nil)
	typed(&w, 1, flagNeeds, 3000, 1, 100, 9, nil) // iid 9 was never defined
	typed(&w, 1, flagNeeds, 4000, 2, 100, 0, nil)
	st, info, rec, err := perfettotest.Decode(t, w.B, perfetto.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]sliceFigures{{"Known", 1000, 1000}, {"", 3000, 1000}}, figures(rec)); diff != "" {
		t.Errorf("slices (-want +got):\n%s", diff)
	}
	if info.UndefinedInterned != 1 || !strings.Contains(limitationsOf(st, info), "1 event names or categories name an interned id") {
		t.Errorf("undefined %d, limitations %q", info.UndefinedInterned, limitationsOf(st, info))
	}
}
