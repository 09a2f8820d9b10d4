package setup

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/tailscale/hujson"
)

// member is one key of the flameox entry as it should be after setup.
type member struct {
	name  string
	value any
	// onlyIfAbsent keeps a value the user set (OpenCode's enabled flag).
	onlyIfAbsent bool
}

// refusal is a planning outcome that leaves the file alone.
type refusal struct {
	reason  string
	message string
}

func (r *refusal) Error() string { return r.reason + ": " + r.message }

func refuse(reason, message string) *refusal { return &refusal{reason: reason, message: message} }

// maxDepth bounds the nesting of a configuration file, checked before any edit.
const maxDepth = 200

// editJSON returns src with section.flameox holding the members, every other byte kept:
// comments, layout, other servers and the entry's other keys (env, disabled, ...). changed
// is false when the entry already holds the members' values. src may be JSON or JSONC;
// the edit is made on hujson's syntax tree, not on text.
func editJSON(src []byte, section string, want []member) (out []byte, changed bool, err error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}\n")
	}
	root, perr := hujson.Parse(src)
	if perr != nil {
		return nil, false, refuse("invalid_syntax", "the file is not valid JSON or JSONC: "+perr.Error())
	}
	if r := checkTree(&root, 0); r != nil {
		return nil, false, r
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, false, refuse("unexpected_structure", "the top level is not a JSON object")
	}
	unit := indentUnit(top)
	servers := lookup(top, section)
	if servers == nil {
		appendMember(top, section, func(string, bool) []byte { return []byte("{}") }, 0, unit)
		servers = lookup(top, section)
	}
	sobj, ok := servers.Value.(*hujson.Object)
	if !ok {
		return nil, false, refuse("unexpected_structure", "\""+section+"\" is not a JSON object")
	}
	entry := lookup(sobj, "flameox")
	if entry == nil {
		appendMember(sobj, "flameox", func(indent string, multiline bool) []byte {
			return renderObject(want, indent, unit, multiline)
		}, 1, unit)
		changed = true
	} else {
		eobj, ok := entry.Value.(*hujson.Object)
		if !ok {
			return nil, false, refuse("unexpected_structure", "the existing \""+section+".flameox\" entry is not a JSON object")
		}
		for _, m := range want {
			b := renderInline(m.value)
			cur := lookup(eobj, m.name)
			switch {
			case cur == nil:
				appendMember(eobj, m.name, func(string, bool) []byte { return b }, 2, unit)
				changed = true
			case m.onlyIfAbsent:
			case !sameJSON(cur.Value, b):
				nv, _ := hujson.Parse(b)
				cur.Value = nv.Value
				changed = true
			}
		}
	}
	if !changed {
		return src, false, nil
	}
	out = root.Pack()
	if err := verifyJSON(src, out, section, want); err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// checkTree refuses duplicate keys anywhere (a client and Flameox could read different
// values) and nesting beyond maxDepth.
func checkTree(v *hujson.Value, depth int) *refusal {
	if depth > maxDepth {
		return refuse("too_deep", "the file nests deeper than the editor's limit")
	}
	switch x := v.Value.(type) {
	case *hujson.Object:
		seen := map[string]bool{}
		for i := range x.Members {
			name := literalString(x.Members[i].Name.Value)
			if seen[name] {
				return refuse("duplicate_key", "the key \""+name+"\" appears twice in one object; remove one so that the file has one meaning")
			}
			seen[name] = true
			if r := checkTree(&x.Members[i].Value, depth+1); r != nil {
				return r
			}
		}
	case *hujson.Array:
		for i := range x.Elements {
			if r := checkTree(&x.Elements[i], depth+1); r != nil {
				return r
			}
		}
	}
	return nil
}

