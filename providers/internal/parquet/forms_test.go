package parquet

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/flameox/flameox/providers/internal/jsonvalue"
)

// The record fields whose forms decision 0072 made exact, where parquet-go's were not:
// the differential test leaves them out and these checks hold them to the rows written.
var (
	flatExact   = []string{"u64", "d32", "d64", "df", "j"}
	nestedExact = []string{"ms", "mi"}
)

// field is the fragment a rendered record (render) holds for field name with value v
// already rendered.
func field(name, v string) string { return string(jsonvalue.AppendString(nil, name)) + ":" + v + "," }

// quoted is s as a JSON string.
func quoted(s string) string { return string(jsonvalue.AppendString(nil, s)) }

// decimalText is unscaled / 10^scale with scale digits after the point, computed by
// math/big's rationals.
func decimalText(unscaled *big.Int, scale int) string {
	return new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
}

// signedBigEndian is the integer of big-endian two's complement bytes.
func signedBigEndian(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

func openBytes(t *testing.T, data []byte) *File {
	t.Helper()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// checkFlatForms holds the exact fields of each flat record to the row written.
func checkFlatForms(t *testing.T, data []byte, rows []flatRow) {
	t.Helper()
	got := ourRecords(t, openBytes(t, data), 0, nil)
	if len(got) != len(rows) {
		t.Fatalf("%d records for %d rows", len(got), len(rows))
	}
	for i, x := range rows {
		u64 := strconv.FormatUint(x.U64, 10)
		if x.U64 > 1<<53-1 {
			u64 = quoted(u64)
		}
		df := signedBigEndian(x.DF[:])
		for _, want := range []string{
			field("u64", u64),
			field("f", strconv.FormatFloat(float64(x.F), 'g', -1, 32)),
			field("d32", quoted(decimalText(big.NewInt(int64(x.D32)), 2))),
			field("d64", quoted(decimalText(big.NewInt(x.D64), 3))),
			field("df", quoted(decimalText(df, 4))),
			field("j", fmt.Sprintf(`{"big":"12345678901234567","k":%d,"v":[1,2.5,"x"]}`, i)),
		} {
			if !strings.Contains(got[i], want) {
				t.Fatalf("record %d lacks %s:\n%s", i, want, got[i])
			}
		}
	}
}

// checkNestedForms holds the MAP fields of each nested record to the row written: keys as
// their decimal text, string values as strings.
func checkNestedForms(t *testing.T, data []byte, rows []nestedRow) {
	t.Helper()
	got := ourRecords(t, openBytes(t, data), 0, nil)
	for i, x := range rows {
		ms, mi := map[string]any{}, map[string]any{}
		for k, v := range x.MS {
			ms[k] = v
		}
		for k, v := range x.MI {
			mi[strconv.Itoa(int(k))] = v
		}
		for _, want := range []string{
			field("ms", string(jsonvalue.Append(nil, ms))),
			field("mi", string(jsonvalue.Append(nil, mi))),
		} {
			if !strings.Contains(got[i], want) {
				t.Fatalf("record %d lacks %s:\n%s", i, want, got[i])
			}
		}
	}
}

// TestExactForms: values whose former forms lost what the file stores, in a file
// parquet-go writes, each rendered as preview renders it.
func TestExactForms(t *testing.T) {
	type row struct {
		U64 uint64            `parquet:"u64"`
		U32 uint32            `parquet:"u32"`
		F   float32           `parquet:"f"`
		D32 int32             `parquet:"d32,decimal(2:9)"`
		D64 int64             `parquet:"d64,decimal(5:18)"`
		DF  [4]byte           `parquet:"df,decimal(1:9)"`
		J   string            `parquet:"j,json"`
		MI  map[int64]uint64  `parquet:"mi"`
		MS  map[string]string `parquet:"ms"`
	}
	rows := []row{
		{U64: math.MaxUint64, U32: math.MaxUint32, F: 0.1, D32: -5, D64: 123456789, DF: [4]byte{0xff, 0xff, 0xff, 0x85},
			J: `{"n":100000000000000000000,"x":1.5e300,"s":"a"}`, MI: map[int64]uint64{-7: math.MaxUint64, 65: 1},
			MS: map[string]string{"k": "v"}},
		{U64: 1 << 53, F: -2.5, D32: 150, D64: 0, J: `[1,-0,9007199254740993]`},
	}
	want := []string{
		`"u64":"18446744073709551615","u32":4294967295,"f":0.1,"d32":"-0.05","d64":"1234.56789","df":"-12.3",` +
			`"j":{"n":"100000000000000000000","s":"a","x":1.5e300},"mi":{"-7":"18446744073709551615","65":1},"ms":{"k":"v"},`,
		`"u64":"9007199254740992","u32":0,"f":-2.5,"d32":"1.50","d64":"0.00000","df":"0.0",` +
			`"j":[1,0,"9007199254740993"],"mi":{},"ms":{},`,
	}
	got := ourRecords(t, openBytes(t, write(t, rows)), 0, nil)
	if len(got) != len(want) {
		t.Fatalf("%d records", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
