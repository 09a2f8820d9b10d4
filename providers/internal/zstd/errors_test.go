package zstd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
)

// zframe builds a frame from a frame header descriptor, the header fields after it and
// block contents; each block is a (header-less) body with its type and size.
func zframe(fhd byte, fields []byte, blocks ...zblock) []byte {
	b := binary.LittleEndian.AppendUint32(nil, frameMagic)
	b = append(b, fhd)
	b = append(b, fields...)
	for i, bl := range blocks {
		size := len(bl.body)
		if bl.kind == 1 {
			size = bl.rleSize
		}
		h := uint32(size)<<3 | uint32(bl.kind)<<1
		if i == len(blocks)-1 {
			h |= 1
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16))
		b = append(b, bl.body...)
	}
	return b
}

type zblock struct {
	kind    int // 0 raw, 1 RLE, 2 compressed, 3 reserved
	body    []byte
	rleSize int
}

// seqBlock is a compressed block with the raw literals lits and one sequence whose
// codes are RLE-coded (ll, of, ml), with the bitstream stream.
func seqBlock(lits string, ll, of, ml byte, stream ...byte) zblock {
	body := []byte{byte(len(lits)) << 3}
	body = append(body, lits...)
	body = append(body, 1, 0x54, ll, of, ml)
	body = append(body, stream...)
	return zblock{kind: 2, body: body}
}