func literalString(v hujson.ValueTrimmed) string {
	lit, _ := v.(hujson.Literal)
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// lookup returns the value of the member named name, or nil.
func lookup(obj *hujson.Object, name string) *hujson.Value {
	for i := range obj.Members {
		if literalString(obj.Members[i].Name.Value) == name {
			return &obj.Members[i].Value
		}
	}
	return nil
}

// indentUnit is the indentation of the top-level members (default two spaces).
func indentUnit(top *hujson.Object) string {
	for _, m := range top.Members {
		if ind, ok := lineIndent(m.Name.BeforeExtra); ok && ind != "" {
			return ind
		}
	}
	return "  "
}

// lineIndent returns the whitespace after the last newline of extra, when that tail is
// whitespace only.
func lineIndent(extra hujson.Extra) (string, bool) {
	i := bytes.LastIndexByte(extra, '\n')
	if i < 0 {
		return "", false
	}
	tail := string(extra[i+1:])
	if strings.Trim(tail, " \t") != "" {
		return "", false
	}
	return tail, true
}

// appendMember adds name: value (compact JSON) as the last member of obj, which sits at
// nesting depth depth, in the object's own layout: on its own line at the indentation
// of its siblings (or one unit deeper than the object), or inline in a one-line object.
// Comments after the former last member stay after it, and a trailing comma stays.
func appendMember(obj *hujson.Object, name string, render func(indent string, multiline bool) []byte, depth int, unit string) {
	multiline, indent := true, strings.Repeat(unit, depth+1)
	if n := len(obj.Members); n > 0 {
		if ind, ok := lineIndent(obj.Members[n-1].Name.BeforeExtra); ok {
			indent = ind
		} else if !bytes.ContainsRune(obj.Members[n-1].Name.BeforeExtra, '\n') {
			multiline = false
		}
	}
	trailing := false
	if n := len(obj.Members); n > 0 {
		trailing = obj.Members[n-1].Value.AfterExtra != nil
	}
	ae := []byte(obj.AfterExtra)
	var head, tail []byte
	if i := bytes.LastIndexByte(ae, '\n'); i >= 0 && strings.Trim(string(ae[i+1:]), " \t") == "" {
		head, tail = ae[:i], ae[i:]
	} else if multiline {
		head, tail = ae, []byte("\n"+strings.Repeat(unit, depth))
	} else {
		head, tail = nil, ae
	}
	v, _ := hujson.Parse(render(indent, multiline))
	v.BeforeExtra = hujson.Extra(" ")
	v.AfterExtra = nil
	if trailing {
		v.AfterExtra = hujson.Extra{}
	}
	sep := " "
	if multiline {
		sep = "\n" + indent
	}
	before := append(append([]byte{}, head...), sep...)
	obj.Members = append(obj.Members, hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: hujson.Extra(before), Value: hujson.String(name)},
		Value: v,
	})
	obj.AfterExtra = hujson.Extra(tail)
}

// renderObject renders the members as one JSON object: one member a line at indent+unit
// when multiline, else on one line.
func renderObject(ms []member, indent, unit string, multiline bool) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		if multiline {
			b.WriteString("\n" + indent + unit)
		} else if i > 0 {
			b.WriteByte(' ')
		}
		k, _ := json.Marshal(m.name)
		b.Write(k)
		b.WriteString(": ")
		b.Write(renderInline(m.value))
	}
	if multiline {
		b.WriteString("\n" + indent)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// renderInline renders a member value on one line: a list as ["a", "b"].
func renderInline(v any) []byte {
	if l, ok := v.([]string); ok {
		parts := make([]string, len(l))
		for i, s := range l {
			q, _ := json.Marshal(s)
			parts[i] = string(q)
		}
		return []byte("[" + strings.Join(parts, ", ") + "]")
	}
	b, _ := json.Marshal(v)
	return b
}

// sameJSON reports whether the value v holds the JSON b.
func sameJSON(v hujson.ValueTrimmed, b []byte) bool {
	x := hujson.Value{Value: v}
	std, err := hujson.Standardize([]byte(x.String()))
	if err != nil {
		return false
	}
	var a, w any
	if json.Unmarshal(std, &a) != nil || json.Unmarshal(b, &w) != nil {
		return false
	}
	return reflect.DeepEqual(a, w)
}

// verifyJSON checks the edit: the result parses, its entry holds the members, and with
// the flameox entry removed from both, old and new documents are equal.
func verifyJSON(oldSrc, newSrc []byte, section string, want []member) error {
	decode := func(b []byte) (map[string]any, error) {
		std, err := hujson.Standardize(append([]byte{}, b...))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		err = json.Unmarshal(std, &m)
		return m, err
	}
	o, err1 := decode(oldSrc)
	n, err2 := decode(newSrc)
	if err1 != nil || err2 != nil {
		return refuse("unsupported_layout", "the edited file would not parse; edit it by hand")
	}
	ns, _ := n[section].(map[string]any)
	ne, _ := ns["flameox"].(map[string]any)
	var oe map[string]any
	if os, ok := o[section].(map[string]any); ok {
		oe, _ = os["flameox"].(map[string]any)
	}
	for _, m := range want {
		w, _ := json.Marshal(m.value)
		var wv any
		_ = json.Unmarshal(w, &wv)
		if m.onlyIfAbsent && oe != nil && oe[m.name] != nil {
			wv = oe[m.name]
		}
		if !reflect.DeepEqual(ne[m.name], wv) {
			return refuse("unsupported_layout", "the edited entry does not hold the launcher; edit the file by hand")
		}
	}
	strip := func(doc map[string]any) {
		if s, ok := doc[section].(map[string]any); ok {
			delete(s, "flameox")
			if len(s) == 0 {
				delete(doc, section)
			}
		}
	}
	// Keys of the entry other than the members must survive unchanged.
	for k, v := range oe {
		if !isMember(want, k) && !reflect.DeepEqual(ne[k], v) {
			return refuse("unsupported_layout", "the edit would change the entry's key \""+k+"\"; edit the file by hand")
		}
	}
	strip(o)
	strip(n)
	if !reflect.DeepEqual(o, n) {
		return refuse("unsupported_layout", "the edit would change settings outside the flameox entry; edit the file by hand")
	}
	return nil
}

func isMember(ms []member, name string) bool {
	for _, m := range ms {
		if m.name == name {
			return true
		}
	}
	return false
}
