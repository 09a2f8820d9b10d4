package preview

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
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
	input := func(path string, format gen.Format) providers.Input {
		in := providerstest.Input(t, path, format)
		in.SHA256 = "d"
		return in
	}
	tests := []struct {
		name      string
		in        providers.Input
		fragments *int64
		want      []string
	}{
		{"text", input(text, gen.FormatText), nil, declared(gen.PreviewTextRow{})},
		{"fragments", input(text, gen.FormatText), new(int64(2)), declared(gen.PreviewFragmentRow{})},
		// Records lead with their index, keep their native fields in their order, then the
		// source digest.
		{"records", input(jsonl, gen.FormatJsonl), nil, []string{declared(gen.PreviewRecordRow{})[0], "z", "a", declared(gen.PreviewRecordRow{})[1]}},
	}
	for _, tt := range tests {
		a, err := providerstest.Analyze(t, analyze, &gen.PreviewFields{TextFragmentChars: tt.fragments}, tt.in)
		if err != nil {
			t.Fatal(err)
		}
		rows := providerstest.Rows(t, a.Rows, 2)
		if len(rows) == 0 {
			t.Errorf("%s: no rows", tt.name)
		}
		for _, row := range rows {
			if got := keysInOrder(t, row); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: keys %v, declared %v", tt.name, got, tt.want)
			}
		}
	}
}
