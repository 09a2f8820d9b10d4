package ncu

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// rawPage writes (once, kept in testtool.BenchDir) an ncu --csv raw page of launches rows
// of metrics metric columns, with a units row and values with thousands separators.
func rawPage(b *testing.B, launches, metrics int) string {
	b.Helper()
	path := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-ncu-raw-%dx%d.csv", launches, metrics))
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return path
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i, c := range launchColumns {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "%q", c)
	}
	for m := 0; m < metrics; m++ {
		fmt.Fprintf(w, `,"unit%d__metric_%d.sum"`, m%40, m)
	}
	w.WriteString("\n" + `"","","","","","","","","","",""`)
	for m := 0; m < metrics; m++ {
		w.WriteString([]string{`,"cycle"`, `,"%"`, `,"byte"`, `,""`}[m%4])
	}
	w.WriteByte('\n')
	for l := 0; l < launches; l++ {
		fmt.Fprintf(w, `"%d","581","k","127.0.0.1","kernel_%d(int, float *)","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0"`, l, l%7)
		for m := 0; m < metrics; m++ {
			switch m % 3 {
			case 0:
				fmt.Fprintf(w, `,"%d,%03d,%03d"`, l%100, m%1000, (l*m)%1000)
			case 1:
				fmt.Fprintf(w, `,"%d.%02d"`, m, l%100)
			default:
				w.WriteString(`,"n/a"`)
			}
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkRawPage decodes a raw page of 10,000 launches x 500 metrics (5,000,000
// measurements; the first 100,001 are kept for paging, the rest counted).
func BenchmarkRawPage(b *testing.B) {
	path := rawPage(b, 10_000, 500)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var peak uint64
	for i := 0; i < b.N; i++ {
		p := testtool.PeakHeap(func() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			r := newReport()
			if err := decodePage(context.Background(), f, 0, keepAll, r); err != nil {
				b.Fatal(err)
			}
			if r.metrics != 5_000_000 || len(r.launches) != 10_000 {
				b.Fatalf("metrics %d launches %d", r.metrics, len(r.launches))
			}
		})
		peak = max(peak, p)
	}
	b.ReportMetric(testtool.MiB(peak), "peak-heap-MiB")
}
