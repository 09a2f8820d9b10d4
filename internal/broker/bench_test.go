package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkExecTrue is the baseline: os/exec running true with its output discarded.
func BenchmarkExecTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	for i := 0; i < b.N; i++ {
		if err := exec.Command(path).Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBrokerTrue runs true through the broker as a capture does: containment (the
// cgroup scope where one can be created, and the subreaper helper; subreaper_only without
// the scope; process_group alone, as on macOS), console files, output bound, tree
// sampling, writable baseline and final check of a small working directory, and tree
// termination.
func BenchmarkBrokerTrue(b *testing.B) {
	b.Run("default", benchBrokerTrue)
	b.Run("subreaper_only", func(b *testing.B) {
		withContainment(b, "subreaper")
		benchBrokerTrue(b)
	})
	b.Run("process_group", func(b *testing.B) {
		withContainment(b, "process_group")
		benchBrokerTrue(b)
	})
}

func benchBrokerTrue(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(dir, "out")
		errf := filepath.Join(dir, "err")
		res, err := Run(context.Background(), Spec{Path: path, Args: []string{"true"}, Dir: dir,
			StdoutFile: out, StderrFile: errf, MaxOutputBytes: 16 << 20,
			WritableRoots: []string{dir}, MaxWritableGrowth: 16 << 20, ReserveDir: dir, ReserveBytes: 64 << 20})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		os.Remove(out)
		os.Remove(errf)
	}
}

// BenchmarkWritableSize measures a working directory as a capture does before and after
// its workload (writableSize): a repository-like tree of 9,901 entries (the bound is 10,000), 100 directories
// of 98 files each, 4 kB a file.
func BenchmarkWritableSize(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, 4096)
	for d := range 100 {
		sub := filepath.Join(dir, "pkg"+strconv.Itoa(d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 98 {
			if err := os.WriteFile(filepath.Join(sub, "file"+strconv.Itoa(f)+".go"), buf, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		size, complete := writableSize([]string{dir})
		if size != 100*98*4096 || !complete {
			b.Fatalf("writableSize = %d, %v; want %d, complete", size, complete, 100*98*4096)
		}
	}
}
