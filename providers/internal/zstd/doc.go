// Package zstd decompresses Zstandard data (RFC 8878) so that Flameox can read
// ZSTD-compressed Parquet pages without linking a compression library.
//
// It owns decoding only: frames (concatenated, with skippable frames skipped), raw, RLE
// and compressed blocks, Huffman-coded literals, FSE-coded sequences with repeat offsets,
// and the XXH64 content checksum, which is verified whenever a frame carries one. The
// whole output of one call is the window, so there is no separate history buffer.
//
// It refuses frames that need a dictionary (ErrDictionary), output beyond the caller's
// bound (ErrTooLarge, raised before the bytes are produced, so a frame that declares a
// huge content or window size allocates nothing for it), and every malformed or
// inconsistent input (*FormatError): truncation, reserved values, offsets that reach
// before the frame's output or beyond its window, a declared content size that the
// blocks do not produce, a checksum mismatch. Every count and offset in the input is
// treated as untrusted; no input makes it panic or loop without consuming input.
// A few encodings that the format tolerates but no encoder writes are refused too, as
// the reference or klauspost's decoder refuses them, so that what this package accepts,
// both accept: an FSE table description of one symbol or in fewer than 4 bytes, a
// Huffman weights bitstream read partly past its start, four-stream Huffman literals
// of fewer than 6 bytes, a block that decodes to more than Block_Maximum_Size, a match
// offset beyond the window.
// There is no encoder and no streaming interface.
package zstd
