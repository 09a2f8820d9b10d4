package validate

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// bound is the number of a numeric keyword (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum), exact, with an int64 copy for the common integer comparison.
type bound struct {
	rat *big.Rat
	// small and isSmall hold the bound as an int64 where it is one.
	small   int64
	isSmall bool
}

// newBound makes the bound of r.
func newBound(r *big.Rat) *bound {
	b := &bound{rat: r}
	if r.IsInt() && r.Num().IsInt64() {
		b.small, b.isSmall = r.Num().Int64(), true
	}
	return b
}

// cmp compares instance number n with the bound: -1, 0 or +1. ok is false where n cannot
// be held exactly (an exponent too large for math/big to expand).
func (b *bound) cmp(n json.Number) (c int, ok bool) {
	if b.isSmall {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			switch {
			case i < b.small:
				return -1, true
			case i > b.small:
				return 1, true
			}
			return 0, true
		}
	}
	r, ok := parseNumber(n)
	if !ok {
		return 0, false
	}
	return r.Cmp(b.rat), true
}

// parseNumber returns n exactly.
func parseNumber(n json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(string(n))
}

// isInteger reports whether n has an integer value: 1.0 and 1e2 are integers, as JSON
// Schema 2020-12 says.
func isInteger(n json.Number) bool {
	if !strings.ContainsAny(string(n), ".eE") {
		return true
	}
	r, ok := parseNumber(n)
	return ok && r.IsInt()
}

// equal reports whether JSON values a and b are equal: objects and arrays member by
// member, numbers by their mathematical value.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		rx, okx := parseNumber(x)
		ry, oky := parseNumber(y)
		return okx && oky && rx.Cmp(ry) == 0
	case nil:
		return b == nil
	case bool, string:
		return a == b
	}
	return false
}
