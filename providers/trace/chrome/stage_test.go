package chrome

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// callLog is a Sink and Opener that writes down every call, in order, with every
// argument; its failAt-th Slice call (from 1; 0: none) fails with errCallLog.
type callLog struct {
	calls  []string
	slices int
	failAt int
}

var errCallLog = errors.New("sink failed")

func (l *callLog) Slice(e *tracemodel.Event) error {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	num := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	a := e.Args
	l.calls = append(l.calls, fmt.Sprintf("slice %d %d %d %d %q %q %s file=%q shapes=%q line=%s bytes=%s corr=%s dev=%s stream=%s ext=%s",
		e.ID, e.TS, e.Dur, e.Track, e.Name, e.Category, e.Phase, str(a.Filename), str(a.InputShapes),
		num(a.Line), num(a.AllocationBytes), num(a.CorrelationID), num(a.Device), num(a.Stream), num(a.ExternalID)))
	if l.slices++; l.slices == l.failAt {
		return errCallLog
	}
	return nil
}
func (l *callLog) Track(t tracemodel.Track) { l.calls = append(l.calls, fmt.Sprintf("track %+v", t)) }
func (l *callLog) ThreadName(pid, tid int64, name string) {
	l.calls = append(l.calls, fmt.Sprintf("thread %d %d %q", pid, tid, name))
}
func (l *callLog) ProcessName(pid int64, name string) {
	l.calls = append(l.calls, fmt.Sprintf("process %d %q", pid, name))
}
func (l *callLog) Open(id, track, ts int64) {
	l.calls = append(l.calls, fmt.Sprintf("open %d %d %d", id, track, ts))
}
func (l *callLog) Close(id int64) { l.calls = append(l.calls, fmt.Sprintf("close %d", id)) }

// sameStaged decodes with Decode and DecodeStaged, each into a callLog that
// fails at failAt, reading through reader, and fails t unless the two make the same
// calls in the same order, count the same and return the same error.
func sameStaged(t testing.TB, what string, reader func() io.Reader, lim Limits, failAt int) error {
	t.Helper()
	plain := &callLog{failAt: failAt}
	st, err := Decode(context.Background(), reader(), 0, lim, plain)
	staged := &callLog{failAt: failAt}
	sst, serr := DecodeStaged(context.Background(), reader(), 0, lim, staged)
	if !reflect.DeepEqual(serr, err) {
		t.Fatalf("%s: staged read returns %#v, the plain one %#v", what, serr, err)
	}
	if diff := cmp.Diff(st, sst); diff != "" {
		t.Fatalf("%s: staged counts differ (-plain +staged):\n%s", what, diff)
	}
	if diff := cmp.Diff(plain.calls, staged.calls); diff != "" {
		t.Fatalf("%s: staged calls differ (-plain +staged):\n%.3000s", what, diff)
	}
	return err
}

// randomEvent writes a Trace Event of a random phase, with random members in random
// order: ids, id2 objects, scopes, arguments of every kind the decoder reads, escapes,
// long names (so that batches hand over on their text as well as on their count) and
// values the decoder refuses now and then.
func randomEvent(rng *rand.Rand, b *strings.Builder, i int) {
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	var m []string
	if ph := pick("X", "X", "X", "B", "E", "b", "e", "n", "M", "i", "C", "s", "", "XX"); ph != "" || rng.Intn(2) == 0 {
		m = append(m, fmt.Sprintf(`"ph":%q`, ph))
	}
	if rng.Intn(4000) > 0 {
		m = append(m, fmt.Sprintf(`"ts":%d.%03d`, i*3+rng.Intn(5), rng.Intn(1000)))
	}
	if rng.Intn(2) == 0 {
		m = append(m, fmt.Sprintf(`"dur":%d`, rng.Intn(20)-1))
	}
	if rng.Intn(4) > 0 {
		name := pick("thread_name", "process_name", "a", `b\u00e9`, `c\"d`, "\xff")
		if rng.Intn(300) == 0 {
			name = strings.Repeat("L", 30000)
		}
		m = append(m, fmt.Sprintf(`"name":"%s"`, name))
	}
	if rng.Intn(2) == 0 {
		m = append(m, fmt.Sprintf(`"cat":"c%d"`, rng.Intn(3)))
	}
	m = append(m, fmt.Sprintf(`"pid":%d`, rng.Intn(3)), fmt.Sprintf(`"tid":%s`, pick(`"1"`, "2", `"main"`, "null")))
	switch rng.Intn(4) {
	case 0:
		m = append(m, fmt.Sprintf(`"id":%s`, pick("1", `"0x2"`, "3.5")))
	case 1:
		m = append(m, fmt.Sprintf(`"id2":{"global":"g%d"}`, rng.Intn(3)))
	case 2:
		m = append(m, fmt.Sprintf(`"id2":{"local":%d}`, rng.Intn(3)), fmt.Sprintf(`"scope":"s%d"`, rng.Intn(2)))
	}
	if rng.Intn(3) > 0 {
		var args []string
		for _, a := range []string{`"File":"f.py"`, `"Input Dims":[[4,2],[]]`, `"name":"main"`, `"name":7`, `"Line":12`,
			`"stream":7`, `"External id":99`, `"correlation":"x"`, `"device":-1`, `"x":"\u0041\n"`, `"Bytes":1e3`} {
			if rng.Intn(4) == 0 {
				args = append(args, a)
			}
		}
		m = append(m, `"args":{`+strings.Join(args, ",")+`}`)
	}
	rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	b.WriteString("{" + strings.Join(m, ",") + "}")
}

