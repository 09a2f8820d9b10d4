// Package testtool helps tests that run real tools (python3, perf, node, go): it finds
// them, and in CI, where .ci/run installs them, a missing tool fails the test instead of
// skipping it.
package testtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Require returns the path of the named executable, skipping the test when it is missing
// outside CI and failing it in CI. Under -short it skips every test that runs a real tool
// but the shell or true (Short): a maintainer's inner loop leaves the tools' runs, the
// independent truths and the captures, to the full suite, which CI runs.
func Require(t testing.TB, name string) string {
	t.Helper()
	if name != "sh" && name != "true" {
		Short(t, "runs "+name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI (.ci/run installs it): %v", name, err)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

// Short skips the test under -short, saying what it does that the inner loop leaves to
// the full suite: it runs a real tool, reads large inputs or drives a browser.
func Short(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: the full suite's (go test without -short)", what)
	}
}

// RequirePerfRecord returns perf's path after checking that perf record may sample here
// (perf_event_paranoid and container policies can forbid it); it skips otherwise, since
// no package installation can grant that.
func RequirePerfRecord(t testing.TB) string {
	t.Helper()
	perf := Require(t, "perf")
	out := t.TempDir() + "/probe.data"
	if b, err := exec.Command(perf, "record", "-o", out, "--", "true").CombinedOutput(); err != nil {
		t.Skipf("perf record is not permitted here: %v\n%s", err, b)
	}
	return perf
}

// Hog allocates and touches 512 MiB, then sleeps a minute: a workload that a memory
// budget must stop. Test binaries call it from TestMain when re-executed as a helper.
func Hog() {
	var keep [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 8<<20)
		for j := range b {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	time.Sleep(time.Minute)
	_ = keep
}

// BenchDir is where benchmarks keep generated inputs between runs: $FLAMEOX_BENCH_DIR, or
// the temporary directory.
func BenchDir() string {
	if d := os.Getenv("FLAMEOX_BENCH_DIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// Corpus returns the path of a file of the shared corpus of third-party artifacts beside
// the repository (../shared/corpus). Without the corpus (a user's clone has none) the
// test is skipped; a file missing from a corpus that is there fails it.
func Corpus(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(CorpusDirOrSkip(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("corpus file missing: %v", err)
	}
	return p
}

// CorpusDirOrSkip returns the shared corpus's directory, skipping the test when there is
// none.
func CorpusDirOrSkip(t testing.TB) string {
	t.Helper()
	dir := CorpusDir()
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no corpus beside the repository (../shared/corpus): skipped")
	}
	return dir
}

// CorpusDir is the shared corpus's directory beside the repository (../shared/corpus),
// whether or not it exists.
func CorpusDir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "corpus")
}

// PeakHeap runs f while sampling the in-use heap every 2 ms, and returns the peak above
// the heap in use before it started, in bytes.
func PeakHeap(f func()) uint64 {
	goruntime.GC()
	base := heapInuse()
	peak := sampleMax(heapInuse, f)
	return peak - min(peak, base)
}

// PeakHeapInuse runs f after a collection while sampling the in-use heap every 2 ms, and
// returns the largest sample, in bytes.
func PeakHeapInuse(f func()) uint64 {
	goruntime.GC()
	return sampleMax(heapInuse, f)
}

// heapSamples are the runtime/metrics whose sum is MemStats.HeapInuse. They are read
// without stopping the world, which runtime.ReadMemStats does: sampling it every 2 ms
// preempted the measured goroutines hundreds of times a second and slowed them.
var heapSamples = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}

// heapInuse is the bytes in in-use heap spans (MemStats.HeapInuse).
func heapInuse() uint64 {
	s := make([]metrics.Sample, len(heapSamples))
	for i, n := range heapSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		n += v.Value.Uint64()
	}
	return n
}

// sampleMax runs f while calling sample every 2 ms, and returns the largest sample.
func sampleMax(sample func() uint64, f func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak.Store(max(peak.Load(), sample()))
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

// Measured is what one run of an external command cost: its wall time, the peak resident
// set size of its process (VmHWM, sampled every 2 ms while it runs), and its combined
// output.
type Measured struct {
	Wall    time.Duration
	PeakRSS uint64
	Output  []byte
}

// Run runs cmd to completion and measures it. The peak is read from /proc rather than
// from getrusage: a Go parent starts children with CLONE_VM|CLONE_VFORK, so a child's
// ru_maxrss starts at the parent's own peak. Only the process itself is measured, not
// processes it starts.
func Run(cmd *exec.Cmd) (Measured, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Measured{}, err
	}
	pid := cmd.Process.Pid
	var err error
	var wall time.Duration
	peak := sampleMax(func() uint64 { return statusKB(pid, "VmHWM:") << 10 }, func() {
		err = cmd.Wait()
		wall = time.Since(start)
	})
	return Measured{Wall: wall, PeakRSS: peak, Output: out.Bytes()}, err
}

// ReportLoad reports the one-minute load average of the machine as the benchmark's
// load-avg metric, so figures taken beside other work say so.
func ReportLoad(b *testing.B) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	var load float64
	if _, err := fmt.Sscan(string(raw), &load); err == nil {
		b.ReportMetric(load, "load-avg")
	}
}

