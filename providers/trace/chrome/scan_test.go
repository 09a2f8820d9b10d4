package chrome

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// TestScaledNumberMatchesScaleDecimal checks the scanner's number fast path against
// readNumber and scaleDecimal on random number texts.
func TestScaledNumberMatchesScaleDecimal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.Intn(10))
		}
		return string(b)
	}
	texts := []string{"0", "-0", "1", "0.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "9223372036854775.807", "9223372036854775.808", "1700000000000000.123",
		"99999999999999999999", "01", "1.", "1e3", "1.5E-2", "-", "1.2.3", "12345678901234567.89"}
	for i := 0; i < 20000; i++ {
		s := ""
		if rng.Intn(4) == 0 {
			s = "-"
		}
		s += digits(1 + rng.Intn(20))
		if rng.Intn(2) == 0 {
			s += "." + digits(rng.Intn(5))
		}
		if rng.Intn(10) == 0 {
			s += "e" + strconv.Itoa(rng.Intn(5)-2)
		}
		texts = append(texts, s)
	}
	for _, text := range texts {
		for _, scale := range []int{0, 3} {
			for _, tail := range []string{",", "}", " ", "", `,"dur":2.5}`, "\xc0\xc0\xc0\xc0\xc0\xc0\xc0\xc0", "/:/:/:/:/:"} {
				in := text + tail
				s := &scanner{buf: []byte(in), end: len(in), eof: true}
				v, ok := s.scaledNumber(scale)
				if !ok {
					if s.pos != 0 {
						t.Fatalf("%q: a refused number consumed %d bytes", in, s.pos)
					}
					continue
				}
				if s.pos != len(text) {
					t.Fatalf("%q: consumed %d bytes, want %d", in, s.pos, len(text))
				}
				s2 := &scanner{buf: []byte(in), end: len(in), eof: true}
				num, err := s2.readNumber()
				if err != nil {
					t.Fatalf("%q: fast path read %d, readNumber fails: %v", in, v, err)
				}
				want, exact, ok2, _ := scaleDecimal(num, scale, nil)
				if !ok2 || !exact || want != v {
					t.Fatalf("%q scale %d: fast path %d, scaleDecimal %d (exact %v, ok %v)", in, scale, v, want, exact, ok2)
				}
			}
		}
	}
}

// TestStrCache checks the dispatcher's interning, cache first, on strings that collide in
// the cache, repeat in random order, are invalid UTF-8, or are too long to be cached.
func TestStrCache(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	var words [][]byte
	for i := 0; i < 5000; i++ {
		w := make([]byte, 1+rng.Intn([]int{7, 20, 300}[i%3]))
		for j := range w {
			w[j] = "ab\xff:"[rng.Intn(4)]
		}
		words = append(words, w)
	}
	d := &dispatcher{intern: map[string]string{}}
	for i := 0; i < 50000; i++ {
		w := words[rng.Intn(len(words))]
		in := string(w)
		got := d.str(append([]byte(nil), w...))
		if want := strings.ToValidUTF8(in, "\uFFFD"); got != want {
			t.Fatalf("str(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIntArraysMatchesSkipValue checks the Input Dims fast capture against skipValue's
// capture on random arrays of integers with random whitespace, and on malformed ones:
// whatever intArrays accepts, skipValue accepts with the same text and end.
func TestIntArraysMatchesSkipValue(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ws := func() string { return []string{"", "", " ", "\n  ", "\t"}[rng.Intn(5)] }
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth > 0 && (depth >= 4 || rng.Intn(3) == 0) {
			return []string{"0", "7", "-3", "1024", "9223372036854775807", "01", "1.5", "2e3", "-", "x", `"s"`}[rng.Intn(11)]
		}
		n := rng.Intn(4)
		out := "[" + ws()
		for i := 0; i < n; i++ {
			if i > 0 {
				out += ws() + "," + ws()
			}
			out += gen(depth + 1)
		}
		if rng.Intn(20) == 0 {
			out += ","
		}
		return out + ws() + "]"
	}
	accepted := 0
	for i := 0; i < 20000; i++ {
		text := gen(0)
		for _, tail := range []string{"}", ""} {
			in := []byte(text + tail)
			got, end, ok := intArrays(in, 0, []byte("x"), 3, 6)
			if !ok {
				if string(got) != "x" {
					t.Fatalf("%q: refused, but dst changed to %q", in, got)
				}
				continue
			}
			accepted++
			s := &scanner{buf: in, end: len(in), eof: true}
			want := []byte("x")
			if err := s.skipValue(3, 6, &want); err != nil {
				t.Fatalf("%q: intArrays accepts %q, skipValue fails: %v", in, got, err)
			}
			if string(got) != string(want) || end != s.pos {
				t.Fatalf("%q: intArrays %q end %d, skipValue %q end %d", in, got, end, want, s.pos)
			}
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d of the random arrays took the fast path", accepted)
	}
}
