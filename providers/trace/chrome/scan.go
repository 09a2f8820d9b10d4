package chrome

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/bits"
)

// scanner is a byte scanner over an io.Reader with its own buffer, made for reading one
// JSON document forward once: it reads the values the decoder needs and skips the rest
// without materializing them. Slices it returns alias its buffer or the caller's
// scratch and are valid until the next call.
type scanner struct {
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	eof  bool
	rerr error // a read error other than io.EOF; it ends the input
	// off is the input offset of buf[0].
	off int64
}

// scanBufSize is the size of a scanner's first buffer (it grows for a longer token);
// tests lower it to move buffer boundaries through the events.
var scanBufSize = 256 << 10

// maxNumberBytes bounds the text of one JSON number.
const maxNumberBytes = 4096

// errSyntax is malformed JSON; errEOF is an end of input inside a value. The decoder
// turns both into DecodeErrors naming the event.
var (
	errSyntax = errors.New("malformed JSON")
	errEOF    = errors.New("unexpected end of input")
)

// errNumberLong is a number longer than maxNumberBytes.
var errNumberLong = errors.New("number too long")

// errStringLong is a string longer than the decoder's string bound.
var errStringLong = errors.New("string too long")

// errDepth is a value nested deeper than the decoder's depth bound.
var errDepth = errors.New("nesting too deep")

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, scanBufSize)}
}

// offset is the input offset of the next byte.
func (s *scanner) offset() int64 { return s.off + int64(s.pos) }

// fill reads more input, keeping buf[keep:end] (keep <= pos), and reports whether
// bytes beyond end were read.
func (s *scanner) fill(keep int) bool {
	if s.eof {
		return false
	}
	if keep > 0 {
		n := copy(s.buf, s.buf[keep:s.end])
		s.off += int64(keep)
		s.pos -= keep
		s.end = n
	}
	if s.end == len(s.buf) {
		// Only a kept token fills the whole buffer; tokens are bounded well below it.
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.rerr = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	s.eof, s.rerr = true, io.ErrNoProgress
	return false
}

// more makes at least one unread byte available, discarding read ones.
func (s *scanner) more() bool {
	return s.fill(s.pos)
}

// peek skips whitespace and returns the next byte without consuming it, or -1 at the
// end of the input.
func (s *scanner) peek() int {
	// Inlined: the next byte is most often not whitespace.
	if s.pos < s.end && s.buf[s.pos] > ' ' {
		return int(s.buf[s.pos])
	}
	return s.peekSlow()
}

// skip consumes b when it is the next byte, without skipping whitespace first (it
// is inlined; callers fall back to peek).
func (s *scanner) skip(b byte) bool {
	if s.pos < s.end && s.buf[s.pos] == b {
		s.pos++
		return true
	}
	return false
}

// colon consumes the ':' after an object key.
func (s *scanner) colon() error {
	if s.skip(':') {
		return nil
	}
	if c := s.peek(); c != ':' {
		return syntaxOrEOF(c)
	}
	s.pos++
	return nil
}

// next consumes what follows the value of an object member: a ',' (more is set, and c
// is the first byte of the next key) or the object's closing '}'.
func (s *scanner) next() (c int, more bool, err error) {
	if s.skip(',') {
		return s.peek(), true, nil
	}
	switch c = s.peek(); c {
	case ',':
		s.pos++
		return s.peek(), true, nil
	case '}':
		s.pos++
		return c, false, nil
	}
	return c, false, syntaxOrEOF(c)
}

func (s *scanner) peekSlow() int {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
				return int(c)
			}
			s.pos++
		}
		if !s.more() {
			return -1
		}
	}
}

// ensure makes n unread bytes available when the input holds them.
func (s *scanner) ensure(n int) bool {
	for s.end-s.pos < n {
		if !s.fill(s.pos) {
			return false
		}
	}
	return true
}

