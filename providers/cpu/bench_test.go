package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/flameox/flameox/internal/testtool"
)

// makePstats writes (once) a pstats file of n functions, each with up to three callers,
// through Python's own marshal, so the file is exactly what CPython writes.
func makePstats(b *testing.B, n int) string {
	p := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-bench-%d.pstats", n))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 is not installed")
	}
	script := fmt.Sprintf(`
import marshal, random
random.seed(7)
n = %d
keys = [("/src/pkg/module%%d.py" %% (i %% 500), i, "function_%%d" %% i) for i in range(n)]
stats = {}
for i, k in enumerate(keys):
    callers = {}
    for c in random.sample(range(n), 3):
        callers[keys[c]] = (random.randint(1, 50), random.randint(1, 50), random.random() / 100, random.random() / 10)
    stats[k] = (random.randint(1, 1000), random.randint(1, 2000), random.random(), random.random() * 10, callers)
with open(%q, "wb") as f:
    marshal.dump(stats, f)
`, n, p)
	if out, err := exec.Command(python, "-c", script).CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	return p
}

// peakHeap runs f while sampling the heap every 2 ms and reports the peak in MB.
func peakHeap(b *testing.B, f func()) {
	goruntime.GC()
	var base goruntime.MemStats
	goruntime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms goruntime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
				goruntime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), base.HeapInuse))/(1<<20), "peak-heap-MB")
}

// BenchmarkPstats50k decodes a 50,000-function pstats file and ranks it by self time;
// BenchmarkPythonPstats50k has Python's pstats load and sort the same file.
func BenchmarkPstats50k(b *testing.B) {
	p := makePstats(b, 50000)
	b.ResetTimer()
	peakHeap(b, func() {
		for i := 0; i < b.N; i++ {
			f, _ := os.Open(p)
			fs, err := DecodePstats(f)
			f.Close()
			if err != nil || len(fs) != 50000 {
				b.Fatal(err, len(fs))
			}
			sortPstats(fs)
		}
	})
}

func sortPstats(fs []PstatsFunction) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.SelfSeconds != b.SelfSeconds {
			return a.SelfSeconds > b.SelfSeconds
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}

func BenchmarkPythonPstats50k(b *testing.B) {
	p := makePstats(b, 50000)
	python, _ := exec.LookPath("python3")
	b.ResetTimer()
	var rss int64
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(python, "-c", "import pstats, sys; s = pstats.Stats(sys.argv[1]); s.sort_stats('tottime'); s.fcn_list", p)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		rss = max(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
}

// makePprof writes (once) a synthetic CPU profile: 200,000 samples over 20,000
// functions, stacks 4-35 deep, gzip-compressed.
func makePprof(b *testing.B) string {
	p := filepath.Join(testtool.BenchDir(), "flameox-bench-large.pprof.gz")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	r := rand.New(rand.NewPCG(1, 2))
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	var locs []*profile.Location
	for i := 0; i < 20000; i++ {
		fn := &profile.Function{ID: uint64(i + 1), Name: fmt.Sprintf("pkg%d.function%d", i%200, i), Filename: fmt.Sprintf("/src/pkg%d/file.go", i%200), StartLine: int64(i % 1000)}
		prof.Function = append(prof.Function, fn)
		loc := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + i*16), Line: []profile.Line{{Function: fn, Line: int64(i%1000 + 3)}}}
		prof.Location = append(prof.Location, loc)
		locs = append(locs, loc)
	}
	for i := 0; i < 200000; i++ {
		depth := 4 + r.IntN(32)
		s := &profile.Sample{Value: []int64{1, 10_000_000}}
		for d := 0; d < depth; d++ {
			s.Location = append(s.Location, locs[r.IntN(len(locs))])
		}
		prof.Sample = append(prof.Sample, s)
	}
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := prof.Write(f); err != nil { // Write gzips
		b.Fatal(err)
	}
	f.Close()
	return p
}

// BenchmarkPprofRank decodes the large profile and ranks its functions;
// BenchmarkGoToolPprofTop runs `go tool pprof -top -nodecount=20` on the same file.
func BenchmarkPprofRank(b *testing.B) {
	p := makePprof(b)
	b.ResetTimer()
	peakHeap(b, func() {
		for i := 0; i < b.N; i++ {
			f, _ := os.Open(p)
			s, _, err := DecodePprof(f, Options{})
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			if len(s.Hotspots()) == 0 {
				b.Fatal("no rows")
			}
		}
	})
}

func BenchmarkGoToolPprofTop(b *testing.B) {
	p := makePprof(b)
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go is not installed")
	}
	// Build and cache the pprof tool outside the measurement.
	exec.Command(gobin, "tool", "pprof", "-top", "-nodecount=1", p).Run()
	b.ResetTimer()
	var rss int64
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(gobin, "tool", "pprof", "-top", "-nodecount=20", p)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		rss = max(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
}
