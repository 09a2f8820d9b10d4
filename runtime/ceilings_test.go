package runtime

import (
	"bytes"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestWithCeilingsStreamsAsTheMapsDid checks the streaming rewrite against decoding into
// maps and encoding again (withCeilingsByMap, the first implementation) on every tool's
// input schema, under the defaults, the contract's maxima and odd ceilings (a fraction, a
// minimum): the same bytes, the same ok.
func TestWithCeilingsStreamsAsTheMapsDid(t *testing.T) {
	rt := newRuntime(t)
	odd := gen.LimitDefaults
	odd.MaxRows, odd.MaxInputBytes, odd.TimeoutSeconds = 1, 12345, 0.25
	withLimits := 0
	for _, tool := range rt.tools {
		for name, c := range map[string]gen.EffectiveLimits{"defaults": gen.LimitDefaults, "maxima": gen.LimitMaxima, "odd": odd} {
			got, gotOK, err := withCeilings(tool.InputSchema(), c)
			if err != nil {
				t.Fatalf("%s %s: %v", tool.Name, name, err)
			}
			want, wantOK, err := withCeilingsByMap(tool.InputSchema(), c)
			if err != nil {
				t.Fatalf("%s %s: %v", tool.Name, name, err)
			}
			if gotOK != wantOK || gotOK && !bytes.Equal(got, want) {
				t.Errorf("%s %s: ok %v, want %v\n got %.300s\nwant %.300s", tool.Name, name, gotOK, wantOK, got, want)
			}
			if gotOK && name == "odd" {
				withLimits++
				if !strings.Contains(string(got), `"maximum":12345`) || !strings.Contains(string(got), `"maximum":0.25`) {
					t.Errorf("%s: the odd ceilings are not in %.300s", tool.Name, got)
				}
			}
		}
	}
	if withLimits < 40 {
		t.Errorf("only %d tools have limits", withLimits)
	}
}

// TestWithCeilingsAddsAMissingMaximum: a limits field without a maximum gets one, as the
// map path writes it.
func TestWithCeilingsAddsAMissingMaximum(t *testing.T) {
	schema := []byte(`{"properties":{"limits":{"properties":{"max_rows":{"minimum":1,"type":"integer"}},"type":"object"},"page_size":{"maximum":9,"type":"integer"}},"type":"object"}`)
	got, ok, err := withCeilings(schema, gen.LimitDefaults)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	want := `{"properties":{"limits":{"properties":{"max_rows":{"maximum":` + jsonNumber(float64(gen.LimitDefaults.MaxRows)) + `,"minimum":1,"type":"integer"}},"type":"object"},"page_size":{"maximum":` + jsonNumber(float64(gen.LimitDefaults.MaxRows)) + `,"type":"integer"}},"type":"object"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestWithCeilingsTakesWhatTheScanDoesNot: schemas the byte scan does not copy as they
// are (an escape an encoder rewrites, whitespace inside arrays, deeper structure) come out
// as the map path writes them, and bytes that are not JSON fail.
func TestWithCeilingsTakesWhatTheScanDoesNot(t *testing.T) {
	limits := `"limits":{"properties":{"max_rows":{"maximum":5,"minimum":1}},"type":"object"}`
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{
		{"indented", "{\n  \"properties\": {\n    " + limits + ",\n    \"page_size\": {\"maximum\": 9}\n  }\n}", true},
		{"unicode escape", `{"description":"caf\u00e9","properties":{` + limits + `}}`, true},
		{"solidus escape", `{"description":"a\/b","properties":{` + limits + `}}`, true},
		{"arrays", `{"enum":[1, [2, {"maximum":3}]],"properties":{` + limits + `,"x":{"maximum":[1,2]}}}`, true},
		{"maximum not at a ceiling", `{"properties":{"limits":{"maximum":7,"properties":{"max_rows":{"maximum":5}}},"page_size":{"items":{"maximum":4},"maximum":2}}}`, true},
		{"no limits", `{"properties":{"page_size":{"maximum":9}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := withCeilings([]byte(tc.schema), gen.LimitDefaults)
			if err != nil {
				t.Fatal(err)
			}
			want, wantOK, err := withCeilingsByMap([]byte(tc.schema), gen.LimitDefaults)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || wantOK != tc.ok {
				t.Fatalf("ok %v (map path %v), want %v", ok, wantOK, tc.ok)
			}
			if ok && string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	for _, bad := range []string{`{"properties":{"limits":{`, `{"a":"unterminated}`, `{"a":[}`, `{"a":"\x"}`} {
		if _, _, err := withCeilings([]byte(bad), gen.LimitDefaults); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func BenchmarkWithCeilings(b *testing.B) {
	rt := newRuntime(b)
	b.ResetTimer()
	for range b.N {
		for _, tool := range rt.tools {
			if _, _, err := withCeilings(tool.InputSchema(), gen.LimitDefaults); err != nil {
				b.Fatal(err)
			}
		}
	}
}
