package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

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

// CProfileFile writes (once) the output of python3 -m cProfile running the generated
// program of n functions: real cProfile output, about 210 bytes and four caller edges per
// function.
func CProfileFile(tb testing.TB, n int) string {
	p := filepath.Join(BenchDir(), fmt.Sprintf("flameox-bench-cprofile-%d.pstats", n))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	python := Require(tb, "python3")
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
