package canon

import "testing"

func TestMarshalIsCanonical(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": []any{true, nil, "x"}}, `{"a":[true,null,"x"],"b":1}`},
		{map[string]any{"f": 1.0, "g": 1e21, "h": 0.000001}, `{"f":1,"g":1e+21,"h":0.000001}`},
		{map[string]any{"\u00e9": 1, "z": 2, "A": 3}, `{"A":3,"z":2,"é":1}`},
	}
	for _, tt := range tests {
		got, err := Marshal(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestMarshalTagsWideIntegers(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{map[string]any{"n": int64(1) << 60}, `{"n":{"$flameox.integer":"1152921504606846976"}}`},
		{map[string]any{"n": int64(-1) << 60}, `{"n":{"$flameox.integer":"-1152921504606846976"}}`},
		{[]any{int64(1)<<53 - 1, -(int64(1)<<53 - 1)}, `[9007199254740991,-9007199254740991]`},
		{map[string]any{"n": uint64(18446744073709551615), "z": 1}, `{"n":{"$flameox.integer":"18446744073709551615"},"z":1}`},
		// A decimal string stays a string; a float stays a float.
		{map[string]any{"n": "1152921504606846976", "f": 1e300}, `{"f":1e+300,"n":"1152921504606846976"}`},
	}
	for _, tt := range tests {
		got, err := Marshal(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// Two wide integers one apart, which a double cannot tell apart, have different digests.
	a, _ := Digest(map[string]any{"started": int64(1764521000000000001)})
	b, _ := Digest(map[string]any{"started": int64(1764521000000000002)})
	if a == b {
		t.Error("wide integers one apart share a digest")
	}
	// Canonicalizing the tagged form again is the identity.
	once, _ := Canonical([]byte(`{"n":1152921504606846976}`))
	twice, _ := Canonical(once)
	if string(once) != string(twice) {
		t.Errorf("not idempotent: %s then %s", once, twice)
	}
}
