package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/deprecated"
)

// The differential tests write files with parquet-go (test-only) and hold this reader's
// column values and record forms to parquet-go's.

type flatRow struct {
	B   bool             `parquet:"b"`
	I32 int32            `parquet:"i32"`
	I64 int64            `parquet:"i64"`
	U32 uint32           `parquet:"u32"`
	U64 uint64           `parquet:"u64"`
	I8  int8             `parquet:"i8"`
	U16 uint16           `parquet:"u16"`
	F   float32          `parquet:"f"`
	D   float64          `parquet:"d"`
	S   string           `parquet:"s"`
	By  []byte           `parquet:"by"`
	OS  *string          `parquet:"os,optional"`
	OI  *int64           `parquet:"oi,optional"`
	OD  *float64         `parquet:"od,optional"`
	OB  *bool            `parquet:"ob,optional"`
	Arr [4]byte          `parquet:"arr"`
	E   string           `parquet:"e,enum"`
	J   string           `parquet:"j,json"`
	Ts  int64            `parquet:"ts,timestamp(millisecond)"`
	Tu  int64            `parquet:"tu,timestamp(microsecond)"`
	Tn  int64            `parquet:"tn,timestamp(nanosecond)"`
	Dt  int32            `parquet:"dt,date"`
	D32 int32            `parquet:"d32,decimal(2:9)"`
	D64 int64            `parquet:"d64,decimal(3:18)"`
	DF  [9]byte          `parquet:"df,decimal(4:20)"`
	U   [16]byte         `parquet:"u,uuid"`
	I96 deprecated.Int96 `parquet:"i96"`
}

type dictRow struct {
	S  string  `parquet:"s,dict"`
	I  int64   `parquet:"i,dict"`
	I3 int32   `parquet:"i3,dict"`
	F  float64 `parquet:"f,dict"`
	OS *string `parquet:"os,optional,dict"`
	A  [3]byte `parquet:"a,dict"`
}

type inner struct {
	A int32   `parquet:"a"`
	B *string `parquet:"b,optional"`
}

type nestedRow struct {
	ID int64              `parquet:"id"`
	G  inner              `parquet:"g"`
	OG *inner             `parquet:"og,optional"`
	L  []int32            `parquet:"l,list"`
	LS []string           `parquet:"ls,list"`
	LG []inner            `parquet:"lg,list"`
	R  []string           `parquet:"r"`
	RG []inner            `parquet:"rg"`
	M  map[string]int64   `parquet:"m"`
	MS map[string]string  `parquet:"ms"`
	MI map[int32]string   `parquet:"mi"`
	MF map[string]float64 `parquet:"mf"`
	LL [][]int64          `parquet:"ll,list"`
}

