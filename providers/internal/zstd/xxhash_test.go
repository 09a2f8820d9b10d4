package zstd

import (
	"encoding/binary"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

func TestXXH64Vectors(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
	}{
		{"", 0xEF46DB3751D8E999},
		{"\x00", 0xE934A84ADB052768},
		{"a", 0xD24EC4F1A98C6E5B},
		{"as", 0x1C330FB2D66BE179},
		{"asd", 0x631C37CE72A97393},
		{"asdf", 0x415872F599CEA71E},
		{"abc", 0x44BC2CF5AD770999},
		{"Call me Ishmael.", 0x6D04390FC9D61A90},
		{"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1},
	}
	for _, c := range cases {
		if got := xxh64([]byte(c.in)); got != c.want {
			t.Errorf("xxh64(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
}

// TestXXH64Klauspost compares with the checksums klauspost's encoder writes, for every
// length up to a few stripes and some long inputs.
func TestXXH64Klauspost(t *testing.T) {
	enc := encoding{name: "fastest-crc", opts: []kzstd.EOption{kzstd.WithEncoderLevel(kzstd.SpeedFastest),
		kzstd.WithEncoderCRC(true)}}
	data := mixed(300<<10, 71)
	lengths := []int{1000, 4097, 65536 + 13, len(data)}
	for n := 1; n < 200; n++ { // klauspost writes no checksum for empty input
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		comp := kEncode(t, enc, data[:n])
		if comp[4]&0x04 == 0 {
			t.Fatalf("length %d: no checksum flag", n)
		}
		want := binary.LittleEndian.Uint32(comp[len(comp)-4:])
		if got := uint32(xxh64(data[:n])); got != want {
			t.Fatalf("length %d: checksum %#x, klauspost wrote %#x", n, got, want)
		}
	}
}
