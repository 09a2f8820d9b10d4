package providers

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/internal/sourcefile"
)

// OpenInput opens an input for sequential reading, gzip decompressed transparently.
func OpenInput(in Input) (io.ReadCloser, error) {
	f, err := sourcefile.OpenStream(in.Path)
	if errors.Is(err, sourcefile.ErrBadGzip) {
		return nil, &DecodeError{Source: in.Index, Message: fmt.Sprintf("source %d is not a valid gzip stream", in.Index), Err: err}
	}
	if err != nil {
		return nil, &InputError{Source: in.Index, Message: fmt.Sprintf("source %d could not be read", in.Index), Err: err}
	}
	return f, nil
}

// OpenBounded is OpenInput for a reader that must not outlive its request or decompress
// without limit: every Read observes ctx (cancellation and deadline), and reading more
// than maxBytes bytes after decompression is a LimitError naming the bound (0: no bound).
func OpenBounded(ctx context.Context, in Input, maxBytes int64) (io.ReadCloser, error) {
	f, err := OpenInput(in)
	if err != nil {
		return nil, err
	}
	return &boundedReader{ReadCloser: f, ctx: ctx, in: in, max: maxBytes}, nil
}

type boundedReader struct {
	io.ReadCloser
	ctx  context.Context
	in   Input
	max  int64
	read int64
}

func (r *boundedReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.ReadCloser.Read(p)
	r.read += int64(n)
	if r.max > 0 && r.read > r.max {
		return n, &LimitError{Source: r.in.Index, Limit: r.max, Unit: "bytes",
			Message: fmt.Sprintf("source %d yields more than %d bytes after decompression", r.in.Index, r.max)}
	}
	return n, err
}
