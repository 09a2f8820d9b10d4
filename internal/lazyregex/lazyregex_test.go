package lazyregex

import (
	"testing"

	"github.com/ogen-go/ogen/ogenregex"
)

// TestMatchesAsOgenregex: a lazy expression answers as the one ogenregex compiles at once,
// for a pattern Go's regexp takes and one only regexp2 takes (a lookahead).
func TestMatchesAsOgenregex(t *testing.T) {
	for _, c := range []struct {
		exp    string
		inputs []string
	}{
		{`^[a-z][a-z0-9_]{0,63}$`, []string{"cpu", "Cpu", "a_1", "", "9a"}},
		{`^[a-f0-9]{64}$`, []string{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e3b0"}},
		{`^(?=.*[0-9])[a-z0-9]+$`, []string{"abc1", "abc", "1"}},
	} {
		lazy, eager := MustCompile(c.exp), ogenregex.MustCompile(c.exp)
		if lazy.String() != c.exp {
			t.Errorf("String() = %q, want %q", lazy.String(), c.exp)
		}
		for _, in := range c.inputs {
			got, gerr := lazy.MatchString(in)
			want, werr := eager.MatchString(in)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Errorf("%s on %q: lazy %v, %v; ogenregex %v, %v", c.exp, in, got, gerr, want, werr)
			}
			if got, _ := lazy.Match([]byte(in)); got != want {
				t.Errorf("%s on %q: Match %v, want %v", c.exp, in, got, want)
			}
		}
	}
}

// TestBadPatternPanicsOnFirstMatch: a pattern that does not compile is refused at its
// first use (make generate refuses it before: tools/ogenlazy).
func TestBadPatternPanicsOnFirstMatch(t *testing.T) {
	r := MustCompile(`(`)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on the first match of a pattern that does not compile")
		}
	}()
	r.MatchString("x")
}
