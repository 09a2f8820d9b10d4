package providerstest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// numbers is n rows, 0 through n-1, each encoded as its index.
func numbers(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(strconv.Itoa(i))
	}
	return out
}

// faulty is the projection of n rows whose pages after the first start shift rows
// early (a repeat when negative, a skip when positive).
type faulty struct {
	n     int
	shift int64
}

func (f faulty) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	if offset > 0 {
		offset += f.shift
	}
	return providers.Project(f.n, func(i int) int { return i }).Page(ctx, offset, limit, fits)
}

// lying is the projection of n rows whose pages hold one row more than asked.
type lying struct{ n int }

func (l lying) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	return providers.Project(l.n, func(i int) int { return i }).Page(ctx, offset, limit+1, fits)
}

// endless answers every offset, the end included, with an empty last page.
type endless struct{}

func (endless) Page(context.Context, int64, int64, func(json.RawMessage) bool) (*providers.Page, error) {
	return &providers.Page{Rows: []json.RawMessage{json.RawMessage("0")}, Observed: 1}, nil
}

// recorder is a testing.TB that records failures; Fatal ends the calling goroutine.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// failures runs fn with a recorder in its own goroutine and returns what it reported.
func failures(fn func(t testing.TB)) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.msgs
}

func TestRowsPagesEveryRowInOrder(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		for _, step := range []int64{1, 3, int64(n), int64(n) + 1} {
			if step < 1 {
				continue
			}
			t.Run(fmt.Sprintf("%d rows in steps of %d", n, step), func(t *testing.T) {
				got := Rows(t, providers.Project(n, func(i int) int { return i }), step)
				if want := numbers(n); !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("rows %s, want %s", got, want)
				}
			})
		}
	}
}

func TestRowsCatchesBrokenPaging(t *testing.T) {
	for _, c := range []struct {
		name string
		rows providers.Rows
		step int64
	}{
		{"repeats a row", faulty{n: 7, shift: -1}, 3},
		{"skips a row", faulty{n: 7, shift: 1}, 3},
		{"repeats in steps of one", faulty{n: 4, shift: -1}, 1},
		{"holds more than asked", lying{n: 7}, 3},
		{"answers past the end", endless{}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if msgs := failures(func(tb testing.TB) { Rows(tb, c.rows, c.step) }); len(msgs) == 0 {
				t.Error("no failure reported")
			} else {
				t.Log(msgs)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	raws := []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)}
	if got := Maps(t, raws); len(got) != 2 || got[1]["a"] != 2.0 {
		t.Errorf("maps %v", got)
	}
	type row struct{ A int }
	if got := Decode[row](t, raws); !slices.Equal(got, []row{{1}, {2}}) {
		t.Errorf("rows %v", got)
	}
	if msgs := failures(func(tb testing.TB) {
		Decode[row](tb, []json.RawMessage{json.RawMessage(`{"a":1,"b":2}`)})
	}); len(msgs) == 0 {
		t.Error("an unknown field is decoded")
	}
}

func TestAnalyzeIndexesInputsUnderDefaultLimits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := Input(t, p, gen.FormatCoverage)
	if in.Size != 5 || in.Path != p || in.Format != gen.FormatCoverage {
		t.Fatalf("input %+v", in)
	}
	var req *providers.Request[gen.NoFields]
	op := func(_ context.Context, r *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
		req = r
		return &providers.Analysis{}, nil
	}
	if _, err := Analyze(t, op, nil, in, in); err != nil {
		t.Fatal(err)
	}
	if req.Fields == nil || req.Limits != gen.LimitDefaults || len(req.Inputs) != 2 || req.Inputs[0].Index != 0 || req.Inputs[1].Index != 1 {
		t.Errorf("request %+v", req)
	}
	if msgs := failures(func(tb testing.TB) { Input(tb, filepath.Join(t.TempDir(), "absent"), gen.FormatCoverage) }); len(msgs) == 0 {
		t.Error("an absent input is admitted")
	}
}
