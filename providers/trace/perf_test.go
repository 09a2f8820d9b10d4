package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestScaledNumberMatchesScaleDecimal checks the scanner's number fast path against
// readNumber and scaleDecimal on random number texts.
func TestScaledNumberMatchesScaleDecimal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.Intn(10))
		}
		return string(b)
	}
	texts := []string{"0", "-0", "1", "0.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "9223372036854775.807", "9223372036854775.808", "1700000000000000.123",
		"99999999999999999999", "01", "1.", "1e3", "1.5E-2", "-", "1.2.3", "12345678901234567.89"}
	for i := 0; i < 20000; i++ {
		s := ""
		if rng.Intn(4) == 0 {
			s = "-"
		}
		s += digits(1 + rng.Intn(20))
		if rng.Intn(2) == 0 {
			s += "." + digits(rng.Intn(5))
		}
		if rng.Intn(10) == 0 {
			s += "e" + strconv.Itoa(rng.Intn(5)-2)
		}
		texts = append(texts, s)
	}
	for _, text := range texts {
		for _, scale := range []int{0, 3} {
			for _, tail := range []string{",", "}", " ", "", `,"dur":2.5}`, "\xc0\xc0\xc0\xc0\xc0\xc0\xc0\xc0", "/:/:/:/:/:"} {
				in := text + tail
				s := &scanner{buf: []byte(in), end: len(in), eof: true}
				v, ok := s.scaledNumber(scale)
				if !ok {
					if s.pos != 0 {
						t.Fatalf("%q: a refused number consumed %d bytes", in, s.pos)
					}
					continue
				}
				if s.pos != len(text) {
					t.Fatalf("%q: consumed %d bytes, want %d", in, s.pos, len(text))
				}
				s2 := &scanner{buf: []byte(in), end: len(in), eof: true}
				num, err := s2.readNumber()
				if err != nil {
					t.Fatalf("%q: fast path read %d, readNumber fails: %v", in, v, err)
				}
				want, exact, ok2, _ := scaleDecimal(num, scale, nil)
				if !ok2 || !exact || want != v {
					t.Fatalf("%q scale %d: fast path %d, scaleDecimal %d (exact %v, ok %v)", in, scale, v, want, exact, ok2)
				}
			}
		}
	}
}

// refNest is the Nester's contract computed plainly: a linear scan for the earliest held
// slice instead of a heap, and no shortcut for a full buffer.
func refNest(evs []Event, opens map[int]openMark, window, maxHeld int) []Nested {
	var held []Event
	open := map[int64]int64{}
	type tr struct {
		stack   []nestOpen
		last    slotKey
		hasLast bool
	}
	tracks := map[int64]*tr{}
	var out []Nested
	minIdx := func() int {
		m := 0
		for i := range held {
			if (slotKey{held[i].TS, held[i].Dur, held[i].ID}).less(slotKey{held[m].TS, held[m].Dur, held[m].ID}) {
				m = i
			}
		}
		return m
	}
	release := func(i int) {
		e := held[i]
		held = append(held[:i], held[i+1:]...)
		t := tracks[e.Track]
		if t == nil {
			t = &tr{}
			tracks[e.Track] = t
		}
		parent, depth := int64(-1), int32(0)
		k := slotKey{e.TS, e.Dur, e.ID}
		if t.hasLast && k.less(t.last) {
		} else {
			t.last, t.hasLast = k, true
			for len(t.stack) > 0 && t.stack[len(t.stack)-1].end <= e.TS {
				t.stack = t.stack[:len(t.stack)-1]
			}
			end := e.TS + e.Dur
			if len(t.stack) == 0 || end <= t.stack[len(t.stack)-1].end {
				if len(t.stack) > 0 {
					top := t.stack[len(t.stack)-1]
					parent, depth = top.id, top.depth+1
				}
				t.stack = append(t.stack, nestOpen{id: e.ID, end: end, depth: depth})
			} else {
				for j := len(t.stack) - 1; j >= 0; j-- {
					if t.stack[j].end >= end {
						parent, depth = t.stack[j].id, t.stack[j].depth+1
						break
					}
				}
			}
		}
		out = append(out, Nested{Event: e, ParentID: parent, Depth: depth})
	}
	for i, e := range evs {
		if m, ok := opens[i]; ok {
			open[m.id] = m.ts
		}
		delete(open, e.ID)
		held = append(held, e)
		for len(held) > window {
			m := minIdx()
			if len(held) <= maxHeld && len(open) > 0 {
				first := true
				var lo int64
				for _, ts := range open {
					if first || ts < lo {
						lo, first = ts, false
					}
				}
				if held[m].TS >= lo {
					break
				}
			}
			release(m)
		}
	}
	for len(held) > 0 {
		release(minIdx())
	}
	return out
}

