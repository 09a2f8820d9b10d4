package parquet

import "encoding/binary"

// snappyDecode decodes a Snappy block (a varint of the decoded length, then literals and
// back-references) into dst[:0], which must have the capacity of the page's declared
// size; the block must decode to exactly want bytes.
func snappyDecode(dst, src []byte, want int) ([]byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n != uint64(want) {
		return nil, formatErr("snappy block declares another size than its page")
	}
	src = src[k:]
	dst = dst[:0]
	for len(src) > 0 {
		tag := src[0]
		var length, offset int
		switch tag & 3 {
		case 0: // literal
			length = int(tag >> 2)
			src = src[1:]
			if length >= 60 {
				w := length - 59
				if len(src) < w {
					return nil, errSnappy
				}
				length = 0
				for i := w - 1; i >= 0; i-- {
					length = length<<8 | int(src[i])
				}
				src = src[w:]
			}
			length++
			if length > len(src) || length > want-len(dst) {
				return nil, errSnappy
			}
			dst = append(dst, src[:length]...)
			src = src[length:]
			continue
		case 1:
			if len(src) < 2 {
				return nil, errSnappy
			}
			length = 4 + int(tag>>2&7)
			offset = int(tag>>5)<<8 | int(src[1])
			src = src[2:]
		case 2:
			if len(src) < 3 {
				return nil, errSnappy
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint16(src[1:]))
			src = src[3:]
		case 3:
			if len(src) < 5 {
				return nil, errSnappy
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint32(src[1:]))
			src = src[5:]
		}
		if offset <= 0 || offset > len(dst) || length > want-len(dst) {
			return nil, errSnappy
		}
		dst = appendCopy(dst, offset, length)
	}
	if len(dst) != want {
		return nil, errSnappy
	}
	return dst, nil
}

var errSnappy = &FormatError{Msg: "corrupt snappy block"}

// appendCopy appends length bytes copied from offset bytes back in dst, the copy
// overlapping what it writes when length > offset.
func appendCopy(dst []byte, offset, length int) []byte {
	start := len(dst) - offset
	for length > 0 { // each pass copies at most one period of the repeated bytes
		k := min(length, offset)
		dst = append(dst, dst[start:start+k]...)
		start += k
		length -= k
	}
	return dst
}
