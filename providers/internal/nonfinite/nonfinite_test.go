package nonfinite

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestAccept decodes what Python's json.dumps writes for non-finite floats, leaves the
// same words inside strings alone, and reads the marked values back.
func TestAccept(t *testing.T) {
	for _, c := range []struct {
		in    string
		found bool
		want  []float64 // the values of "v", NaN as NaN
		name  string    // the "s" string after decoding
	}{
		{`{"v": [1.5, NaN, Infinity, -Infinity], "s": "NaN and Infinity"}`, true, []float64{1.5, math.NaN(), math.Inf(1), math.Inf(-1)}, "NaN and Infinity"},
		{`{"v": [2], "s": "a \"NaN\" quoted"}`, false, []float64{2}, `a "NaN" quoted`},
		{`{"v": [], "s": "Infinity\\"}`, false, nil, `Infinity\`},
	} {
		b, found := Accept([]byte(c.in))
		if found != c.found {
			t.Errorf("%s: found %v", c.in, found)
		}
		var doc struct {
			V []any `json:"v"`
			S string
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if doc.S != c.name || len(doc.V) != len(c.want) {
			t.Fatalf("%s: %+v", c.in, doc)
		}
		for i, v := range doc.V {
			var f float64
			switch x := v.(type) {
			case json.Number:
				f, _ = x.Float64()
			case string:
				var ok bool
				if f, ok = Float(x); !ok {
					t.Fatalf("%q is not a marked literal", x)
				}
			}
			if w := c.want[i]; f != w && !(math.IsNaN(f) && math.IsNaN(w)) {
				t.Errorf("%s: value %d = %v, want %v", c.in, i, f, w)
			}
		}
	}
	if _, ok := Name("NaN"); ok {
		t.Error("an unmarked string is not a literal")
	}
}
