package setup

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// editTOML returns src with the table [section.flameox] holding the members (command and
// args), every other byte kept. It locates the table and its key-value lines with
// go-toml's parser (byte ranges of each expression), replaces the value lines of the
// members that differ, inserts absent members after the table's last key-value, or
// appends a new table at the end of the file. Comments, blank lines, key order and the
// entry's other keys (env, enabled, tool lists, sub-tables) are untouched. An entry laid
// out otherwise (an inline table, dotted keys) is refused rather than rewritten; the
// result is re-parsed and must equal the original outside the members.
func editTOML(src []byte, section string, want []member) ([]byte, bool, error) {
	var orig map[string]any
	if err := toml.Unmarshal(src, &orig); err != nil {
		reason := "invalid_syntax"
		if strings.Contains(err.Error(), "already") || strings.Contains(err.Error(), "duplicate") {
			reason = "duplicate_key"
		}
		return nil, false, refuse(reason, "the file is not valid TOML: "+firstLine(err.Error()))
	}
	if r := checkDepth(orig, 0); r != nil {
		return nil, false, r
	}
	var (
		p          unstable.Parser
		table      []string
		header     = -1 // offset just past the [section.flameox] header line
		lastKV     = -1 // offset just past the table's last key-value line
		kvs        = map[string][2]int{}
		otherShape bool
	)
	p.Reset(src)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyOf(e.Key())
			if e.Kind == unstable.Table && equalKey(table, section, "flameox") {
				header = lineEnd(src, keyEnd(e.Key()))
			} else if hasPrefix(table, section, "flameox") && e.Kind == unstable.ArrayTable && len(table) == 2 {
				otherShape = true
			}
		case unstable.KeyValue:
			full := append(append([]string{}, table...), keyOf(e.Key())...)
			inTable := equalKey(table, section, "flameox")
			if inTable {
				lastKV = lineEnd(src, int(e.Raw.Offset+e.Raw.Length))
				if k := keyOf(e.Key()); len(k) == 1 {
					kvs[k[0]] = [2]int{int(e.Raw.Offset), int(e.Raw.Offset + e.Raw.Length)}
				}
			} else if len(table) < 2 && hasPrefix(full, section, "flameox") {
				// flameox defined by dotted keys or an inline table, not by its header.
				otherShape = true
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, false, refuse("invalid_syntax", "the file is not valid TOML: "+firstLine(err.Error()))
	}
	if otherShape {
		return nil, false, refuse("unsupported_layout",
			"the flameox entry is written as an inline table or dotted keys; rewrite it as a [mcp_servers.flameox] table or remove it, then run setup again")
	}
	var cur map[string]any
	if s, ok := orig[section].(map[string]any); ok {
		cur, _ = s["flameox"].(map[string]any)
	}
	type edit struct {
		from, to int
		text     string
	}
	var edits []edit
	var missing []string
	for _, m := range want {
		line := m.name + " = " + tomlValue(m.value)
		if header < 0 {
			missing = append(missing, line)
			continue
		}
		r, ok := kvs[m.name]
		switch {
		case !ok:
			missing = append(missing, line)
		case m.onlyIfAbsent:
		case !sameTOML(cur[m.name], m.value):
			edits = append(edits, edit{r[0], r[1], line})
		}
	}
	if len(edits) == 0 && len(missing) == 0 {
		return src, false, nil
	}
	if header < 0 {
		var b strings.Builder
		if len(src) > 0 && src[len(src)-1] != '\n' {
			b.WriteString("\n")
		}
		if len(bytes.TrimSpace(src)) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[" + section + ".flameox]\n")
		for _, l := range missing {
			b.WriteString(l + "\n")
		}
		edits = append(edits, edit{len(src), len(src), b.String()})
	} else if len(missing) > 0 {
		at := lastKV
		if at < 0 {
			at = header
		}
		text := strings.Join(missing, "\n") + "\n"
		if at > 0 && src[at-1] != '\n' {
			text = "\n" + text
		}
		edits = append(edits, edit{at, at, text})
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	out := append([]byte{}, src...)
	for _, e := range edits {
		out = append(out[:e.from], append([]byte(e.text), out[e.to:]...)...)
	}
	if err := verifyTOML(orig, out, section, want); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func checkDepth(v any, depth int) *refusal {
	if depth > maxDepth {
		return refuse("too_deep", "the file nests deeper than the editor's limit")
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if r := checkDepth(e, depth+1); r != nil {
				return r
			}
		}
	case []any:
		for _, e := range x {
			if r := checkDepth(e, depth+1); r != nil {
				return r
			}
		}
	}
	return nil
}

func keyOf(it unstable.Iterator) []string {
	var k []string
	for it.Next() {
		k = append(k, string(it.Node().Data))
	}
	return k
}

// keyEnd is the offset just past the last part of a key.
func keyEnd(it unstable.Iterator) int {
	end := 0
	for it.Next() {
		r := it.Node().Raw
		end = int(r.Offset + r.Length)
	}
	return end
}

// lineEnd is the offset just past the newline that ends the line holding offset (or the
// end of the file). A key-value's or header's line holds at most a comment after it.
func lineEnd(src []byte, offset int) int {
	if i := bytes.IndexByte(src[offset:], '\n'); i >= 0 {
		return offset + i + 1
	}
	return len(src)
}

func equalKey(k []string, parts ...string) bool { return reflect.DeepEqual(k, parts) }

func hasPrefix(k []string, parts ...string) bool {
	return len(k) >= len(parts) && reflect.DeepEqual(k[:len(parts)], parts)
}

// tomlValue renders a string or a list of strings as TOML.
func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return tomlString(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case bool:
		return fmt.Sprint(x)
	}
	panic(fmt.Sprintf("setup: no TOML rendering for %T", v))
}

