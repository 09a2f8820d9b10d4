// Package testtool helps tests that run real tools (python3, perf, node, go): it finds
// them, and in CI, where .ci/run installs them, a missing tool fails the test instead of
// skipping it.
package testtool

import (
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Require returns the path of the named executable, skipping the test when it is missing
// outside CI and failing it in CI.
func Require(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI (.ci/run installs it): %v", name, err)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
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
// the repository (../shared/corpus), failing the test when it is missing.
func Corpus(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := goruntime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "corpus", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("corpus file missing: %v", err)
	}
	return p
}

// PeakHeap runs f while sampling the in-use heap every 2 ms, and returns the peak above
// the heap in use before it started, in bytes.
func PeakHeap(f func()) uint64 {
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
	return peak.Load() - min(peak.Load(), base.HeapInuse)
}
