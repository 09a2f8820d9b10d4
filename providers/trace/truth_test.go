package trace

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// corpusFile returns the path of a shared corpus file, skipping the test when the
// corpus (../shared beside the repository) is absent.
func corpusFile(t testing.TB, name string) string {
	t.Helper()
	return testtool.Corpus(t, name)
}

// truthScript computes, with Python's json module (floats as decimal.Decimal from their
// text), what a Trace Event file holds: event and phase counts, the Stats figures, every
// slice's exact ns start and duration, and (for files of at most maxNest slices) each
// slice's parent and depth by an O(n^2) containment check. A truncated top-level array
// is closed before parsing.
const truthScript = `
import sys, json, gzip, decimal
from decimal import Decimal, ROUND_HALF_EVEN
decimal.getcontext().prec = 80
path, max_nest = sys.argv[1], int(sys.argv[2])
raw = (gzip.open if path.endswith('.gz') else open)(path, 'rb').read().decode('utf-8')
truncated = False
try:
    doc = json.loads(raw, parse_float=Decimal)
except ValueError:
    t = raw.rstrip()
    if t.endswith(','):
        t = t[:-1]
    doc = json.loads(t + ']', parse_float=Decimal)
    truncated = True
events = doc['traceEvents'] if isinstance(doc, dict) else doc

def ns(v):
    return int((Decimal(str(v)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))

st = dict(Events=len(events), Slices=0, UnmatchedEnds=0, UnfinishedBegins=0, Instants=0,
          Counters=0, Flows=0, Metadata=0, Ignored=0, Truncated=truncated)
phases = {}
slices = []  # [id, ts, dur, trackkey]
stacks = {}
names = 0
xpos = 0
for i, e in enumerate(events):
    ph = e.get('ph')
    phases[str(ph)] = phases.get(str(ph), 0) + 1
    pid, tid = e.get('pid', 0), e.get('tid', 0)
    if ph == 'X':
        d = ns(e.get('dur', 0))
        xpos += d > 0
        slices.append([i, ns(e['ts']), d, ('t', pid, tid)])
    elif ph in ('B', 'E', 'b', 'e'):
        if ph in ('B', 'E'):
            key = ('t', pid, tid)
        else:
            if 'id2' in e:
                kind, idv = next(iter(e['id2'].items()))
                kind = kind[0]
            elif 'id' in e:
                kind, idv = 'i', e['id']
            else:
                kind, idv = '', None
            key = ('a', 0 if kind == 'g' else pid, e.get('cat', ''), kind, e.get('scope', ''), repr(idv))
        if ph in ('B', 'b'):
            stacks.setdefault(key, []).append((i, ns(e['ts'])))
        else:
            s = stacks.get(key)
            if not s:
                st['UnmatchedEnds'] += 1
            else:
                b, bts = s.pop()
                slices.append([b, bts, ns(e['ts']) - bts, key])
    elif ph in ('n', 'i', 'I', 'R'):
        st['Instants'] += 1
    elif ph == 'C':
        st['Counters'] += 1
    elif ph in ('s', 't', 'f'):
        st['Flows'] += 1
    elif ph == 'M':
        a = e.get('args')
        if e.get('name') in ('thread_name', 'process_name') and isinstance(a, dict) and isinstance(a.get('name'), str):
            names += 1
        else:
            st['Metadata'] += 1
    else:
        st['Ignored'] += 1
st['UnfinishedBegins'] = sum(len(s) for s in stacks.values())
st['Slices'] = len(slices)

nest = None
if len(slices) <= max_nest:
    nest = {}
    order = lambda s: (s[1], -s[2], s[0])
    bytrack = {}
    for s in slices:
        bytrack.setdefault(repr(s[3]), []).append(s)
    for group in bytrack.values():
        for s in group:
            best = None
            for p in group:
                if p is s or not order(p) < order(s):
                    continue
                pend, send = p[1] + p[2], s[1] + s[2]
                if p[1] <= s[1] < pend and send <= pend:
                    if best is None or order(p) > order(best):
                        best = p
            nest[s[0]] = best[0] if best else -1
    depth = {}
    for i in nest:
        d, j = 0, nest[i]
        while j != -1:
            d, j = d + 1, nest[j]
        depth[i] = d
    nest = {str(i): [nest[i], depth[i]] for i in nest}
print(json.dumps(dict(stats=st, phases=phases, x_pos_dur=xpos, names=names,
                      slices=[s[:3] for s in slices], nest=nest)))
`

type truth struct {
	Stats    Stats
	Phases   map[string]int64
	XPosDur  int64 `json:"x_pos_dur"`
	Names    int64
	Slices   [][3]int64
	Nest     map[string][2]int64
	HaveNest bool `json:"-"`
}

func pythonTruth(t testing.TB, path string, maxNest int) *truth {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", truthScript, path, itoa(maxNest)).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("python3: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var tr truth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("python3 output: %v", err)
	}
	tr.HaveNest = tr.Nest != nil
	return &tr
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
