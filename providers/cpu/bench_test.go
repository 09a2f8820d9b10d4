package cpu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
)

// The ranking benchmarks measure Flameox and the reference tool on the same file in the
// same run (testtool.Compared). Inputs are generated once into testtool.BenchDir.

// childEnv names the input a re-executed test binary ranks.
const childEnv = "FLAMEOX_CPU_BENCH_CHILD"

func TestMain(m *testing.M) {
	testtool.RunChild(childEnv, func(spec string) error {
		format, path, _ := strings.Cut(spec, ":")
		return rankFirstPage(gen.Format(format), path)
	})
	os.Exit(m.Run())
}

// rankFirstPage runs rank_cpu_hotspots on path and encodes its first page of 100 rows,
// which is all the runtime encodes of a default call.
func rankFirstPage(format gen.Format, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	req := &providers.Request[gen.CpuHotspotFields]{Fields: &gen.CpuHotspotFields{},
		Inputs: []providers.Input{{Path: path, Format: format, Size: st.Size()}},
		Limits: gen.EffectiveLimits{MaxInputBytes: 1 << 30}}
	a, err := rankHotspots(context.Background(), req)
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

// benchRank compares ranking path with reference.
func benchRank(b *testing.B, format gen.Format, path string, reference *exec.Cmd, name string) {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	testtool.Compared{Run: func() error { return rankFirstPage(format, path) }, ChildEnv: childEnv,
		ChildSpec: string(format) + ":" + path, Reference: reference, Name: name}.Bench(b)
	b.ReportMetric(float64(st.Size())/1e6, "input-MB")
}

// pythonRank is Python's pstats doing the same work: load, sort, the top 100 rows.
const pythonRank = `
import pstats, sys
s = pstats.Stats(sys.argv[1])
s.sort_stats(sys.argv[2])
top = [(f, s.stats[f][:4]) for f in s.fcn_list[:100]]
assert len(top) == 100
`

// BenchmarkRankPstats ranks real cProfile output of 5,000, 50,000 and 200,000 functions
// by self time (first page of 100 rows) beside Python's pstats.Stats(f).sort_stats(
// 'tottime') and its top 100 on the same file.
func BenchmarkRankPstats(b *testing.B) {
	python := testtool.Require(b, "python3")
	for _, n := range []int{5000, 50000, 200000} {
		b.Run(fmt.Sprintf("functions=%d", n), func(b *testing.B) {
			p := testtool.CProfileFile(b, n)
			benchRank(b, gen.FormatPstats, p, exec.Command(python, "-c", pythonRank, p, "tottime"), "python")
		})
	}
}

// pprofFunctions and pprofSamples size the generated pprof profile: 50,000 functions and
// 420,000 samples make about 10 MB of gzip-compressed protobuf.
const (
	pprofFunctions = 50000
	pprofSamples   = 420000
)

// BenchmarkRankPprof ranks a 10 MB profile of 50,000 functions (first page of 100 rows)
// beside `go tool pprof -top -nodecount=100` on the same file.
func BenchmarkRankPprof(b *testing.B) {
	gobin := testtool.Require(b, "go")
	p := sampledtest.PprofFile(b, pprofFunctions, pprofSamples)
	// Build the pprof tool outside the measurement and run its binary itself, so that its
	// own memory is what is measured.
	tool, err := exec.Command(gobin, "tool", "-n", "pprof").Output()
	if err != nil {
		b.Fatal(err)
	}
	benchRank(b, gen.FormatPprof, p, exec.Command(strings.TrimSpace(string(tool)), "-top", "-nodecount=100", p), "pprof")
}
