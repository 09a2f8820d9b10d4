package parquet

// Node is one field of a file's schema: a group (Children) or a leaf column (Leaf >= 0).
// The root is the schema itself, a group whose repetition means nothing.
type Node struct {
	Name       string
	Repetition Repetition
	Type       Type  // leaves
	TypeLength int32 // FIXED_LEN_BYTE_ARRAY leaves
	Converted  ConvertedType
	Scale      int32 // converted DECIMAL
	Precision  int32 // converted DECIMAL
	Logical    LogicalType
	Children   []*Node
	Leaf       int // index of the leaf column, -1 for a group

	// MaxDef and MaxRep are the highest definition and repetition levels of values at
	// this node: the optional and repeated fields on its path, itself included.
	MaxDef, MaxRep int

	first, leaves int // the leaf columns under the node: [first, first+leaves)
}

// Column is one leaf column: its node, its path of names from the root, and the levels
// of its values.
type Column struct {
	Node           *Node
	Path           []string
	MaxDef, MaxRep int
}

// maxSchemaDepth bounds the nesting of a schema.
const maxSchemaDepth = 64

// buildSchema turns the flattened schema (depth-first, each group followed by its
// num_children children) into a tree and lists its leaf columns in order.
func buildSchema(elems []schemaElement) (*Node, []Column, error) {
	if len(elems) == 0 {
		return nil, nil, formatErr("schema is empty")
	}
	var cols []Column
	pos := 0
	var build func(depth, def, rep int, path []string) (*Node, error)
	build = func(depth, def, rep int, path []string) (*Node, error) {
		if depth > maxSchemaDepth {
			return nil, formatErr("schema nested too deeply")
		}
		if pos >= len(elems) {
			return nil, formatErr("schema has fewer elements than its groups count")
		}
		e := elems[pos]
		pos++
		n := &Node{Name: e.name, Repetition: e.repetition, Type: e.typ, TypeLength: e.typeLength,
			Converted: e.converted, Scale: e.scale, Precision: e.precision, Logical: e.logical, Leaf: -1}
		if depth > 0 {
			switch e.repetition {
			case Required:
			case Optional:
				def++
			case Repeated:
				def++
				rep++
			default:
				return nil, formatErr("field %q has an unknown repetition", e.name)
			}
			path = append(path[:len(path):len(path)], e.name)
		}
		n.MaxDef, n.MaxRep = def, rep
		n.first = len(cols)
		defer func() { n.leaves = len(cols) - n.first }()
		if e.numChildren < 0 {
			return nil, formatErr("field %q has a negative number of children", e.name)
		}
		if e.numChildren == 0 && depth > 0 {
			if !e.hasType || e.typ < Boolean || e.typ > FixedLenByteArray {
				return nil, formatErr("leaf %q has no known physical type", e.name)
			}
			if e.typ == FixedLenByteArray && e.typeLength <= 0 {
				return nil, formatErr("leaf %q has no fixed length", e.name)
			}
			if s, ok := n.decimalScale(); ok && (s < -maxDecimalScale || s > maxDecimalScale) {
				return nil, formatErr("leaf %q declares a DECIMAL scale of %d, past %d", e.name, s, maxDecimalScale)
			}
			n.Leaf = len(cols)
			cols = append(cols, Column{Node: n, Path: path, MaxDef: def, MaxRep: rep})
			return n, nil
		}
		if int(e.numChildren) > len(elems)-pos {
			return nil, formatErr("schema has fewer elements than its groups count")
		}
		n.Children = make([]*Node, 0, e.numChildren)
		for range e.numChildren {
			c, err := build(depth+1, def, rep, path)
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
		return n, nil
	}
	root, err := build(0, 0, 0, nil)
	if err != nil {
		return nil, nil, err
	}
	if pos != len(elems) {
		return nil, nil, formatErr("schema has elements outside its root")
	}
	return root, cols, nil
}

// isList reports whether a group is annotated LIST (logical, or converted when it has no
// logical type); isMap likewise for MAP.
func (n *Node) isList() bool {
	return n.Logical.Kind == List || (n.Logical.Kind == NoLogical && n.Converted == ListConverted)
}

func (n *Node) isMap() bool {
	return n.Logical.Kind == Map || (n.Logical.Kind == NoLogical && n.Converted == MapConverted)
}

// IsUTF8 reports whether a byte-array leaf holds text: the STRING, ENUM or JSON
// logical types or their converted types.
func (n *Node) IsUTF8() bool {
	switch n.Logical.Kind {
	case String, Enum, JSON:
		return true
	case NoLogical:
		return n.Converted == UTF8 || n.Converted == EnumConverted || n.Converted == JSONConverted
	}
	return false
}

// IsUnsigned reports whether an integer leaf is unsigned: the INTEGER logical type
// unsigned, or a UINT converted type.
func (n *Node) IsUnsigned() bool {
	if n.Logical.Kind == Integer {
		return !n.Logical.Signed
	}
	if n.Logical.Kind == NoLogical {
		return n.Converted >= Uint8 && n.Converted <= Uint64
	}
	return false
}

// maxDecimalScale bounds a DECIMAL leaf's scale either way. Its form writes a digit for
// every unit of scale (decimalString), so a scale near the int32 limits would make one
// value a string of gigabytes. DECIMAL on INT32 and INT64 holds at most 9 and 18 digits,
// and the widest decimal Arrow writes (Decimal256) 76.
const maxDecimalScale = 1000

// decimalScale is the scale of a leaf the file annotates as DECIMAL (its logical type,
// else its converted type); ok is false for any other node.
func (n *Node) decimalScale() (scale int32, ok bool) {
	switch {
	case n.Logical.Kind == Decimal:
		return n.Logical.Scale, true
	case n.Logical.Kind == NoLogical && n.Converted == DecimalConv:
		return n.Scale, true
	}
	return 0, false
}
