package cpu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// cprofileProgram generates a Python program of n functions in modules of 500: each
// function, called with a true argument, loops a little and returns; called with a false
// one (once, from main), it calls three functions chosen at random with a true argument.
// Every function thus has about four callers.
const cprofileProgram = `
import os, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
per = 500
mods = (n + per - 1) // per
random.seed(13)
for m in range(mods):
    lines = ["import sys", "M = sys.modules"]
    lo, hi = m * per, min(n, (m + 1) * per)
    for i in range(lo, hi):
        lines += ["def function_%d(x):" % i, "    if x:", "        s = 0",
                  "        for k in range(%d):" % (i * 7 % 40), "            s += k", "        return s"]
        for t in random.sample(range(n), 3):
            lines.append("    M['mod%d'].function_%d(1)" % (t // per, t))
    lines.append("ALL = [%s]" % ", ".join("function_%d" % i for i in range(lo, hi)))
    open(os.path.join(out, "mod%d.py" % m), "w").write("\n".join(lines) + "\n")
main = ["import sys"] + ["import mod%d" % m for m in range(mods)]
main += ["def main():", "    for m in [%s]:" % ", ".join("mod%d" % m for m in range(mods)),
         "        for f in m.ALL:", "            f(0)", "main()"]
open(os.path.join(out, "main.py"), "w").write("\n".join(main) + "\n")
`

// cprofileFile writes (once) the output of python3 -m cProfile running the generated
// program of n functions: real cProfile output, about 210 bytes and four caller edges per
// function.
func cprofileFile(tb testing.TB, n int) string {
	p := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-bench-cprofile-%d.pstats", n))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	python := testtool.Require(tb, "python3")
	dir, err := os.MkdirTemp("", "flameox-cprofile-program")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if out, err := exec.Command(python, "-c", cprofileProgram, fmt.Sprint(n), dir).CombinedOutput(); err != nil {
		tb.Fatalf("%v\n%s", err, out)
	}
	tmp := p + ".tmp"
	if out, err := exec.Command(python, "-m", "cProfile", "-o", tmp, filepath.Join(dir, "main.py")).CombinedOutput(); err != nil {
		tb.Fatalf("%v\n%s", err, out)
	}
	if err := os.Rename(tmp, p); err != nil {
		tb.Fatal(err)
	}
	return p
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
			p := cprofileFile(b, n)
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
