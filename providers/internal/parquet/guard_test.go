package parquet

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"
)

// readAll reads every record of f.
func readAll(f *File) error {
	rr := f.Rows()
	for {
		if _, err := rr.Read(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// TestGuard: the pages a file's readers read count against its bound before they are
// allocated, pages skipped unread do not, and a done context ends the read at the next
// page.
func TestGuard(t *testing.T) {
	type row struct {
		S string `parquet:"s"`
	}
	rows := make([]row, 2000)
	for i := range rows {
		rows[i].S = strings.Repeat("x", 100) + string(rune('a'+i%26))
	}
	data := write(t, rows, pq.PageBufferSize(4096), pq.Compression(&pq.Zstd))
	open := func() *File { return openBytes(t, data) }

	f := open()
	f.Guard(context.Background(), 0)
	if err := readAll(f); err != nil {
		t.Fatalf("no bound: %v", err)
	}
	pages := f.decoded

	f = open()
	f.Guard(context.Background(), pages/2)
	var lim *LimitError
	if err := readAll(f); !errors.As(err, &lim) || lim.Record || lim.Limit != pages/2 || f.decoded > pages/2 {
		t.Fatalf("bound %d: %v, %d bytes decoded", pages/2, err, f.decoded)
	}

	f = open()
	f.Guard(context.Background(), pages/2)
	// The data pages are skipped unread (a dictionary page before them is read).
	if err := f.Rows().SeekToRow(int64(len(rows)) - 1); err != nil || f.decoded*4 > pages {
		t.Fatalf("seek: %v, %d of %d bytes decoded", err, f.decoded, pages)
	}

	f = open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Guard(ctx, 0)
	if err := readAll(f); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestRecordBytes: one dictionary value repeated in a record's list counts each time it
// is copied into the record.
func TestRecordBytes(t *testing.T) {
	type row struct {
		L []string `parquet:"l,list,dict"`
	}
	long := strings.Repeat("y", 1000)
	data := write(t, []row{{L: []string{long, long, long}}, {L: []string{long}}})
	defer func(n int) { recordBytes = n }(recordBytes)
	recordBytes = 2500
	rr := openBytes(t, data).Rows()
	var lim *LimitError
	if _, err := rr.Read(); !errors.As(err, &lim) || !lim.Record || lim.Limit != 2500 {
		t.Fatalf("3,000 bytes: %v", err)
	}
	recordBytes = 3000
	rr = openBytes(t, data).Rows()
	if _, err := rr.Read(); err != nil {
		t.Fatalf("3,000 bytes at the bound: %v", err)
	}
}
