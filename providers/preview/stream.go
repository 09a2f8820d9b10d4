package preview

import (
	"context"
	"io"

	"github.com/flameox/flameox/providers"
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
// guard (providers.OpenBounded), so no loop over a source outlives the request or
// decompresses past its bound.
func openStream(src Source, index int) (io.ReadCloser, error) {
	g := src.guard
	if g == nil {
		g = &guard{ctx: context.Background()}
	}
	return providers.OpenBounded(g.ctx, providers.Input{Index: index, Path: src.Path, Format: src.Format}, g.maxBytes)
}
