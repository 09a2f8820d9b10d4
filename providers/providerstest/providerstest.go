// Package providerstest is the test harness the evidence families share: it builds an
// input, runs an analyzer with the default limits, and pages every row of an analysis
// the way a client does, checking the paging contract as it goes. Only tests import it.
package providerstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Input is the input of the file or directory at path, read as format, with its size.
func Input(t testing.TB, path string, format gen.Format) providers.Input {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("input: %v", err)
	}
	return providers.Input{Path: path, Format: format, Size: st.Size()}
}

// Analyze runs op on inputs (indexed in order) with fields (a zero F when nil) and
// gen.LimitDefaults.
func Analyze[F any](t testing.TB, op func(context.Context, *providers.Request[F]) (*providers.Analysis, error), fields *F, inputs ...providers.Input) (*providers.Analysis, error) {
	t.Helper()
	return AnalyzeLimits(t, op, fields, gen.LimitDefaults, inputs...)
}

// AnalyzeLimits is Analyze under limits.
func AnalyzeLimits[F any](t testing.TB, op func(context.Context, *providers.Request[F]) (*providers.Analysis, error), fields *F, limits gen.EffectiveLimits, inputs ...providers.Input) (*providers.Analysis, error) {
	t.Helper()
	if fields == nil {
		fields = new(F)
	}
	in := make([]providers.Input, len(inputs))
	for i, x := range inputs {
		x.Index = i
		in[i] = x
	}
	return op(context.Background(), &providers.Request[F]{Fields: fields, Inputs: in, Limits: limits})
}

// Rows pages every row of rows in pages of step rows, from offset 0 to the page that
// reports no more, and returns them in order. It fails t when a page holds more than
// step rows, when a page's Observed is not where the next page starts (plus its
// look-ahead), when the pages differ from the same rows read in one page, or when the
// offset past a non-empty population is not an *providers.OffsetError.
func Rows(t testing.TB, rows providers.Rows, step int64) []json.RawMessage {
	t.Helper()
	if step < 1 {
		t.Fatalf("rows: step %d", step)
	}
	out := walk(t, rows, step)
	n := int64(len(out))
	if n > step {
		whole := walk(t, rows, n)
		if len(whole) != len(out) {
			t.Fatalf("rows: %d rows in pages of %d, %d in one page", n, step, len(whole))
		}
		for i := range out {
			if !bytes.Equal(out[i], whole[i]) {
				t.Fatalf("rows: row %d in pages of %d is %s, in one page %s", i, step, out[i], whole[i])
			}
		}
	}
	if n > 0 {
		_, err := rows.Page(context.Background(), n, step, all)
		if oe := (*providers.OffsetError)(nil); !errors.As(err, &oe) {
			t.Fatalf("rows: page at the end offset %d: want *providers.OffsetError, got %v", n, err)
		}
	}
	return out
}

// walk follows pages of step rows from offset 0 until a page reports no more.
func walk(t testing.TB, rows providers.Rows, step int64) []json.RawMessage {
	t.Helper()
	out := []json.RawMessage{}
	for offset := int64(0); ; {
		p, err := rows.Page(context.Background(), offset, step, all)
		if err != nil {
			t.Fatalf("rows: page at %d: %v", offset, err)
		}
		got := int64(len(p.Rows))
		if got > step {
			t.Fatalf("rows: page at %d holds %d rows, asked %d", offset, got, step)
		}
		next := offset + got
		if want := next + b2i(p.More); p.Observed != want {
			t.Errorf("rows: page at %d of %d rows (more %v) observed %d, want %d", offset, got, p.More, p.Observed, want)
		}
		out = append(out, p.Rows...)
		if !p.More {
			return out
		}
		if got < step {
			t.Fatalf("rows: page at %d holds %d rows of %d asked and reports more", offset, got, step)
		}
		offset = next
	}
}

func all(json.RawMessage) bool { return true }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Decode decodes each row into a T, refusing fields T does not have.
func Decode[T any](t testing.TB, raws []json.RawMessage) []T {
	t.Helper()
	out := make([]T, len(raws))
	for i, r := range raws {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("row %d %s: %v", i, r, err)
		}
	}
	return out
}

// Maps decodes each row into a generic JSON object.
func Maps(t testing.TB, raws []json.RawMessage) []map[string]any {
	t.Helper()
	return Decode[map[string]any](t, raws)
}
