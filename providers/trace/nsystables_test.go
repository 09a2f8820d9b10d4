package trace

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// nsysTablesTruth is python3's own reading of an export's tables with its sqlite3 module:
// every table whose name starts with one of the comma-separated prefixes
// (case-insensitive; none: every table but SQLite's own), in name order, each read with
// "select * from t" in rowid order (a WITHOUT ROWID table in key order), each row
// {table, ...columns} or {table, value: {...columns}} when a column is named table.
// Integers beyond 2^53-1 become decimal strings, bytes base64 unless UTF-8, infinities
// "Infinity". It prints the rows and the table counts as JSON.
const nsysTablesTruth = `
import sys, json, sqlite3, base64, math
db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)
prefixes = [p.lower() for p in sys.argv[2].split(',') if p]
names = sorted(r[0] for r in db.execute("select name from sqlite_master where type='table'") if not r[0].startswith('sqlite_'))
names = [n for n in names if not prefixes or any(n.lower().startswith(p) for p in prefixes)]
def value(v):
    if isinstance(v, int) and abs(v) > 2**53 - 1:
        return str(v)
    if isinstance(v, float) and math.isinf(v):
        return 'Infinity' if v > 0 else '-Infinity'
    if isinstance(v, bytes):
        try:
            return v.decode('utf-8')
        except UnicodeDecodeError:
            return base64.b64encode(v).decode()
    return v
rows, counts = [], []
for n in names:
    sql = db.execute("select sql from sqlite_master where name = ?", (n,)).fetchone()[0]
    order = '' if 'WITHOUT ROWID' in sql.upper() else ' order by _rowid_'
    cur = db.execute('select * from "%s"%s' % (n.replace('"', '""'), order))
    cols = [c[0] for c in cur.description]
    k = 0
    for r in cur:
        vals = {c: value(v) for c, v in zip(cols, r)}
        rows.append(dict(table=n, value=vals) if 'table' in cols else dict(table=n, **vals))
        k += 1
    counts.append(dict(table=n, row_count=k))
json.dump(dict(rows=rows, tables=counts), sys.stdout)
`

// nsysTablesVariant adds to a copy of the corpus export tables the corpus lacks (a
// modified copy, not nsys output): one with a column named table, a WITHOUT ROWID table
// whose keys were inserted out of order, one whose column rowid shadows the rowid (rows
// inserted against its order), and values beyond JSON's reach (a wide integer, a
// non-UTF-8 blob, an infinity).
const nsysTablesVariant = `
import sys, shutil, sqlite3
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
db.execute('CREATE TABLE MPI_TABLE_COLUMN ("table" TEXT, id INTEGER)')
db.executemany('insert into MPI_TABLE_COLUMN values (?, ?)', [('b', 2), ('a', 1)])
db.execute('CREATE TABLE MPI_WITHOUT_ROWID (k INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID')
db.executemany('insert into MPI_WITHOUT_ROWID values (?, ?)', [(3, 'c'), (1, 'a'), (2, 'b')])
db.execute('CREATE TABLE MPI_SHADOW (rowid INTEGER, wide INTEGER, raw BLOB, real REAL)')
db.executemany('insert into MPI_SHADOW values (?, ?, ?, ?)', [(9, 2**60, b'\xff\x00\xfe', float('inf')), (1, -2**53, 'text'.encode(), 1.5), (5, None, None, -float('inf'))])
db.commit()
`

// tableTruth runs nsysTablesTruth over path with the prefixes.
func tableTruth(t *testing.T, path string, prefixes ...string) (rows []map[string]any, tables []any) {
	t.Helper()
	var tr struct {
		Rows   []map[string]any `json:"rows"`
		Tables []any            `json:"tables"`
	}
	if err := json.Unmarshal(python3(t, nsysTablesTruth, path, strings.Join(prefixes, ",")), &tr); err != nil {
		t.Fatal(err)
	}
	return tr.Rows, tr.Tables
}

func tablesReq(in providers.Input, tables ...string) *providers.Request[gen.TableViewFields] {
	return &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{View: "tables", Tables: tables}, Inputs: []providers.Input{in}}
}

