package memory

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
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
			_ = hp.Order(false)
		}))
	}
	b.ReportMetric(testtool.MiB(peak), "peak-MiB")
}

// heapPprofFile writes (once) heapPprof's profile, gzip-compressed as runtime/pprof
// writes it.
func heapPprofFile(tb testing.TB, functions, samples int) string {
	return sampledtest.WriteOnce(tb, fmt.Sprintf("flameox-bench-heap-%d-%d.pprof.gz", functions, samples), func() *profile.Profile {
		return heapPprof(functions, samples)
	})
}

// heapPprof is a synthetic Go heap profile of the given numbers of functions and
// samples: the four sample types of a heap profile (alloc_objects, alloc_space,
// inuse_objects, inuse_space), one location per function in a call tree of 24 levels,
// and a sample per random path from the root with a size class's objects and bytes.
func heapPprof(functions, samples int) *profile.Profile {
	r := rand.New(rand.NewSource(3))
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"}, Period: 512 * 1024,
		DefaultSampleType: "inuse_space",
	}
	for i := 0; i < functions; i++ {
		fn := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("example.com/pkg%d.Alloc%d", i%200, i),
			Filename: fmt.Sprintf("/src/pkg%d/file%d.go", i%200, i%7), StartLine: int64(i % 1000)}
		prof.Function = append(prof.Function, fn)
		prof.Location = append(prof.Location, &profile.Location{ID: uint64(i + 1), Address: uint64(0x400000 + i*16),
			Line: []profile.Line{{Function: fn, Line: int64(i%1000 + 3)}}})
	}
	parent := make([]int, functions)
	parent[0] = -1
	for i := 1; i < functions; i++ {
		parent[i] = r.Intn(max(1, i*23/24)) // an earlier function: a tree about 24 levels deep
	}
	for i := 0; i < samples; i++ {
		size := int64(16 << r.Intn(12))
		objects := 1 + int64(r.Intn(64))
		kept := objects / int64(1+r.Intn(4))
		s := &profile.Sample{Value: []int64{objects, objects * size, kept, kept * size},
			NumLabel: map[string][]int64{"bytes": {size}}}
		for f := r.Intn(functions); f >= 0; f = parent[f] { // leaf first
			s.Location = append(s.Location, prof.Location[f])
		}
		prof.Sample = append(prof.Sample, s)
	}
	return prof
}

// rankRetainedFirstPage ranks path by inuse_space and encodes the first page of 100 rows.
func rankRetainedFirstPage(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	req := &providers.Request[gen.RetainedFields]{Fields: &gen.RetainedFields{},
		Inputs: []providers.Input{{Path: path, Format: gen.FormatPprof, Size: st.Size()}},
		Limits: gen.EffectiveLimits{MaxInputBytes: 1 << 30}}
	a, err := rankRetained(context.Background(), req)
	if err != nil {
		return err
	}
	page, err := a.Rows.Page(context.Background(), 0, 100, nil)
	if err != nil {
		return err
	}
	if len(page.Rows) != 100 {
		return fmt.Errorf("%d rows", len(page.Rows))
	}
	return nil
}

// childEnv names the heap profile a re-executed test binary ranks.
const childEnv = "FLAMEOX_MEMORY_BENCH_CHILD"

func TestMain(m *testing.M) {
	testtool.RunChild(childEnv, rankRetainedFirstPage)
	os.Exit(m.Run())
}

// BenchmarkRankGoHeapProfile ranks a synthetic Go heap profile of 50,000 functions and
// 200,000 samples by inuse_space (first page of 100 rows) beside
// `go tool pprof -sample_index=inuse_space -top -nodecount=100` on the same file.
func BenchmarkRankGoHeapProfile(b *testing.B) {
	gobin := testtool.Require(b, "go")
	p := heapPprofFile(b, 50_000, 200_000)
	tool, err := exec.Command(gobin, "tool", "-n", "pprof").Output()
	if err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(p)
	testtool.Compared{Run: func() error { return rankRetainedFirstPage(p) }, ChildEnv: childEnv, ChildSpec: p,
		Reference: exec.Command(strings.TrimSpace(string(tool)), "-sample_index=inuse_space", "-top", "-nodecount=100", p), Name: "pprof"}.Bench(b)
	b.ReportMetric(float64(st.Size())/1e6, "input-MB")
}
