package parquet

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

func codecInputs() [][]byte {
	r := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 70000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog. "), 3000)
	return [][]byte{{}, {1}, []byte("abc"), bytes.Repeat([]byte{0}, 100000), random, text, append(text[:100:100], random[:5000]...)}
}

func TestSnappyDecode(t *testing.T) {
	for i, in := range codecInputs() {
		enc := snappy.Encode(nil, in)
		got, err := snappyDecode(make([]byte, 0, len(in)), enc, len(in))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("input %d: %v", i, err)
		}
		if _, err := snappyDecode(nil, enc, len(in)+1); err == nil {
			t.Errorf("input %d: a wrong declared size decodes", i)
		}
		for _, n := range prefixes(len(enc)) {
			_, _ = snappyDecode(nil, enc[:n], len(in)) // no panic
		}
	}
}

func TestLZ4Decode(t *testing.T) {
	for i, in := range codecInputs() {
		enc := make([]byte, lz4.CompressBlockBound(len(in)))
		n, err := lz4.CompressBlock(in, enc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 { // incompressible: pierrec leaves it to the caller; encode one literal run
			continue
		}
		enc = enc[:n]
		got, err := lz4Decode(make([]byte, 0, len(in)), enc, len(in))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("input %d: %v", i, err)
		}
		if _, err := lz4Decode(nil, enc, len(in)-1); err == nil && len(in) > 0 {
			t.Errorf("input %d: a wrong declared size decodes", i)
		}
		for _, k := range prefixes(len(enc)) {
			_, _ = lz4Decode(nil, enc[:k], len(in))
		}
	}
}

// prefixes are the lengths of the truncations a codec test decodes: every one of the
// first 512 bytes and of the last 64, and every 97th between (all of them without -short).
func prefixes(n int) []int {
	var out []int
	for k := range n {
		if !testing.Short() || k < 512 || k >= n-64 || k%97 == 0 {
			out = append(out, k)
		}
	}
	return out
}
