// Package lazyregex holds regular expressions of the generated viewer API that compile on
// their first match instead of at package initialization.
//
// ogen generates one package-level map of compiled patterns for a schema's "pattern"
// keywords; compiled at start-up, the viewer API's four patterns cost every process of
// the binary about a tenth of a millisecond, 100 kB of heap and a stack grown to 128 kB
// (decision 0067, fifth addendum), though only the evidence viewer matches them. make
// generate rewrites that map to this package's MustCompile (tools/ogenlazy), after
// checking that each pattern compiles.
package lazyregex

import (
	"sync"

	"github.com/ogen-go/ogen/ogenregex"
)

// Regexp is an ogenregex.Regexp compiled on its first use.
type Regexp struct {
	exp string
	re  func() ogenregex.Regexp
}

// MustCompile returns exp as a Regexp that ogenregex.MustCompile compiles on its first
// match; a pattern that does not compile panics then, as it would have at start-up.
func MustCompile(exp string) *Regexp {
	return &Regexp{exp: exp, re: sync.OnceValue(func() ogenregex.Regexp { return ogenregex.MustCompile(exp) })}
}

// Match reports whether b contains a match of the expression.
func (r *Regexp) Match(b []byte) (bool, error) { return r.re().Match(b) }

// MatchString reports whether s contains a match of the expression.
func (r *Regexp) MatchString(s string) (bool, error) { return r.re().MatchString(s) }

// String is the expression's source.
func (r *Regexp) String() string { return r.exp }

var _ ogenregex.Regexp = (*Regexp)(nil)
