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

// TestKeyWordsMatchKeys checks that a key matched as a word (fastKey) has the code of
// its text, for every key the decoder reads and keys that share bytes with them.
func TestKeyWordsMatchKeys(t *testing.T) {
	keys := []string{"", "p", "ph", "phx", "ph\x00", "PH", "name", "nam", "names", "cat", "ts", "dur", "pid",
		"tid", "id", "id2", "scope", "args", "arg", "File", "file", "FILE", "filename", "fileName", "Line", "line",
		"lines", "lineNumber", "Input Dims", "Bytes", "bytes", "correlation", "correlation_id", "device", "device_id",
		"devic", "stream", "streams", "External id", "Ev Idx", "queued", "context", "cbid", "grid", "block"}
	for _, k := range keys {
		for _, arg := range []bool{false, true} {
			want := eventKey([]byte(k))
			if arg {
				want = argKey([]byte(k))
			}
			b := []byte(`"` + k + `": 1, "padding after the key"`)
			ke, got := fastKey(b, 0, 1<<20, arg)
			if ke != len(k)+1 || got != want {
				t.Errorf("fastKey(%q, arg %v) = %d, %d; want %d, %d", k, arg, ke, got, len(k)+1, want)
			}
			if ke, _ := fastKey(b, 0, len(k)-1, arg); len(k) > 0 && ke != -1 {
				t.Errorf("fastKey(%q) under a bound of %d bytes = %d, want -1", k, len(k)-1, ke)
			}
		}
	}
}

// TestSkipJSONMatchesSkipValue checks the fast path's skipping against skipValue's on
// random JSON values with random whitespace, escapes, numbers and nesting, valid and
// malformed: whatever skipJSON accepts, skipValue accepts with the same end, and
// skipJSON accepts most valid values.
func TestSkipJSONMatchesSkipValue(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	ws := func() string { return []string{"", "", " ", " ", "\n      ", "\t", "\r\n"}[rng.Intn(7)] }
	scalars := []string{"0", "7", "-3", "1024", "1.5", "-0.25e+3", "2E-7", "9223372036854775807", `""`, `"s"`,
		`"a long string that runs past eight bytes"`, `"esc \" \\ \u00e9 \n"`, "true", "false", "null",
		// Malformed.
		"01", "1.", "-", "1e", "1-2", "+1", ".5", "tru", "nul", "x", `"\`, `"unterminated`, "1.5.5", "0x10"}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth >= 5 || rng.Intn(3) == 0 {
			return scalars[rng.Intn(len(scalars))]
		}
		obj := rng.Intn(2) == 0
		n := rng.Intn(4)
		open, close := "[", "]"
		if obj {
			open, close = "{", "}"
		}
		out := open + ws()
		for i := 0; i < n; i++ {
			if i > 0 {
				out += ws() + "," + ws()
			}
			if obj {
				out += []string{`"k"`, `"External id"`, `"a\"b"`, `k`, `""`}[rng.Intn(5)] + ws() + ":" + ws()
			}
			out += gen(depth + 1)
		}
		if rng.Intn(30) == 0 {
			out += ","
		}
		return out + ws() + close
	}
	accepted := 0
	for i := 0; i < 30000; i++ {
		text := gen(0)
		for _, tail := range []string{"}", ",", " ]", ""} {
			in := []byte(text + tail)
			end, ok := skipJSON(in, 0, 2, 6)
			s := &scanner{buf: in, end: len(in), eof: true}
			err := s.skipValue(2, 6, nil)
			if !ok {
				continue
			}
			accepted++
			if err != nil || end != s.pos {
				t.Fatalf("%q: skipJSON ends at %d, skipValue at %d with %v", in, end, s.pos, err)
			}
		}
	}
	if accepted < 10000 {
		t.Fatalf("only %d of the random values took the fast path", accepted)
	}
}