// TestNesterMatchesReference compares the Nester (heap, full-buffer shortcut, open
// begins) with refNest on random, partly disordered slices.
func TestNesterMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for round := 0; round < 300; round++ {
		n := 1 + rng.Intn(400)
		window := 1 + rng.Intn(40)
		maxHeld := window + rng.Intn(60)
		spread := 30
		if round%10 == 9 {
			// Long enough for the run to fill, move its held slices to its front
			// and grow, with wider disorder.
			n, window = 3000+rng.Intn(5000), 1+rng.Intn(2500)
			maxHeld, spread = window+rng.Intn(3000), []int{300, 3000, 20000}[round/10%3]
		}
		evs := make([]Event, n)
		opens := map[int]openMark{}
		clock := int64(0)
		for i := range evs {
			clock += int64(rng.Intn(5))
			ts := clock - int64(rng.Intn(spread)) // out of order now and then
			evs[i] = Event{ID: int64(i), TS: ts, Dur: int64(rng.Intn(40)), Track: int64(rng.Intn(3)), Name: fmt.Sprint("s", i)}
			if rng.Intn(8) == 0 {
				x := int64(rng.Intn(50))
				evs[i].Args.ExternalID = &x
			}
		}
		// Some slices are announced (Open) a few slices before they arrive.
		for i := range evs {
			if rng.Intn(6) == 0 {
				at := max(0, i-rng.Intn(20))
				if _, dup := opens[at]; !dup {
					opens[at] = openMark{ts: evs[i].TS, id: evs[i].ID}
				}
			}
		}
		want := refNest(evs, opens, window, maxHeld)
		var got []Nested
		nest := NewNester(NesterOptions{Window: window, MaxHeld: maxHeld}, nil, func(s *Nested) error {
			got = append(got, retain(s))
			return nil
		})
		if round%2 == 1 {
			// A short run sends more arrivals to the reorder queue's heap.
			nest.buf.shift = 1 + rng.Intn(8)
		}
		if round%10 == 9 {
			nest.buf.shift = []int{0, 1 + rng.Intn(300)}[round/10%2]
		}
		for i := range evs {
			if m, ok := opens[i]; ok {
				nest.Open(m.id, 0, m.ts)
			}
			if err := nest.Slice(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := nest.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d slices, want %d", round, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.ParentID != w.ParentID || g.Depth != w.Depth || g.TS != w.TS || g.Dur != w.Dur || g.Name != w.Name ||
				(g.Args.ExternalID == nil) != (w.Args.ExternalID == nil) || (g.Args.ExternalID != nil && *g.Args.ExternalID != *w.Args.ExternalID) {
				t.Fatalf("round %d (window %d, max held %d): slice %d is %+v, want %+v", round, window, maxHeld, i, g, w)
			}
		}
	}
}

// TestReorderQueue checks the reorder queue (sorted run and heap) against a sort, on
// keys arriving in order, slightly and far out of order, with releases in between.
func TestReorderQueue(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 200; round++ {
		q := reorderQueue{shift: 1 + rng.Intn(300)}
		var waiting []slotKey
		var clock int64
		spread := []int64{0, 3, 50, 10_000}[round%4]
		for i := 0; i < 2000; i++ {
			if rng.Intn(3) > 0 || len(waiting) == 0 {
				clock += int64(rng.Intn(4))
				k := slotKey{ts: clock - rng.Int63n(spread+1), dur: int64(rng.Intn(3)), id: int64(i)}
				waiting = append(waiting, k)
				q.push(&held{slotKey: k})
				if m := q.min(); m.slotKey != minKey(waiting) {
					t.Fatalf("round %d: min %+v after push, want %+v", round, m.slotKey, minKey(waiting))
				}
				continue
			}
			want := minKey(waiting)
			got := q.pop().id
			if got != want.id {
				t.Fatalf("round %d: popped slot %d, want %d", round, got, want.id)
			}
			waiting = slices.DeleteFunc(waiting, func(k slotKey) bool { return k == want })
			if q.len() != len(waiting) {
				t.Fatalf("round %d: len %d, want %d", round, q.len(), len(waiting))
			}
		}
		for len(waiting) > 0 {
			want := minKey(waiting)
			if got := q.pop().id; got != want.id {
				t.Fatalf("round %d: draining popped slot %d, want %d", round, got, want.id)
			}
			waiting = slices.DeleteFunc(waiting, func(k slotKey) bool { return k == want })
		}
	}
}

