package inference

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/flameox/flameox/internal/canon"
	"github.com/flameox/flameox/providers/internal/nonfinite"
)

// The two identity axes of an inference export: what was asked of the server, and what
// served it.
const (
	axisWorkload = "workload"
	axisSystem   = "system"
)

var axes = []string{axisWorkload, axisSystem}

// identityField is one configuration field a format records, on an axis. An axis is
// identified only when at least one of its identifying fields is recorded: a backend
// name alone does not say which model served.
type identityField struct {
	axis, name  string
	identifying bool
}

func (f identityField) key() string { return f.axis + "." + f.name }

// identity is the comparison identity of one export: a digest per recorded field, and
// which axes are identified.
type identity struct {
	fields     map[string]string
	identified map[string]bool
}

// newIdentity digests the recorded values (field key -> value; absent fields are not in
// the map) of the declared fields.
func newIdentity(declared []identityField, values map[string]any) identity {
	id := identity{fields: map[string]string{}, identified: map[string]bool{}}
	for _, f := range declared {
		v, ok := values[f.key()]
		if !ok {
			continue
		}
		id.fields[f.key()] = digestValue(v)
		if f.identifying {
			id.identified[f.axis] = true
		}
	}
	return id
}

// unavailable lists the axes the export does not identify.
func (id identity) unavailable() []string {
	out := []string{}
	for _, a := range axes {
		if !id.identified[a] {
			out = append(out, a)
		}
	}
	return out
}

// metrics are the summary's comparison_identity and comparison_identity_unavailable.
func (id identity) metrics(m map[string]any) {
	m["comparison_identity"] = id.fields
	m["comparison_identity_unavailable"] = id.unavailable()
}

// digestValue is "sha256:" and the hex SHA-256 of the RFC 8785 form of v.
func digestValue(v any) string {
	d, err := canon.Digest(normalize(v))
	if err != nil {
		// normalize leaves nothing canon refuses; keep the digest total anyway.
		d, _ = canon.Digest(strconv.Quote(err.Error()))
	}
	return "sha256:" + d
}

// normalize makes a decoded JSON value digestible: non-finite numbers (and the sentinels
// nonFinite left for Python's bare literals) become their names, and integers JSON cannot
// carry exactly become decimal strings.
func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		case x == math.Trunc(x) && math.Abs(x) > 1<<53-1:
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return x
	case string:
		if name, ok := strings.CutPrefix(x, nonfinite.Mark); ok {
			return name
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}

// pairing is how a candidate's identity stands against the baseline's.
type pairing struct {
	compatibility string
	differences   map[string]any
	unavailable   []string
}

// pair compares the baseline's identity with a candidate's: an axis either does not
// identify is unavailable, a field both record with different digests is a difference,
// a field only one records is unavailable; fields neither records are not part of it.
func pair(b, c identity) pairing {
	p := pairing{differences: map[string]any{}, unavailable: []string{}}
	for _, a := range axes {
		if !b.identified[a] || !c.identified[a] {
			p.unavailable = append(p.unavailable, a)
		}
	}
	keys := map[string]bool{}
	for k := range b.fields {
		keys[k] = true
	}
	for k := range c.fields {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		bd, inB := b.fields[k]
		cd, inC := c.fields[k]
		switch {
		case inB && inC && bd != cd:
			p.differences[k] = []any{bd, cd}
		case inB != inC:
			p.unavailable = append(p.unavailable, k)
		}
	}
	sort.Strings(p.unavailable)
	switch {
	case len(p.differences) > 0:
		p.compatibility = "heterogeneous"
	case len(p.unavailable) > 0:
		p.compatibility = "partial"
	default:
		p.compatibility = "compatible"
	}
	return p
}

// overall summarizes the pairings of every candidate: the worst compatibility, each
// differing field with every input's digest (null where it is not recorded), and every
// unavailable field or axis.
func overall(ids []identity, pairs []pairing) (string, map[string]any, []string) {
	rank := map[string]int{"compatible": 0, "partial": 1, "heterogeneous": 2}
	compat := "compatible"
	differing := map[string]bool{}
	unavailable := map[string]bool{}
	for _, p := range pairs {
		if rank[p.compatibility] > rank[compat] {
			compat = p.compatibility
		}
		for k := range p.differences {
			differing[k] = true
		}
		for _, u := range p.unavailable {
			unavailable[u] = true
		}
	}
	diffs := map[string]any{}
	for k := range differing {
		per := make([]any, len(ids))
		for i, id := range ids {
			if d, ok := id.fields[k]; ok {
				per[i] = d
			}
		}
		diffs[k] = per
	}
	list := make([]string, 0, len(unavailable))
	for u := range unavailable {
		list = append(list, u)
	}
	sort.Strings(list)
	return compat, diffs, list
}
