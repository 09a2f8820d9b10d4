// Package parquet is Flameox's read-only Apache Parquet reader: the footer (its own
// Thrift compact-protocol decoder, only the fields the readers use), the schema as a
// tree with each leaf column's path and levels, the row groups' column chunks, and
// their pages (data pages v1 and v2, dictionary pages) with the PLAIN, dictionary,
// RLE, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and
// BYTE_STREAM_SPLIT encodings, uncompressed or compressed with SNAPPY, GZIP, LZ4_RAW,
// ZSTD or BROTLI.
//
// It reads in two ways: a ColumnReader streams the values of one leaf column of one row
// group with their levels, in batches; a RowReader walks a file's records in order,
// seeks to a record, and assembles each as generic Go values. Memory holds the footer
// and the pages open at the time.
//
// It refuses, with an *UnsupportedError, the deprecated LZ4 (Hadoop framing) and LZO
// codecs, encodings it does not know, and column chunks in other files; and every
// inconsistency of a file (lengths past the bytes present, a declared size a page does
// not have, counts its bytes cannot hold, nesting past a bound) is a *FormatError, never
// a panic or an allocation the file's own bytes do not justify: a page's declared
// decompressed size is checked against its column chunk's before it is allocated, and
// decompression must give exactly that many bytes. Column indexes, offset indexes,
// bloom filters, statistics and key-value metadata are never read.
package parquet
