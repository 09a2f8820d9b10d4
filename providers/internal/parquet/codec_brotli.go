package parquet

import (
	"bytes"
	"io"

	"github.com/andybalholm/brotli"
)

// brotliReader decodes a Brotli stream. It is the one place the reader depends on a
// Brotli decoder.
func brotliReader(src []byte) io.Reader { return brotli.NewReader(bytes.NewReader(src)) }