// errAfter returns the bytes of r up to n, then an error.
type errAfter struct {
	r io.Reader
	n int
}

func (e *errAfter) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, errors.New("read failed")
	}
	p = p[:min(len(p), e.n)]
	k, err := e.r.Read(p)
	e.n -= k
	return k, err
}

// TestStagedMatchesPlain decodes random traces of up to several thousand events (many
// batches) both ways: with and without their closing bracket, with a corrupted byte,
// under small limits, into a sink that fails at a random slice, and through readers
// that return little at a time or fail part way.
func TestStagedMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	rounds := 150
	if testing.Short() {
		rounds = 20
	}
	for round := 0; round < rounds; round++ {
		var b strings.Builder
		b.WriteString("[")
		n := rng.Intn(5000)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			randomEvent(rng, &b, i)
		}
		if rng.Intn(3) > 0 {
			b.WriteString("]")
		}
		src := []byte(b.String())
		if rng.Intn(4) == 0 && len(src) > 1 {
			src[rng.Intn(len(src))] = `{}[],:x"1`[rng.Intn(9)]
		}
		var lim Limits
		if rng.Intn(4) == 0 {
			lim = Limits{MaxTracks: 1 + rng.Intn(8), MaxOpenPerTrack: 1 + rng.Intn(20), MaxEvents: int64(1 + rng.Intn(n+1))}
		}
		failAt := 0
		if rng.Intn(2) == 0 {
			failAt = 1 + rng.Intn(n+1)
		}
		reader := func() io.Reader { return bytes.NewReader(src) }
		switch cut := rng.Intn(len(src) + 1); rng.Intn(4) {
		case 1:
			reader = func() io.Reader { return iotest.HalfReader(bytes.NewReader(src)) }
		case 2:
			reader = func() io.Reader { return &errAfter{bytes.NewReader(src), cut} }
		}
		sameStaged(t, fmt.Sprintf("round %d (%d events, %d bytes)", round, n, len(src)), reader, lim, failAt)
	}
}

// TestStageHandsOverOnce: a flush that has handed its batch over and then finds the
// read cancelled while it waits for an empty one leaves no batch current, so that the
// parser's last hand-over does not deliver that batch's events a second time.
func TestStageHandsOverOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	full := make(chan *eventBatch) // unbuffered: the send completes before the cancel
	st := &eventStage{ctx: ctx, cur: &eventBatch{}, made: stageDepth + 1, full: full, free: make(chan *eventBatch, 1)}
	e := &parsedEvent{ph: []byte("X"), name: []byte("a")}
	text := e.kept()
	st.cur.add(e, &text)
	got := make(chan *eventBatch, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		got <- <-full
		cancel() // while flush waits for an empty batch, which never comes
		for b := range full {
			got <- b
		}
	}()
	if err := st.flush(); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush: %v, want the cancellation", err)
	}
	if st.cur != nil {
		t.Fatal("the batch handed over is still the current one")
	}
	if err := st.send(); err != nil {
		t.Fatalf("send after the failed flush: %v", err)
	}
	close(full)
	<-done
	if n := len(got); n != 1 {
		t.Fatalf("%d batches handed over, want 1", n)
	}
}
