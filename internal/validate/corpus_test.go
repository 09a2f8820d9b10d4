package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/flameox/flameox/contracts"
)

// corpusSchema is one schema document the product compiles, with the instances the
// differential test runs through it.
type corpusSchema struct {
	name string
	doc  []byte
}

// productSchemas lists every schema document the product compiles through Compile: the
// tool inputs, the limits contract cut from them, the repository documents, the format
// documents whole and split as providers/kernelval splits them, and the validation
// baselines of tools/contractgen.
func productSchemas(t *testing.T) []corpusSchema {
	t.Helper()
	var out []corpusSchema
	add := func(name string, b []byte) { out = append(out, corpusSchema{name, b}) }
	for _, glob := range []string{"tools/*.input.json", "repository/*.json", "formats/*.json"} {
		paths, err := fs.Glob(contracts.FS, glob)
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: %v", glob, err)
		}
		for _, p := range paths {
			b, err := fs.ReadFile(contracts.FS, p)
			if err != nil {
				t.Fatal(err)
			}
			add(p, b)
		}
	}
	baselines, _ := filepath.Glob("../../tools/contractgen/testdata/validation/*.input.json")
	if len(baselines) == 0 {
		t.Fatal("no validation baselines")
	}
	for _, p := range baselines {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add("baseline/"+filepath.Base(p), b)
	}
	tool := decodeDoc(t, mustRead(t, "tools/preview_artifact.input.json"))
	add("limits.json", mustMarshal(t, tool["properties"].(map[string]any)["limits"]))
	// providers/kernelval validates the document without its cases, then each case.
	kv := decodeDoc(t, mustRead(t, "formats/KernelValidationDocument.json"))
	cases := kv["properties"].(map[string]any)["cases"].(map[string]any)
	item := cases["items"].(map[string]any)
	item["$schema"] = kv["$schema"]
	delete(cases, "items")
	add("kernel-validation-head.json", mustMarshal(t, kv))
	add("kernel-validation-case.json", mustMarshal(t, item))
	return out
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := fs.ReadFile(contracts.FS, p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeDoc decodes a schema document with its numbers kept exact.
func decodeDoc(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// corpus returns raw instances for one schema document: examples built from the schema,
// mutations of every value they hold, some instances mutated twice (errors at two places
// at once), and malformed documents. With n > 0 it keeps about n of the generated
// instances, spread evenly; only those are built.
func corpus(t *testing.T, doc []byte, n int) [][]byte {
	t.Helper()
	g := &instanceGen{root: decodeDoc(t, doc)}
	var lazy []func() any
	collect := func(build func() any) { lazy = append(lazy, build) }
	examples := g.examples(g.root, 0)
	for _, v := range examples {
		lazy = append(lazy, func() any { return v })
		g.mutate(v, g.root, func(x any) any { return x }, collect, 0)
	}
	seen := map[string]bool{}
	var out [][]byte
	addRaw := func(b []byte) {
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, b)
		}
	}
	for i, at := range spread(len(lazy), n) {
		v := lazy[at]()
		addRaw(mustMarshal(t, v))
		if i%13 != 0 {
			continue
		}
		// Mutated twice: every 41st mutation of this one.
		var again []func() any
		g.mutate(v, g.root, func(x any) any { return x }, func(build func() any) { again = append(again, build) }, 0)
		for j := 20; j < len(again); j += 41 {
			addRaw(mustMarshal(t, again[j]()))
		}
	}
	first := string(mustMarshal(t, examples[0]))
	for _, raw := range []string{"", "  ", "null", "[]", "[1]", "1", `"x"`, "{", "{}}", "{} {}", "{}x", "{} ", "\n{}\n",
		`{"a":1,}`, first + " trailing", first + "{}", first + "]", first + "\n"} {
		addRaw([]byte(raw))
	}
	return out
}

// spread lists n indices spread evenly over [0, total), or all of them where n <= 0 or
// total <= n.
func spread(total, n int) []int {
	if n <= 0 || total <= n {
		n = total
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i * total / n
	}
	return out
}