// tomlString is a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sameTOML compares a decoded TOML value with a member's value.
func sameTOML(have, want any) bool {
	if l, ok := want.([]string); ok {
		h, ok := have.([]any)
		if !ok || len(h) != len(l) {
			return false
		}
		for i := range l {
			if h[i] != l[i] {
				return false
			}
		}
		return true
	}
	return have == want
}

// verifyTOML checks that out parses, holds the members in [section.flameox], and equals
// the original document outside them.
func verifyTOML(orig map[string]any, out []byte, section string, want []member) error {
	var got map[string]any
	if err := toml.Unmarshal(out, &got); err != nil {
		return refuse("unsupported_layout", "the edited file would not parse; edit it by hand")
	}
	gs, _ := got[section].(map[string]any)
	ge, _ := gs["flameox"].(map[string]any)
	var oe map[string]any
	if os, ok := orig[section].(map[string]any); ok {
		oe, _ = os["flameox"].(map[string]any)
	}
	for _, m := range want {
		w := m.value
		if m.onlyIfAbsent && oe != nil && oe[m.name] != nil {
			continue
		}
		if !sameTOML(ge[m.name], w) {
			return refuse("unsupported_layout", "the edited entry does not hold the launcher; edit the file by hand")
		}
	}
	for k, v := range oe {
		if !isMember(want, k) && !reflect.DeepEqual(ge[k], v) {
			return refuse("unsupported_layout", "the edit would change the entry's key \""+k+"\"; edit the file by hand")
		}
	}
	strip := func(doc map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range doc {
			c[k] = v
		}
		if s, ok := c[section].(map[string]any); ok {
			sc := map[string]any{}
			for k, v := range s {
				if k != "flameox" {
					sc[k] = v
				}
			}
			if len(sc) == 0 {
				delete(c, section)
			} else {
				c[section] = sc
			}
		}
		return c
	}
	if !reflect.DeepEqual(strip(orig), strip(got)) {
		return refuse("unsupported_layout", "the edit would change settings outside the flameox entry; edit the file by hand")
	}
	return nil
}
