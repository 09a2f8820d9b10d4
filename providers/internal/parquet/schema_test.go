package parquet

import (
	"errors"
	"testing"
)

// TestDecimalScaleBound: a DECIMAL leaf whose scale is past maxDecimalScale either way,
// in its logical or its converted type, is a format error when the schema is built; one
// at the bound, and a scale on a leaf that is no DECIMAL, are read.
func TestDecimalScaleBound(t *testing.T) {
	schema := func(leaf schemaElement) []schemaElement {
		leaf.name, leaf.hasType, leaf.repetition = "d", true, Required
		return []schemaElement{{name: "root", numChildren: 1}, leaf}
	}
	for _, c := range []struct {
		name string
		leaf schemaElement
		ok   bool
	}{
		{"logical at the bound", schemaElement{typ: ByteArray, logical: LogicalType{Kind: Decimal, Scale: maxDecimalScale, Precision: maxDecimalScale}}, true},
		{"logical past it", schemaElement{typ: ByteArray, logical: LogicalType{Kind: Decimal, Scale: 1 << 28, Precision: 1 << 28}}, false},
		{"converted past it", schemaElement{typ: Int64, converted: DecimalConv, scale: maxDecimalScale + 1, precision: 18}, false},
		{"converted below it", schemaElement{typ: Int32, converted: DecimalConv, scale: -1 << 31, precision: 9}, false},
		{"a scale on no DECIMAL", schemaElement{typ: Int32, converted: NoConvertedType, scale: 1 << 30}, true},
	} {
		_, _, err := buildSchema(schema(c.leaf))
		var fe *FormatError
		if c.ok && err != nil || !c.ok && !errors.As(err, &fe) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
