package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/flameox/flameox/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/internal/validate"
)

// The validation baseline is the reviewed set of input schemas under testdata/validation,
// taken before the served input schemas were compacted. TestInputValidationUnchanged
// holds every served input schema to it: whatever the bytes look like, the runtime must
// accept and refuse the same arguments with the same failure. A deliberate change of
// validation updates the baseline with -update-validation-baseline, in its own reviewed
// diff: it copies a served schema over its baseline only where the two judge some fixture
// differently (or there is no baseline yet), so a baseline moves only with a change of
// its tool's validation, never for a description.
var updateValidationBaseline = flag.Bool("update-validation-baseline", false,
	"copy each served input schema whose validation differs over testdata/validation")

const validationBaseline = "testdata/validation"

// TestInputValidationUnchanged runs generated argument fixtures through the baseline and
// the served input schema of every tool: valid instances (every union arm, every optional
// field, each enum value, bounds), and mutations of every value they hold (other types,
// values just outside each bound, strings breaking the patterns, missing required fields,
// unknown fields, empty and overfull arrays and maps). Both schemas must accept the same
// fixtures and refuse the others with the same failure (code, message, field path,
// accepted values and details).
func TestInputValidationUnchanged(t *testing.T) {
	testtool.Short(t, "checks every served schema over generated fixtures")
	served, err := fs.Glob(contracts.FS, "tools/*.input.json")
	if err != nil || len(served) == 0 {
		t.Fatalf("no served input schemas: %v", err)
	}
	if *updateValidationBaseline {
		kept := map[string]bool{}
		for _, p := range served {
			name := filepath.Base(p)
			kept[name] = true
			newBytes, _ := fs.ReadFile(contracts.FS, p)
			oldBytes, err := os.ReadFile(filepath.Join(validationBaseline, name))
			if err == nil && sameValidation(t, name, oldBytes, newBytes) {
				continue
			}
			if err := os.WriteFile(filepath.Join(validationBaseline, name), newBytes, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old, _ := filepath.Glob(filepath.Join(validationBaseline, "*.input.json"))
		for _, p := range old {
			if !kept[filepath.Base(p)] {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	baseline, _ := filepath.Glob(filepath.Join(validationBaseline, "*.input.json"))
	names := map[string]bool{}
	for _, p := range baseline {
		names[filepath.Base(p)] = true
	}
	for _, p := range served {
		if !names[filepath.Base(p)] {
			t.Errorf("%s has no validation baseline", p)
		}
		delete(names, filepath.Base(p))
	}
	for n := range names {
		t.Errorf("baseline %s names no served tool", n)
	}
	total := 0
	for _, p := range served {
		name := filepath.Base(p)
		t.Run(strings.TrimSuffix(name, ".input.json"), func(t *testing.T) {
			oldBytes, err := os.ReadFile(filepath.Join(validationBaseline, name))
			if err != nil {
				t.Skip("no baseline")
			}
			newBytes, _ := fs.ReadFile(contracts.FS, p)
			oldSchema, err := validate.Compile(name, oldBytes)
			if err != nil {
				t.Fatalf("baseline: %v", err)
			}
			newSchema, err := validate.Compile(name, newBytes)
			if err != nil {
				t.Fatalf("served: %v", err)
			}
			fixtures, err := argumentFixtures(oldBytes)
			if err != nil {
				t.Fatal(err)
			}
			accepted, mismatches := 0, 0
			for _, raw := range fixtures {
				a, b := outcome(oldSchema, raw), outcome(newSchema, raw)
				if a == "accepted" {
					accepted++
				}
				if a != b {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("arguments %s\nbaseline: %s\nserved:   %s", raw, a, b)
					}
				}
			}
			if mismatches > 10 {
				t.Errorf("%d more mismatches", mismatches-10)
			}
			if accepted == 0 || accepted == len(fixtures) {
				t.Errorf("%d of %d fixtures accepted: the fixtures do not exercise validation", accepted, len(fixtures))
			}
			total += len(fixtures)
			t.Logf("%d fixtures, %d accepted", len(fixtures), accepted)
		})
	}
	t.Logf("%d fixtures in all", total)
}

// sameValidation reports whether the baseline and served schemas judge every fixture of
// the baseline and of the served schema alike.
func sameValidation(t *testing.T, name string, oldBytes, newBytes []byte) bool {
	t.Helper()
	oldSchema, err1 := validate.Compile(name, oldBytes)
	newSchema, err2 := validate.Compile(name, newBytes)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, src := range [][]byte{oldBytes, newBytes} {
		fixtures, err := argumentFixtures(src)
		if err != nil {
			return false
		}
		for _, raw := range fixtures {
			if outcome(oldSchema, raw) != outcome(newSchema, raw) {
				return false
			}
		}
	}
	return true
}

// outcome is how a schema judges raw: "accepted" or the failure as JSON.
func outcome(s *validate.Schema, raw []byte) string {
	_, f := s.Validate(raw)
	if f == nil {
		return "accepted"
	}
	b, _ := json.Marshal(struct {
		Code     any
		Message  string
		Path     []any
		Accepted []string
		Details  map[string]any
	}{f.Code, f.Message, f.FieldPath, f.AcceptedValues, f.Details})
	return string(b)
}

// argumentFixtures generates the fixtures of one input schema document: its valid
// instances, and every mutation of each value they hold.
func argumentFixtures(doc []byte) ([][]byte, error) {
	var root any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&root); err != nil {
		return nil, err
	}
	g := &fixtureGen{doc: root}
	seen := map[string]bool{}
	var out [][]byte
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, b)
		}
	}
	rs := root.(map[string]any)
	for _, v := range g.valid(rs) {
		add(v)
		g.mutate(v, rs, func(m any) { add(m) })
	}
	if g.err != nil {
		return nil, g.err
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i], out[j]) < 0 })
	return out, nil
}

