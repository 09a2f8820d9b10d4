package perfetto_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/protowalk/protowalktest"
	"github.com/flameox/flameox/providers/trace/perfetto"
	"github.com/flameox/flameox/providers/trace/perfetto/perfettotest"
	"github.com/flameox/flameox/providers/trace/tracemodel"
	"github.com/flameox/flameox/providers/trace/tracemodel/tracemodeltest"
)

// protocTruth is what a trace holds according to protoc --decode_raw, computed here
// without the decoder.
type protocTruth struct {
	packets     int
	teByType    map[uint64]int // TrackEvent.type -> packets (0: none, e.g. legacy)
	descriptors int
	unread      map[int]int64
	// durs maps the packet index of each matched SLICE_BEGIN to its duration in ns.
	durs            map[int64]int64
	unmatched, open int
}

func truthFromProtoc(t testing.TB, path string) protocTruth {
	t.Helper()
	root := protowalktest.DecodeRaw(t, path)
	// Schema facts (trace_packet.proto): fields outside the data oneof, and data kinds
	// the native decoder is meant to read.
	meta := map[int]bool{3: true, 8: true, 10: true, 12: true, 13: true, 41: true, 42: true, 58: true, 59: true, 79: true, 87: true, 98: true}
	native := map[int]bool{2: true, 6: true, 11: true, 43: true, 44: true, 60: true}
	tr := protocTruth{teByType: map[uint64]int{}, unread: map[int]int64{}, durs: map[int64]int64{}}
	type clock struct {
		value, mult uint64
		incr        bool
	}
	type seqState struct {
		defTrack    uint64
		hasDefTrack bool
		defClock    uint64
		clocks      map[uint64]*clock
	}
	seqs := map[uint64]*seqState{}
	type open struct {
		packet int64
		ts     int64
	}
	stacks := map[uint64][]open{}
	for i, p := range root.All(1) {
		tr.packets++
		for _, k := range p.Kids {
			if !meta[k.Num] && !native[k.Num] {
				tr.unread[k.Num]++
			}
		}
		if p.One(60) != nil {
			tr.descriptors++
		}
		seqID, _ := p.Uint(10)
		s := seqs[seqID]
		if s == nil {
			s = &seqState{clocks: map[uint64]*clock{}}
			seqs[seqID] = s
		}
		if d := p.One(59); d != nil {
			if c, ok := d.Uint(58); ok {
				s.defClock = c
			}
			if ted := d.One(11); ted != nil {
				s.defTrack, s.hasDefTrack = ted.Uint(11)
			}
		}
		if cs := p.One(6); cs != nil {
			for _, c := range cs.All(1) {
				id, _ := c.Uint(1)
				v, _ := c.Uint(2)
				inc, _ := c.Uint(3)
				mult, ok := c.Uint(4)
				if !ok {
					mult = 1
				}
				if id >= 64 {
					s.clocks[id] = &clock{value: v, mult: mult, incr: inc != 0}
				}
			}
		}
		// Every packet with a timestamp advances an incremental clock.
		ts, hasTS := p.Uint(8)
		clk, ok := p.Uint(58)
		if !ok {
			clk = s.defClock
		}
		tsNs := int64(ts)
		if c := s.clocks[clk]; hasTS && clk >= 64 && c != nil {
			if c.incr {
				c.value += ts
			} else {
				c.value = ts
			}
			tsNs = int64(c.value * c.mult)
		}
		te := p.One(11)
		if te == nil {
			continue
		}
		typ, _ := te.Uint(9)
		tr.teByType[typ]++
		if typ != 1 && typ != 2 {
			continue
		}
		uuid, ok := te.Uint(11)
		if !ok {
			uuid = s.defTrack
		}
		if typ == 1 {
			stacks[uuid] = append(stacks[uuid], open{packet: int64(i), ts: tsNs})
			continue
		}
		st := stacks[uuid]
		if len(st) == 0 {
			tr.unmatched++
			continue
		}
		o := st[len(st)-1]
		stacks[uuid] = st[:len(st)-1]
		tr.durs[o.packet] = tsNs - o.ts
	}
	for _, st := range stacks {
		tr.open += len(st)
	}
	return tr
}

