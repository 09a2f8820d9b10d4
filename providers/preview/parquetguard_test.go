package preview

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// parquetOfStrings writes n rows of 100-byte strings in pages of 4 KiB, zstd compressed.
func parquetOfStrings(t *testing.T, n int) Source {
	type row struct {
		S string `parquet:"s"`
	}
	rows := make([]row, n)
	for i := range rows {
		rows[i].S = strings.Repeat("x", 99) + string(rune('a'+i%26))
	}
	p := filepath.Join(t.TempDir(), "s.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f, parquet.PageBufferSize(4096), parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Path: p, Format: contracts.FormatParquet, Size: st.Size()}
}

// TestParquetReadStopsAtTheDecompressedBound: a Parquet source's pages count against the
// page's decompressed byte bound, as a gzip stream's bytes do.
func TestParquetReadStopsAtTheDecompressedBound(t *testing.T) {
	src := parquetOfStrings(t, 5000)
	_, err := Read(context.Background(), []Source{src}, Options{MaxRows: 5000, MaxSourceBytes: 64 << 10})
	var le *providers.LimitError
	if !errors.As(err, &le) || le.Limit != 64<<10 {
		t.Fatalf("err = %v", err)
	}
	if _, err := Read(context.Background(), []Source{src}, Options{MaxRows: 5000, MaxSourceBytes: 64 << 20}); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
}

// TestParquetReadObservesItsContext: a Parquet page read stops when its request is
// cancelled, also while it seeks to its offset.
func TestParquetReadObservesItsContext(t *testing.T) {
	src := parquetOfStrings(t, 5000)
	for _, offset := range []int64{0, 4000} {
		ctx := &cancelAfter{Context: context.Background(), n: 4}
		_, err := Read(ctx, []Source{src}, Options{Offset: offset, MaxRows: 100})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("offset %d: err = %v after %d checks", offset, err, ctx.calls)
		}
	}
}
