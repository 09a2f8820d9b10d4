package parquet

import "fmt"

// FormatError is a file that is not well-formed Parquet, or that claims more than its
// bytes hold. Its message is short English and names no path.
type FormatError struct {
	Msg string
}

func (e *FormatError) Error() string { return "parquet: " + e.Msg }

// UnsupportedError is a well-formed file that uses a feature this package does not read
// (a codec, an encoding, an external column chunk).
type UnsupportedError struct {
	Feature string
}

func (e *UnsupportedError) Error() string { return "parquet: unsupported " + e.Feature }

func formatErr(format string, args ...any) error {
	return &FormatError{Msg: fmt.Sprintf(format, args...)}
}
