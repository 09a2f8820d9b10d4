package trace

import (
	"bufio"
	"io"
	"math/rand"
	"os"
	"strconv"
)

// WriteChromeTrace writes a synthetic torch.profiler-like Chrome trace of about events
// events over threads threads (object form with schemaVersion and deviceProperties):
// per thread a random call tree of complete X events, written when they end as Chrome
// does (children before parents), and B/E pairs, with Kineto-style args and epoch µs
// timestamps with three decimals (above 2^53 ns). It is deterministic for a seed.
func WriteChromeTrace(w io.Writer, events int, threads int, seed int64) error {
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

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

// writeStepTrace writes the shape of the runtime's 1 GiB benchmark trace, about size
// bytes: on each of 64 threads, a B/E step holding complete events written as Chrome
// writes them, children before their parents, with Kineto-style arguments.
func writeStepTrace(w io.Writer, size int64) error {
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