// readString reads the string at pos (buf[pos] == '"'), appending its decoded bytes to
// dst; more than limit bytes is errStringLong.
func (s *scanner) readString(dst []byte, limit int) ([]byte, error) {
	s.pos++
	base := len(dst)
	// Most strings (keys, phases, short names) are short and plain: look at up to 32
	// bytes directly before the vectorized search.
	for i, end := s.pos, min(s.end, s.pos+32); i < end; i++ {
		c := s.buf[i]
		if c == '"' {
			dst = append(dst, s.buf[s.pos:i]...)
			s.pos = i + 1
			if len(dst)-base > limit {
				return dst, errStringLong
			}
			return dst, nil
		}
		if c == '\\' {
			break
		}
	}
	for {
		seg := s.buf[s.pos:s.end]
		q := bytes.IndexByte(seg, '"')
		look := seg
		if q >= 0 {
			look = seg[:q]
		}
		if b := bytes.IndexByte(look, '\\'); b >= 0 {
			dst = append(dst, seg[:b]...)
			s.pos += b
			var err error
			if dst, err = s.escape(dst); err != nil {
				return dst, err
			}
		} else if q >= 0 {
			dst = append(dst, seg[:q]...)
			s.pos += q + 1
			if len(dst)-base > limit {
				return dst, errStringLong
			}
			return dst, nil
		} else {
			dst = append(dst, seg...)
			s.pos = s.end
			if !s.more() {
				return dst, errEOF
			}
		}
		if len(dst)-base > limit {
			return dst, errStringLong
		}
	}
}

// escape decodes the escape at pos (buf[pos] == '\\').
func (s *scanner) escape(dst []byte) ([]byte, error) {
	if !s.ensure(2) {
		return dst, errEOF
	}
	c := s.buf[s.pos+1]
	switch c {
	case '"', '\\', '/':
		dst = append(dst, c)
	case 'b':
		dst = append(dst, '\b')
	case 'f':
		dst = append(dst, '\f')
	case 'n':
		dst = append(dst, '\n')
	case 'r':
		dst = append(dst, '\r')
	case 't':
		dst = append(dst, '\t')
	case 'u':
		if !s.ensure(6) {
			return dst, errEOF
		}
		r, ok := hex4(s.buf[s.pos+2 : s.pos+6])
		if !ok {
			return dst, errSyntax
		}
		s.pos += 6
		if r >= 0xD800 && r < 0xDC00 {
			// A high surrogate: combine it with the low one that should follow.
			if s.ensure(6) && s.buf[s.pos] == '\\' && s.buf[s.pos+1] == 'u' {
				if r2, ok := hex4(s.buf[s.pos+2 : s.pos+6]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
					s.pos += 6
					return appendRune(dst, 0x10000+(r-0xD800)<<10+(r2-0xDC00)), nil
				}
			}
			return appendRune(dst, 0xFFFD), nil
		}
		if r >= 0xDC00 && r < 0xE000 {
			r = 0xFFFD
		}
		return appendRune(dst, r), nil
	default:
		return dst, errSyntax
	}
	s.pos += 2
	return dst, nil
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func appendRune(dst []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	default:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
}

// skipString skips the string at pos (buf[pos] == '"'), copying its raw text, quotes
// included, to capture when it is not nil.
func (s *scanner) skipString(capture *[]byte) error {
	start := s.pos
	s.pos++
	for {
		seg := s.buf[s.pos:s.end]
		q := bytes.IndexByte(seg, '"')
		look := seg
		if q >= 0 {
			look = seg[:q]
		}
		if b := bytes.IndexByte(look, '\\'); b >= 0 {
			s.pos += b
			if s.pos+1 < s.end {
				s.pos += 2
				continue
			}
			// The backslash is the last byte read: keep what precedes it, then read on.
			if capture != nil {
				*capture = append(*capture, s.buf[start:s.end]...)
			}
			s.pos = s.end
			if !s.more() {
				return errEOF
			}
			start = s.pos
			s.pos++ // the escaped byte
			continue
		}
		if q >= 0 {
			s.pos += q + 1
			if capture != nil {
				*capture = append(*capture, s.buf[start:s.pos]...)
			}
			return nil
		}
		if capture != nil {
			*capture = append(*capture, s.buf[start:s.end]...)
		}
		s.pos = s.end
		start = 0
		if !s.more() {
			return errEOF
		}
		start = s.pos
	}
}

// scaledNumber reads the number at pos as an int64 multiplied by 10^scale, for the
// common numbers whose text lies in the buffer: no exponent, at most 19 digits, no more
// fraction digits than scale, within int64. ok is false for any other number, and
// nothing is consumed; readNumber and scaleDecimal then read it (and report its errors).
func (s *scanner) scaledNumber(scale int) (v int64, ok bool) {
	v, end, ok := scaled(s.buf[:s.end], s.pos, scale)
	if ok {
		s.pos = end
	}
	return v, ok
}

// scaled is scaledNumber over b from i; end is the index after the number.
func scaled(b []byte, i, scale int) (v int64, end int, ok bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var m uint64
	i, m = digits(b, i, 0)
	n := i - start
	if n == 0 || (n > 1 && b[start] == '0') {
		return 0, 0, false
	}
	frac := 0
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		i, m = digits(b, i, m)
		frac = i - f
		if frac == 0 {
			return 0, 0, false
		}
	}
	if i >= len(b) || n+frac > 19 || frac > scale {
		return 0, 0, false
	}
	if c := b[i]; c == 'e' || c == 'E' || c == '.' || c == '-' || c == '+' {
		return 0, 0, false
	}
	for e := scale - frac; e > 0; e-- {
		if m > math.MaxInt64/10 {
			return 0, 0, false
		}
		m *= 10
	}
	if neg {
		if m > 1<<63 {
			return 0, 0, false
		}
		return int64(-m), i, true
	}
	if m > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(m), i, true
}

