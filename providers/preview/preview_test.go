package preview

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

func TestProjectValue(t *testing.T) {
	tests := map[string]string{
		`{"a": 9007199254740991}`:         `{"a":9007199254740991}`,
		`{"a": 9007199254740992}`:         `{"a":"9007199254740992"}`,
		`[-9007199254740993, 1.5, 1e400]`: `["-9007199254740993",1.5,"Infinity"]`,
		`{"s": "12345678901234567890"}`:   `{"s":"12345678901234567890"}`,
		`1694039959000000`:                `1694039959000000`,
	}
	for in, want := range tests {
		got, err := projectValue(jsontext.Value(in))
		if err != nil || string(got) != want {
			t.Errorf("projectValue(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func TestReadAcrossSourcesAndOffsets(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	b := filepath.Join(dir, "b.txt")
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(a, []byte("1\n2\n3\n"), 0o644)
	os.WriteFile(b, []byte("4\n5"), 0o644)
	os.WriteFile(empty, nil, 0o644)
	srcs := []Source{{Path: a, Format: contracts.FormatText}, {Path: empty, Format: contracts.FormatText}, {Path: b, Format: contracts.FormatText}}
	tests := []struct {
		offset   int64
		max      int
		rows     int
		complete bool
		observed int64
	}{
		{0, 10, 5, true, 5},
		{0, 3, 3, false, 4},
		{2, 2, 2, false, 5},
		{3, 2, 2, true, 5},
		{4, 1, 1, true, 5},
	}
	for _, tt := range tests {
		p, err := Read(context.Background(), srcs, Options{Offset: tt.offset, MaxRows: tt.max})
		if err != nil {
			t.Fatalf("offset %d: %v", tt.offset, err)
		}
		if len(p.Rows) != tt.rows || p.Complete != tt.complete || p.Observed != tt.observed {
			t.Errorf("offset %d max %d: rows %d complete %v observed %d", tt.offset, tt.max, len(p.Rows), p.Complete, p.Observed)
		}
	}
	for _, off := range []int64{5, 6, 1000} {
		_, err := Read(context.Background(), srcs, Options{Offset: off, MaxRows: 1})
		var oe *providers.OffsetError
		if !errors.As(err, &oe) || oe.Available != 5 {
			t.Errorf("offset %d: err = %v", off, err)
		}
	}
}

func TestLongLineNeedsFragments(t *testing.T) {
	p := filepath.Join(t.TempDir(), "long.txt")
	os.WriteFile(p, make([]byte, MaxTextLineBytes+10), 0o644)
	_, err := Read(context.Background(), []Source{{Path: p, Format: contracts.FormatText}}, Options{MaxRows: 1})
	var le *providers.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v", err)
	}
	page, err := Read(context.Background(), []Source{{Path: p, Format: contracts.FormatText}}, Options{MaxRows: 2, FragmentChars: 4096})
	if err != nil || len(page.Rows) != 2 || page.Complete {
		t.Fatalf("fragments: %v %+v", err, page)
	}
}

// gzipOfBlankLines writes n blank lines, gzip-compressed: a few kilobytes that expand to
// n bytes.
func gzipOfBlankLines(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "blank.jsonl.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	chunk := bytes.Repeat([]byte("\n"), 1<<20)
	for written := 0; written < n; written += len(chunk) {
		zw.Write(chunk)
	}
	zw.Close()
	f.Close()
	return p
}

// TestReadStopsAtTheDecompressedBound: a small gzip of blank lines cannot make a page
// read past the decompressed byte bound.
func TestReadStopsAtTheDecompressedBound(t *testing.T) {
	p := gzipOfBlankLines(t, 64<<20)
	_, err := Read(context.Background(), []Source{{Path: p, Format: contracts.FormatJsonl}}, Options{MaxRows: 10, MaxSourceBytes: 4 << 20})
	var le *providers.LimitError
	if !errors.As(err, &le) || le.Limit != 4<<20 {
		t.Fatalf("err = %v", err)
	}
}

// cancelAfter is a context whose Err reports cancellation from its n-th call on: the
// request is cancelled while the page is being read.
type cancelAfter struct {
	context.Context
	calls, n int
}

func (c *cancelAfter) Err() error {
	c.calls++
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

// TestReadObservesItsContext: a page read stops when its request is cancelled, even inside
// a loop over blank lines that yields no row.
func TestReadObservesItsContext(t *testing.T) {
	p := gzipOfBlankLines(t, 64<<20)
	ctx := &cancelAfter{Context: context.Background(), n: 4}
	_, err := Read(ctx, []Source{{Path: p, Format: contracts.FormatJsonl}}, Options{MaxRows: 10})
	if !errors.Is(err, context.Canceled) || ctx.calls != 4 {
		t.Fatalf("err = %v after %d checks", err, ctx.calls)
	}
}
