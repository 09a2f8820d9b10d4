package preview

import (
	"errors"
	"io"

	"github.com/flameox/flameox/internal/sourcefile"
)

// openStream opens a source for sequential reading, gzip decompressed transparently: rows,
// offsets and bounds then count the decompressed stream.
func openStream(path string) (io.ReadCloser, error) {
	r, err := sourcefile.OpenStream(path)
	if errors.Is(err, sourcefile.ErrBadGzip) {
		return nil, decodeError(0, 0, err, "the gzip stream is not valid")
	}
	return r, err
}
