package preview

import (
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