// digits reads the ASCII digits of b from i, returning the index after them and m with
// them appended as decimal digits (m*10^k + their value, wrapping past 20 digits, which
// callers refuse). Past the first three it reads eight bytes at a time while eight are
// left.
func digits(b []byte, i int, m uint64) (int, uint64) {
	// Short runs (ids, small counts) end within a few bytes: read those one by one.
	for k := 0; k < 3; k++ {
		if i >= len(b) || b[i]-'0' > 9 {
			return i, m
		}
		m = m*10 + uint64(b[i]-'0')
		i++
	}
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		// A byte is not a digit when adding 0x46 sets its top bit (above '9') or
		// subtracting 0x30 does (below '0'). Carries and borrows only cross from a byte
		// that is not a digit, so the lowest flagged byte is exact.
		nd := ((w + 0x4646464646464646) | (w - 0x3030303030303030)) & 0x8080808080808080
		k := 8
		if nd != 0 {
			k = bits.TrailingZeros64(nd) >> 3
			if k == 0 {
				return i, m
			}
		}
		m = m*pow10[k] + eightDigits(w<<(64-8*k))
		i += k
		if k < 8 {
			return i, m
		}
	}
	for i < len(b) && b[i]-'0' <= 9 {
		m = m*10 + uint64(b[i]-'0')
		i++
	}
	return i, m
}

var pow10 = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// eightDigits is the value of the eight ASCII digits in w, the first in its lowest byte;
// zero bytes (above a shorter number shifted up) count as leading zeros.
func eightDigits(w uint64) uint64 {
	w &= 0x0F0F0F0F0F0F0F0F
	w = (w * (10<<8 + 1)) >> 8
	w = ((w & 0x00FF00FF00FF00FF) * (100<<16 + 1)) >> 16
	return ((w & 0x0000FFFF0000FFFF) * (10000<<32 + 1)) >> 32
}

// readNumber reads the number at pos and returns its text, checked against the JSON
// grammar.
func (s *scanner) readNumber() ([]byte, error) {
	start := s.pos
	i := s.pos
	for {
		for i < s.end {
			c := s.buf[i]
			if (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' {
				i++
				continue
			}
			goto done
		}
		if i-start > maxNumberBytes {
			return nil, errNumberLong
		}
		{
			rel := i - start
			s.pos = start
			if !s.fill(start) {
				start, i = s.pos, s.pos+rel
				goto done
			}
			start, i = s.pos, s.pos+rel
		}
	}
done:
	if i-start > maxNumberBytes {
		return nil, errNumberLong
	}
	text := s.buf[start:i]
	s.pos = i
	if !validNumber(text) {
		return nil, errSyntax
	}
	return text, nil
}

// validNumber reports whether b is a JSON number.
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return false
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(b)
}

// literal consumes true, false or null at pos.
func (s *scanner) literal() (string, error) {
	var want string
	switch s.buf[s.pos] {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	case 'n':
		want = "null"
	default:
		return "", errSyntax
	}
	if !s.ensure(len(want)) {
		return "", errEOF
	}
	if string(s.buf[s.pos:s.pos+len(want)]) != want {
		return "", errSyntax
	}
	s.pos += len(want)
	return want, nil
}

