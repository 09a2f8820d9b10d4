// Package chrometest holds what the tests of the Trace Event reader and of the trace
// family share: generated traces (WriteTrace, WriteStepTrace, WriteKinetoTrace), the
// corpus's Trace Event files (CorpusTraces, OpenCorpus), Python's reading of a trace as
// the independent truth (PythonTruth). It is imported by tests only.
package chrometest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/trace/tracemodel"
)

// OpenCorpus reads the corpus file name, gunzipped when its name ends in .gz (the test
// is skipped without the corpus).
func OpenCorpus(t testing.TB, name string) io.Reader {
	t.Helper()
	b, err := os.ReadFile(testtool.Corpus(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return bytes.NewReader(b)
}

// CorpusTraces are the corpus's Trace Event files.
var CorpusTraces = []string{
	"h200__torch-mlp-train.pt.trace.json",
	"hta__kineto-simple-add-a100.pt.trace.json.gz",
	"speedscope__chrome116-devtools-trace.json",
	"speedscope__trace-event-simple-partial.json",
	"speedscope__trace_event_partial_trailing_comma.json",
	"speedscope__trace_event_multiprocess.json",
	"local-h200__jax0.11.2_perfetto_trace.json.gz",
}

// WriteTrace writes a synthetic torch.profiler-like Chrome trace of about events
// events over threads threads (object form with schemaVersion and deviceProperties):
// per thread a random call tree of complete X events, written when they end as Chrome
// does (children before parents), and B/E pairs, with Kineto-style args and epoch µs
// timestamps with three decimals (above 2^53 ns). It is deterministic for a seed.
func WriteTrace(w io.Writer, events int, threads int, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(`{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320}],` + "\n" + `"traceEvents": [` + "\n")
	type frame struct {
		start int64
		name  int
		b     bool // a B/E pair rather than an X
	}
	names := []string{"aten::mm", "aten::add", "aten::linear", "aten::relu", "aten::empty", "aten::copy_",
		"cudaLaunchKernel", "ProfilerStep#2", "autograd::engine::evaluate_function: MeanBackward0",
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"}
	stacks := make([][]frame, threads)
	clock := make([]int64, threads)
	const base = int64(1700000000000000) * 1000
	var b []byte
	n := 0
	first := true
	sep := func() {
		if !first {
			b = append(b, ",\n"...)
		}
		first = false
	}
	ts := func(key string, ns int64) {
		b = append(b, key...)
		b = strconv.AppendInt(b, ns/1000, 10)
		b = append(b, '.')
		f := ns % 1000
		b = append(b, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	}
	head := func(ph byte, th int) {
		sep()
		b = append(b, `{"ph": "`...)
		b = append(b, ph)
		b = append(b, `", "cat": "cpu_op", "pid": 4242, "tid": `...)
		b = strconv.AppendInt(b, int64(1000+th), 10)
	}
	for th := 0; th < threads; th++ {
		sep()
		b = append(b, `{"ph": "M", "name": "thread_name", "pid": 4242, "tid": `...)
		b = strconv.AppendInt(b, int64(1000+th), 10)
		b = append(b, `, "args": {"name": "thread `...)
		b = strconv.AppendInt(b, int64(th), 10)
		b = append(b, `"}}`...)
		clock[th] = base + rng.Int63n(1_000_000)
	}
	closeTop := func(th int) {
		st := stacks[th]
		f := st[len(st)-1]
		stacks[th] = st[:len(st)-1]
		clock[th] += 1 + rng.Int63n(3000)
		if f.b {
			head('E', th)
			ts(`, "ts": `, clock[th])
			b = append(b, '}')
		} else {
			head('X', th)
			b = append(b, `, "name": "`...)
			b = append(b, names[f.name]...)
			b = append(b, '"')
			ts(`, "ts": `, f.start)
			ts(`, "dur": `, clock[th]-f.start)
			b = append(b, `, "args": {"External id": `...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, `, "Record function id": 0, "Sequence number": 47, "Ev Idx": `...)
			b = strconv.AppendInt(b, int64(n%1000), 10)
			if f.name < 6 {
				b = append(b, `, "Input Dims": [[64, 1024], [1024, 1024]], "Input type": ["c10::Half", "c10::Half"], "Concrete Inputs": ["", ""]`...)
			}
			b = append(b, "}}"...)
		}
		n++
	}
	for n < events {
		th := rng.Intn(threads)
		depth := len(stacks[th])
		if depth == 0 || (depth < 12 && rng.Intn(2) == 0) {
			clock[th] += rng.Int63n(2000)
			f := frame{start: clock[th], name: rng.Intn(len(names)), b: rng.Intn(8) == 0}
			stacks[th] = append(stacks[th], f)
			if f.b {
				head('B', th)
				b = append(b, `, "name": "`...)
				b = append(b, names[f.name]...)
				b = append(b, '"')
				ts(`, "ts": `, f.start)
				b = append(b, '}')
				n++
			}
		} else {
			closeTop(th)
		}
		if len(b) > 1<<15 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	for th := range stacks {
		for len(stacks[th]) > 0 {
			closeTop(th)
		}
	}
	b = append(b, "\n]}\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteStepTrace writes the shape of the runtime's 1 GiB benchmark trace, about size
// bytes: on each of 64 threads, a B/E step holding complete events written as Chrome
// writes them, children before their parents, with Kineto-style arguments.
func WriteStepTrace(w io.Writer, size int64) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("[\n")
	total := int64(2)
	ts := int64(1_700_000_000_000_000)
	var b []byte
	for step := 0; total < size-400; step++ {
		tid := step % 64
		b = append(b[:0], `{"ph":"B","name":"ProfilerStep#`...)
		b = strconv.AppendInt(b, int64(step), 10)
		b = append(b, `","pid":1,"tid":`...)
		b = strconv.AppendInt(b, int64(tid), 10)
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, ts, 10)
		b = append(b, ".000},\n"...)
		for c := 0; c < 8 && total+int64(len(b)) < size-400; c++ {
			start := ts + int64(c)*10 + 1
			for _, x := range []struct {
				name, ts, dur, extra string
				at                   int64
			}{{"aten::empty", ".250", "2.5", "", start + 1}, {"aten::linear", ".125", "8.5", `,"Input Dims":[[8,16],[32,16]]`, start}} {
				b = append(b, `{"ph":"X","cat":"cpu_op","name":"`+x.name+`","pid":1,"tid":`...)
				b = strconv.AppendInt(b, int64(tid), 10)
				b = append(b, `,"ts":`...)
				b = strconv.AppendInt(b, x.at, 10)
				b = append(b, x.ts+`,"dur":`+x.dur+`,"args":{"External id":`...)
				b = strconv.AppendInt(b, int64(step*8+c), 10)
				b = append(b, x.extra+"}},\n"...)
			}
		}
		b = append(b, `{"ph":"E","pid":1,"tid":`...)
		b = strconv.AppendInt(b, int64(tid), 10)
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, ts+100, 10)
		b = append(b, "},\n"...)
		total += int64(len(b))
		bw.Write(b)
		ts += 7
	}
	bw.WriteString(`{"ph":"M","name":"thread_name","pid":1,"tid":0,"args":{"name":"main"}}]` + "\n")
	return bw.Flush()
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

// Truth is what truthScript computes of a trace.
type Truth struct {
	Stats    tracemodel.Stats
	Phases   map[string]int64
	XPosDur  int64 `json:"x_pos_dur"`
	Names    int64
	Slices   [][3]int64
	Nest     map[string][2]int64
	HaveNest bool `json:"-"`
}

// PythonTruth runs truthScript on the trace at path, with parents and depths for files of
// at most maxNest slices (the test is skipped, or fails where tools are required,
// without python3).
func PythonTruth(t testing.TB, path string, maxNest int) *Truth {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", truthScript, path, itoa(maxNest)).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("python3: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var tr Truth
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

// WriteKinetoTrace writes a synthetic torch.profiler (Kineto) trace of about size bytes,
// indented as torch writes it (an event's members on a few lines, "args" on lines of
// their own): steps, each a ProfilerStep user annotation over CPU operators (nested X
// events with Kineto's args: External id, Input Dims, Input type, Input Strides, Concrete
// Inputs, Ev Idx), [memory] instant events, cudaLaunchKernel runtime calls and their GPU
// kernels on a stream (with the kernel's occupancy args), the s/f flow events linking
// them, and now and then a B/E pair; then the M events of processes and threads and
// Kineto's closing span and instants (string pid and tid). It is deterministic for a
// seed.
func WriteKinetoTrace(w io.Writer, size int64, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	bw := bufio.NewWriterSize(w, 1<<16)
	const (
		pid, mainTID, bwdTID, gpuPID, stream = 486, 486, 511, 0, 7
		base                                 = int64(5202328581227184) // ns
	)
	b := []byte(`
  {
    "schemaVersion": 1,
    "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }
    ],
      "trace_id": "AD87A30749194A20B4143A571E9C1305",
      "record_shapes": 1,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1790857026000000000,
  "traceEvents": [`)
	total := int64(0)
	first := true
	ts := func(ns int64) {
		b = strconv.AppendInt(b, ns/1000, 10)
		f := ns % 1000
		b = append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	}
	open := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, "\n  {\n    "...)
	}
	// complete opens an X event and writes its members up to its args' "{".
	complete := func(cat, name string, p, t int64, start, dur int64) {
		open()
		b = append(b, `"ph": "X", "cat": "`...)
		b = append(b, cat...)
		b = append(b, `", "name": "`...)
		b = append(b, name...)
		b = append(b, `", "pid": `...)
		b = strconv.AppendInt(b, p, 10)
		b = append(b, `, "tid": `...)
		b = strconv.AppendInt(b, t, 10)
		b = append(b, ",\n    \"ts\": "...)
		ts(start)
		b = append(b, `, "dur": `...)
		ts(dur)
		b = append(b, ",\n    \"args\": {\n      "...)
	}
	closeArgs := func() { b = append(b, "\n    }\n  }"...) }
	flow := func(ph, cat string, id, p, t, at int64, bind bool) {
		open()
		b = append(b, `"ph": "`...)
		b = append(b, ph...)
		b = append(b, `", "id": `...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `, "pid": `...)
		b = strconv.AppendInt(b, p, 10)
		b = append(b, `, "tid": `...)
		b = strconv.AppendInt(b, t, 10)
		b = append(b, `, "ts": `...)
		ts(at)
		b = append(b, ",\n    \"cat\": \""...)
		b = append(b, cat...)
		b = append(b, `", "name": "`...)
		b = append(b, cat...)
		b = append(b, '"')
		if bind {
			b = append(b, `, "bp": "e"`...)
		}
		b = append(b, "\n  }"...)
	}
	type op struct {
		name, dims, types, strides, inputs string
		kernel                             string
	}
	ops := []op{
		{"aten::linear", `[[64, 1024], [1024, 1024], [1024]]`, `["c10::Half", "c10::Half", "c10::Half"]`, `[[1024, 1], [1024, 1], [1]]`, `["", "", ""]`, ""},
		{"aten::t", `[[1024, 1024]]`, `["c10::Half"]`, `[[1024, 1]]`, `[""]`, ""},
		{"aten::addmm", `[[1024], [64, 1024], [1024, 1024], [], []]`, `["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"]`, `[[1], [1024, 1], [1, 1024], [], []]`, `["", "", "", "1", "1"]`, "nvjet_sm90_hsh_48x64_64x15_4x1_v_bz_bias_TNN"},
		{"aten::gelu", `[[64, 1024]]`, `["c10::Half"]`, `[[1024, 1]]`, `["", "'none'"]`, "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#3}::operator()() const::{lambda(c10::Half)#1}, std::array<char*, 2ul>)"},
		{"aten::empty", `[[], [], [], [], [], []]`, `["ScalarList", "Scalar", "", "Device", "Scalar", ""]`, `[[], [], [], [], [], []]`, `["[64, 1024]", "5", "", "", "False", ""]`, ""},
		{"autograd::engine::evaluate_function: AddmmBackward0", `[]`, `[]`, `[]`, `[]`, ""},
		{"aten::mul_", `[[64, 1024], []]`, `["float", "Scalar"]`, `[[1024, 1], []]`, `["", "0.001"]`, "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)"},
	}
	ext, corr, evIdx, flowID := int64(1), int64(300), int64(0), int64(1)
	clock := base
	var gpuClock int64
	for step := int64(0); total < size-4096; step++ {
		stepStart := clock
		// The step's operators, written as the profiler writes them: in start order, a
		// parent before its children; their kernels after them.
		type kernel struct {
			name         string
			launch, corr int64
		}
		var kernels []kernel
		var body []byte
		stepTID := int64(mainTID)
		if step%2 == 1 {
			stepTID = bwdTID
		}
		hold := b
		b = body
		// The body follows the step's annotation, written before it below.
		firstHold := first
		first = false
		begun := step%16 == 0
		if begun {
			open()
			b = append(b, `"ph": "B", "cat": "user_annotation", "name": "optimizer.step", "pid": 486, "tid": `...)
			b = strconv.AppendInt(b, stepTID, 10)
			b = append(b, ",\n    \"ts\": "...)
			ts(clock)
			b = append(b, "\n  }"...)
		}
		for k := 0; k < 24; k++ {
			parent := ops[rng.Intn(len(ops))]
			pStart := clock + 1000 + rng.Int63n(4000)
			var children []op
			for c := rng.Intn(4); c > 0; c-- {
				children = append(children, ops[rng.Intn(len(ops))])
			}
			type timed struct {
				op         op
				start, dur int64
			}
			var evs []timed
			at := pStart + 500
			for _, c := range children {
				d := 2000 + rng.Int63n(30000)
				evs = append(evs, timed{c, at, d})
				at += d + 100 + rng.Int63n(900)
			}
			pDur := at - pStart + rng.Int63n(2000)
			evs = append([]timed{{parent, pStart, pDur}}, evs...)
			for i, e := range evs {
				complete("cpu_op", e.op.name, pid, stepTID, e.start, e.dur)
				b = append(b, `"External id": `...)
				b = strconv.AppendInt(b, ext, 10)
				b = append(b, `,"Record function id": 0, "Sequence number": `...)
				b = strconv.AppendInt(b, step*24+int64(k), 10)
				b = append(b, `, "Fwd thread id": 1, "Concrete Inputs": `...)
				b = append(b, e.op.inputs...)
				b = append(b, `, "Input type": `...)
				b = append(b, e.op.types...)
				b = append(b, `, "Input Strides": `...)
				b = append(b, e.op.strides...)
				b = append(b, `, "Input Dims": `...)
				b = append(b, e.op.dims...)
				b = append(b, `, "Ev Idx": `...)
				b = strconv.AppendInt(b, evIdx, 10)
				closeArgs()
				ext++
				evIdx++
				if e.op.name == "aten::empty" {
					open()
					b = append(b, `"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",`+"\n    \"pid\": 486, \"tid\": "...)
					b = strconv.AppendInt(b, stepTID, 10)
					b = append(b, ",\n    \"ts\": "...)
					ts(e.start + 300)
					b = append(b, ",\n    \"args\": {\n      \"Total Reserved\": 125829120, \"Total Allocated\": "...)
					b = strconv.AppendInt(b, 86780928+rng.Int63n(1<<20), 10)
					b = append(b, `, "Bytes": 262144, "Device Id": 0, "Device Type": 1, "Addr": `...)
					b = strconv.AppendInt(b, 140270642135040+rng.Int63n(1<<30), 10)
					b = append(b, `, "finished": false, "Ev Idx": `...)
					b = strconv.AppendInt(b, evIdx, 10)
					closeArgs()
					evIdx++
				}
				if e.op.kernel != "" && (i > 0 || len(evs) == 1) {
					// A kernel is launched by an operator without children, within it.
					launch := e.start + e.dur/4
					complete("cuda_runtime", "cudaLaunchKernel", pid, stepTID, launch, e.dur/2)
					b = append(b, `"External id": `...)
					b = strconv.AppendInt(b, ext-1, 10)
					b = append(b, `,      "cbid": 211, "correlation": `...)
					b = strconv.AppendInt(b, corr, 10)
					closeArgs()
					flow("s", "ac2g", corr, pid, stepTID, launch, false)
					kernels = append(kernels, kernel{e.op.kernel, launch, corr})
					corr++
				}
			}
			if k%6 == 5 {
				flow("s", "fwdbwd", flowID, pid, stepTID, pStart, false)
				flowID++
			}
			clock = pStart + pDur
		}
		if begun {
			open()
			b = append(b, `"ph": "E", "pid": 486, "tid": `...)
			b = strconv.AppendInt(b, stepTID, 10)
			b = append(b, ",\n    \"ts\": "...)
			ts(clock + 100)
			b = append(b, "\n  }"...)
		}
		body, b, first = b, hold, firstHold
		complete("user_annotation", "ProfilerStep#"+strconv.FormatInt(step, 10), pid, stepTID, stepStart, clock+200-stepStart)
		b = append(b, `"External id": `...)
		b = strconv.AppendInt(b, ext, 10)
		b = append(b, `,"Record function id": 0, "Ev Idx": `...)
		b = strconv.AppendInt(b, evIdx, 10)
		closeArgs()
		ext++
		evIdx++
		b = append(b, body...)
		for _, k := range kernels {
			start := max(gpuClock, k.launch+5000+rng.Int63n(3000))
			dur := 1500 + rng.Int63n(8000)
			gpuClock = start + dur
			complete("kernel", k.name, gpuPID, stream, start, dur)
			b = append(b, `"External id": `...)
			b = strconv.AppendInt(b, k.corr-299, 10)
			b = append(b, `,      "queued": 0, "device": 0, "context": 1,      "stream": 7, "correlation": `...)
			b = strconv.AppendInt(b, k.corr, 10)
			b = append(b, `,      "registers per thread": 168,      "shared memory": 231868,      "blocks per SM": 0.666667,      "warps per SM": 8.000000,      "grid": [4, 22, 1],      "block": [384, 1, 1],      "est. achieved occupancy %": 0`...)
			closeArgs()
			flow("f", "ac2g", k.corr, gpuPID, stream, start, true)
		}
		total += int64(len(b))
		if _, err := bw.Write(b); err != nil {
			return err
		}
		b = b[:0]
		clock += 2000
	}
	meta := func(name string, p, t int64, key, val string) {
		open()
		b = append(b, `"name": "`...)
		b = append(b, name...)
		b = append(b, `", "ph": "M", "ts": `...)
		ts(base)
		b = append(b, `, "pid": `...)
		b = strconv.AppendInt(b, p, 10)
		b = append(b, `, "tid": `...)
		b = strconv.AppendInt(b, t, 10)
		b = append(b, ",\n    \"args\": {\n      \""...)
		b = append(b, key...)
		b = append(b, `": `...)
		b = append(b, val...)
		closeArgs()
	}
	for _, p := range []int64{gpuPID, pid} {
		meta("process_name", p, 0, "name", `"python3"`)
		meta("process_labels", p, 0, "labels", `"GPU `+strconv.FormatInt(p, 10)+`"`)
		meta("process_sort_index", p, 0, "sort_index", strconv.FormatInt(5000000+p, 10))
	}
	for _, t := range [][2]int64{{gpuPID, stream}, {pid, bwdTID}, {pid, mainTID}} {
		meta("thread_name", t[0], t[1], "name", `"thread `+strconv.FormatInt(t[1], 10)+` (python3)"`)
		meta("thread_sort_index", t[0], t[1], "sort_index", strconv.FormatInt(t[1], 10))
	}
	open()
	b = append(b, `"ph": "X", "cat": "Trace", "ts": `...)
	ts(base)
	b = append(b, `, "dur": `...)
	ts(clock - base)
	b = append(b, ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0"...)
	closeArgs()
	open()
	b = append(b, "\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": "...)
	ts(base)
	b = append(b, "\n  }\n  ],\n  \"traceName\": \"torch_trace.json\"\n}\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}