func TestDecodeHandmade(t *testing.T) {
	const (
		single = 0x20 // single segment, 1-byte content size
		crc    = 0x04
	)
	win1K := []byte{0x00} // window descriptor: 1 KiB
	cases := []struct {
		name    string
		src     []byte
		want    string // the output, when no error is wanted
		wantErr string // part of the FormatError message
	}{
		{name: "raw", src: zframe(single, []byte{3}, zblock{body: []byte("abc")}), want: "abc"},
		{name: "rle", src: zframe(0, win1K, zblock{kind: 1, body: []byte("z"), rleSize: 5}), want: "zzzzz"},
		{name: "empty raw block", src: zframe(single, []byte{0}, zblock{}), want: ""},
		{name: "dictionary id zero", src: zframe(single|0x01, []byte{0, 2}, zblock{body: []byte("hi")}), want: "hi"},
		{name: "unused bit ignored", src: zframe(single|0x10, []byte{2}, zblock{body: []byte("hi")}), want: "hi"},
		// ll code 3, offset value 6 (code 2, bits 10): "abc" then copy 3 from offset 3.
		{name: "sequence", src: zframe(0, win1K, seqBlock("abc", 3, 2, 0, 0x06)), want: "abcabc"},
		{name: "sequence block over content size", src: zframe(single, []byte{6}, seqBlock("abc", 3, 2, 0, 0x06)),
			wantErr: "maximum block size"},
		// Overlapping match: offset 1, length 3 + literal "a".
		{name: "overlap", src: zframe(0, win1K, seqBlock("a", 1, 2, 0, 0x04)), want: "aaaa"},

		{name: "magic", src: []byte{1, 2, 3, 4, 5}, wantErr: "unknown magic"},
		{name: "short magic", src: []byte{0x28, 0xB5}, wantErr: "truncated magic"},
		{name: "trailing bytes", src: append(zframe(single, []byte{1}, zblock{body: []byte("a")}), 0), wantErr: "truncated magic"},
		{name: "reserved bit", src: zframe(single|0x08, []byte{1}, zblock{body: []byte("a")}), wantErr: "reserved frame header bit"},
		{name: "no header", src: []byte{0x28, 0xB5, 0x2F, 0xFD}, wantErr: "truncated frame header"},
		{name: "no blocks", src: zframe(single, []byte{0}), wantErr: "truncated block header"},
		{name: "reserved block", src: zframe(0, win1K, zblock{kind: 3, body: []byte("a")}), wantErr: "reserved block type"},
		{name: "raw beyond window", src: zframe(0, win1K, zblock{body: make([]byte, 1025)}), wantErr: "maximum block size"},
		{name: "rle beyond content size", src: zframe(single, []byte{4}, zblock{kind: 1, body: []byte("z"), rleSize: 5}),
			wantErr: "maximum block size"},
		{name: "content size short", src: zframe(0x40, []byte{0, 0, 0}, zblock{body: []byte("ab")}), wantErr: "content size"},
		{name: "content size over", src: zframe(single, []byte{1}, zblock{body: []byte("a")}, zblock{body: []byte("b")}),
			wantErr: "exceeds the declared content size"},
		{name: "missing checksum", src: zframe(single|crc, []byte{1}, zblock{body: []byte("a")}), wantErr: "truncated content checksum"},
		{name: "truncated skippable", src: []byte{0x50, 0x2A, 0x4D, 0x18, 9, 0, 0, 0, 1}, wantErr: "truncated skippable"},
		{name: "offset before output", src: zframe(0, win1K, seqBlock("abc", 0, 3, 0, 0x0D)), wantErr: "offset out of range"},
		// 1124 bytes, then a match at offset 1030 (code 10, bits 9): beyond a 1 KiB window.
		{name: "offset beyond window", src: zframe(0, win1K, zblock{body: make([]byte, 1024)}, zblock{body: make([]byte, 100)},
			seqBlock("", 0, 10, 0, 0x09, 0x04)), wantErr: "offset out of range"},
		{name: "offset within window", src: zframe(0, []byte{0x08}, zblock{body: make([]byte, 1024)}, zblock{body: make([]byte, 100)},
			seqBlock("", 0, 10, 0, 0x09, 0x04)), want: string(make([]byte, 1127))},
		{name: "repeat offset zero", src: zframe(0, win1K, seqBlock("abc", 0, 1, 0, 0x03)), wantErr: "offset out of range"},
		{name: "more literals than block", src: zframe(0, win1K, seqBlock("ab", 3, 2, 0, 0x06)), wantErr: "more literals"},
		{name: "bitstream left over", src: zframe(0, win1K, seqBlock("abc", 3, 2, 0, 0x16)), wantErr: "not consumed"},
		{name: "bitstream zero end", src: zframe(0, win1K, seqBlock("abc", 3, 2, 0, 0x00)), wantErr: "invalid sequences bitstream"},
		{name: "reserved mode bits", src: zframe(0, win1K, zblock{kind: 2, body: []byte{0, 1, 0x55, 0, 0, 0, 1}}),
			wantErr: "reserved bits"},
		{name: "repeat table first", src: zframe(0, win1K, zblock{kind: 2, body: []byte{0, 1, 0xFC, 1}}),
			wantErr: "without a previous table"},
		{name: "treeless first", src: zframe(0, win1K, zblock{kind: 2, body: []byte{0x03, 0, 0, 0}}),
			wantErr: "without a previous Huffman table"},
		{name: "rle code out of range", src: zframe(0, win1K, seqBlock("abc", 36, 2, 0, 0x06)), wantErr: "out of range"},
		{name: "bytes after no sequences", src: zframe(0, win1K, zblock{kind: 2, body: []byte{0, 0, 9}}),
			wantErr: "bytes after an empty sequences section"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(nil, c.src, 1<<20)
			if c.wantErr == "" {
				if err != nil || string(got) != c.want {
					t.Fatalf("got %q, %v; want %q", got, err, c.want)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(fe.Msg, c.wantErr) {
				t.Fatalf("got %q, %v; want a FormatError with %q", got, err, c.wantErr)
			}
		})
	}
}

// TestDecodeTruncated cuts small encodings at every length: each prefix must fail.
func TestDecodeTruncated(t *testing.T) {
	inputs := [][]byte{textLike(3000, 31), mixed(5000, 32), randomBytes(300, 33), bytes.Repeat([]byte{7}, 200<<10), {}}
	encs := encodings(true)
	for i, data := range inputs {
		for _, enc := range []encoding{encs[0], encs[3], encs[len(encs)-1], encs[len(encs)-3]} {
			comp := kEncode(t, enc, data)
			for n := 1; n < len(comp); n++ {
				got, err := Decode(nil, comp[:n], testLimit)
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("input %d, %s, %d of %d bytes: got %d bytes, %v; want a FormatError",
						i, enc.name, n, len(comp), len(got), err)
				}
			}
		}
	}
}