// skipValue skips the value at pos (after whitespace), which sits at nesting depth
// depth (containers deeper than maxDepth are errDepth). With capture set, it appends
// the value's compact text (whitespace outside strings removed) to *capture.
func (s *scanner) skipValue(depth, maxDepth int, capture *[]byte) error {
	c := s.peek()
	switch {
	case c == '"':
		return s.skipString(capture)
	case c == '{' || c == '[':
		if depth > maxDepth {
			return errDepth
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.pos++
		if capture != nil {
			*capture = append(*capture, byte(c))
		}
		n := s.peek()
		if n == int(closer) {
			s.pos++
			if capture != nil {
				*capture = append(*capture, closer)
			}
			return nil
		}
		for {
			if c == '{' {
				if n != '"' {
					return syntaxOrEOF(n)
				}
				if err := s.skipString(capture); err != nil {
					return err
				}
				if s.peek() != ':' {
					return syntaxOrEOF(s.peek())
				}
				s.pos++
				if capture != nil {
					*capture = append(*capture, ':')
				}
			}
			if err := s.skipValue(depth+1, maxDepth, capture); err != nil {
				return err
			}
			n = s.peek()
			if n == ',' {
				s.pos++
				if capture != nil {
					*capture = append(*capture, ',')
				}
				n = s.peek()
				continue
			}
			if n == int(closer) {
				s.pos++
				if capture != nil {
					*capture = append(*capture, closer)
				}
				return nil
			}
			return syntaxOrEOF(n)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		t, err := s.readNumber()
		if err == nil && capture != nil {
			*capture = append(*capture, t...)
		}
		return err
	case c == 't' || c == 'f' || c == 'n':
		w, err := s.literal()
		if err == nil && capture != nil {
			*capture = append(*capture, w...)
		}
		return err
	default:
		return syntaxOrEOF(c)
	}
}

func syntaxOrEOF(c int) error {
	if c < 0 {
		return errEOF
	}
	return errSyntax
}

// captureIntArrays reads the array at pos (buf[pos] == '[') when it holds only integers
// and arrays of them (Kineto's "Input Dims") and lies whole in the buffer: it appends the
// array's compact text to dst, as skipValue would capture it, and consumes it. depth is
// the array's nesting depth. ok is false, with dst as it was and nothing consumed, for
// any other value, one the buffer does not hold, or one nested deeper than maxDepth:
// skipValue then reads it and reports its errors.
func (s *scanner) captureIntArrays(dst []byte, depth, maxDepth int) (out []byte, ok bool) {
	out, end, ok := intArrays(s.buf[:s.end], s.pos, dst, depth, maxDepth)
	if ok {
		s.pos = end
	}
	return out, ok
}

// intArrays is captureIntArrays over b from i; end is the index after the array. It
// checks the array first, then copies its text in one piece when it holds no
// whitespace, or without the whitespace (the array holds no strings).
func intArrays(b []byte, i int, dst []byte, depth, maxDepth int) (out []byte, end int, ok bool) {
	start := i
	spaced := false
	// want is what may come next: a value (after "," or at the start), a value or "]"
	// (after "["), or "," or "]" (after a value).
	const (
		wantValue = iota
		wantValueOrClose
		wantCommaOrClose
	)
	want, level := wantValue, 0
	for i < len(b) {
		switch c := b[i]; {
		case c == ' ' || c == '\n' || c == '\r' || c == '\t':
			spaced = true
			i++
		case c == '[':
			if want == wantCommaOrClose || depth+level > maxDepth {
				return dst, 0, false
			}
			level++
			i++
			want = wantValueOrClose
		case c == ']':
			if want == wantValue {
				return dst, 0, false
			}
			level--
			i++
			if level == 0 {
				if !spaced {
					return append(dst, b[start:i]...), i, true
				}
				for _, c := range b[start:i] {
					if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
						dst = append(dst, c)
					}
				}
				return dst, i, true
			}
			want = wantCommaOrClose
		case c == ',':
			if want != wantCommaOrClose {
				return dst, 0, false
			}
			i++
			want = wantValue
		case c == '-' || c-'0' <= 9:
			if want == wantCommaOrClose {
				return dst, 0, false
			}
			j := i
			if c == '-' {
				j++
			}
			if j >= len(b) || b[j]-'0' > 9 {
				return dst, 0, false
			}
			if b[j] == '0' {
				j++
			} else {
				for j < len(b) && b[j]-'0' <= 9 {
					j++
				}
			}
			// The byte after the number must be in the buffer and end it as an integer,
			// and the number must be within readNumber's bound, which skipValue reports.
			if j >= len(b) || j-i > maxNumberBytes {
				return dst, 0, false
			}
			if n := b[j]; n == '.' || n == 'e' || n == 'E' || n-'0' <= 9 {
				return dst, 0, false
			}
			i = j
			want = wantCommaOrClose
		default:
			return dst, 0, false
		}
	}
	return dst, 0, false
}
