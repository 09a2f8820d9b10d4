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

func TestMarshalRefusesWideIntegers(t *testing.T) {
	if _, err := Marshal(map[string]any{"n": int64(1) << 60}); err == nil {
		t.Fatal("a wide integer was canonicalized")
	}
	if _, err := Marshal(map[string]any{"n": "1152921504606846976"}); err != nil {
		t.Fatal(err)
	}
}