// TestNsysTablesAgainstPython pages view "tables" of every operation over the corpus
// export and a variant and compares every row, the table list and the counts with
// python3's reading of the same file.
func TestNsysTablesAgainstPython(t *testing.T) {
	corpus := corpusFile(t, nsysCorpus)
	variant := filepath.Join(t.TempDir(), "variant.sqlite")
	python3(t, nsysTablesVariant, corpus, variant)
	type analyzer = func(context.Context, *providers.Request[gen.TableViewFields]) (*providers.Analysis, error)
	for _, c := range []struct {
		name     string
		path     string
		analyze  analyzer
		tables   []string // the request's prefixes
		prefixes []string // the truth's: the request's, else the operation's filter
		metric   string
		limit    int64
	}{
		{"summarize_trace corpus", corpus, asView(summarize), nil, nil, "accelerator_activity_observed", 997},
		{"inspect_gpu_launches corpus", corpus, inspectLaunches, nil, launchTablePrefixes, "accelerator_activity_observed", 400},
		{"summarize_trace_operations corpus", corpus, asView(summarizeOperations), nil, operationTablePrefixes, "operation_row_count", 3000},
		{"summarize_trace_lifecycle corpus", corpus, summarizeLifecycle, nil, lifecycleTablePrefixes, "lifecycle_row_count", 3},
		{"prefixes in any case", corpus, asView(summarize), []string{"stringids", "cupti_activity_kind_mem", "TARGET_INFO_GPU"},
			[]string{"stringids", "cupti_activity_kind_mem", "TARGET_INFO_GPU"}, "accelerator_activity_observed", 50},
		{"variant", variant, asView(summarize), []string{"MPI_"}, []string{"MPI_"}, "accelerator_activity_observed", 2},
		{"variant operations", variant, asView(summarizeOperations), []string{"MPI_", "CUPTI_ACTIVITY_KIND_SYNC"},
			[]string{"MPI_", "CUPTI_ACTIVITY_KIND_SYNC"}, "operation_row_count", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantRows, wantTables := tableTruth(t, c.path, c.prefixes...)
			a, err := c.analyze(context.Background(), tablesReq(providers.Input{Path: c.path, Format: gen.FormatNsysSqlite}, c.tables...))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := pageAll[map[string]any](t, a.Rows, c.limit)
			if diff := cmp.Diff(testtool.JSONValue(t, wantRows), testtool.JSONValue(t, got)); diff != "" {
				t.Fatalf("rows (-python +flameox):\n%s", diff)
			}
			if diff := cmp.Diff(testtool.JSONValue(t, wantTables), testtool.JSONValue(t, a.Metrics["tables"])); diff != "" {
				t.Fatalf("tables (-python +flameox):\n%s", diff)
			}
			if a.Metrics["table_count"] != int64(len(wantTables)) || a.Metrics["row_count"] != int64(len(wantRows)) {
				t.Fatalf("counts %v, %v; python %d tables, %d rows", a.Metrics["table_count"], a.Metrics["row_count"], len(wantTables), len(wantRows))
			}
			// The operation's own figure counts the rows of its catalog tables among those selected.
			var counted int64
			for _, r := range wantRows {
				if matchesAny(r["table"].(string), tableViews[gen.OperationNameSummarizeTrace].counted) && c.metric == "accelerator_activity_observed" ||
					c.metric == "operation_row_count" && matchesAny(r["table"].(string), operationTablePrefixes) ||
					c.metric == "lifecycle_row_count" && matchesAny(r["table"].(string), lifecycleTablePrefixes) {
					counted++
				}
			}
			want := any(counted)
			if c.metric == "accelerator_activity_observed" {
				want = counted > 0
			}
			if a.Metrics[c.metric] != want {
				t.Fatalf("%s = %v, want %v", c.metric, a.Metrics[c.metric], want)
			}
			if !a.OwnLimitations || len(a.Limitations) < len(tableViewLimitations) {
				t.Fatalf("limitations %q", a.Limitations)
			}
		})
	}
}

