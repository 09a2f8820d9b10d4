package chrome

import "math"

// scaleDecimal returns the JSON number text (already checked against the grammar)
// multiplied by 10^scale, as an int64 computed exactly from the decimal digits, never
// through float64. Digits beyond the units are rounded half to even; exact reports that
// none were dropped. ok is false when the result is outside int64. digits is scratch.
func scaleDecimal(text []byte, scale int, digits []byte) (v int64, exact, ok bool, scratch []byte) {
	if v, ok := fastScale(text, scale); ok {
		return v, true, true, digits
	}
	digits = digits[:0]
	i := 0
	neg := false
	if i < len(text) && text[i] == '-' {
		neg = true
		i++
	}
	frac := 0
	inFrac := false
	for ; i < len(text); i++ {
		c := text[i]
		if c >= '0' && c <= '9' {
			if len(digits) > 0 || c != '0' {
				digits = append(digits, c)
			}
			if inFrac {
				frac++
			}
			continue
		}
		if c == '.' {
			inFrac = true
			continue
		}
		break // 'e' or 'E'
	}
	exp := 0
	if i < len(text) {
		i++ // e
		eneg := false
		if text[i] == '+' || text[i] == '-' {
			eneg = text[i] == '-'
			i++
		}
		for ; i < len(text); i++ {
			if exp < 1_000_000 {
				exp = exp*10 + int(text[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if len(digits) == 0 {
		return 0, true, true, digits
	}
	// digits (leading zeros removed) × 10^e10 is the value.
	e10 := exp - frac + scale
	keep := len(digits)
	if e10 < 0 {
		keep = len(digits) + e10
	}
	var mag uint64
	for _, c := range digits[:max(keep, 0)] {
		d := uint64(c - '0')
		if mag > (math.MaxUint64-d)/10 {
			return 0, false, false, digits
		}
		mag = mag*10 + d
	}
	exact = true
	if e10 >= 0 {
		for ; e10 > 0; e10-- {
			if mag > math.MaxUint64/10 {
				return 0, false, false, digits
			}
			mag *= 10
		}
	} else {
		// Dropped digits: digits[keep:], preceded by -keep zeros when keep < 0.
		var first byte = '0'
		rest := digits
		if keep >= 0 {
			first = digits[keep]
			rest = digits[keep+1:]
		}
		restZero := true
		for _, c := range rest {
			if c != '0' {
				restZero = false
				break
			}
		}
		exact = first == '0' && restZero
		if keep < 0 {
			restZero = false // the dropped part is below one half: at least one digit was nonzero
			first = '0'
		}
		switch {
		case first > '5', first == '5' && !restZero, first == '5' && restZero && mag%2 == 1:
			if mag == math.MaxUint64 {
				return 0, false, false, digits
			}
			mag++
		}
	}
	if neg {
		if mag > 1<<63 {
			return 0, false, false, digits
		}
		return int64(-mag), exact, true, digits
	}
	if mag > math.MaxInt64 {
		return 0, false, false, digits
	}
	return int64(mag), exact, true, digits
}

// fastScale is scaleDecimal for the common numbers: no exponent, at most 19 digits, no
// more fraction digits than scale. ok is false for the others.
func fastScale(text []byte, scale int) (int64, bool) {
	i := 0
	neg := len(text) > 0 && text[0] == '-'
	if neg {
		i++
	}
	var m uint64
	n, frac, dot := 0, 0, false
	for ; i < len(text); i++ {
		c := text[i]
		if c == '.' {
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		m = m*10 + uint64(c-'0')
		n++
		if dot {
			frac++
		}
	}
	if n > 19 || frac > scale {
		return 0, false
	}
	for e := scale - frac; e > 0; e-- {
		if m > math.MaxInt64/10 {
			return 0, false
		}
		m *= 10
	}
	if neg {
		if m > 1<<63 {
			return 0, false
		}
		return int64(-m), true
	}
	if m > math.MaxInt64 {
		return 0, false
	}
	return int64(m), true
}
