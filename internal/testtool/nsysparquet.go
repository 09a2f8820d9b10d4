package testtool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// sqliteTables is python3's sqlite3 dumping every table of a SQLite database in rowid
// order: per table its columns with the storage class their values have (int, real,
// text, blob; the declared type when a column holds only nulls) and its rows, blobs in
// base64.
const sqliteTables = `
import sys, json, sqlite3, base64
db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)
out = []
for (name,) in db.execute("select name from sqlite_master where type = 'table' order by name"):
    info = db.execute('pragma table_info("%s")' % name).fetchall()
    cols = [c[1] for c in info]
    seen = [set() for _ in cols]
    rows = []
    for r in db.execute('select * from "%s" order by rowid' % name):
        row = []
        for i, v in enumerate(r):
            if isinstance(v, bytes):
                seen[i].add('blob'); v = {'blob': base64.b64encode(v).decode()}
            elif isinstance(v, bool) or isinstance(v, int):
                seen[i].add('int')
            elif isinstance(v, float):
                seen[i].add('real')
            elif isinstance(v, str):
                seen[i].add('text')
            row.append(v)
        rows.append(row)
    kinds = []
    for i, s in enumerate(seen):
        if s == {'int', 'real'}:
            s = {'real'}
        if len(s) > 1:
            sys.exit('table %s column %s mixes %s' % (name, cols[i], sorted(s)))
        if not s:
            d = (info[i][2] or '').upper()
            s = {'int' if 'INT' in d else 'real' if ('REAL' in d or 'FLOA' in d or 'DOUB' in d) else 'blob' if 'BLOB' in d else 'text'}
        kinds.append(s.pop())
    out.append(dict(name=name, columns=cols, kinds=kinds, rows=rows))
json.dump(out, sys.stdout)
`

// NsysParquetDir converts an Nsight Systems SQLite export into the layout of an nsys
// export --type parquetdir directory: one <TABLE>.parquet per table, columns in the
// table's order (nullable int64, double, UTF-8 string or bytes, as the values are
// stored), rows in rowid order, in row groups of 1000. python3's sqlite3 reads the
// export. It is a conversion for tests, not nsys output.
func NsysParquetDir(python3, export, dir string) error {
	out, err := exec.Command(python3, "-c", sqliteTables, export).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return fmt.Errorf("python3: %v: %s", err, ee.Stderr)
		}
		return err
	}
	var tables []struct {
		Name    string
		Columns []string
		Kinds   []string
		Rows    [][]any
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&tables); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range tables {
		if err := writeParquetTable(filepath.Join(dir, t.Name+".parquet"), t.Columns, t.Kinds, t.Rows); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return nil
}

// writeParquetTable writes rows through a struct type made for the columns, so the
// Parquet schema keeps the table's column order.
func writeParquetTable(path string, cols, kinds []string, rows [][]any) error {
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		var typ reflect.Type
		switch kinds[i] {
		case "int":
			typ = reflect.TypeOf((*int64)(nil))
		case "real":
			typ = reflect.TypeOf((*float64)(nil))
		case "text":
			typ = reflect.TypeOf((*string)(nil))
		case "blob":
			typ = reflect.TypeOf([]byte(nil))
		default:
			return fmt.Errorf("column %s: kind %q", c, kinds[i])
		}
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: typ, Tag: reflect.StructTag(`parquet:"` + c + `,optional"`)}
	}
	typ := reflect.StructOf(fields)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := parquet.NewWriter(f, parquet.SchemaOf(reflect.New(typ).Interface()), parquet.MaxRowsPerRowGroup(1000))
	for _, r := range rows {
		v := reflect.New(typ).Elem()
		for i, x := range r {
			if x == nil {
				continue
			}
			fv := v.Field(i)
			switch kinds[i] {
			case "int":
				n, err := strconv.ParseInt(string(x.(json.Number)), 10, 64)
				if err != nil {
					return err
				}
				fv.Set(reflect.ValueOf(&n))
			case "real":
				n, err := strconv.ParseFloat(string(x.(json.Number)), 64)
				if err != nil {
					return err
				}
				fv.Set(reflect.ValueOf(&n))
			case "text":
				s := x.(string)
				fv.Set(reflect.ValueOf(&s))
			case "blob":
				b, err := base64.StdEncoding.DecodeString(x.(map[string]any)["blob"].(string))
				if err != nil {
					return err
				}
				fv.SetBytes(b)
			}
		}
		if err := w.Write(v.Addr().Interface()); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}
