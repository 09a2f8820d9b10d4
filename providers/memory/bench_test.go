package memory

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// heapProfileFile writes (once, under testtool.BenchDir) a V8 sampling heap profile of
// about mb MB in the current shape: a call tree of 2,000 distinct functions over 40 scripts
// with fan-out 4 and depth up to 24, and one sample record per 4 nodes.
func heapProfileFile(b *testing.B, mb int) string {
	b.Helper()
	p := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-bench-%dmb.heapprofile", mb))
	if st, err := os.Stat(p); err == nil && st.Size() > int64(mb)<<20*9/10 {
		return p
	}
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewSource(1))
	id := 0
	var size int64
	var node func(depth int)
	node = func(depth int) {
		id++
		fn := rng.Intn(2000)
		n, _ := fmt.Fprintf(w, `{"callFrame":{"functionName":"fn_%d","scriptId":"%d","url":"file:///app/src/module_%d.js","lineNumber":%d,"columnNumber":%d},"selfSize":%d,"id":%d,"children":[`,
			fn, 100+fn%40, fn%40, fn*3, fn%80, rng.Intn(1<<16), id)
		size += int64(n)
		if depth < 24 && size < int64(mb)<<20*8/10 {
			for c := 0; c < 1+rng.Intn(4); c++ {
				if c > 0 {
					w.WriteByte(',')
				}
				node(depth + 1)
			}
		}
		w.WriteString("]}")
	}
	w.WriteString(`{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":1,"children":[`)
	id = 1
	for i := 0; size < int64(mb)<<20*8/10; i++ {
		if i > 0 {
			w.WriteByte(',')
		}
		node(1)
	}
	w.WriteString(`]},"samples":[`)
	for s := 0; s < id/4; s++ {
		if s > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `{"size":%d,"nodeId":%d,"ordinal":%d}`, rng.Intn(1<<16), 2+rng.Intn(id-1), s)
	}
	w.WriteString("]}")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return p
}

// BenchmarkDecodeHeapProfile100MB decodes a generated ~100 MB heapprofile and ranks it;
// it reports MB/s and the peak heap above the starting heap (no timing is asserted).
func BenchmarkDecodeHeapProfile100MB(b *testing.B) {
	p := heapProfileFile(b, 100)
	st, _ := os.Stat(p)
	b.SetBytes(st.Size())
	b.ResetTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		peak = max(peak, testtool.PeakHeap(func() {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			hp, err := DecodeHeapProfile(f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			_ = hp.Order()
		}))
	}
	b.ReportMetric(testtool.MiB(peak), "peak-MiB")
}
