package trace

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
)

// nsysSliceTruth is python3's sqlite3 reading an Nsight Systems export into
// summarize_trace rows, without SQL joins: kernels, memcpys, memsets, runtime calls and
// NVTX ranges with an end, ids laid out over the tables in that order (earlier tables'
// max rowid + rowid - 1), GPU tracks numbered -1, -2, ... by first activity in (start,
// end descending, id) order, thread tracks the globalTid; parents by containment per
// track with a stack (a slice starting where another ends is its sibling), then the
// slices with a positive duration sorted by (ts, depth, id). It prints the rows and the
// slice count per category.
const nsysSliceTruth = `
import sys, json, sqlite3
db = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)
db.row_factory = sqlite3.Row
tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
names = {r[0]: r[1] for r in db.execute('select id, value from StringIds')}
copy = {r[0]: r[1] for r in db.execute('select id, label from ENUM_CUDA_MEMCPY_OPER')} if 'ENUM_CUDA_MEMCPY_OPER' in tables else {}
M = 1 << 24
threads = {}
if 'ThreadNames' in tables:
    for r in db.execute('select globalTid, nameId from ThreadNames order by rowid'):
        if r[1] in names:
            threads[(r[0] - r[0] % M, r[0] % M)] = names[r[1]]
procs = {r[0]: r[1] for r in db.execute('select globalPid, name from PROCESSES order by rowid')} if 'PROCESSES' in tables else {}
order = ['CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS']
cats = ['kernel', 'memcpy', 'memset', 'cuda_api', 'nvtx']
sl = []
base = 0
invalid = 0
for t, table in enumerate(order):
    if table not in tables:
        continue
    top = 0
    for r in db.execute('select rowid as rid, * from ' + table):
        top = max(top, r['rid'])
        if r['start'] is None or r['end'] is None:
            invalid += t < 4  # an NVTX event without an end is a mark
            continue
        if r['end'] < r['start']:
            invalid += 1
            continue
        s = dict(id=base + r['rid'] - 1, ts=r['start'], dur=r['end'] - r['start'], category=cats[t],
                 correlation_id=None, device=None, stream=None, gpu=None, tid=None)
        if t <= 2:
            s['name'] = names.get(r['shortName'], '') if t == 0 else ('[CUDA memcpy %s]' % copy.get(r['copyKind'], r['copyKind']) if t == 1 else '[CUDA memset]')
            s['pid'] = r['globalPid']
            s['gpu'] = (r['globalPid'], r['deviceId'], r['streamId'])
            s.update(correlation_id=r['correlationId'], device=r['deviceId'], stream=r['streamId'])
        else:
            if t == 3:
                s['name'] = names.get(r['nameId'], '')
                s['correlation_id'] = r['correlationId']
            else:
                s['name'] = r['text'] if r['text'] is not None else names.get(r['textId'], '')
            g = r['globalTid'] or 0
            s['tid'], s['pid'] = g, g - g % M
        sl.append(s)
    base += top
sl.sort(key=lambda s: (s['ts'], -s['dur'], s['id']))
gpu = {}
stacks = {}
for s in sl:
    if s['gpu'] is not None:
        s['track'] = gpu.setdefault(s['gpu'], -(len(gpu) + 1))
    else:
        s['track'] = s['tid']
    st = stacks.setdefault(s['track'], [])
    while st and st[-1]['ts'] + st[-1]['dur'] <= s['ts']:
        st.pop()
    s['parent'] = st[-1]['id'] if st else None
    s['depth'] = len(st)
    st.append(s)
out = [s for s in sl if s['dur'] > 0]
out.sort(key=lambda s: (s['ts'], s['depth'], s['id']))
rows = []
for s in out:
    tn = threads.get((s['pid'], s['tid'] % M)) if s['gpu'] is None else None
    rows.append(dict(id=s['id'], parent_id=s['parent'], name=s['name'] or '<unnamed>', ts=s['ts'], dur=s['dur'], track_id=s['track'],
        category=s['category'], thread_name=tn, process_name=procs.get(s['pid']), filename=None, line=None, input_shapes=None,
        allocation_bytes=None, phase='X', correlation_id=s['correlation_id'], device=s['device'], stream=s['stream']))
count = {}
for s in out:
    count[s['category']] = count.get(s['category'], 0) + 1
json.dump(dict(rows=rows, count=count, tracks=len(gpu) + len({s['tid'] for s in sl if s['gpu'] is None}), invalid=invalid), sys.stdout)
`

// TestNsysSlicesAgainstPython pages summarize_trace over the corpus export and its
// variant (memsets, a repeated runtime call), each as SQLite and as the parquetdir
// converted from it, and compares every row, the count per category and the track count
// with python3's reading of the SQLite export.
func TestNsysSlicesAgainstPython(t *testing.T) {
	corpus := corpusFile(t, nsysCorpus)
	variant := t.TempDir() + "/variant.sqlite"
	python3(t, nsysVariant, corpus, variant)
	// A copy whose kernel table lost its NOT NULL constraints (as a converted or edited
	// file may): one kernel without a start, one that ends before it starts.
	invalid := nsysLooseKernels(t, corpus, map[int]string{4: "start = NULL", 7: "end = start - 5"})
	for _, c := range []struct {
		name, path string
		limit      int64
	}{{"corpus", corpus, 4999}, {"variant", variant, 6000}, {"invalid", invalid, 6000}} {
		var truth struct {
			Rows    []json.RawMessage
			Count   map[string]int64
			Tracks  int64
			Invalid int64
		}
		if err := json.Unmarshal(python3(t, nsysSliceTruth, c.path), &truth); err != nil {
			t.Fatal(err)
		}
		if c.name == "invalid" && truth.Invalid != 2 {
			t.Fatalf("the invalid copy holds %d invalid records for python3, want 2", truth.Invalid)
		}
		for _, in := range nsysSources(t, c.path) {
			t.Run(c.name+"/"+string(in.Format), func(t *testing.T) {
				a, err := summarize(context.Background(), sliceReq(noFields(in)))
				if err != nil {
					t.Fatal(err)
				}
				got, m := pageAll[gen.TraceSliceRow](t, a.Rows, c.limit)
				compareRows(t, "summarize_trace", truth.Rows, got)
				count := map[string]int64{}
				for _, r := range got {
					count[*r.Category]++
				}
				if d := cmp.Diff(truth.Count, count); d != "" {
					t.Errorf("slices per category (-python +flameox):\n%s", d)
				}
				if m["slice_count"] != int64(len(truth.Rows)) || m["track_count"] != int(truth.Tracks) {
					t.Errorf("slice_count %v track_count %v, want %d and %d", m["slice_count"], m["track_count"], len(truth.Rows), truth.Tracks)
				}
				if got, _ := m["invalid_interval_count"].(int64); got != truth.Invalid {
					t.Errorf("invalid_interval_count %v, python3 counts %d", m["invalid_interval_count"], truth.Invalid)
				}
			})
		}
	}
}