func TestPerfettoCorpus(t *testing.T) {
	cases := []struct {
		file string
		// facts from the corpus README and a manual reading, beside protoc's.
		wantSlices  int64
		wantThreads map[[2]int64]string
		wantProcs   map[int64]string
		wantClock   uint32
	}{
		// No clock id and no ClockSnapshot: the trace's clock, BOOTTIME (6).
		{file: "perfetto-mcp-rs__basic.perfetto-trace", wantSlices: 3, wantClock: 6},
		{
			file: "local__chromium156_trace_startup_proto.pftrace", wantSlices: 28, wantClock: 3,
			wantThreads: map[[2]int64]string{{22215, 22215}: "CrRendererMain", {22217, 22220}: "PerfettoTrace"},
			wantProcs:   map[int64]string{22215: "Renderer"},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := testtool.Corpus(t, c.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !perfetto.IsTrace(b[:min(len(b), 4096)]) {
				t.Fatalf("IsTrace rejects %s", c.file)
			}
			st, info, rec, err := perfettotest.Decode(t, b, perfetto.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Slices != c.wantSlices || int64(len(rec.Slices)) != st.Slices {
				t.Errorf("slices: stats %d, delivered %d, want %d", st.Slices, len(rec.Slices), c.wantSlices)
			}
			for k, v := range c.wantThreads {
				if rec.Threads[k] != v {
					t.Errorf("thread %v named %q, want %q", k, rec.Threads[k], v)
				}
			}
			for k, v := range c.wantProcs {
				if rec.Procs[k] != v {
					t.Errorf("process %d named %q, want %q", k, rec.Procs[k], v)
				}
			}
			if info.Clocks[c.wantClock] == 0 || info.MixedClocks {
				t.Errorf("clocks %v, want all in %d", info.Clocks, c.wantClock)
			}
			announced := map[int64]bool{}
			for _, tr := range rec.Tracks {
				if announced[tr.ID] {
					t.Errorf("track %d announced twice", tr.ID)
				}
				announced[tr.ID] = true
			}
			for _, s := range rec.Slices {
				if !announced[s.Track] || s.Phase != "X" || s.Dur < 0 || s.Name == "" {
					t.Errorf("slice %+v: track announced %v", s, announced[s.Track])
				}
			}

			truth := truthFromProtoc(t, path)
			if int64(truth.packets) != info.Packets {
				t.Errorf("packets %d, protoc %d", info.Packets, truth.packets)
			}
			var te int
			for _, n := range truth.teByType {
				te += n
			}
			if int64(te) != info.TrackEventPackets || int64(te) != st.Events {
				t.Errorf("track events %d/%d, protoc %d", info.TrackEventPackets, st.Events, te)
			}
			if int64(truth.descriptors) != info.TrackDescriptors {
				t.Errorf("descriptors %d, protoc %d", info.TrackDescriptors, truth.descriptors)
			}
			if int64(truth.unmatched) != st.UnmatchedEnds || int64(truth.open) != st.UnfinishedBegins {
				t.Errorf("unmatched %d open %d, protoc %d %d", st.UnmatchedEnds, st.UnfinishedBegins, truth.unmatched, truth.open)
			}
			if len(truth.unread) != len(info.Unread) {
				t.Errorf("unread %v, protoc %v", info.Unread, truth.unread)
			}
			for k, v := range truth.unread {
				if info.Unread[k] != v {
					t.Errorf("unread field %d: %d, protoc %d", k, info.Unread[k], v)
				}
			}
			if len(truth.durs) != len(rec.Slices) {
				t.Errorf("%d slices, protoc %d", len(rec.Slices), len(truth.durs))
			}
			for _, s := range rec.Slices {
				want, ok := truth.durs[s.ID]
				if !ok || want != s.Dur {
					t.Errorf("slice %d (%s) dur %d, protoc %d (%v)", s.ID, s.Name, s.Dur, want, ok)
				}
			}
			// Instants are the typed INSTANT events plus the legacy ones (Chromium's 'R' marks).
			if want := int64(truth.teByType[3] + truth.teByType[0]); st.Instants != want {
				t.Errorf("instants %d, protoc %d", st.Instants, want)
			}
		})
	}
}

func TestIsTrace(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(testtool.Corpus(t, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gz := read("local-h200__jax0.11.2_perfetto_trace.json.gz")
	cases := []struct {
		name string
		head []byte
		want bool
	}{
		{"basic", read("perfetto-mcp-rs__basic.perfetto-trace"), true},
		{"chromium", read("local__chromium156_trace_startup_proto.pftrace"), true},
		{"chromium first 512 bytes", read("local__chromium156_trace_startup_proto.pftrace")[:512], true},
		{"chromium first 64 bytes (first packet cut before its envelope)", read("local__chromium156_trace_startup_proto.pftrace")[:64], false},
		{"generated", perfettotest.Generate(4, 10, 3), true},
		{"xplane", read("local-h200__jax0.11.2_profile.xplane.pb"), false},
		{"xplane first 64 bytes", read("local-h200__jax0.11.2_profile.xplane.pb")[:64], false},
		{"otlp protobuf", read("local__otel_js_otlp_protobuf_trace.binpb"), false},
		{"gzip json", gz, false},
		{"json", read("speedscope__trace_event_multiprocess.json"), false},
		{"kineto json", read("h200__torch-mlp-train.pt.trace.json"), false},
		{"text", []byte("\nhello, world\n"), false},
		{"empty", nil, false},
		{"one byte", []byte{0x0a}, false},
	}
	for _, c := range cases {
		head := c.head[:min(len(c.head), 4096)]
		if got := perfetto.IsTrace(head); got != c.want {
			t.Errorf("%s: IsTrace = %v, want %v", c.name, got, c.want)
		}
	}
}

// checkTyped fails unless err is nil or one of the typed decoder errors with Source set.
func checkTyped(t *testing.T, what string, err error) {
	t.Helper()
	var de *providers.DecodeError
	var le *providers.LimitError
	switch {
	case err == nil:
	case errors.As(err, &de):
		if de.Source != 7 || strings.Contains(de.Message, "/") {
			t.Errorf("%s: %+v", what, de)
		}
	case errors.As(err, &le):
		if le.Source != 7 {
			t.Errorf("%s: %+v", what, le)
		}
	default:
		t.Errorf("%s: untyped error %T %v", what, err, err)
	}
}

func TestPerfettoMalformed(t *testing.T) {
	testtool.Short(t, "decodes many malformed traces")
	basic, err := os.ReadFile(testtool.Corpus(t, "perfetto-mcp-rs__basic.perfetto-trace"))
	if err != nil {
		t.Fatal(err)
	}
	chromium, err := os.ReadFile(testtool.Corpus(t, "local__chromium156_trace_startup_proto.pftrace"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{"basic": basic, "chromium": chromium[:8192], "generated": perfettotest.Generate(3, 20, 4)}
	for name, in := range inputs {
		for n := 0; n <= len(in); n++ {
			_, _, _, err := perfettotest.Decode(t, in[:n], perfetto.Limits{})
			checkTyped(t, name+" prefix "+strconv.Itoa(n), err)
		}
		rng := rand.New(rand.NewSource(1))
		for i := 0; i < 2000; i++ {
			b := bytes.Clone(in)
			b[rng.Intn(len(b))] = byte(rng.Intn(256))
			_, _, _, err := perfettotest.Decode(t, b, perfetto.Limits{})
			checkTyped(t, name+" corrupt "+strconv.Itoa(i), err)
		}
	}
	// A prefix cut within a packet is a cut trace, not an error.
	_, info, _, err := perfettotest.Decode(t, basic[:len(basic)-3], perfetto.Limits{})
	if err != nil || info.Cut == nil {
		t.Errorf("cut trace: %v, %+v", err, info)
	}
	// Inputs that are not a Trace are DecodeErrors.
	for _, b := range [][]byte{[]byte(`{"traceEvents":[]}`), {0x0a, 0x03, 0xff, 0xff, 0xff}, {0x0b}} {
		_, _, _, err := perfettotest.Decode(t, b, perfetto.Limits{})
		var de *providers.DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%q: %v, want a DecodeError", b, err)
		}
	}
}

func TestPerfettoLimits(t *testing.T) {
	basic, err := os.ReadFile(testtool.Corpus(t, "perfetto-mcp-rs__basic.perfetto-trace"))
	if err != nil {
		t.Fatal(err)
	}
	gen := perfettotest.Generate(2, 5, 4)
	cases := []struct {
		bound string
		in    []byte
		lim   perfetto.Limits
	}{
		{"max_packet_bytes", basic, perfetto.Limits{MaxPacketBytes: 16}},
		{"max_tracks", basic, perfetto.Limits{MaxTracks: 2}},
		{"max_sequences", basic, perfetto.Limits{MaxSequences: 2}},
		{"max_string_bytes", basic, perfetto.Limits{MaxStringBytes: 5}},
		{"max_open_slices", gen, perfetto.Limits{MaxOpenSlices: 3}},
		{"max_interned", gen, perfetto.Limits{MaxInterned: 2}},
	}
	for _, c := range cases {
		_, _, _, err := perfettotest.Decode(t, c.in, c.lim)
		var le *providers.LimitError
		if !errors.As(err, &le) || le.Details["bound"] != c.bound || le.Source != 7 || le.Limit == 0 {
			t.Errorf("%s: %v, want a LimitError naming it", c.bound, err)
		}
		if _, _, _, err := perfettotest.Decode(t, c.in, perfetto.Limits{}); err != nil {
			t.Errorf("%s: default limits: %v", c.bound, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := perfetto.Decode(ctx, bytes.NewReader(gen), 0, perfetto.Limits{}, tracemodeltest.NewRecorder()); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

// TestPerfettoFeatures decodes a hand-built trace of the features the corpus lacks:
// legacy B/E/X/I/C/M events with pid/tid overrides, a packet-level ThreadDescriptor,
// TrackEvent timestamp_absolute_us / timestamp_delta_us, interning cleared with the
// incremental state, debug annotations, flows, counters and unread packet kinds.
func TestPerfettoFeatures(t *testing.T) {
	var w perfettotest.Writer
	// Sequence 1: a legacy thread descriptor (pid 10, tid 11), interned names.
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, 1) // SEQ_INCREMENTAL_STATE_CLEARED
		p.Msg(44, func(td *perfettotest.Writer) {
			td.Varint(1, 10)
			td.Varint(2, 11)
			td.Str(5, "worker")
			td.Varint(6, 1000)
		})
		p.Msg(12, func(id *perfettotest.Writer) {
			id.Msg(1, func(e *perfettotest.Writer) { e.Varint(1, 1); e.Str(2, "cat1") })
			id.Msg(1, func(e *perfettotest.Writer) { e.Varint(1, 2); e.Str(2, "cat2") })
			id.Msg(2, func(e *perfettotest.Writer) { e.Varint(1, 1); e.Str(2, "outer") })
			id.Msg(2, func(e *perfettotest.Writer) { e.Varint(1, 2); e.Str(2, "inner") })
			id.Msg(3, func(e *perfettotest.Writer) { e.Varint(1, 1); e.Str(2, "correlation_id") })
			id.Msg(29, func(e *perfettotest.Writer) { e.Varint(1, 1); e.Str(2, "a.py") })
		})
	})
	legacy := func(p *perfettotest.Writer, seq uint64, phase byte, nameIID uint64, absUs int64, extra func(*perfettotest.Writer), lx func(*perfettotest.Writer)) {
		p.Varint(10, seq)
		p.Msg(11, func(te *perfettotest.Writer) {
			te.Varint(16, uint64(absUs))
			if nameIID != 0 {
				te.Varint(10, nameIID)
				te.Varint(3, 1)
				te.Varint(3, 2)
			}
			if extra != nil {
				extra(te)
			}
			te.Msg(6, func(l *perfettotest.Writer) {
				l.Varint(2, uint64(phase))
				if lx != nil {
					lx(l)
				}
			})
		})
	}
	// packet 1: B outer at 2000 us with a correlation_id annotation (interned name).
	w.Packet(func(p *perfettotest.Writer) {
		legacy(p, 1, 'B', 1, 2000, func(te *perfettotest.Writer) {
			te.Msg(4, func(a *perfettotest.Writer) { a.Varint(1, 1); a.Varint(4, 42) })
			te.Msg(4, func(a *perfettotest.Writer) { a.Str(10, "file"); a.Varint(17, 1) })
			te.Msg(4, func(a *perfettotest.Writer) { a.Str(10, "line"); a.Varint(4, 7) })
		}, nil)
	})
	// packet 2: X inner at 2001 us for 3 us, on an overridden thread (pid 10, tid 12).
	w.Packet(func(p *perfettotest.Writer) {
		legacy(p, 1, 'X', 2, 2001, nil, func(l *perfettotest.Writer) { l.Varint(3, 3); l.Varint(19, 12) })
	})
	// packet 3: I, C, M, s legacy events.
	w.Packet(func(p *perfettotest.Writer) { legacy(p, 1, 'I', 0, 2002, nil, nil) })
	w.Packet(func(p *perfettotest.Writer) { legacy(p, 1, 'C', 0, 2002, nil, nil) })
	w.Packet(func(p *perfettotest.Writer) { legacy(p, 1, 'M', 0, 2002, nil, nil) })
	w.Packet(func(p *perfettotest.Writer) { legacy(p, 1, 's', 0, 2002, nil, nil) })
	// packet 7: E outer at 2010 us, given on timestamp_delta_us as 1010 us after the
	// ThreadDescriptor's reference (1000 us): the absolute timestamps between are
	// one-offs that leave the reference alone.
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Msg(11, func(te *perfettotest.Writer) {
			te.Varint(1, 1010)
			te.Msg(6, func(l *perfettotest.Writer) { l.Varint(2, 'E') })
		})
	})
	// packet 8: an unmatched E.
	w.Packet(func(p *perfettotest.Writer) { legacy(p, 1, 'E', 0, 2011, nil, nil) })
	// packet 9: incremental state cleared; name iid 1 is now unknown, begin left open.
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 1)
		p.Varint(13, 1)
		p.Msg(11, func(te *perfettotest.Writer) {
			te.Varint(16, 3000)
			te.Varint(10, 1)
			te.Varint(9, 1)
			te.Fixed64(47, 5)
			te.Fixed64(48, 6)
		})
	})
	// packet 10, 11: typed counter on an unknown track, and an ftrace bundle.
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(8, 5)
		p.Varint(10, 2)
		p.Msg(11, func(te *perfettotest.Writer) { te.Varint(9, 4); te.Varint(11, 99); te.Varint(30, 1) })
	})
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(10, 3)
		p.Msg(1, func(f *perfettotest.Writer) { f.Varint(1, 0) })
	})
	// packet 12: a timestamp in a sequence-scoped clock no snapshot defined.
	w.Packet(func(p *perfettotest.Writer) {
		p.Varint(8, 5)
		p.Varint(58, 64)
		p.Varint(10, 2)
		p.Msg(11, func(te *perfettotest.Writer) { te.Varint(9, 1); te.Str(23, "lost") })
	})
	b := w.B
	if !perfetto.IsTrace(b) {
		t.Fatal("IsTrace rejects the generated trace")
	}
	st, info, rec, err := perfettotest.Decode(t, b, perfetto.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := tracemodel.Stats{Events: 11, Slices: 2, UnmatchedEnds: 1, UnfinishedBegins: 1, Instants: 1, Counters: 2,
		Flows: 3, Metadata: 1, Ignored: 1}
	if *st != want {
		t.Errorf("stats %+v\nwant  %+v", *st, want)
	}
	if len(rec.Slices) != 2 {
		t.Fatalf("slices %+v", rec.Slices)
	}
	inner, outer := rec.Slices[0], rec.Slices[1]
	if inner.ID != 2 || inner.TS != 2001000 || inner.Dur != 3000 || inner.Name != "inner" || inner.Category != "cat1,cat2" {
		t.Errorf("inner %+v", inner)
	}
	if outer.ID != 1 || outer.TS != 2000000 || outer.Dur != 10000 || outer.Name != "outer" {
		t.Errorf("outer %+v", outer)
	}
	a := outer.Args
	if a.CorrelationID == nil || *a.CorrelationID != 42 || a.Filename == nil || *a.Filename != "a.py" || a.Line == nil || *a.Line != 7 {
		t.Errorf("outer args %+v", a)
	}
	if inner.Track == outer.Track {
		t.Errorf("the tid override shares the sequence's track")
	}
	tracks := map[int64]tracemodel.Track{}
	for _, tr := range rec.Tracks {
		tracks[tr.ID] = tr
	}
	if tr := tracks[outer.Track]; tr.PID != 10 || tr.TID != 11 || tr.Name != "worker" {
		t.Errorf("outer track %+v", tr)
	}
	if tr := tracks[inner.Track]; tr.PID != 10 || tr.TID != 12 {
		t.Errorf("inner track %+v", tr)
	}
	if info.Unread[1] != 1 || info.UnreadDataPackets() != 1 || info.UnresolvedTimestamps != 1 || info.NothingNative() {
		t.Errorf("info %+v", info)
	}
	if got := info.UnreadByKind(); got["ftrace_events"] != 1 {
		t.Errorf("unread by kind %v", got)
	}
}

