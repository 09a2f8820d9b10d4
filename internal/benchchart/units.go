package benchchart

import (
	"math"
	"strconv"
	"strings"
)

// baseUnit is a unit Humanize knows: its kind and how many of the kind's smallest unit
// (ns, byte) one of it is.
type baseUnit struct {
	kind  string // "time" or "bytes"
	scale float64
}

var baseUnits = map[string]baseUnit{
	"ns": {"time", 1}, "us": {"time", 1e3}, "µs": {"time", 1e3}, "μs": {"time", 1e3}, "ms": {"time", 1e6},
	"s": {"time", 1e9}, "sec": {"time", 1e9}, "second": {"time", 1e9}, "seconds": {"time", 1e9},
	"B": {"bytes", 1}, "byte": {"bytes", 1}, "bytes": {"bytes", 1},
	"kB": {"bytes", 1e3}, "KB": {"bytes", 1e3}, "MB": {"bytes", 1e6}, "GB": {"bytes", 1e9}, "TB": {"bytes", 1e12},
}

// ladders are the units a kind is written in, smallest first, each 1000 of the one before
// (bytes are decimal: kB, MB, GB, as throughputs are). Other units get SI suffixes.
var ladders = map[string][]string{
	"time":  {"ns", "µs", "ms", "s"},
	"bytes": {"B", "kB", "MB", "GB", "TB", "PB"},
	"":      {"", "k", "M", "G", "T", "P"},
}

// splitUnit reads a unit as a known base unit and a per-something suffix: "ns" is time,
// "B/op" bytes per op, "MB/s" bytes (of a million) per second, "sec/op" time per op.
func splitUnit(unit string) (baseUnit, string, bool) {
	head, rest, per := strings.Cut(unit, "/")
	b, ok := baseUnits[head]
	if !ok {
		return baseUnit{}, "", false
	}
	if per {
		rest = "/" + rest
	}
	return b, rest, true
}

// Humanize writes a value of a benchmark unit with four significant digits in the unit of
// its kind that keeps it under 1000: time (ns, µs, ms, s: "22.53 ms"), bytes and their
// rates (B, kB, MB, GB, decimal: "1.2 GB/s", "7.361 MB"), counts and other units with SI
// suffixes ("12.35k", "1.5M tokens/s"). Trailing zeros are dropped.
func Humanize(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	kind, suffix, scale := "", " "+unit, 1.0
	if unit == "count" || unit == "" {
		suffix = ""
	}
	if b, rest, ok := splitUnit(unit); ok {
		kind, suffix, scale = b.kind, rest, b.scale
	}
	ladder := ladders[kind]
	x := v * scale
	i := 0
	for i < len(ladder)-1 && math.Abs(x) >= 1000 {
		x /= 1000
		i++
	}
	digits := func(x float64) int {
		if x == 0 {
			return 0
		}
		return max(0, 3-int(math.Floor(math.Log10(math.Abs(x)))))
	}
	d := digits(x)
	if r := round(x, d); math.Abs(r) >= 1000 && i < len(ladder)-1 {
		// 999.96 rounds to 1000: one unit up.
		x /= 1000
		i++
		d = digits(x)
	}
	s := strconv.FormatFloat(round(x, d), 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	name := ladder[i]
	if kind == "" {
		return s + name + suffix
	}
	return s + " " + name + suffix
}

func round(x float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(x*p) / p
}

// UnitName names a unit for a chart's group heading: the kind of a known unit ("time",
// "bytes", "bytes/s", "time/op"), else the unit as written.
func UnitName(unit string) string {
	if b, rest, ok := splitUnit(unit); ok {
		return b.kind + rest
	}
	return unit
}
