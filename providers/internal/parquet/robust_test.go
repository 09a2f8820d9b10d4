package parquet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	pq "github.com/parquet-go/parquet-go"
)

// readAllOf opens data and reads every column and every record (at most 300,000 values
// in all and 200 records: a few bytes of RLE runs may count billions), returning the
// first error; it must never panic.
// readAllOf reads data's columns and some of its records under a Guard of
// maxFuzzDecoded bytes, as preview reads under its source bound.
// maxFuzzDecoded is the decompressed page bytes readAllOf allows.
const maxFuzzDecoded = 16 << 20

func readAllOf(data []byte) error {
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	f.Guard(context.Background(), maxFuzzDecoded)
	buf := make([]Value, 50)
	read := 0
	for g := range f.RowGroups {
		for c := range f.Columns {
			r, err := f.Column(g, c)
			if err != nil {
				return err
			}
			for read < 300_000 {
				n, err := r.Read(buf)
				if err != nil {
					if !errors.Is(err, io.EOF) {
						return err
					}
					break
				}
				read += n
			}
		}
	}
	rr := f.Rows()
	if err := rr.SeekToRow(min(f.NumRows/2, 1000)); err != nil {
		return err
	}
	for range 200 {
		if _, err := rr.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// smallFiles are small files of each shape and codec, seeds for the robustness tests.
func smallFiles(t testing.TB) [][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	small := func(o ...pq.WriterOption) []pq.WriterOption {
		return append([]pq.WriterOption{pq.PageBufferSize(128), pq.MaxRowsPerRowGroup(5)}, o...)
	}
	return [][]byte{
		write(t, genFlat(r, 8, false), small(pq.Compression(&pq.Snappy))...),
		write(t, genDict(r, 8), small(pq.DataPageVersion(1))...),
		write(t, genNested(r, 8), small(pq.Compression(&pq.Lz4Raw), pq.DataPageVersion(2))...),
		write(t, genNested(r, 6), small(pq.Compression(&pq.Zstd))...),
		write(t, genFlat(r, 6, false), small(pq.DefaultEncodingFor(pq.ByteArray, &pq.DeltaByteArray), pq.DefaultEncodingFor(pq.Int64, &pq.DeltaBinaryPacked), pq.Compression(&pq.Gzip))...),
	}
}

func TestTruncatedAndCorrupted(t *testing.T) {
	for i, data := range smallFiles(t) {
		if err := readAllOf(data); err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		step := 1
		if testing.Short() {
			step = 7
		}
		for n := 0; n < len(data); n += step {
			if err := readAllOf(data[:n]); err == nil {
				t.Errorf("file %d cut at %d of %d: no error", i, n, len(data))
			}
		}
		r := rand.New(rand.NewPCG(uint64(i), 9))
		for range 300 {
			c := bytes.Clone(data)
			for range 1 + r.IntN(3) {
				c[r.IntN(len(c))] = byte(r.Uint32())
			}
			_ = readAllOf(c) // any error, no panic
		}
	}
}

func TestHostileFooter(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"short", []byte("PAR1PAR1")},
		{"no magic", []byte("PAR1xxxxxxxxxxxx\x04\x00\x00\x00PAR2")},
		{"footer past file", append([]byte("PAR1\x00\x00\x00\x00"), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1')},
		// A footer whose schema list declares 2^31 elements in a few bytes.
		{"huge list", append([]byte("PAR1\x29\xf8\xff\xff\xff\x07\x00"), 7, 0, 0, 0, 'P', 'A', 'R', '1')},
		// Structures nested past the depth bound.
		{"deep", func() []byte {
			b := []byte("PAR1")
			footer := bytes.Repeat([]byte{0x1c}, 200) // field 1, struct, again and again
			b = append(b, footer...)
			return append(b, 200, 0, 0, 0, 'P', 'A', 'R', '1')
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(bytes.NewReader(tc.data), int64(len(tc.data)))
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a FormatError", err)
			}
		})
	}
}

func FuzzOpenRead(f *testing.F) {
	for _, d := range smallFiles(f) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		_ = readAllOf(data)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// Allocation is bounded by the Guard (a footer may declare pages of any size; the
		// guard refuses them before they are allocated) and what the input's own bytes
		// justify.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20+uint64(len(data))*1024 {
			t.Fatalf("%d bytes allocated for %d bytes of input", grew, len(data))
		}
	})
}
