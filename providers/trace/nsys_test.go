package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

const nsysCorpus = "nsightful__nsys-power_iteration.sqlite"

// nsysLaunchTruth is python3's own reading of an Nsight Systems SQLite export with its
// sqlite3 module: the names, runtime calls and memcpy kinds are loaded into dictionaries
// and every kernel, memcpy and memset record is joined to them in Python (no SQL join),
// then sorted by (start, kernel < memcpy < memset, rowid). It prints the rows and the
// metrics as JSON.
const nsysLaunchTruth = `
import sys, json, sqlite3
db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)
tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
names = dict(db.execute('select id, value from StringIds'))
api = {}
if 'CUPTI_ACTIVITY_KIND_RUNTIME' in tables:
    for rowid, cid, gtid, start, name in db.execute('select rowid, correlationId, globalTid, start, nameId from CUPTI_ACTIVITY_KIND_RUNTIME order by rowid'):
        if cid is not None:
            api.setdefault((cid, gtid // (1 << 24)), (start, gtid, names.get(name)))
copy = {}
if 'ENUM_CUDA_MEMCPY_OPER' in tables:
    copy = {i: (n, l) for i, n, l in db.execute('select id, name, label from ENUM_CUDA_MEMCPY_OPER')}
rows = []
invalid = [0]
def add(ord, kind, rowid, r, name, **extra):
    if r['start'] is None or r['end'] is None or r['end'] < r['start'] or None in (r['deviceId'], r['contextId'], r['streamId']):
        invalid[0] += 1
        return
    row = dict(kind=kind, start_ns=r['start'], end_ns=r['end'], duration_ns=r['end'] - r['start'],
               device_id=r['deviceId'], context_id=r['contextId'], stream_id=r['streamId'], name=name,
               demangled_name=None, grid=None, block=None, registers_per_thread=None, shared_memory_bytes=None,
               bytes=None, copy_kind=None, correlation_id=r['correlationId'],
               api_name=None, api_start_ns=None, api_thread_id=None, launch_latency_ns=None)
    row.update(extra)
    a = api.get((r['correlationId'], r['globalPid'] // (1 << 24))) if r['globalPid'] is not None else None
    if a:
        row.update(api_name=a[2], api_start_ns=a[0], api_thread_id=a[1] % (1 << 24), launch_latency_ns=r['start'] - a[0])
    rows.append(((r['start'], ord, rowid), row))
db.row_factory = sqlite3.Row
if 'CUPTI_ACTIVITY_KIND_KERNEL' in tables:
    for r in db.execute('select rowid as rid, * from CUPTI_ACTIVITY_KIND_KERNEL'):
        add(0, 'kernel', r['rid'], r, names[r['shortName']], demangled_name=names.get(r['demangledName']),
            grid='(%d, %d, %d)' % (r['gridX'], r['gridY'], r['gridZ']), block='(%d, %d, %d)' % (r['blockX'], r['blockY'], r['blockZ']),
            registers_per_thread=r['registersPerThread'], shared_memory_bytes=r['staticSharedMemory'] + r['dynamicSharedMemory'])
if 'CUPTI_ACTIVITY_KIND_MEMCPY' in tables:
    for r in db.execute('select rowid as rid, * from CUPTI_ACTIVITY_KIND_MEMCPY'):
        n, l = copy.get(r['copyKind'], (str(r['copyKind']), str(r['copyKind'])))
        add(1, 'memcpy', r['rid'], r, '[CUDA memcpy %s]' % l, bytes=r['bytes'], copy_kind=n)
if 'CUPTI_ACTIVITY_KIND_MEMSET' in tables:
    for r in db.execute('select rowid as rid, * from CUPTI_ACTIVITY_KIND_MEMSET'):
        add(2, 'memset', r['rid'], r, '[CUDA memset]', bytes=r['bytes'])
rows.sort(key=lambda x: x[0])
rows = [r for _, r in rows]
kinds = [r['kind'] for r in rows]
metrics = dict(kernel_count=kinds.count('kernel'), memcpy_count=kinds.count('memcpy'), memset_count=kinds.count('memset'),
               launch_count=len(rows), device_count=len({r['device_id'] for r in rows}),
               total_kernel_time_ns=sum(r['duration_ns'] for r in rows if r['kind'] == 'kernel'),
               unmatched_api_count=sum(r['api_name'] is None for r in rows), accelerator_activity_observed=len(rows) > 0)
if invalid[0]:
    metrics['invalid_record_count'] = invalid[0]
json.dump(dict(rows=rows, metrics=metrics), sys.stdout)
`

