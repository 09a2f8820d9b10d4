package providers

import (
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
