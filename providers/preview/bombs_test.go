package preview

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// maxBombHeap is the heap a reader may grow to on a hostile input before failing: far
// above what MaxRecordBytes allows, far below what the bombs expand to.
const maxBombHeap = 256 << 20

// gzipMember compresses b as one gzip member.
func gzipMember(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// bomb writes a multi-member gzip file, head then fill repeated n times then tail
// (gzip readers concatenate members): a few hundred KB that decompress to n*len(fill)
// bytes, built without compressing them.
func bomb(t *testing.T, name, head string, fill []byte, n int, tail string) string {
	t.Helper()
	var b bytes.Buffer
	b.Write(gzipMember(t, []byte(head)))
	m := gzipMember(t, fill)
	for range n {
		b.Write(m)
	}
	b.Write(gzipMember(t, []byte(tail)))
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes, %d MiB decompressed", name, b.Len(), (len(head)+n*len(fill)+len(tail))>>20)
	return p
}

// Issue 21: a small .json.gz or .jsonl.gz holding one string of 512 MiB (or as much
// whitespace) fails at MaxRecordBytes while the token is read, whether its entry is
// materialized or skipped, before the reader buffers the token whole.
func TestHugeTokenBombs(t *testing.T) {
	a := bytes.Repeat([]byte{'a'}, 1<<20)
	sp := bytes.Repeat([]byte{' '}, 1<<20)
	const n = 512
	tests := []struct {
		name, head string
		fill       []byte
		tail       string
		format     contracts.Format
		offset     int64
	}{
		{"array.json.gz", `[1,"`, a, `"]`, contracts.FormatJSON, 0},
		{"array-skipped.json.gz", `[1,"`, a, `",2]`, contracts.FormatJSON, 2},
		{"member.json.gz", `{"a":1,"s":"`, a, `"}`, contracts.FormatJSON, 0},
		{"key.json.gz", `{"a":1,"`, a, `":1}`, contracts.FormatJSON, 0},
		{"nested-skipped.json.gz", `{"a":1,"o":{"s":"`, a, `"},"b":2}`, contracts.FormatJSON, 2},
		{"whitespace.json.gz", `[1,`, sp, `2]`, contracts.FormatJSON, 0},
		{"record.jsonl.gz", "1\n\"", a, "\"\n", contracts.FormatJsonl, 0},
		{"record-skipped.jsonl.gz", "1\n\"", a, "\"\n2\n", contracts.FormatJsonl, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := bomb(t, tt.name, tt.head, tt.fill, n, tt.tail)
			src := Source{Path: p, Format: tt.format, SHA256: "x"}
			var err error
			peak := testtool.PeakHeap(func() {
				_, err = Read(context.Background(), []Source{src}, Options{Offset: tt.offset, MaxRows: 10})
			})
			var lim *providers.LimitError
			if !errors.As(err, &lim) || lim.Limit != MaxRecordBytes || lim.Unit != "bytes" {
				t.Fatalf("got %T %v, want the MaxRecordBytes LimitError", err, err)
			}
			t.Logf("%v (peak heap %d MiB)", lim, peak>>20)
			if !testtool.Race && peak > maxBombHeap {
				t.Errorf("peak heap %d MiB, want below %d MiB", peak>>20, maxBombHeap>>20)
			}
		})
	}
}

// Entries and tokens up to MaxRecordBytes still read: the bound is on one entry (or, when
// skipped, one token), not on the document.
func TestLargeTokensWithinBound(t *testing.T) {
	s := strings.Repeat("a", MaxRecordBytes-8)
	for _, doc := range []string{
		`["` + s + `"]`,
		`[1,"` + s + `","` + s + `",2]`,
		`{"o":{"x":"` + s + `","y":"` + s + `"},"b":"` + s + `"}`,
	} {
		p := filepath.Join(t.TempDir(), "doc.json")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		page, err := Read(context.Background(), []Source{{Path: p, Format: contracts.FormatJSON, SHA256: "x"}}, Options{MaxRows: 10})
		if err != nil {
			t.Fatalf("document of %d bytes: %v", len(doc), err)
		}
		if !page.Complete || len(page.Rows) == 0 {
			t.Fatalf("document of %d bytes: %d rows, complete %v", len(doc), len(page.Rows), page.Complete)
		}
	}
}
