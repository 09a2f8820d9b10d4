package testrun

import (
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonlines"
)

// maxLine bounds one line of a pytest or observations stream (the plugin never writes
// more).
const maxLine = 64 << 10

// lineReader is a bounded JSON Lines reader (jsonlines.Reader) with the errors of the
// pytest and observations streams.
type lineReader struct {
	*jsonlines.Reader
	source int
}

func newLineReader(r io.Reader, source int, what string) *lineReader {
	return &lineReader{Reader: jsonlines.New(r, source, maxLine, what+" line"), source: source}
}

// lineError is the DecodeError of a line that is not what the format requires.
func (l *lineReader) lineError(index int, format string, args ...any) error {
	return &providers.DecodeError{Source: l.source, Details: map[string]any{"line": index},
		Message: fmt.Sprintf("line %d: ", index) + fmt.Sprintf(format, args...)}
}
