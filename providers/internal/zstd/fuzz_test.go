package zstd

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

const fuzzLimit = 1 << 20

var (
	fuzzOracleOnce sync.Once
	fuzzOracle     *kzstd.Decoder
)

// FuzzDecode checks that no input makes Decode panic or exceed its bound, and that what
// Decode accepts, klauspost's decoder accepts with the same output.
func FuzzDecode(f *testing.F) {
	for i, enc := range encodings(true) {
		for _, data := range [][]byte{textLike(2000, uint64(i)), mixed(6000, uint64(i)),
			randomBytes(50, uint64(i)), bytes.Repeat([]byte{byte(i)}, 3000), {}} {
			f.Add(kEncode(f, enc, data))
		}
	}
	win1K := []byte{0}
	f.Add(zframe(0, win1K, seqBlock("abc", 3, 2, 0, 0x06)))
	f.Add(zframe(0, win1K, seqBlock("a", 1, 2, 0, 0x04)))
	f.Add(zframe(0x24, []byte{3}, zblock{body: []byte("abc")}))
	f.Add([]byte{0x50, 0x2A, 0x4D, 0x18, 1, 0, 0, 0, 1})

	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := Decode(nil, src, fuzzLimit)
		if len(got) > fuzzLimit {
			t.Fatalf("output of %d bytes over the limit", len(got))
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrDictionary) {
				t.Fatalf("unexpected error type: %#v", err)
			}
			return
		}
		fuzzOracleOnce.Do(func() {
			var oerr error
			fuzzOracle, oerr = kzstd.NewReader(nil, kzstd.WithDecoderConcurrency(1),
				kzstd.WithDecoderMaxMemory(64<<20), kzstd.WithDecoderMaxWindow(64<<20))
			if oerr != nil {
				panic(oerr)
			}
		})
		want, kerr := fuzzOracle.DecodeAll(src, nil)
		if errors.Is(kerr, kzstd.ErrWindowSizeExceeded) || errors.Is(kerr, kzstd.ErrDecoderSizeExceeded) {
			return // the oracle refuses windows over its bound (64 MiB); Decode bounds only output
		}
		if kerr != nil {
			t.Fatalf("Decode gave %d bytes, klauspost failed: %v", len(got), kerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("outputs differ: %d bytes, klauspost %d; first difference at %d",
				len(got), len(want), firstDiff(got, want))
		}
	})
}