// TestNsysTablesSentinels: an export whose selected tables hold no GPU activity says so,
// and prefixes that match nothing give an empty, complete page.
func TestNsysTablesSentinels(t *testing.T) {
	in := providers.Input{Path: corpusFile(t, nsysCorpus), Format: gen.FormatNsysSqlite}
	a, err := summarize(context.Background(), sliceReq(tablesReq(in, "StringIds")))
	if err != nil {
		t.Fatal(err)
	}
	if a.Metrics["accelerator_activity_observed"] != false || !strings.HasPrefix(a.Limitations[len(a.Limitations)-1], "no_accelerator_activity_observed") {
		t.Fatalf("metrics %v, limitations %q", a.Metrics, a.Limitations)
	}
	a, err = summarizeLifecycle(context.Background(), tablesReq(in, "NO_SUCH_TABLE"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Rows.Page(context.Background(), 0, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 0 || p.More || a.Metrics["table_count"] != int64(0) || a.Metrics["lifecycle_row_count"] != int64(0) {
		t.Fatalf("page %+v, metrics %v", p, a.Metrics)
	}
	if !strings.Contains(strings.Join(a.Limitations, "\n"), "no_lifecycle_activity_observed") {
		t.Fatalf("limitations %q", a.Limitations)
	}
}

// TestNsysTablesFieldErrors: view "tables" on a format without one for the operation
// (a Chrome trace; OTLP for summarize_trace_operations), and tables without view "tables",
// are field errors naming view and what it accepts.
func TestNsysTablesFieldErrors(t *testing.T) {
	chrome := providers.Input{Path: corpusFile(t, "speedscope__trace_event_multiprocess.json"), Format: gen.FormatChromeTrace}
	nsys := providers.Input{Path: corpusFile(t, nsysCorpus), Format: gen.FormatNsysSqlite}
	otlp := providers.Input{Path: corpusFile(t, "otlp__trace.json"), Format: gen.FormatOtlp}
	for _, c := range []struct {
		name   string
		in     providers.Input
		fields gen.TableViewFields
		accept string
	}{
		{"tables view of a chrome trace", chrome, gen.TableViewFields{View: "tables"}, "operation"},
		{"tables without the view", nsys, gen.TableViewFields{View: "operation", Tables: []string{"NVTX"}}, "tables"},
		{"tables view of OTLP operations", otlp, gen.TableViewFields{View: "tables"}, "operation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			analyze := summarize
			if c.in.Format == gen.FormatOtlp {
				// OTLP has a table view for summarize_trace only (catalog §1.3).
				analyze = summarizeOperations
			}
			_, err := analyze(context.Background(), sliceReq(&providers.Request[gen.TableViewFields]{Fields: &c.fields, Inputs: []providers.Input{c.in}}))
			var fe *providers.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a field error", err)
			}
			if diff := cmp.Diff([]any{"view"}, fe.Field); diff != "" || len(fe.Accepted) != 1 || fe.Accepted[0] != c.accept {
				t.Fatalf("field %v accepted %v", fe.Field, fe.Accepted)
			}
		})
	}
}

// TestNsysComputedColumnsRefused: a 12 KiB file whose NVTX_EVENTS declares a generated
// column of 400 MB made view "tables" allocate about 10 GB; every reader of the export now
// refuses it typed before a query reads it (providers/internal/sqlitefile).
func TestNsysComputedColumnsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "crafted.sqlite")
	python3(t, `
import sys, sqlite3
db = sqlite3.connect(sys.argv[1])
db.execute('CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)')
db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, text TEXT, big BLOB AS (zeroblob(400000000)))')
db.execute('INSERT INTO NVTX_EVENTS (start, "end", text) VALUES (1, 2, ?)', ('x',))
db.commit()
`, p)
	in := providers.Input{Path: p, Format: gen.FormatNsysSqlite}
	for name, analyze := range map[string]func() (*providers.Analysis, error){
		"view tables": func() (*providers.Analysis, error) { return summarize(context.Background(), sliceReq(tablesReq(in))) },
		"summarize_trace_operations": func() (*providers.Analysis, error) {
			return summarizeOperations(context.Background(), sliceReq(nsysReq(p)))
		},
	} {
		_, err := analyze()
		var ue *providers.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(ue.Message, `"NVTX_EVENTS" has generated virtual columns`) {
			t.Fatalf("%s: err = %v, want an unsupported format naming the table", name, err)
		}
	}
}

// TestTablesPageEndsAtTheByteBudget: when a row does not fit, every table view's page ends
// before it, with more to follow from that row (the OTLP export, the nsys SQLite export
// and its parquetdir, a page crossing from one table into the next).
func TestTablesPageEndsAtTheByteBudget(t *testing.T) {
	nsys := providers.Input{Path: corpusFile(t, nsysCorpus), Format: gen.FormatNsysSqlite}
	for _, c := range []struct {
		name   string
		in     providers.Input
		tables []string
		offset int64
	}{
		{"otlp", providers.Input{Path: corpusFile(t, "local__otel_js_otlp_http_json_trace.json"), Format: gen.FormatOtlp}, nil, 1},
		{"nsys-sqlite", nsys, []string{"TARGET_INFO_CUDA"}, 0},
		{"nsys-parquet", parquetInput(t, corpusParquetDir(t)), []string{"TARGET_INFO_CUDA"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			full := func() []json.RawMessage {
				a, err := summarize(context.Background(), sliceReq(tablesReq(c.in, c.tables...)))
				if err != nil {
					t.Fatal(err)
				}
				p, err := a.Rows.Page(context.Background(), c.offset, 100, nil)
				if err != nil {
					t.Fatal(err)
				}
				return p.Rows
			}()
			if len(full) < 4 {
				t.Fatalf("%d rows", len(full))
			}
			a, err := summarize(context.Background(), sliceReq(tablesReq(c.in, c.tables...)))
			if err != nil {
				t.Fatal(err)
			}
			admitted := 0
			p, err := a.Rows.Page(context.Background(), c.offset, 100, func(json.RawMessage) bool {
				admitted++
				return admitted <= 3
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(full[:3], p.Rows); diff != "" || !p.More || p.Observed != c.offset+4 {
				t.Fatalf("more %v observed %d, rows (-want +got):\n%s", p.More, p.Observed, diff)
			}
		})
	}
}
