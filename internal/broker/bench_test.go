package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