func minKey(ks []slotKey) slotKey {
	m := ks[0]
	for _, k := range ks[1:] {
		if k.less(m) {
			m = k
		}
	}
	return m
}

// How pipelineRun reads a trace: DecodeChrome into the Nester, DecodeChrome through
// decodePipelined (as Perfetto traces are read), or decodeChromeStaged (as Chrome
// traces are read).
type readMode int

const (
	readDirect readMode = iota
	readPipelined
	readStaged
)

func (m readMode) String() string { return [...]string{"direct", "pipelined", "staged"}[m] }

// pipelineRun nests a trace as mode says, recording what the visitor saw; visit may
// fail.
func pipelineRun(ctx context.Context, data []byte, mode readMode, visit func(*Nested) error) ([]Nested, *Stats, error) {
	got, _, st, err := pipelineMeta(ctx, data, mode, visit)
	return got, st, err
}

// pipelineMeta is pipelineRun that also returns the tracks and names announced.
func pipelineMeta(ctx context.Context, data []byte, mode readMode, visit func(*Nested) error) ([]Nested, *metaList, *Stats, error) {
	var got []Nested
	meta := &metaList{}
	nest := NewNester(NesterOptions{Window: 512, MaxHeld: 2048}, meta, func(s *Nested) error {
		got = append(got, retain(s))
		if visit != nil {
			return visit(s)
		}
		return nil
	})
	var st *Stats
	decode := func(ctx context.Context, sink Sink) (err error) {
		st, err = DecodeChrome(ctx, bytes.NewReader(data), 0, ChromeLimits{}, sink)
		return err
	}
	var err error
	switch mode {
	case readDirect:
		err = decode(ctx, nest)
	case readPipelined:
		err = decodePipelined(ctx, nest, decode)
	case readStaged:
		st, err = decodeChromeStaged(ctx, bytes.NewReader(data), 0, ChromeLimits{}, nest)
	}
	if err == nil {
		err = nest.Flush()
	}
	if len(meta.Tracks) == 0 && err == nil {
		return nil, nil, nil, fmt.Errorf("no tracks announced")
	}
	return got, meta, st, err
}

// metaList records the tracks and names a Nester forwards, in order.
type metaList struct {
	Tracks  []Track
	Threads [][3]any
	Procs   [][2]any
}

func (l *metaList) Track(t Track) { l.Tracks = append(l.Tracks, t) }
func (l *metaList) ThreadName(pid, tid int64, name string) {
	l.Threads = append(l.Threads, [3]any{pid, tid, name})
}
func (l *metaList) ProcessName(pid int64, name string) { l.Procs = append(l.Procs, [2]any{pid, name}) }

