package zstd

import (
	"encoding/binary"
	"math/bits"
)

// XXH64 primes.
const (
	prime1 uint64 = 0x9E3779B185EBCA87
	prime2 uint64 = 0xC2B2AE3D27D4EB4F
	prime3 uint64 = 0x165667B19E3779F9
	prime4 uint64 = 0x85EBCA77C2B2AE63
	prime5 uint64 = 0x27D4EB2F165667C5
)

// xxh64 returns the XXH64 hash of b with seed 0, whose low 32 bits are a frame's
// Content_Checksum.
func xxh64(b []byte) uint64 {
	n := len(b)
	var h uint64
	if len(b) >= 32 {
		p1 := prime1 // a variable, so that the sums below wrap
		v1 := p1 + prime2
		v2 := prime2
		v3 := uint64(0)
		v4 := -p1
		for ; len(b) >= 32; b = b[32:] {
			v1 = xxhRound(v1, binary.LittleEndian.Uint64(b))
			v2 = xxhRound(v2, binary.LittleEndian.Uint64(b[8:]))
			v3 = xxhRound(v3, binary.LittleEndian.Uint64(b[16:]))
			v4 = xxhRound(v4, binary.LittleEndian.Uint64(b[24:]))
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) +
			bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		for _, v := range [4]uint64{v1, v2, v3, v4} {
			h = (h^xxhRound(0, v))*prime1 + prime4
		}
	} else {
		h = prime5
	}
	h += uint64(n)
	for ; len(b) >= 8; b = b[8:] {
		h ^= xxhRound(0, binary.LittleEndian.Uint64(b))
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * prime1
		h = bits.RotateLeft64(h, 23)*prime2 + prime3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * prime5
		h = bits.RotateLeft64(h, 11) * prime1
	}
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}

func xxhRound(acc, lane uint64) uint64 {
	acc += lane * prime2
	return bits.RotateLeft64(acc, 31) * prime1
}
