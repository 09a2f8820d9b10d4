package validate

import "strings"

// Nearest returns the name closest to s (a shared prefix or an edit distance of at
// most 2), or "".
func Nearest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := distance(s, n)
		if strings.HasPrefix(n, s) || strings.HasPrefix(s, n) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