func TestPerfettoGenerated(t *testing.T) {
	b := perfettotest.Generate(3, 7, 4)
	st, info, rec, err := perfettotest.Decode(t, b, perfetto.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Slices != 3*7*4 || st.UnmatchedEnds != 0 || st.UnfinishedBegins != 0 || len(rec.Tracks) != 3 {
		t.Fatalf("stats %+v tracks %d", st, len(rec.Tracks))
	}
	if info.Packets != 3+3*7*4*2 {
		t.Errorf("packets %d", info.Packets)
	}
	ids := map[int64]bool{}
	for _, s := range rec.Slices {
		if ids[s.ID] {
			t.Errorf("duplicate ID %d", s.ID)
		}
		ids[s.ID] = true
		// Depth k (1 = outermost) of a nest of 4 lasts 10 * (2*(4-k)+1) ns.
		k, _ := strconv.Atoi(strings.TrimPrefix(s.Name, "function_"))
		if s.Dur != int64(10*(2*(4-k)+1)) || s.Category != "gen" {
			t.Errorf("slice %+v", s)
		}
	}
	names := make([]string, 0, len(rec.Threads))
	for _, n := range rec.Threads {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "thread-1,thread-2,thread-3" {
		t.Errorf("thread names %v", names)
	}
}

type discardSink struct{}

func (discardSink) Slice(*tracemodel.Event) error   { return nil }
func (discardSink) Track(tracemodel.Track)          {}
func (discardSink) ThreadName(int64, int64, string) {}
func (discardSink) ProcessName(int64, string)       {}

func BenchmarkDecodePerfetto(b *testing.B) {
	in := perfettotest.Generate(64, 1000, 8) // 1,024,000 packets
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := perfetto.Decode(context.Background(), bytes.NewReader(in), 0, perfetto.Limits{}, discardSink{}); err != nil {
			b.Fatal(err)
		}
	}
}
