package preview

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/internal/sourcefile"
)

// guard bounds the reading of one page: the request's context (cancellation and
// timeout) and the decompressed bytes a source may yield.
type guard struct {
	ctx context.Context
	// maxBytes bounds the bytes read from one source after transparent decompression;
	// 0 for none.
	maxBytes int64
}

// openStream opens a source for sequential reading, gzip decompressed transparently: rows,
// offsets and bounds then count the decompressed stream. Every read observes the page's
// guard, so no loop over a source outlives the request or decompresses past its bound.
func openStream(src Source, index int) (io.ReadCloser, error) {
	r, err := sourcefile.OpenStream(src.Path)
	if errors.Is(err, sourcefile.ErrBadGzip) {
		return nil, decodeError(index, 0, err, "the gzip stream is not valid")
	}
	if err != nil || src.guard == nil {
		return r, err
	}
	return &guardedReader{ReadCloser: r, g: src.guard, index: index}, nil
}

type guardedReader struct {
	io.ReadCloser
	g     *guard
	index int
	read  int64
}

func (r *guardedReader) Read(p []byte) (int, error) {
	if err := r.g.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.ReadCloser.Read(p)
	r.read += int64(n)
	if r.g.maxBytes > 0 && r.read > r.g.maxBytes {
		return n, limitError(r.index, 0, r.g.maxBytes,
			fmt.Sprintf("source %d yields more than %d bytes after decompression (limits.max_input_bytes)", r.index, r.g.maxBytes))
	}
	return n, err
}