// nsysVariant derives a test export from the corpus file with python3's sqlite3: a
// CUPTI_ACTIVITY_KIND_MEMSET table (nsys's columns) holding a memset at a kernel's start
// (kind order breaks the tie) and one with no runtime call, and a second runtime row for
// an existing correlation id (the first by rowid is the call). It is a modified copy,
// not nsys output.
const nsysVariant = `
import sys, shutil, sqlite3
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
k = db.execute('select start, deviceId, contextId, streamId, correlationId, globalPid from CUPTI_ACTIVITY_KIND_KERNEL order by start limit 1 offset 5').fetchone()
db.execute('''CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER)''')
db.execute('insert into CUPTI_ACTIVITY_KIND_MEMSET values (?,?,?,?,NULL,?,?,?,0,4096,NULL,1)', (k[0], k[0] + 700, k[1], k[2], k[3], k[4], k[5]))
db.execute('insert into CUPTI_ACTIVITY_KIND_MEMSET values (?,?,?,?,NULL,?,?,?,0,64,NULL,1)', (k[0] + 1, k[0] + 9, k[1], k[2], k[3], 999999999, k[5]))
r = db.execute('select start, end, eventClass, globalTid, correlationId, nameId, returnValue from CUPTI_ACTIVITY_KIND_RUNTIME where correlationId = ?', (k[4],)).fetchone()
db.execute('insert into CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) values (?,?,?,?,?,?,?)',
  (r[0] - 5, r[1], r[2], r[3], r[4], 1, r[6]))
db.commit()
`

