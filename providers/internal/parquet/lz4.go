package parquet

import "encoding/binary"

// lz4Decode decodes an LZ4 block (sequences of a token, literals and a back-reference,
// the last sequence literals only) into dst[:0]; it must decode to exactly want bytes.
func lz4Decode(dst, src []byte, want int) ([]byte, error) {
	dst = dst[:0]
	for {
		if len(src) == 0 {
			return nil, errLZ4
		}
		token := src[0]
		src = src[1:]
		lit, err := lz4Length(&src, int(token>>4))
		if err != nil {
			return nil, err
		}
		if lit > len(src) || lit > want-len(dst) {
			return nil, errLZ4
		}
		dst = append(dst, src[:lit]...)
		src = src[lit:]
		if len(src) == 0 {
			break // the last sequence
		}
		if len(src) < 2 {
			return nil, errLZ4
		}
		offset := int(binary.LittleEndian.Uint16(src))
		src = src[2:]
		m, err := lz4Length(&src, int(token&15))
		if err != nil {
			return nil, err
		}
		m += 4
		if offset == 0 || offset > len(dst) || m > want-len(dst) {
			return nil, errLZ4
		}
		dst = appendCopy(dst, offset, m)
	}
	if len(dst) != want {
		return nil, errLZ4
	}
	return dst, nil
}

// lz4Length extends a 4-bit length of 15 with the bytes that follow (each 255 adds and
// continues).
func lz4Length(src *[]byte, n int) (int, error) {
	if n != 15 {
		return n, nil
	}
	for {
		if len(*src) == 0 {
			return 0, errLZ4
		}
		c := (*src)[0]
		*src = (*src)[1:]
		n += int(c)
		if n > 1<<31 {
			return 0, errLZ4
		}
		if c != 255 {
			return n, nil
		}
	}
}

var errLZ4 = &FormatError{Msg: "corrupt lz4 block"}
