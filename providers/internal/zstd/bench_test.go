package zstd

import (
	"bytes"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// BenchmarkDecode decodes about 4 MiB of text-like data compressed at the default level,
// with this package and with klauspost's decoder.
func BenchmarkDecode(b *testing.B) {
	data := textLike(4<<20, 99)
	comp := kEncode(b, encoding{name: "bench-default", opts: []kzstd.EOption{kzstd.WithEncoderCRC(true)}}, data)
	b.Run("flameox", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		dst := make([]byte, 0, len(data))
		for b.Loop() {
			out, err := Decode(dst[:0], comp, len(data))
			if err != nil || !bytes.Equal(out, data) {
				b.Fatal("decode failed", err)
			}
		}
	})
	b.Run("klauspost", func(b *testing.B) {
		dec, err := kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		defer dec.Close()
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		dst := make([]byte, 0, len(data))
		for b.Loop() {
			out, err := dec.DecodeAll(comp, dst[:0])
			if err != nil || !bytes.Equal(out, data) {
				b.Fatal("decode failed", err)
			}
		}
	})
}
