package jsonvalue

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestAppend(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, `null`},
		{"int at the safe bound", int64(MaxSafe), `9007199254740991`},
		{"int past the safe bound", int64(MaxSafe + 1), `"9007199254740992"`},
		{"negative int past the bound", int64(-MaxSafe - 1), `"-9007199254740992"`},
		{"uint64 max", uint64(math.MaxUint64), `"18446744073709551615"`},
		{"uint32", uint32(math.MaxUint32), `4294967295`},
		{"float32 in its own shortest form", float32(0.1), `0.1`},
		{"float32 large", float32(3.4e38), `3.4e+38`},
		{"float64", 0.1, `0.1`},
		{"NaN", math.NaN(), `"NaN"`},
		{"float32 infinity", float32(math.Inf(-1)), `"-Infinity"`},
		{"JSON integer", json.Number("-12"), `-12`},
		{"JSON integer past the safe bound", json.Number("9007199254740993"), `"9007199254740993"`},
		{"JSON integer past 64 bits", json.Number("100000000000000000000"), `"100000000000000000000"`},
		{"JSON fraction kept as written", json.Number("2.50"), `2.50`},
		{"JSON exponent kept as written", json.Number("1.5e300"), `1.5e300`},
		{"JSON number past float64, as every JSON preview carries it", json.Number("1e400"), `"Infinity"`},
		{"negative JSON number past float64", json.Number("-1e400"), `"-Infinity"`},
		{"invalid UTF-8 string", "v\xff", `"v` + "\uFFFD" + `"`},
		{"UTF-8 bytes", []byte("ab"), `"ab"`},
		{"other bytes as base64", []byte{0xff, 0}, `"/wA="`},
		{"time", time.Date(2024, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)), `"2024-01-02T02:04:05.000000006Z"`},
		{"list and sorted map", []any{map[string]any{"b": 1, "a": json.Number("2")}}, `[{"a":2,"b":1}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(Append(nil, c.v)); got != c.want {
				t.Errorf("Append(%#v) = %s, want %s", c.v, got, c.want)
			}
		})
	}
}
