package parquet

import (
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// The Go forms of a record (RowReader.Read), which preview_artifact renders through
// providers/internal/jsonvalue (decision 0072). They are exact: what the file stores is
// what the form says.
//
//   - a group is a map[string]any of its fields; an optional field that is null is nil;
//   - a repeated field and a LIST are []any (empty when absent); a MAP is a
//     map[string]any (empty when absent) whose keys are the text of the key's form
//     (integers in decimal, booleans true or false, strings as they are) and whose
//     values take the forms below, their annotations included;
//   - BOOLEAN bool; integers int32 or int64, uint32 or uint64 when the INTEGER logical
//     type or a UINT converted type says unsigned; FLOAT float32; DOUBLE float64;
//     INT96 the decimal string of its 96 bits, signed;
//   - DECIMAL, on any physical type, the exact decimal string of the unscaled value
//     divided by 10^scale ("-12.50" at scale 2);
//   - BYTE_ARRAY a string whatever its annotation, but JSON, which is decoded with
//     numbers kept as their text (json.Number; a value that does not decode fails the
//     record);
//   - FIXED_LEN_BYTE_ARRAY (UUID, INTERVAL and FLOAT16 included) []byte;
//   - DATE, TIME and TIMESTAMP their stored integers (days; units since midnight or
//     the epoch).

// levels is the definition level and repetition depth reached by the nodes above.
type levels struct {
	def, rep int32
}

// subtree is the columns of node n, within cols (those of its parent's subtree, which
// start at leaf base).
func subtree(n *Node, base int, cols [][]Value) [][]Value {
	return cols[n.first-base : n.first-base+n.leaves]
}

// groupInto sets m's entries to the fields of group g.
func groupInto(m map[string]any, g *Node, lv levels, cols [][]Value) error {
	for _, c := range g.Children {
		v, err := valueOf(c, false, lv, subtree(c, g.first, cols))
		if err != nil {
			return err
		}
		m[c.Name] = v
	}
	return nil
}

// valueOf assembles node n's value from its columns' values; required skips n's own
// repetition (a repeated node's element, or an optional node already found present).
func valueOf(n *Node, required bool, lv levels, cols [][]Value) (any, error) {
	switch {
	case !required && n.Repetition == Optional:
		lv.def++
		if len(cols) > 0 && len(cols[0]) > 0 && cols[0][0].Def < lv.def {
			return nil, nil
		}
		return valueOf(n, true, lv, cols)
	case !required && n.Repetition == Repeated:
		return repeated(lv, cols, func(lv levels, cols [][]Value) (any, error) { return valueOf(n, true, lv, cols) })
	case n.isList():
		elem, err := listElement(n)
		if err != nil {
			return nil, err
		}
		return repeated(lv, subtree(elem, n.first, cols), func(lv levels, cols [][]Value) (any, error) {
			return valueOf(elem, elem.Repetition == Repeated, lv, cols)
		})
	case n.isMap():
		return mapOf(n, lv, cols)
	case n.Leaf >= 0:
		if len(cols) == 0 || len(cols[0]) == 0 {
			return nil, formatErr("no value for column %d in a record", n.Leaf)
		}
		return leafForm(n, &cols[0][0])
	}
	m := map[string]any{}
	return m, groupInto(m, n, lv, cols)
}

// listElement is a LIST's element: the one field of its one repeated group.
func listElement(n *Node) (*Node, error) {
	if len(n.Children) == 1 {
		if g := n.Children[0]; g.Leaf < 0 && g.Repetition == Repeated && len(g.Children) == 1 {
			return g.Children[0], nil
		}
	}
	return nil, formatErr("LIST %q is not a repeated group of one element", n.Name)
}

// repeated splits the columns' values into the elements of a repeated field (each
// starts at a value whose repetition level reaches the field's depth) and assembles
// each with elem.
func repeated(lv levels, cols [][]Value, elem func(levels, [][]Value) (any, error)) (any, error) {
	lv.rep++
	lv.def++
	if len(cols) == 0 || len(cols[0]) == 0 || cols[0][0].Def < lv.def {
		return []any{}, nil
	}
	n := 0
	for i, first := 0, cols[0]; i < len(first); {
		i++
		n++
		for i < len(first) && first[i].Rep > lv.rep {
			i++
		}
	}
	out := make([]any, n)
	rest := make([][]Value, len(cols))
	copy(rest, cols)
	sub := make([][]Value, len(cols))
	for i := range n {
		for j, c := range rest {
			if len(c) == 0 {
				sub[j] = c
				continue
			}
			k := 1
			for k < len(c) && c[k].Rep > lv.rep {
				k++
			}
			sub[j], rest[j] = c[:k], c[k:]
		}
		v, err := elem(lv, sub)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// mapOf assembles a MAP: its repeated key_value (or map) group's key and value fields.
func mapOf(n *Node, lv levels, cols [][]Value) (any, error) {
	var kv, key, val *Node
	for _, name := range [2]string{"key_value", "map"} {
		for _, c := range n.Children {
			if c.Name == name && c.Leaf < 0 && c.Repetition == Repeated {
				key, val = child(c, "key"), child(c, "value")
				if key != nil && val != nil && key.Repetition == Required {
					kv = c
				}
				break
			}
		}
		if kv != nil {
			break
		}
	}
	if kv == nil {
		return nil, formatErr("MAP %q is not a repeated key_value group of a key and a value", n.Name)
	}
	if len(cols) == 0 || len(cols[0]) == 0 {
		return nil, formatErr("no value for MAP %q in a record", n.Name)
	}
	lv.rep++
	lv.def++
	m := map[string]any{}
	if cols[0][0].Def < lv.def {
		return m, nil
	}
	entries, err := repeated(levels{lv.def - 1, lv.rep - 1}, subtree(kv, n.first, cols), func(lv levels, cols [][]Value) (any, error) {
		kc, vc := subtree(key, kv.first, cols), subtree(val, kv.first, cols)
		if len(kc) == 0 || len(kc[0]) == 0 || key.Leaf < 0 {
			return nil, formatErr("MAP %q has no key", n.Name)
		}
		k, err := mapKey(key, &kc[0][0])
		if err != nil {
			return nil, err
		}
		v, err := valueOf(val, false, lv, vc) // in the forms of a field
		return [2]any{k, v}, err
	})
	if err != nil {
		return nil, err
	}
	for _, e := range entries.([]any) {
		p := e.([2]any)
		m[p[0].(string)] = p[1]
	}
	return m, nil
}

func child(g *Node, name string) *Node {
	for _, c := range g.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// mapKey is a MAP key as a string: the text of its form (integers in decimal, booleans
// true or false, strings and UTF-8 bytes as they are); a key of any other form fails the
// record.
func mapKey(n *Node, v *Value) (string, error) {
	f, err := leafForm(n, v)
	if err != nil {
		return "", err
	}
	switch x := f.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	}
	return "", formatErr("MAP key of type %s", n.Type)
}

// leafForm is a leaf value's form (see the comment above).
func leafForm(n *Node, v *Value) (any, error) {
	if v.Null {
		return nil, nil
	}
	lk := n.Logical.Kind
	if scale, ok := n.decimalScale(); ok {
		switch n.Type {
		case Int32:
			return decimalString(big.NewInt(int64(v.Int32())), scale), nil
		case Int64:
			return decimalString(big.NewInt(v.Int64()), scale), nil
		case ByteArray, FixedLenByteArray:
			return decimalString(twosComplement(v.Bytes), scale), nil
		}
	}
	switch n.Type {
	case Boolean:
		return v.Bool(), nil
	case Int32, Int64:
		switch width, unsigned := intWidth(n); {
		case width == 64 && unsigned:
			return v.Uint64(), nil
		case width == 64:
			return v.Int64(), nil
		case unsigned:
			return v.Uint32(), nil
		default:
			return v.Int32(), nil
		}
	case Int96:
		return int96String(v.Bytes), nil
	case Float:
		return v.Float32(), nil
	case Double:
		return v.Float64(), nil
	case ByteArray:
		if lk == JSON || (lk == NoLogical && n.Converted == JSONConverted) {
			d := json.NewDecoder(bytes.NewReader(v.Bytes))
			d.UseNumber()
			var x, more any
			if d.Decode(&x) != nil || d.Decode(&more) != io.EOF {
				return nil, formatErr("JSON value that does not decode")
			}
			return x, nil
		}
		return string(v.Bytes), nil
	}
	return append([]byte{}, v.Bytes...), nil
}

// intWidth is an integer leaf's width and signedness: the INTEGER logical type's, an
// INT or UINT converted type's, or its physical type's (signed).
func intWidth(n *Node) (int, bool) {
	if n.Logical.Kind == Integer {
		if w := int(n.Logical.BitWidth); w == 8 || w == 16 || w == 32 || w == 64 {
			return w, !n.Logical.Signed
		}
	} else if n.Logical.Kind == NoLogical && n.Converted >= Uint8 && n.Converted <= Int64Converted {
		return [...]int{8, 16, 32, 64}[(n.Converted-Uint8)%4], n.Converted <= Uint64
	}
	if n.Type == Int64 {
		return 64, false
	}
	return 32, false
}

// int96String is the decimal form of an INT96's 12 little-endian bytes as a signed
// 96-bit integer.
func int96String(b []byte) string {
	if len(b) != 12 {
		return "0"
	}
	be := make([]byte, 12)
	for i := range b {
		be[11-i] = b[i]
	}
	z := new(big.Int).SetBytes(be)
	if be[0]&0x80 != 0 {
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), 96))
	}
	return z.String()
}

// twosComplement is the integer of big-endian two's complement bytes.
func twosComplement(data []byte) *big.Int {
	val := new(big.Int).SetBytes(data)
	if len(data) > 0 && data[0]&0x80 != 0 {
		val.Sub(val, new(big.Int).Lsh(big.NewInt(1), uint(8*len(data))))
	}
	return val
}

// decimalString is unscaled divided by 10^scale, exactly, in decimal: every digit the
// scale gives ("1.50" at scale 2), a zero before the point ("-0.05"); a scale below zero
// (which the format does not allow) multiplies.
func decimalString(unscaled *big.Int, scale int32) string {
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if scale <= 0 {
		if unscaled.Sign() == 0 {
			return "0"
		}
		return sign + digits + strings.Repeat("0", int(-scale))
	}
	if n := int(scale) + 1 - len(digits); n > 0 {
		digits = strings.Repeat("0", n) + digits
	}
	at := len(digits) - int(scale)
	return sign + digits[:at] + "." + digits[at:]
}
