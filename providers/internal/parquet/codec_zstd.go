package parquet

import "github.com/flameox/flameox/providers/internal/zstd"

// zstdDecode decodes the Zstandard frames of a page into dst, refusing output past want
// bytes (the caller checks that it is exactly want). It is the one place the reader
// depends on a Zstandard decoder: Flameox's own, which links no compression library.
func zstdDecode(dst, src []byte, want int) ([]byte, error) {
	return zstd.Decode(dst, src, want)
}