func python3(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("python3: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

func nsysReq(path string) *providers.Request[gen.TableViewFields] {
	return &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{},
		Inputs: []providers.Input{{Path: path, Format: gen.FormatNsysSqlite}}}
}

// TestGPULaunchesAgainstPython pages inspect_gpu_launches over the corpus export and a
// variant with memsets, each as SQLite and as the parquetdir converted from it, and
// compares every row and the metrics with python3's reading of the SQLite export.
func TestGPULaunchesAgainstPython(t *testing.T) {
	corpus := corpusFile(t, nsysCorpus)
	variant := filepath.Join(t.TempDir(), "variant.sqlite")
	python3(t, nsysVariant, corpus, variant)
	// A copy whose kernel table lost its NOT NULL constraints (as an edited or converted
	// file may): a kernel that ends before it starts, one without a start, one without a
	// device, none of them a row or in the figures.
	invalid := nsysLooseKernels(t, variant, map[int]string{9: "end = start - 5", 12: "start = NULL", 15: "deviceId = NULL"})
	for _, c := range []struct {
		name, path string
		limit      int64
	}{{"corpus", corpus, 997}, {"variant", variant, 4000}, {"invalid", invalid, 4000}} {
		var truth struct {
			Rows    []json.RawMessage
			Metrics map[string]any
		}
		if err := json.Unmarshal(python3(t, nsysLaunchTruth, c.path), &truth); err != nil {
			t.Fatal(err)
		}
		if c.name == "invalid" && truth.Metrics["invalid_record_count"] != 3.0 {
			t.Fatalf("python3 counts %v invalid records in the copy, want 3", truth.Metrics["invalid_record_count"])
		}
		for _, in := range nsysSources(t, c.path) {
			t.Run(c.name+"/"+string(in.Format), func(t *testing.T) {
				a, err := inspectLaunches(context.Background(), noFields(in))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := pageAll[gen.GpuLaunchRow](t, a.Rows, c.limit)
				compareRows(t, "inspect_gpu_launches", truth.Rows, got)
				b, _ := json.Marshal(a.Metrics)
				var m map[string]any
				_ = json.Unmarshal(b, &m)
				if d := cmp.Diff(truth.Metrics, m); d != "" {
					t.Errorf("metrics (-python +flameox):\n%s", d)
				}
			})
		}
	}
}

// TestGPULaunchesCorpusFigures pins what the corpus README says of the export.
func TestGPULaunchesCorpusFigures(t *testing.T) {
	a, err := inspectLaunches(context.Background(), nsysReq(corpusFile(t, nsysCorpus)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Metrics["kernel_count"] != int64(3689) {
		t.Errorf("kernel_count %v, want 3689 (the corpus README)", a.Metrics["kernel_count"])
	}
}

func TestNsysSQLiteMalformed(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := filepath.Join(dir, "other.sqlite")
	python3(t, `import sys, sqlite3; db = sqlite3.connect(sys.argv[1]); db.execute('create table t (a)'); db.commit()`, other)
	corpus, err := os.ReadFile(corpusFile(t, nsysCorpus))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		want       any
	}{
		{"not sqlite", write("text.sqlite", []byte("hello, this is not a database at all; it is long enough to fill one hundred bytes of header.........")), &providers.DecodeError{}},
		{"empty", write("empty.sqlite", nil), &providers.DecodeError{}},
		{"gzip", write("gz.sqlite", []byte{0x1f, 0x8b, 8, 0}), &providers.UnsupportedError{}},
		{"other database", other, &providers.UnsupportedError{}},
		{"truncated", write("trunc.sqlite", corpus[:len(corpus)/3]), &providers.DecodeError{}},
		// Issue 40: interior pages that all point at one child make a scan revisit it at
		// every level; quick_check refuses the file before any query.
		{"b-tree DAG", testtool.SQLiteDAG(t, corpusFile(t, nsysCorpus)), &providers.DecodeError{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := inspectLaunches(context.Background(), nsysReq(c.path))
			if err == nil {
				_, err = a.Rows.Page(context.Background(), 0, 10_000, nil)
			}
			switch c.want.(type) {
			case *providers.DecodeError:
				var e *providers.DecodeError
				if !errors.As(err, &e) {
					t.Fatalf("got %T %v, want a DecodeError", err, err)
				}
				if strings.Contains(e.Message, dir) {
					t.Errorf("message names a host path: %q", e.Message)
				}
				if c.name == "b-tree DAG" && (!strings.Contains(e.Message, "damaged SQLite file (PRAGMA quick_check: ") || !strings.Contains(e.Message, "2nd reference to page")) {
					t.Errorf("message %q does not say the file is damaged", e.Message)
				}
			case *providers.UnsupportedError:
				var e *providers.UnsupportedError
				if !errors.As(err, &e) {
					t.Fatalf("got %T %v, want an UnsupportedError", err, err)
				}
			}
		})
	}
}

// nsysOpsTruth groups the export's kernels (by short name), memcpys (by copy kind label),
// memsets, runtime calls, NVTX ranges (events with an end) and OS runtime calls by name
// in Python and sorts them by total duration descending, calls descending, name and
// kind; the mean is rounded half to even, the share is of the kind's summed total, the
// GPU rows list their distinct streams.
const nsysOpsTruth = `
import sys, json, sqlite3
db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)
names = dict(db.execute('select id, value from StringIds'))
tables = {r[0] for r in db.execute("select name from sqlite_master where type = 'table'")}
ops = {}
def add(kind, name, start, end, stream=None):
    o = ops.setdefault((kind, name if name else '<unnamed>'), [0, 0, 0, None, set()])
    o[0] += 1
    if end >= start:
        o[1] += 1; o[2] += end - start; o[3] = max(o[3] or 0, end - start)
    if stream is not None:
        o[4].add(stream)
for s, e, n, st in db.execute('select start, end, shortName, streamId from CUPTI_ACTIVITY_KIND_KERNEL'):
    add('kernel', names.get(n), s, e, st)
labels = dict(db.execute('select id, label from ENUM_CUDA_MEMCPY_OPER')) if 'ENUM_CUDA_MEMCPY_OPER' in tables else {}
for s, e, k, st in db.execute('select start, end, copyKind, streamId from CUPTI_ACTIVITY_KIND_MEMCPY'):
    add('memcpy', '[CUDA memcpy %s]' % labels.get(k, k), s, e, st)
if 'CUPTI_ACTIVITY_KIND_MEMSET' in tables:
    for s, e, st in db.execute('select start, end, streamId from CUPTI_ACTIVITY_KIND_MEMSET'):
        add('memset', '[CUDA memset]', s, e, st)
for s, e, n in db.execute('select start, end, nameId from CUPTI_ACTIVITY_KIND_RUNTIME'):
    add('runtime', names.get(n), s, e)
for s, e, t, tid in db.execute('select start, end, text, textId from NVTX_EVENTS'):
    if e is not None:
        add('nvtx', t if t is not None else names.get(tid), s, e)
for s, e, n in db.execute('select start, end, nameId from OSRT_API'):
    add('osrt', names.get(n), s, e)
# Self time of runtime calls, NVTX ranges and OS runtime calls: each thread's calls in
# start order (longer first; NVTX, runtime, OS runtime on ties), a call's parent the
# innermost call open at its start; self is the duration less the union of the children
# clipped to it. GPU activity has no children.
calls = []
for rank, (kind, q) in enumerate([('nvtx', 'select rowid, start, end, globalTid, coalesce(text, (select value from StringIds where id = textId)) from NVTX_EVENTS where end is not null'),
                                  ('runtime', 'select e.rowid, start, end, globalTid, s.value from CUPTI_ACTIVITY_KIND_RUNTIME e left join StringIds s on s.id = e.nameId'),
                                  ('osrt', 'select e.rowid, start, end, globalTid, s.value from OSRT_API e left join StringIds s on s.id = e.nameId')]):
    for rid, st, en, tid, name in db.execute(q):
        if en >= st:
            calls.append(dict(key=(tid if tid is not None else -2**70, st, -en, rank, rid), kind=kind, name=name if name else '<unnamed>', st=st, en=en, tid=tid, kids=[]))
calls.sort(key=lambda c: c['key'])
stack = []
for i, c in enumerate(calls):
    if i and calls[i-1]['tid'] != c['tid']: stack = []
    while stack and stack[-1]['en'] <= c['st']: stack.pop()
    if stack: stack[-1]['kids'].append((c['st'], c['en']))
    stack.append(c)
covered = {}
for c in calls:
    merged = []
    for a, b in sorted((max(a, c['st']), min(b, c['en'])) for a, b in c['kids']):
        if b <= a: continue
        if merged and a <= merged[-1][1]: merged[-1][1] = max(merged[-1][1], b)
        else: merged.append([a, b])
    k = (c['kind'], c['name'])
    covered[k] = covered.get(k, 0) + sum(b - a for a, b in merged)
def mean(total, n):
    q, r = divmod(total, n)
    return q + (1 if 2 * r > n or (2 * r == n and q % 2) else 0)
kind_total = {}
for (kind, name), o in ops.items():
    kind_total[kind] = kind_total.get(kind, 0) + o[2]
rows = []
for (kind, name), o in ops.items():
    r = dict(operation=name, span_kind=kind)
    if kind in ('kernel', 'memcpy', 'memset'):
        r['event_kind'] = kind
    r.update(status_code=None, call_count=o[0], total_duration_ns=o[2], self_duration_ns=o[2] - covered.get((kind, name), 0),
             mean_duration_ns=mean(o[2], o[1]) if o[1] else None, max_duration_ns=o[3])
    if kind_total[kind]:
        v = round(o[2] / kind_total[kind], 4)
        r['share_of_kind'] = int(v) if v == int(v) else v
    if o[4]:
        r['streams'] = sorted(o[4])[:16]
    rows.append(r)
rows.sort(key=lambda r: (-r['total_duration_ns'], -r['call_count'], r['operation'].encode(), r['span_kind']))
json.dump(rows, sys.stdout)
`

func TestNsysOperationsAgainstPython(t *testing.T) {
	path := corpusFile(t, nsysCorpus)
	var want []json.RawMessage
	if err := json.Unmarshal(python3(t, nsysOpsTruth, path), &want); err != nil {
		t.Fatal(err)
	}
	for _, in := range nsysSources(t, path) {
		t.Run(string(in.Format), func(t *testing.T) {
			a, err := summarizeOperations(context.Background(), sliceReq(noFields(in)))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := pageAll[gen.TraceOperationRow](t, a.Rows, 50)
			compareRows(t, "summarize_trace_operations", want, got)
			if a.Metrics["operation_count"] != len(want) || a.Metrics["runtime_call_count"] != int64(7417) {
				t.Errorf("metrics %v", a.Metrics)
			}
		})
	}
}

// nsysLooseKernels copies the export src with python3's sqlite3, its kernel table
// rebuilt without NOT NULL constraints (as an edited or converted file may be), and sets
// each edit ("start = NULL") on the kernel of that index in start order. It returns the
// copy's path.
func nsysLooseKernels(t *testing.T, src string, edits map[int]string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "loose.sqlite")
	script := `import sys, shutil, sqlite3
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
t = 'CUPTI_ACTIVITY_KIND_KERNEL'
db.execute('create table k2 as select * from %s order by rowid' % t)
db.execute('drop table %s' % t)
db.execute('alter table k2 rename to %s' % t)
k = [r[0] for r in db.execute('select rowid from %s order by start' % t)]
`
	for i, e := range edits {
		script += fmt.Sprintf("db.execute('update %%s set %s where rowid = ?' %% t, (k[%d],))\n", e, i)
	}
	python3(t, script+"db.commit()\n", src, dst)
	return dst
}

// sliceReq is r with the fields of summarize_trace and summarize_trace_operations.
func sliceReq(r *providers.Request[gen.TableViewFields]) *providers.Request[gen.TraceSliceFields] {
	return &providers.Request[gen.TraceSliceFields]{Inputs: r.Inputs, Limits: r.Limits,
		Fields: &gen.TraceSliceFields{View: r.Fields.View, Tables: r.Fields.Tables}}
}

// asView runs an analyzer of summarize_trace's fields on a request of the table view's.
func asView(f func(context.Context, *providers.Request[gen.TraceSliceFields]) (*providers.Analysis, error)) func(context.Context, *providers.Request[gen.TableViewFields]) (*providers.Analysis, error) {
	return func(ctx context.Context, r *providers.Request[gen.TableViewFields]) (*providers.Analysis, error) {
		return f(ctx, sliceReq(r))
	}
}