// MiB converts a byte count to mebibytes for ReportMetric.
func MiB(n uint64) float64 { return float64(n) / (1 << 20) }

// Compared is a benchmark of Flameox beside a reference tool doing the same work on the
// same input. Run is Flameox's work, timed in process (b.N calls), then run once more
// while the Go heap is sampled (sampling stops the world every 2 ms, so it is kept out of
// the timing), and once in a child process for its peak RSS: the test binary is
// re-executed with ChildEnv set to ChildSpec, and the package's TestMain must hand that
// to RunChild. Reference runs once as a subprocess (wall time and peak RSS) and is
// reported under Name.
type Compared struct {
	Run       func() error
	ChildEnv  string
	ChildSpec string
	Reference *exec.Cmd
	Name      string
}

// Bench runs the comparison and reports ns/op and peak-heap-MB (in process),
// process-s and peak-rss-MB (the child process), NAME-s and NAME-peak-rss-MB (the
// reference), x-faster (the reference's wall time over the in-process time per call)
// and load-avg.
func (c Compared) Bench(b *testing.B) {
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	ours := b.Elapsed().Seconds() / float64(b.N)
	var err error
	peak := PeakHeap(func() { err = c.Run() })
	if err != nil {
		b.Fatal(err)
	}
	ReportLoad(b)
	b.ReportMetric(MiB(peak), "peak-heap-MB")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), c.ChildEnv+"="+c.ChildSpec)
	m, err := Run(child)
	if err != nil {
		b.Fatalf("child: %v\n%s", err, m.Output)
	}
	b.ReportMetric(MiB(m.PeakRSS), "peak-rss-MB")
	b.ReportMetric(m.Wall.Seconds(), "process-s")
	ref, err := Run(c.Reference)
	if err != nil {
		b.Fatalf("%s: %v\n%s", c.Name, err, ref.Output)
	}
	b.ReportMetric(ref.Wall.Seconds(), c.Name+"-s")
	b.ReportMetric(MiB(ref.PeakRSS), c.Name+"-peak-rss-MB")
	b.ReportMetric(ref.Wall.Seconds()/ours, "x-faster")
}

// RunChild is for TestMain: when env is set, the binary is a Compared child; it runs
// run with the variable's value and exits.
func RunChild(env string, run func(spec string) error) {
	spec := os.Getenv(env)
	if spec == "" {
		return
	}
	if err := run(spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Repeated is head, then elem n times comma-separated, then tail: a JSON document of
// millions of tiny values, for the decoders' shape bombs.
func Repeated(head, elem string, n int, tail string) []byte {
	b := make([]byte, 0, len(head)+n*(len(elem)+1)+len(tail))
	b = append(b, head...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, elem...)
	}
	return append(b, tail...)
}

// JSONValue round-trips v through encoding/json into generic values, so that documents
// compare by value whatever Go type produced them.
func JSONValue(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