// instanceGen builds instances of a schema document.
type instanceGen struct{ root map[string]any }

// at resolves schema s: a boolean schema gives nil, a $ref is followed and the keywords
// beside it merged.
func (g *instanceGen) at(s any) map[string]any {
	m, _ := s.(map[string]any)
	for i := 0; i < 8 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = g.root
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = asMap(cur)[tok]
		}
		merged := maps.Clone(asMap(cur))
		for k, v := range m {
			if k != "$ref" {
				merged[k] = v
			}
		}
		m = merged
	}
	return m
}

// arms lists the union arms of s, or nil.
func (g *instanceGen) armsOf(s map[string]any) []any {
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := s[k].([]any); ok {
			return a
		}
	}
	return nil
}

// schemaTypes lists the type names of s: "type" is one name or a list of them.
func schemaTypes(s map[string]any) []string {
	if t, ok := s["type"].(string); ok {
		return []string{t}
	}
	var out []string
	for _, x := range asSlice(s["type"]) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func rat(s map[string]any, k string) *big.Rat {
	n, ok := s[k].(json.Number)
	if !ok {
		return nil
	}
	r, _ := new(big.Rat).SetString(n.String())
	return r
}

func count(s map[string]any, k string) int {
	if r := rat(s, k); r != nil && r.IsInt() {
		return int(r.Num().Int64())
	}
	return -1
}

func number(r *big.Rat) json.Number {
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	return json.Number(r.FloatString(3))
}

// examples lists instances of s meant to be valid: one per union arm, enum value and
// optional member, capped.
func (g *instanceGen) examples(raw any, depth int) []any {
	s := g.at(raw)
	if s == nil || depth > 12 {
		return []any{nil}
	}
	if c, ok := s["const"]; ok {
		return []any{c}
	}
	if e, ok := s["enum"].([]any); ok {
		return e
	}
	// One example list a union arm, or a type.
	var lists [][]any
	for _, a := range g.armsOf(s) {
		lists = append(lists, g.examples(a, depth+1))
	}
	if len(lists) == 0 {
		for _, t := range schemaTypes(s) {
			lists = append(lists, g.ofType(t, s, depth))
		}
	}
	if out := slices.Concat(lists...); len(out) > 0 {
		return out
	}
	return []any{"x"}
}

// ofType lists examples of type t under schema s.
func (g *instanceGen) ofType(t string, s map[string]any, depth int) []any {
	switch t {
	case "null":
		return []any{nil}
	case "boolean":
		return []any{true, false}
	case "integer", "number":
		return g.numbers(s, t)
	case "string":
		return []any{g.str(s)}
	case "array":
		return g.arrays(s, depth)
	case "object":
		return g.objects(s, depth)
	}
	return nil
}

func (g *instanceGen) numbers(s map[string]any, t string) []any {
	lo := rat(s, "minimum")
	if x := rat(s, "exclusiveMinimum"); x != nil {
		lo = new(big.Rat).Add(x, big.NewRat(1, 1))
	}
	hi := rat(s, "maximum")
	var out []any
	switch {
	case lo != nil:
		out = append(out, number(lo))
		if t == "number" {
			out = append(out, number(new(big.Rat).Add(lo, big.NewRat(1, 4))))
		}
	case hi != nil:
		out = append(out, number(hi))
	default:
		out = append(out, json.Number("3"))
	}
	if hi != nil {
		out = append(out, number(hi))
	}
	return out
}

func (g *instanceGen) str(s map[string]any) string {
	v := "value"
	if p, ok := s["pattern"].(string); ok {
		v = patternSample(p)
	}
	if n := count(s, "minLength"); n > 0 && len([]rune(v)) < n {
		v += strings.Repeat("a", n-len([]rune(v)))
	}
	return v
}

func (g *instanceGen) arrays(s map[string]any, depth int) []any {
	prefix, _ := s["prefixItems"].([]any)
	n := max(count(s, "minItems"), len(prefix), 1)
	itemAt := func(i int) any {
		if i < len(prefix) {
			return prefix[i]
		}
		return s["items"]
	}
	base := make([]any, n)
	for i := range base {
		base[i] = g.examples(itemAt(i), depth+1)[0]
	}
	out := []any{base}
	for _, v := range capped(g.examples(itemAt(0), depth+1)[1:], 6) {
		a := slices.Clone(base)
		a[0] = v
		out = append(out, a)
	}
	return out
}

func (g *instanceGen) objects(s map[string]any, depth int) []any {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	for _, r := range asSlice(s["required"]) {
		required[fmt.Sprint(r)] = true
	}
	names := slices.Sorted(maps.Keys(props))
	base := map[string]any{}
	for _, p := range names {
		if required[p] {
			base[p] = g.examples(props[p], depth+1)[0]
		}
	}
	out := []any{base}
	full := maps.Clone(base)
	for _, p := range names {
		vs := g.examples(props[p], depth+1)
		if !required[p] {
			full[p] = vs[0]
		}
		for i, v := range capped(vs, 6) {
			if required[p] && i == 0 {
				continue
			}
			o := maps.Clone(base)
			o[p] = v
			out = append(out, o)
		}
	}
	out = append(out, full)
	pp, _ := s["patternProperties"].(map[string]any)
	for _, pat := range slices.Sorted(maps.Keys(pp)) {
		o := maps.Clone(base)
		o[patternSample(pat)] = g.examples(pp[pat], depth+1)[0]
		out = append(out, o)
	}
	return out
}

func capped(vs []any, n int) []any {
	return vs[:min(len(vs), n)]
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// otherValues are replacements tried at every location: one value of each JSON type.
var otherValues = []any{nil, true, false, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("2.0"),
	json.Number("1e3"), "", "x", "01", []any{}, []any{json.Number("1")}, map[string]any{}, map[string]any{"kind": "x"}}

// patternBreakers are strings tried where a pattern applies.
var patternBreakers = []string{"relative/path", "a\x00b", "A=B", "ZZ", "line\nbreak", "a,b", " ", "..", "-1", "1e3",
	"2024-05-06T07:08:09", strings.Repeat("f", 63), strings.Repeat("F", 64), "bogus value"}

// mutate walks v, an instance of schema s, and calls out with a builder of the root
// instance rebuilt by set around each replacement of v; it recurses into what v holds.
func (g *instanceGen) mutate(v any, raw any, set func(any) any, out func(func() any), depth int) {
	s := g.at(raw)
	if s == nil || depth > 12 {
		return
	}
	put := emitter(set, out)
	for _, x := range otherValues {
		put(x)
	}
	if arms := g.armsOf(s); arms != nil {
		// Each arm's kind, and the members of v as each arm sees them.
		for _, a := range arms {
			if k, ok := asMap(g.at(a)["properties"])["kind"]; ok {
				if c, ok := g.at(k)["const"]; ok {
					if o, ok := v.(map[string]any); ok {
						m := maps.Clone(o)
						m["kind"] = c
						put(m)
					}
				}
			}
			g.mutate(v, a, set, out, depth+1)
		}
		return
	}
	if _, ok := s["const"]; ok {
		put("bogus")
	}
	if _, ok := s["enum"]; ok {
		put("bogus")
		put(json.Number("1"))
	}
	g.bounds(s, put)
	switch x := v.(type) {
	case map[string]any:
		g.mutateObject(x, s, set, out, depth)
	case []any:
		g.mutateArray(x, s, set, out, depth)
	}
}

// emitter returns a function that hands out the builder of the root instance around a
// replacement.
func emitter(set func(any) any, out func(func() any)) func(any) {
	return func(x any) { out(func() any { return set(x) }) }
}

// bounds puts the values at and just past each bound of s.
func (g *instanceGen) bounds(s map[string]any, put func(any)) {
	one, half := big.NewRat(1, 1), big.NewRat(1, 2)
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		r := rat(s, k)
		if r == nil {
			continue
		}
		for _, d := range []*big.Rat{one, half} {
			put(number(r))
			put(number(new(big.Rat).Sub(r, d)))
			put(number(new(big.Rat).Add(r, d)))
		}
	}
	for _, k := range []string{"minLength", "maxLength"} {
		if n := count(s, k); n >= 0 {
			for _, m := range []int{n - 1, n, n + 1} {
				if m >= 0 {
					put(strings.Repeat("a", m))
					put(strings.Repeat("é", m))
				}
			}
		}
	}
	if _, ok := s["pattern"]; ok {
		for _, b := range patternBreakers {
			put(b)
		}
	}
}

func (g *instanceGen) mutateObject(x map[string]any, s map[string]any, set func(any) any, out func(func() any), depth int) {
	put := emitter(set, out)
	props, _ := s["properties"].(map[string]any)
	pp, _ := s["patternProperties"].(map[string]any)
	with := func(k string, v any) map[string]any {
		o := maps.Clone(x)
		o[k] = v
		return o
	}
	put(with("bogus", json.Number("1")))
	put(with("bogus", nil))
	keys := slices.Sorted(maps.Keys(x))
	for _, k := range keys {
		o := maps.Clone(x)
		delete(o, k)
		put(o)
		if len(k) > 1 {
			// A misspelt member: the required one goes missing as an unknown one appears.
			put(with(k[:len(k)-1], x[k]))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(props)) {
		put(with(p, nil))
	}
	if len(pp) > 0 {
		for _, key := range []string{"", "A=B", "A\x00", strings.Repeat("K", 256), strings.Repeat("K", 257), "K", "bogus"} {
			for _, val := range []any{"v", "a\x00b", json.Number("1"), nil, strings.Repeat("v", 8193)} {
				put(with(key, val))
			}
		}
		if n := count(s, "maxProperties"); n >= 0 {
			o := map[string]any{}
			for i := 0; i <= n; i++ {
				o[fmt.Sprintf("K%d", i)] = "v"
			}
			put(o)
		}
	}
	for _, k := range keys {
		sub, ok := props[k]
		if !ok {
			for _, pat := range slices.Sorted(maps.Keys(pp)) {
				sub = pp[pat]
			}
		}
		if sub == nil {
			if sub, ok = s["additionalProperties"].(map[string]any); !ok {
				continue
			}
		}
		g.mutate(x[k], sub, func(nv any) any { return set(with(k, nv)) }, out, depth+1)
	}
}

func (g *instanceGen) mutateArray(x []any, s map[string]any, set func(any) any, out func(func() any), depth int) {
	put := emitter(set, out)
	if len(x) == 0 {
		return
	}
	last := x[len(x)-1]
	put(append(slices.Clone(x), last))
	put(append(slices.Clone(x), nil))
	for _, k := range []string{"minItems", "maxItems"} {
		if n := count(s, k); n >= 0 {
			for _, m := range []int{n - 1, n, n + 1} {
				if m < 0 || m > 2000 {
					continue
				}
				a := make([]any, m)
				for i := range a {
					a[i] = last
				}
				put(a)
			}
		}
	}
	prefix, _ := s["prefixItems"].([]any)
	for i := range min(len(x), 2) {
		sub := s["items"]
		if i < len(prefix) {
			sub = prefix[i]
		}
		g.mutate(x[i], sub, func(nv any) any {
			a := slices.Clone(x)
			a[i] = nv
			return set(a)
		}, out, depth+1)
	}
}

// patternSample returns a short string matching the regular expression p.
func patternSample(p string) string {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "x"
	}
	var b strings.Builder
	writeSample(&b, re.Simplify())
	return b.String()
}

func writeSample(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		b.WriteRune(classSample(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture, syntax.OpPlus:
		writeSample(b, re.Sub[0])
	case syntax.OpRepeat:
		for range re.Min {
			writeSample(b, re.Sub[0])
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			writeSample(b, s)
		}
	case syntax.OpAlternate:
		writeSample(b, re.Sub[0])
	}
}

// classSample picks a printable letter or digit of a character class where it has one.
func classSample(ranges []rune) rune {
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < 0x80; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
		}
	}
	if len(ranges) == 0 {
		return 'a'
	}
	return ranges[0]
}
