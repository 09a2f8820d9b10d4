package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nsysLifecycleTruth is python3's own reading of an Nsight Systems SQLite export with
// its sqlite3 module, without SQL joins: every kernel, memcpy, memset, CUDA runtime call
// and NVTX range (an NVTX event with an end) gets the id decision 0025 gives its slice
// (the earlier tables' max rowid plus its rowid - 1), a span_started and a span_ended
// transition at its start and end plus the session's utcEpochNs, the process id (bits
// 24-47 of its global id) as trace id, and, for GPU activity, the id of the first
// runtime call by rowid with its correlation id and process as parent. Records ending
// before they start are counted, not listed. Sorted by (time, id, started < ended).
const nsysLifecycleTruth = `
import sys, json, sqlite3
db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)
tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
names = dict(db.execute('select id, value from StringIds'))
epoch = 0
if 'TARGET_INFO_SESSION_START_TIME' in tables:
    epoch = db.execute('select utcEpochNs from TARGET_INFO_SESSION_START_TIME').fetchone()[0]
copy = {}
if 'ENUM_CUDA_MEMCPY_OPER' in tables:
    copy = {i: l for i, n, l in db.execute('select id, name, label from ENUM_CUDA_MEMCPY_OPER')}
order = ['CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS']
metric = ['kernel_count', 'memcpy_count', 'memset_count', 'cuda_api_call_count', 'nvtx_range_count']
base, b = {}, 0
for t in order:
    if t in tables:
        base[t] = b
        b += db.execute('select coalesce(max(rowid), 0) from ' + t).fetchone()[0]
api = {}
if 'CUPTI_ACTIVITY_KIND_RUNTIME' in tables:
    for rowid, cid, gtid in db.execute('select rowid, correlationId, globalTid from CUPTI_ACTIVITY_KIND_RUNTIME order by rowid'):
        if cid is not None:
            api.setdefault((cid, gtid >> 24), base['CUPTI_ACTIVITY_KIND_RUNTIME'] + rowid - 1)
js = lambda v: v if abs(v) <= 2**53 - 1 else str(v)  # the contract's integers beyond 2^53 are decimal strings
proc = lambda g: ((g or 0) >> 24) & 0xFFFFFF
rows, metrics, invalid = [], {m: 0 for m in metric}, 0
def add(t, rowid, start, end, name, pid, parent):
    global invalid
    if start is None or end is None:
        return
    if end < start:
        invalid += 1
        return
    metrics[metric[order.index(t)]] += 1
    i = base[t] + rowid - 1
    for tr, when in ((0, start), (1, end)):
        rows.append(((when, i, tr), dict(transition=['span_started', 'span_ended'][tr], time_unix_nano=js(when + epoch),
            trace_id=str(proc(pid)), span_id=str(i), parent_span_id=None if parent is None else str(parent),
            operation=name or '<unnamed>', event_name=None)))
gpu = lambda cid, gpid: api.get((cid, gpid >> 24)) if gpid is not None else None
for t in order[:3]:
    if t not in tables:
        continue
    cols = {'CUPTI_ACTIVITY_KIND_KERNEL': 'shortName', 'CUPTI_ACTIVITY_KIND_MEMCPY': 'copyKind', 'CUPTI_ACTIVITY_KIND_MEMSET': 'NULL'}[t]
    for rowid, start, end, cid, gpid, x in db.execute('select rowid, start, end, correlationId, globalPid, %s from %s' % (cols, t)):
        name = names.get(x) if t.endswith('KERNEL') else ('[CUDA memcpy %s]' % copy.get(x, x) if t.endswith('MEMCPY') else '[CUDA memset]')
        add(t, rowid, start, end, name, gpid, gpu(cid, gpid))
if 'CUPTI_ACTIVITY_KIND_RUNTIME' in tables:
    for rowid, start, end, gtid, n in db.execute('select rowid, start, end, globalTid, nameId from CUPTI_ACTIVITY_KIND_RUNTIME'):
        add('CUPTI_ACTIVITY_KIND_RUNTIME', rowid, start, end, names.get(n), gtid, None)
if 'NVTX_EVENTS' in tables:
    for rowid, start, end, gtid, text, tid in db.execute('select rowid, start, end, globalTid, text, textId from NVTX_EVENTS'):
        add('NVTX_EVENTS', rowid, start, end, text if text is not None else names.get(tid), gtid, None)
rows.sort(key=lambda x: x[0])
n = sum(metrics.values())
metrics.update(transition_count=2 * n, span_count=n, invalid_interval_count=invalid)
json.dump(dict(rows=[r for _, r in rows], metrics=metrics), sys.stdout)
`

