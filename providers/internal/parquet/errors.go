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

// LimitError is a read that would decode more than its bound: the decompressed page bytes
// a File's Guard allows (Record false), or the bytes of one record (Record true,
// MaxRecordBytes).
type LimitError struct {
	Limit  int64
	Record bool
}

func (e *LimitError) Error() string {
	if e.Record {
		return fmt.Sprintf("parquet: a record holds more than %d bytes", e.Limit)
	}
	return fmt.Sprintf("parquet: the pages read decompress to more than %d bytes", e.Limit)
}

func formatErr(format string, args ...any) error {
	return &FormatError{Msg: fmt.Sprintf(format, args...)}
}