func pipelineTrace(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := WriteChromeTrace(&buf, 20_000, 4, 3); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPipelineMatchesDirect checks that decoding on a goroutine of its own yields the
// same slices, in the same order, and the same counts.
func TestPipelineMatchesDirect(t *testing.T) {
	check := func(t *testing.T, data []byte) *metaList {
		t.Helper()
		want, wmeta, wst, err := pipelineMeta(context.Background(), data, readDirect, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []readMode{readPipelined, readStaged} {
			got, gmeta, gst, err := pipelineMeta(context.Background(), data, mode, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gst, wst) {
				t.Fatalf("%s read differs: %d slices (want %d), stats %+v (want %+v)", mode, len(got), len(want), gst, wst)
			}
			if diff := cmp.Diff(wmeta, gmeta); diff != "" {
				t.Fatalf("%s tracks and names differ (-direct +%s):\n%s", mode, mode, diff)
			}
		}
		return wmeta
	}
	check(t, pipelineTrace(t))
	read, named := 0, 0
	for _, name := range corpusTraces {
		t.Run(name, func(t *testing.T) {
			b, err := io.ReadAll(openCorpus(t, name)) // skips without the corpus
			if err != nil {
				t.Fatal(err)
			}
			m := check(t, b)
			read++
			if len(m.Threads) > 0 && len(m.Procs) > 0 {
				named++
			}
		})
	}
	if read > 0 && named < 3 {
		t.Errorf("only %d corpus traces have both thread and process names to compare", named)
	}
}

// TestPipelineStops checks that a cancelled context and a failing visitor stop the
// decoder goroutine and return their error.
func TestPipelineStops(t *testing.T) {
	for _, mode := range []readMode{readPipelined, readStaged} {
		t.Run(mode.String(), func(t *testing.T) { pipelineStops(t, mode) })
	}
}

// spin keeps a slow visitor's loop from being optimized away.
var spin int

func pipelineStops(t *testing.T, mode readMode) {
	data := pipelineTrace(t)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := pipelineRun(ctx, data, mode, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	// Cancelled while reading, at many points and with a slow visitor, so that the
	// decoder is often waiting for an empty batch when it learns of it: what was
	// visited is a prefix of the whole read (no batch is handed over twice).
	all, _, err := pipelineRun(context.Background(), data, readDirect, nil)
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 40; it++ {
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		got, _, err := pipelineRun(ctx, data, mode, func(*Nested) error {
			if n++; n == 3000+it*13 {
				cancel()
			}
			for i := 0; i < 2000; i++ {
				spin += i
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("context cancelled while reading: %v", err)
		}
		if len(got) > len(all) || !reflect.DeepEqual(got, all[:len(got)]) {
			t.Fatalf("cancelled at slice %d: the %d slices visited are not the first of the read", 3000+it*13, len(got))
		}
	}
	boom := errors.New("sink failed")
	for _, at := range []int{1, 700, 5000} {
		n := 0
		got, _, err := pipelineRun(context.Background(), data, mode, func(*Nested) error {
			if n++; n == at {
				return boom
			}
			return nil
		})
		if err != boom || len(got) != at {
			t.Fatalf("failing visitor at %d: %v after %d slices", at, err, len(got))
		}
	}
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines after the reads, %d before", g, before)
	}
}

// TestOverlapsMatchesBig checks the window predicate against big-integer arithmetic
// at the ends of int64.
func TestOverlapsMatchesBig(t *testing.T) {
	vals := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 62, -5, -1, 0, 1, 5, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	for _, ts := range vals {
		for _, dur := range vals {
			for _, start := range vals {
				for _, end := range vals {
					want := dur >= 0 && ts < end && new(big.Int).Add(big.NewInt(ts), big.NewInt(dur)).Cmp(big.NewInt(start)) > 0
					if got := overlaps(ts, dur, start, end); got != want {
						t.Fatalf("overlaps(%d, %d, %d, %d) = %v, want %v", ts, dur, start, end, got, want)
					}
				}
			}
		}
	}
}

// TestStrCache checks the dispatcher's interning, cache first, on strings that collide in
// the cache, repeat in random order, are invalid UTF-8, or are too long to be cached.
func TestStrCache(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	var words [][]byte
	for i := 0; i < 5000; i++ {
		w := make([]byte, 1+rng.Intn([]int{7, 20, 300}[i%3]))
		for j := range w {
			w[j] = "ab\xff:"[rng.Intn(4)]
		}
		words = append(words, w)
	}
	d := &chromeDispatcher{intern: map[string]string{}}
	for i := 0; i < 50000; i++ {
		w := words[rng.Intn(len(words))]
		in := string(w)
		got := d.str(append([]byte(nil), w...))
		if want := strings.ToValidUTF8(in, "\uFFFD"); got != want {
			t.Fatalf("str(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIntArraysMatchesSkipValue checks the Input Dims fast capture against skipValue's
// capture on random arrays of integers with random whitespace, and on malformed ones:
// whatever intArrays accepts, skipValue accepts with the same text and end.
func TestIntArraysMatchesSkipValue(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ws := func() string { return []string{"", "", " ", "\n  ", "\t"}[rng.Intn(5)] }
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth > 0 && (depth >= 4 || rng.Intn(3) == 0) {
			return []string{"0", "7", "-3", "1024", "9223372036854775807", "01", "1.5", "2e3", "-", "x", `"s"`}[rng.Intn(11)]
		}
		n := rng.Intn(4)
		out := "[" + ws()
		for i := 0; i < n; i++ {
			if i > 0 {
				out += ws() + "," + ws()
			}
			out += gen(depth + 1)
		}
		if rng.Intn(20) == 0 {
			out += ","
		}
		return out + ws() + "]"
	}
	accepted := 0
	for i := 0; i < 20000; i++ {
		text := gen(0)
		for _, tail := range []string{"}", ""} {
			in := []byte(text + tail)
			got, end, ok := intArrays(in, 0, []byte("x"), 3, 6)
			if !ok {
				if string(got) != "x" {
					t.Fatalf("%q: refused, but dst changed to %q", in, got)
				}
				continue
			}
			accepted++
			s := &scanner{buf: in, end: len(in), eof: true}
			want := []byte("x")
			if err := s.skipValue(3, 6, &want); err != nil {
				t.Fatalf("%q: intArrays accepts %q, skipValue fails: %v", in, got, err)
			}
			if string(got) != string(want) || end != s.pos {
				t.Fatalf("%q: intArrays %q end %d, skipValue %q end %d", in, got, end, want, s.pos)
			}
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d of the random arrays took the fast path", accepted)
	}
}