func TestDecodeChecksum(t *testing.T) {
	data := textLike(5000, 41)
	comp := kEncode(t, encoding{name: "crc", opts: []kzstd.EOption{kzstd.WithEncoderCRC(true)}}, data)
	if got, err := Decode(nil, comp, len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("valid checksum: %v", err)
	}
	for i := len(comp) - 4; i < len(comp); i++ {
		bad := bytes.Clone(comp)
		bad[i] ^= 0x10
		_, err := Decode(nil, bad, len(data))
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "checksum mismatch") {
			t.Fatalf("checksum byte %d flipped: got %v", i, err)
		}
	}
}

func TestDecodeDictionary(t *testing.T) {
	dict := textLike(2000, 51)
	enc, err := kzstd.NewWriter(nil, kzstd.WithEncoderDictRaw(1234, dict))
	if err != nil {
		t.Fatal(err)
	}
	comp := enc.EncodeAll(textLike(3000, 52), nil)
	if _, err := Decode(nil, comp, testLimit); !errors.Is(err, ErrDictionary) {
		t.Fatalf("got %v, want ErrDictionary", err)
	}
	// Four-byte dictionary id, before anything else is checked.
	src := zframe(0x03, []byte{0, 1, 0, 0, 0})
	if _, err := Decode(nil, src, testLimit); !errors.Is(err, ErrDictionary) {
		t.Fatalf("handmade: got %v, want ErrDictionary", err)
	}
}

func TestDecodeTooLarge(t *testing.T) {
	data := textLike(300<<10, 61)
	encs := encodings(true)
	for _, enc := range []encoding{encs[0], encs[1]} { // with and without content size
		comp := kEncode(t, enc, data)
		for _, maxSize := range []int{-1, 0, 1, 1000, 128 << 10, len(data) - 1} {
			if _, err := Decode(nil, comp, maxSize); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s, maxSize %d: got %v, want ErrTooLarge", enc.name, maxSize, err)
			}
		}
		got, err := Decode(nil, comp, len(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s, exact maxSize: %v", enc.name, err)
		}
		if cap(got) > len(data)+len(data)/4 && enc.stream {
			t.Errorf("%s: capacity %d for %d bytes", enc.name, cap(got), len(data))
		}
	}
	if got, err := Decode(nil, zframe(0x20, []byte{0}, zblock{}), 0); err != nil || len(got) != 0 {
		t.Fatalf("empty frame, maxSize 0: %v", err)
	}
}

// TestDecodeHostileSizes gives frames that declare huge sizes but hold almost nothing:
// they must fail (or succeed) without allocating for what they declare.
func TestDecodeHostileSizes(t *testing.T) {
	cases := []struct {
		name    string
		src     []byte
		maxSize int
		tooBig  bool
	}{
		{name: "content size 2^40", src: zframe(0xE0, binary.LittleEndian.AppendUint64(nil, 1<<40), zblock{}), maxSize: 1 << 30, tooBig: true},
		{name: "content size 1 GiB under limit", src: zframe(0xA0, binary.LittleEndian.AppendUint32(nil, 1<<30), zblock{}), maxSize: math.MaxInt},
		{name: "largest window", src: zframe(0, []byte{0xFF}, zblock{body: []byte("tiny")}), maxSize: 1 << 30},
		{name: "largest window, RLE", src: zframe(0, []byte{0xFF}, zblock{kind: 1, body: []byte{1}, rleSize: 1000}), maxSize: 1 << 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Decode(nil, c.src, c.maxSize)
			runtime.ReadMemStats(&after)
			if c.tooBig != errors.Is(err, ErrTooLarge) {
				t.Errorf("got %v, ErrTooLarge wanted: %t", err, c.tooBig)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 20<<20 {
				t.Errorf("allocated %d bytes", n)
			}
		})
	}
}