type fixtureGen struct {
	doc any
	err error
}

// resolve follows a $ref inside the document; the keywords beside it apply as well.
func (g *fixtureGen) resolve(s map[string]any) map[string]any {
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	var cur any = g.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, _ := cur.(map[string]any)
		cur = m[tok]
	}
	target, ok := cur.(map[string]any)
	if !ok {
		g.err = fmt.Errorf("unresolved $ref %s", ref)
		return map[string]any{}
	}
	out := map[string]any{}
	for k, v := range g.resolve(target) {
		out[k] = v
	}
	for k, v := range s {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// patternSamples are strings matching the patterns the input schemas use.
var patternSamples = map[string]string{
	`^[a-f0-9]{64}$`:                 strings.Repeat("ab", 32),
	`^/`:                             "/tmp/flameox",
	`^[^\x00]*$`:                     "arg",
	`^[A-Za-z0-9_-]+$`:               "abcdefghijklmnopqrstuvwxyz_-0123",
	`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`: "size",
	`^[^=\x00]{1,256}$`:              "NAME",
	`^[A-Za-z0-9][A-Za-z0-9._/:-]*$`: "role",
	`^(0|[1-9][0-9]{0,18})$`:         "1694039968956739000",
	`^[^,\x00\n\r]+$`:                "src/*.py",
	`^[^\x00\n\r]+$`:                 "SpeedOfLight",
	`^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$`: "2024-05-06T07:08:09Z",
}

func num(s map[string]any, k string) (*big.Rat, bool) {
	v, ok := s[k].(json.Number)
	if !ok {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(v.String())
	return r, ok
}

func ratNumber(r *big.Rat) json.Number {
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	return json.Number(r.FloatString(3))
}

// valid lists valid instances of s: one per union arm, enum value and optional field.
func (g *fixtureGen) valid(s map[string]any) []any {
	s = g.resolve(s)
	if c, ok := s["const"]; ok {
		return []any{c}
	}
	if e, ok := s["enum"].([]any); ok {
		return e
	}
	var out []any
	if arms, ok := s["anyOf"].([]any); ok {
		for _, a := range arms {
			out = append(out, g.valid(a.(map[string]any))...)
		}
		return out
	}
	for _, t := range types(s) {
		switch t {
		case "null":
			out = append(out, nil)
		case "boolean":
			out = append(out, true, false)
		case "integer", "number":
			one := big.NewRat(1, 1)
			lo, hasLo := num(s, "minimum")
			if x, ok := num(s, "exclusiveMinimum"); ok {
				lo, hasLo = new(big.Rat).Add(x, one), true
			}
			hi, hasHi := num(s, "maximum")
			switch {
			case hasLo:
				out = append(out, ratNumber(lo))
			case hasHi:
				out = append(out, ratNumber(hi))
			default:
				out = append(out, json.Number("7"))
			}
			if hasHi {
				out = append(out, ratNumber(hi))
			}
			if t == "number" && hasLo {
				out = append(out, ratNumber(new(big.Rat).Add(lo, big.NewRat(1, 2))))
			}
		case "string":
			v := "value"
			if p, ok := s["pattern"].(string); ok {
				sample, ok := patternSamples[p]
				if !ok {
					g.err = fmt.Errorf("no sample string for the pattern %q", p)
				}
				v = sample
			}
			out = append(out, v)
		case "array":
			out = append(out, g.validArrays(s)...)
		case "object":
			out = append(out, g.validObjects(s)...)
		}
	}
	if len(out) == 0 {
		g.err = fmt.Errorf("no valid instance of %v", s)
	}
	return out
}

func (g *fixtureGen) validArrays(s map[string]any) []any {
	n := 1
	if m, ok := num(s, "minItems"); ok && m.IsInt() {
		n = max(n, int(m.Num().Int64()))
	}
	items, _ := s["items"].(map[string]any)
	prefix, _ := s["prefixItems"].([]any)
	at := func(i int) map[string]any {
		if i < len(prefix) {
			return prefix[i].(map[string]any)
		}
		return items
	}
	base := make([]any, n)
	for i := range base {
		base[i] = g.valid(at(i))[0]
	}
	out := []any{base}
	for i := 0; i < min(n, 2); i++ {
		for _, v := range g.valid(at(i))[1:] {
			a := append([]any{}, base...)
			a[i] = v
			out = append(out, a)
		}
	}
	return out
}

func (g *fixtureGen) validObjects(s map[string]any) []any {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	req, _ := s["required"].([]any)
	for _, r := range req {
		required[r.(string)] = true
	}
	var names []string
	for p := range props {
		names = append(names, p)
	}
	sort.Strings(names)
	base := map[string]any{}
	for _, p := range names {
		if required[p] {
			base[p] = g.valid(props[p].(map[string]any))[0]
		}
	}
	with := func(k string, v any) map[string]any {
		o := map[string]any{}
		for bk, bv := range base {
			o[bk] = bv
		}
		o[k] = v
		return o
	}
	out := []any{base}
	full := with("", nil)
	delete(full, "")
	for _, p := range names {
		vs := g.valid(props[p].(map[string]any))
		for i, v := range vs {
			if required[p] && i == 0 {
				continue
			}
			out = append(out, with(p, v))
		}
		if !required[p] {
			full[p] = vs[0]
		}
	}
	out = append(out, full)
	if pp, ok := s["patternProperties"].(map[string]any); ok {
		for pat, ps := range pp {
			key, ok := patternSamples[pat]
			if !ok {
				g.err = fmt.Errorf("no sample key for the pattern %q", pat)
			}
			out = append(out, with(key, g.valid(ps.(map[string]any))[0]))
		}
	}
	return out
}

// anyValues are replacements tried at every location: one of each JSON type.
var anyValues = []any{nil, true, json.Number("0"), json.Number("-1"), json.Number("1.5"), "", "x", []any{}, map[string]any{}}

// badStrings are replacements tried for every string: they break the patterns in use.
var badStrings = []string{"relative/path", "a\x00b", "A=B", "ZZ", strings.Repeat("A", 64), "no spaces allowed", "2024-05-06T07:08:09", "..", "bogus"}

// mutate calls emit with every mutation of instance v of schema s, within root.
func (g *fixtureGen) mutate(root any, s map[string]any, emit func(any)) {
	g.walk(root, s, func(x any) any { return x }, emit)
}

// walk visits v under schema s and calls out with the root instance rebuilt, by set, around
// each replacement of v; it recurses into the values v holds.
func (g *fixtureGen) walk(v any, s map[string]any, set func(any) any, out func(any)) {
	s = g.resolve(s)
	emit := func(x any) { out(set(x)) }
	for _, x := range anyValues {
		emit(x)
	}
	if arms, ok := s["anyOf"].([]any); ok {
		for _, a := range arms {
			g.walk(v, a.(map[string]any), set, out)
		}
		return
	}
	if _, ok := s["enum"]; ok {
		emit("bogus")
	}
	if _, ok := s["const"]; ok {
		emit("bogus")
	}
	one := big.NewRat(1, 1)
	for _, k := range []string{"minimum", "exclusiveMinimum"} {
		if r, ok := num(s, k); ok {
			emit(ratNumber(r))
			emit(ratNumber(new(big.Rat).Sub(r, one)))
			emit(ratNumber(new(big.Rat).Sub(r, big.NewRat(1, 2))))
		}
	}
	if r, ok := num(s, "maximum"); ok {
		emit(ratNumber(r))
		emit(ratNumber(new(big.Rat).Add(r, one)))
		emit(ratNumber(new(big.Rat).Add(r, big.NewRat(1, 2))))
	}
	if r, ok := num(s, "minLength"); ok {
		emit(strings.Repeat("a", int(r.Num().Int64())))
		if r.Sign() > 0 {
			emit(strings.Repeat("a", int(r.Num().Int64())-1))
		}
	}
	if r, ok := num(s, "maxLength"); ok {
		emit(strings.Repeat("a", int(r.Num().Int64())))
		emit(strings.Repeat("a", int(r.Num().Int64())+1))
		emit(strings.Repeat("é", int(r.Num().Int64())))
	}
	if _, ok := s["pattern"]; ok {
		for _, b := range badStrings {
			emit(b)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		cp := func() map[string]any {
			o := map[string]any{}
			for k, v := range x {
				o[k] = v
			}
			return o
		}
		o := cp()
		o["bogus"] = json.Number("1")
		emit(o)
		for k := range x {
			o := cp()
			delete(o, k)
			emit(o)
		}
		if pp, ok := s["patternProperties"].(map[string]any); ok {
			for _, key := range []string{"", "A=B", "A\x00", strings.Repeat("K", 256), strings.Repeat("K", 257), "K"} {
				for _, val := range []any{"v", "a\x00b", json.Number("1"), strings.Repeat("v", 8193)} {
					o := cp()
					o[key] = val
					emit(o)
				}
			}
			if r, ok := num(s, "maxProperties"); ok {
				o := map[string]any{}
				for i := 0; i <= int(r.Num().Int64()); i++ {
					o[fmt.Sprintf("K%d", i)] = "v"
					if len(o) >= int(r.Num().Int64()) {
						emit(cloneMap(o))
					}
				}
			}
			_ = pp
		}
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				pp, _ := s["patternProperties"].(map[string]any)
				for _, p := range pp {
					ps = p.(map[string]any)
				}
			}
			if ps == nil {
				continue
			}
			k := k
			g.walk(x[k], ps, func(nv any) any {
				o := cp()
				o[k] = nv
				return set(o)
			}, out)
		}
	case []any:
		emit(append(append([]any{}, x...), x[len(x)-1]))
		if r, ok := num(s, "maxItems"); ok && len(x) > 0 {
			n := int(r.Num().Int64())
			for _, m := range []int{n, n + 1} {
				a := append([]any{}, x...)
				for len(a) < m {
					a = append(a, x[len(x)-1])
				}
				emit(a)
			}
		}
		if r, ok := num(s, "minItems"); ok && r.Sign() > 0 {
			emit(x[:int(r.Num().Int64())-1])
		}
		items, _ := s["items"].(map[string]any)
		prefix, _ := s["prefixItems"].([]any)
		for i := range x {
			is := items
			if i < len(prefix) {
				is = prefix[i].(map[string]any)
			}
			if is == nil || i > 1 {
				continue
			}
			i := i
			g.walk(x[i], is, func(nv any) any {
				a := append([]any{}, x...)
				a[i] = nv
				return set(a)
			}, out)
		}
	}
}

func cloneMap(m map[string]any) map[string]any {
	o := map[string]any{}
	for k, v := range m {
		o[k] = v
	}
	return o
}
