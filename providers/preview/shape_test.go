package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// keysInOrder returns the top-level keys of a JSON object in their written order.
func keysInOrder(t *testing.T, row []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(row))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("row %s is not an object", row)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// declared returns the JSON field names of a generated row type in declaration order.
func declared(v any) []string {
	var out []string
	typ := reflect.TypeOf(v)
	for i := range typ.NumField() {
		out = append(out, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	return out
}

// TestRowsHaveTheDeclaredShapes reads text, fragments and records and checks each row's
// keys, in order, against the row definitions declared in CUE (their generated types).
func TestRowsHaveTheDeclaredShapes(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "a.txt")
	os.WriteFile(text, []byte("one\ntwo"), 0o644)
	jsonl := filepath.Join(dir, "a.jsonl")
	os.WriteFile(jsonl, []byte(`{"z":1,"a":2}`+"\n"), 0o644)
	tests := []struct {
		name      string
		src       Source
		fragments int
		want      []string
	}{
		{"text", Source{Path: text, Format: gen.FormatText, SHA256: "d"}, 0, declared(gen.PreviewTextRow{})},
		{"fragments", Source{Path: text, Format: gen.FormatText, SHA256: "d"}, 2, declared(gen.PreviewFragmentRow{})},
		// Records lead with their index, keep their native fields in their order, then the
		// source digest.
		{"records", Source{Path: jsonl, Format: gen.FormatJsonl, SHA256: "d"}, 0, []string{declared(gen.PreviewRecordRow{})[0], "z", "a", declared(gen.PreviewRecordRow{})[1]}},
	}
	for _, tt := range tests {
		p, err := Read(context.Background(), []Source{tt.src}, Options{MaxRows: 10, FragmentChars: tt.fragments})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range p.Rows {
			if got := keysInOrder(t, row); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: keys %v, declared %v", tt.name, got, tt.want)
			}
		}
	}
}