func randString(r *rand.Rand, n int) string {
	const alphabet = "abcdefghij\x00\xffé"
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func genFlat(r *rand.Rand, n int, big bool) []flatRow {
	rows := make([]flatRow, n)
	for i := range rows {
		s := randString(r, 12)
		if big && i%50 == 0 {
			s = strings.Repeat("x", 200_000+i)
		}
		x := &rows[i]
		*x = flatRow{B: r.IntN(2) == 1, I32: int32(r.Uint32()), I64: int64(r.Uint64()), U32: r.Uint32(), U64: r.Uint64(),
			I8: int8(r.Uint32()), U16: uint16(r.Uint32()), F: r.Float32() * 1e6, D: r.NormFloat64(), S: s, By: []byte(randString(r, 5)),
			E: []string{"A", "B", "C"}[r.IntN(3)], J: fmt.Sprintf(`{"k":%d,"v":[1,2.5,"x"],"big":12345678901234567}`, i),
			Ts: r.Int64N(1 << 42), Tu: r.Int64N(1 << 52), Tn: r.Int64(), Dt: int32(r.IntN(40000) - 20000),
			D32: int32(r.Uint32()), D64: int64(r.Uint64()), Arr: [4]byte{byte(i), 'a', 0xff, 1}}
		for k := range x.DF {
			x.DF[k] = byte(r.Uint32())
		}
		x.I96 = deprecated.Int96{r.Uint32(), r.Uint32(), r.Uint32()}
		for k := range x.U {
			x.U[k] = byte(r.Uint32())
		}
		if r.IntN(3) > 0 {
			x.OS = &s
			v := int64(i)
			x.OI = &v
			d := math.Inf(1)
			if i%7 != 0 {
				d = float64(i) / 3
			}
			x.OD = &d
			b := i%2 == 0
			x.OB = &b
		}
		if i%9 == 0 {
			x.I64 = 1<<53 + 1
			x.U64 = math.MaxUint64
		}
	}
	return rows
}

func genDict(r *rand.Rand, n int) []dictRow {
	rows := make([]dictRow, n)
	for i := range rows {
		s := []string{"alpha", "beta", "", "gamma\xff"}[r.IntN(4)]
		rows[i] = dictRow{S: s, I: int64(r.IntN(5)) << 40, I3: int32(r.IntN(3)), F: float64(r.IntN(4)) / 2, A: [3]byte{byte(r.IntN(2)), 1, 2}}
		if i%3 != 0 {
			rows[i].OS = &s
		}
	}
	return rows
}

func genNested(r *rand.Rand, n int) []nestedRow {
	rows := make([]nestedRow, n)
	for i := range rows {
		s := randString(r, 6)
		x := &rows[i]
		x.ID = int64(i)
		x.G = inner{A: int32(i), B: &s}
		if i%3 == 0 {
			x.OG = &inner{A: -int32(i)}
		}
		for range r.IntN(4) {
			x.L = append(x.L, int32(r.IntN(100)))
			x.LS = append(x.LS, randString(r, 4))
			x.R = append(x.R, randString(r, 3))
			x.RG = append(x.RG, inner{A: int32(r.IntN(9))})
			x.LG = append(x.LG, inner{A: 1, B: &s})
			x.LL = append(x.LL, []int64{int64(r.IntN(9)), 7})
		}
		if r.IntN(2) == 0 {
			x.M = map[string]int64{"a": int64(i), "b": 1 << 60}
			x.MS = map[string]string{s: "v\xff"}
			x.MI = map[int32]string{int32(r.IntN(200)): "c", -1: "neg", 0x10FFFF + 5: "big"}
			x.MF = map[string]float64{"nan": math.NaN(), "x": 0.5}
		}
	}
	return rows
}

// write writes rows with parquet-go's generic writer.
func write[T any](t testing.TB, rows []T, opts ...pq.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pq.NewGenericWriter[T](&buf, opts...)
	for i := 0; i < len(rows); i += 37 {
		if _, err := w.Write(rows[i:min(i+37, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writerConfigs are the page versions, codecs and encodings the files are written with.
func writerConfigs() map[string][]pq.WriterOption {
	small := []pq.WriterOption{pq.PageBufferSize(512), pq.MaxRowsPerRowGroup(70)}
	with := func(o ...pq.WriterOption) []pq.WriterOption {
		return append(append([]pq.WriterOption{}, small...), o...)
	}
	codecs := map[string]compress.Codec{"none": &pq.Uncompressed, "snappy": &pq.Snappy, "gzip": &pq.Gzip,
		"zstd": &pq.Zstd, "lz4raw": &pq.Lz4Raw, "brotli": &pq.Brotli}
	cs := map[string][]pq.WriterOption{}
	for name, c := range codecs {
		cs["v1-"+name] = with(pq.Compression(c), pq.DataPageVersion(1))
		cs["v2-"+name] = with(pq.Compression(c), pq.DataPageVersion(2))
	}
	cs["delta-length"] = with(pq.DefaultEncodingFor(pq.Int32, &pq.DeltaBinaryPacked), pq.DefaultEncodingFor(pq.Int64, &pq.DeltaBinaryPacked),
		pq.DefaultEncodingFor(pq.ByteArray, &pq.DeltaLengthByteArray), pq.DataPageVersion(1))
	cs["delta-bytes"] = with(pq.DefaultEncodingFor(pq.ByteArray, &pq.DeltaByteArray), pq.DefaultEncodingFor(pq.FixedLenByteArray, &pq.DeltaByteArray),
		pq.DataPageVersion(2), pq.Compression(&pq.Snappy))
	cs["split"] = with(pq.DefaultEncodingFor(pq.Float, &pq.ByteStreamSplit), pq.DefaultEncodingFor(pq.Double, &pq.ByteStreamSplit),
		pq.DefaultEncodingFor(pq.Int32, &pq.ByteStreamSplit), pq.DefaultEncodingFor(pq.Int64, &pq.ByteStreamSplit),
		pq.DefaultEncodingFor(pq.FixedLenByteArray, &pq.ByteStreamSplit))
	cs["rle-bool"] = with(pq.DefaultEncodingFor(pq.Boolean, &pq.RLE))
	cs["one-group"] = []pq.WriterOption{}
	return cs
}

func TestDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 120
	}
	flat, dict, nested := genFlat(r, n, false), genDict(r, n), genNested(r, n)
	for name, opts := range writerConfigs() {
		t.Run(name, func(t *testing.T) {
			t.Run("flat", func(t *testing.T) {
				data := write(t, flat, opts...)
				compareFile(t, data, flatExact...)
				checkFlatForms(t, data, flat)
			})
			t.Run("dict", func(t *testing.T) { compareFile(t, write(t, dict, opts...)) })
			t.Run("nested", func(t *testing.T) {
				data := write(t, nested, opts...)
				compareFile(t, data, nestedExact...)
				checkNestedForms(t, data, nested)
			})
		})
	}
	t.Run("large-strings", func(t *testing.T) {
		if testing.Short() {
			t.Skip("large")
		}
		rows := genFlat(r, 400, true)
		data := write(t, rows, pq.Compression(&pq.Zstd))
		compareFile(t, data, flatExact...)
		checkFlatForms(t, data, rows)
	})
}

// compareFile holds both readers' column values and records to each other.
// compareFile holds both readers' column values and records to each other, but for the
// record fields named in exact, whose forms decision 0072 made exact where parquet-go's
// were not (checkFlatForms and checkNestedForms hold them to the rows written).
func compareFile(t *testing.T, data []byte, exact ...string) {
	t.Helper()
	pf, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.RowGroups) != len(pf.RowGroups()) || f.NumRows != pf.NumRows() || len(f.Columns) != len(pf.Schema().Columns()) {
		t.Fatalf("shape: %d groups %d rows %d columns", len(f.RowGroups), f.NumRows, len(f.Columns))
	}
	// Each chunk read by a fresh reader, and by one reader per column Reset from row
	// group to row group (its buffers and dictionary reused).
	reused := make([]*ColumnReader, len(f.Columns))
	for g, rg := range pf.RowGroups() {
		for c, chunk := range rg.ColumnChunks() {
			want := oracleColumn(t, chunk)
			got := ourColumn(t, f, g, c)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("row group %d column %v (-parquet-go +ours):\n%s", g, f.Columns[c].Path, diff)
			}
			if reused[c] == nil {
				reused[c], err = f.Column(g, c)
			} else {
				err = reused[c].Reset(g)
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, readColumn(t, reused[c])); diff != "" {
				t.Fatalf("row group %d column %v, reader reset (-parquet-go +ours):\n%s", g, f.Columns[c].Path, diff)
			}
		}
	}
	want := oracleRecords(t, pf, 0, exact)
	if diff := cmp.Diff(want, ourRecords(t, f, 0, exact)); diff != "" {
		t.Fatalf("records (-parquet-go +ours):\n%s", diff)
	}
	for _, at := range []int64{1, 5, 69, 70, 71, 139, 140, f.NumRows - 1, f.NumRows} {
		if at > f.NumRows || at < 0 {
			continue
		}
		got := ourRecords(t, f, at, exact)
		if diff := cmp.Diff(want[at:], got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("records from %d (-parquet-go +ours):\n%s", at, diff)
		}
	}
	if f.NumRows > 3 {
		// parquet-go's own seek, to the same offset.
		if diff := cmp.Diff(want[3:], oracleRecords(t, pf, 3, exact)); diff != "" {
			t.Fatalf("parquet-go seek differs from its read:\n%s", diff)
		}
	}
}

// colValue is a value in a form both readers give.
type colValue struct {
	Def, Rep int
	Null     bool
	V        string
}

func oracleColumn(t *testing.T, chunk pq.ColumnChunk) []colValue {
	r := pq.NewColumnChunkValueReader(chunk)
	defer r.Close()
	var out []colValue
	buf := make([]pq.Value, 100)
	for {
		n, err := r.ReadValues(buf)
		for _, v := range buf[:n] {
			c := colValue{Def: v.DefinitionLevel(), Rep: v.RepetitionLevel(), Null: v.IsNull()}
			if !c.Null {
				switch v.Kind() {
				case pq.Boolean:
					c.V = fmt.Sprint(v.Boolean())
				case pq.Int32:
					c.V = fmt.Sprint(v.Int32())
				case pq.Int64:
					c.V = fmt.Sprint(v.Int64())
				case pq.Float:
					c.V = fmt.Sprint(math.Float32bits(v.Float()))
				case pq.Double:
					c.V = fmt.Sprint(math.Float64bits(v.Double()))
				case pq.Int96:
					i := v.Int96()
					c.V = fmt.Sprintf("%x", binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, i[0]), i[1]), i[2]))
				default:
					c.V = fmt.Sprintf("%x", v.ByteArray())
				}
			}
			out = append(out, c)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ourColumn(t *testing.T, f *File, g, c int) []colValue {
	r, err := f.Column(g, c)
	if err != nil {
		t.Fatal(err)
	}
	return readColumn(t, r)
}

// readColumn reads the rest of r's chunk.
func readColumn(t *testing.T, r *ColumnReader) []colValue {
	typ := r.Column().Node.Type
	var out []colValue
	buf := make([]Value, 33)
	for {
		n, err := r.Read(buf)
		for _, v := range buf[:n] {
			cv := colValue{Def: int(v.Def), Rep: int(v.Rep), Null: v.Null}
			if !v.Null {
				switch typ {
				case Boolean:
					cv.V = fmt.Sprint(v.Bool())
				case Int32:
					cv.V = fmt.Sprint(v.Int32())
				case Int64:
					cv.V = fmt.Sprint(v.Int64())
				case Float:
					cv.V = fmt.Sprint(math.Float32bits(v.Float32()))
				case Double:
					cv.V = fmt.Sprint(math.Float64bits(v.Float64()))
				default:
					cv.V = fmt.Sprintf("%x", v.Bytes)
				}
			}
			out = append(out, cv)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// render renders a record as the preview does: its top-level fields in schema order,
// but those in skip.
func render(names []string, m map[string]any, skip []string) string {
	var b []byte
	for _, n := range names {
		if slices.Contains(skip, n) {
			continue
		}
		b = jsonvalue.AppendString(b, n)
		b = append(b, ':')
		b = jsonvalue.Append(b, m[n])
		b = append(b, ',')
	}
	return string(b)
}

func oracleRecords(t *testing.T, pf *pq.File, from int64, skip []string) []string {
	var names []string
	for _, f := range pf.Schema().Fields() {
		names = append(names, f.Name())
	}
	r := pq.NewReader(pf)
	defer r.Close()
	if from > 0 {
		if err := r.SeekToRow(from); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for i := from; i < pf.NumRows(); i++ {
		m := map[string]any{}
		if err := r.Read(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, render(names, m, skip))
	}
	return out
}

func ourRecords(t *testing.T, f *File, from int64, skip []string) []string {
	var names []string
	for _, c := range f.Schema.Children {
		names = append(names, c.Name)
	}
	rr := f.Rows()
	if err := rr.SeekToRow(from); err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		m, err := rr.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("record %d: %v", rr.Row(), err)
		}
		out = append(out, render(names, m, skip))
	}
}