// nsysLifecycleVariant adds to the launch variant (nsysVariant) a kernel that ends
// before it starts and removes the session start, so times stay session-relative. A
// modified copy, not nsys output.
const nsysLifecycleVariant = `
import sys, sqlite3
db = sqlite3.connect(sys.argv[1])
db.execute('update CUPTI_ACTIVITY_KIND_KERNEL set end = start - 10 where rowid = 7')
db.execute('update NVTX_EVENTS set end = start - 1 where rowid = (select max(rowid) from NVTX_EVENTS where end is not null)')
db.execute('drop table TARGET_INFO_SESSION_START_TIME')
db.commit()
`

// TestNsysLifecycleAgainstPython pages summarize_trace_lifecycle over the corpus export
// and a variant to the end, each as SQLite and as the parquetdir converted from it, and
// compares every row and metric with python3's reading of the SQLite export.
func TestNsysLifecycleAgainstPython(t *testing.T) {
	corpus := corpusFile(t, nsysCorpus)
	variant := filepath.Join(t.TempDir(), "variant.sqlite")
	python3(t, nsysVariant, corpus, variant)
	python3(t, nsysLifecycleVariant, variant)
	for _, c := range []struct {
		name, path string
		limit      int64
		epoch      bool
	}{{"corpus", corpus, 4999, true}, {"variant", variant, 20000, false}} {
		var truth struct {
			Rows    []json.RawMessage
			Metrics map[string]any
		}
		if err := json.Unmarshal(python3(t, nsysLifecycleTruth, c.path), &truth); err != nil {
			t.Fatal(err)
		}
		for _, in := range nsysSources(t, c.path) {
			t.Run(c.name+"/"+string(in.Format), func(t *testing.T) {
				a, err := summarizeLifecycle(context.Background(), noFields(in))
				if err != nil {
					t.Fatal(err)
				}
				var got []json.RawMessage
				for off := int64(0); ; off += c.limit {
					p, err := a.Rows.Page(context.Background(), off, c.limit, nil)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, p.Rows...)
					if !p.More {
						break
					}
				}
				if len(got) != len(truth.Rows) {
					t.Fatalf("%d rows, python3 %d", len(got), len(truth.Rows))
				}
				for i := range got {
					var g, w any
					json.Unmarshal(got[i], &g)
					json.Unmarshal(truth.Rows[i], &w)
					if d := cmp.Diff(w, g); d != "" {
						t.Fatalf("row %d (-python3 +flameox):\n%s", i, d)
					}
				}
				gm, _ := json.Marshal(a.Metrics)
				var m map[string]any
				json.Unmarshal(gm, &m)
				if d := cmp.Diff(truth.Metrics, m); d != "" {
					t.Errorf("metrics (-python3 +flameox):\n%s", d)
				}
				relative := false
				for _, l := range a.Limitations {
					relative = relative || strings.Contains(l, "records no session start")
				}
				if relative == c.epoch {
					t.Errorf("session start recorded %v, limitations %q", c.epoch, a.Limitations)
				}
			})
		}
	}
}

// TestNsysSlicesInvalidIntervals checks that summarize_trace counts the records of the
// lifecycle variant (as SQLite and as a parquetdir) that end before they start, as
// python3's sqlite3 counts them.
func TestNsysSlicesInvalidIntervals(t *testing.T) {
	variant := filepath.Join(t.TempDir(), "variant.sqlite")
	python3(t, nsysVariant, corpusFile(t, nsysCorpus), variant)
	python3(t, nsysLifecycleVariant, variant)
	out := python3(t, `
import sys, sqlite3
db = sqlite3.connect(sys.argv[1])
print(sum(db.execute('select count(*) from %s where end < start' % t).fetchone()[0] for t in
    ('CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS')))
`, variant)
	for _, in := range nsysSources(t, variant) {
		a, err := summarize(context.Background(), sliceReq(noFields(in)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.Rows.Page(context.Background(), 0, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(p.Metrics["invalid_interval_count"]), strings.TrimSpace(string(out)); got != want || want == "0" {
			t.Errorf("%s: invalid_interval_count %s, python3 %s", in.Format, got, want)
		}
	}
}
