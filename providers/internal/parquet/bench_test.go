package parquet

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	pq "github.com/parquet-go/parquet-go"
)

// benchFile is a file of 20,000 flat rows in row groups of 2,000, snappy-compressed.
func benchFile(b *testing.B) []byte {
	r := rand.New(rand.NewPCG(7, 8))
	return write(b, genFlat(r, 20000, false), pq.MaxRowsPerRowGroup(2000), pq.Compression(&pq.Snappy))
}

func BenchmarkColumns(b *testing.B) {
	data := benchFile(b)
	b.Run("ours", func(b *testing.B) {
		buf := make([]Value, 512)
		for b.Loop() {
			f, err := Open(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			for g := range f.RowGroups {
				for c := range f.Columns {
					r, _ := f.Column(g, c)
					for {
						if _, err := r.Read(buf); err != nil {
							break
						}
					}
				}
			}
		}
	})
	b.Run("parquet-go", func(b *testing.B) {
		buf := make([]pq.Value, 512)
		for b.Loop() {
			f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			for _, rg := range f.RowGroups() {
				for _, c := range rg.ColumnChunks() {
					r := pq.NewColumnChunkValueReader(c)
					for {
						if _, err := r.ReadValues(buf); err != nil {
							break
						}
					}
					r.Close()
				}
			}
		}
	})
}

func BenchmarkRecords(b *testing.B) {
	data := benchFile(b)
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			f, _ := Open(bytes.NewReader(data), int64(len(data)))
			rr := f.Rows()
			for {
				if _, err := rr.Read(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("parquet-go", func(b *testing.B) {
		for b.Loop() {
			f, _ := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
			r := pq.NewReader(f)
			for {
				m := map[string]any{}
				if err := r.Read(&m); err != nil {
					break
				}
			}
		}
	})
}
