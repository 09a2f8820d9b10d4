package parquet

import (
	"bytes"
	"compress/gzip"
	"io"
)

// decompress decodes a page's bytes compressed with codec into dst[:0] (whose capacity
// is at least want); the result must be exactly want bytes.
func decompress(codec Codec, dst, src []byte, want int) ([]byte, error) {
	switch codec {
	case Uncompressed:
		if len(src) != want {
			return nil, formatErr("uncompressed page of %d bytes declares %d", len(src), want)
		}
		return src, nil
	case Snappy:
		return snappyDecode(dst, src, want)
	case LZ4Raw:
		return lz4Decode(dst, src, want)
	case Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, formatErr("corrupt gzip stream")
		}
		return readExactly(zr, dst, want, "gzip")
	case Zstd:
		out, err := zstdDecode(dst[:0], src, want)
		if err != nil || len(out) != want {
			return nil, formatErr("corrupt zstd stream, or one of another size than its page")
		}
		return out, nil
	case Brotli:
		return readExactly(brotliReader(src), dst, want, "brotli")
	}
	return nil, &UnsupportedError{Feature: "compression codec " + codec.String()}
}

// readExactly reads want bytes from a decompressing reader, which must then end.
func readExactly(r io.Reader, dst []byte, want int, name string) ([]byte, error) {
	dst = dst[:want]
	if _, err := io.ReadFull(r, dst); err != nil {
		return nil, formatErr("corrupt %s stream, or one shorter than its page", name)
	}
	// The stream must end there, cleanly (gzip checks its CRC at the end).
	var one [1]byte
	if _, err := io.ReadFull(r, one[:]); err != io.EOF {
		return nil, formatErr("corrupt %s stream, or one longer than its page", name)
	}
	return dst, nil
}

// supportedCodec reports whether codec can be read, as an *UnsupportedError naming it.
func supportedCodec(codec Codec) error {
	switch codec {
	case Uncompressed, Snappy, Gzip, Zstd, Brotli, LZ4Raw:
		return nil
	}
	return &UnsupportedError{Feature: "compression codec " + codec.String()}
}
