package testtool

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// FakePySpy is a stand-in for the pinned py-spy collector, named as such: it reports
// version 0.4.2, runs the workload after --, and writes a real Speedscope document of
// four samples (<module> > main > hot three times, <module> > main once) to --output.
const FakePySpy = `#!/bin/sh
# A fake py-spy for tests, not the real collector.
if [ "$1" = "--version" ]; then echo "py-spy 0.4.2"; exit 0; fi
out=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --output) out="$2"; shift 2;;
    --) shift; break;;
    *) shift;;
  esac
done
"$@"
status=$?
cat > "$out" <<'DOC'
{"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"py-spy@0.4.2","activeProfileIndex":0,
"shared":{"frames":[{"name":"<module>","file":"hot.py","line":11},{"name":"main","file":"hot.py","line":8},{"name":"hot","file":"hot.py","line":4}]},
"profiles":[{"type":"sampled","name":"MainThread","unit":"seconds","startValue":0,"endValue":0.05,
"samples":[[0,1,2],[0,1,2],[0,1,2],[0,1]],"weights":[0.01,0.01,0.01,0.01]}]}
DOC
exit $status
`

// PySpyWheel writes a wheel named as py-spy (py_spy-VERSION-py3-none-any.whl) into dir
// whose only script, py-spy, is script: a local package index for installer tests that
// pip reads with --no-index --find-links dir. It returns the wheel's path.
func PySpyWheel(dir, version, script string) (string, error) {
	name := "py_spy-" + version
	return writeWheel(dir, "py-spy", version, []wheelFile{{name + ".data/scripts/py-spy", script, 0o755}})
}

// MemrayWheel writes a wheel named as memray (memray-VERSION-py3-none-any.whl) into dir
// whose package is the FAKE memray of providers/memory/testdata/fakememray (not
// bloomberg/memray: it imports, reports __version__ = version, runs `python -m memray run`
// and reads its own captures back), a local index for pip. It returns the wheel's path.
func MemrayWheel(dir, version string) (string, error) {
	src := FakeMemray()
	var files []wheelFile
	for _, f := range []string{"__init__.py", "__main__.py"} {
		b, err := os.ReadFile(filepath.Join(src, "memray", f))
		if err != nil {
			return "", err
		}
		body := strings.Replace(string(b), `__version__ = "1.17.0+fake"`, `__version__ = "`+version+`"`, 1)
		files = append(files, wheelFile{"memray/" + f, body, 0o644})
	}
	return writeWheel(dir, "memray", version, files)
}

// FakeMemray is the directory holding the FAKE memray package (memray/ in it).
func FakeMemray() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "providers", "memory", "testdata", "fakememray")
}

// wheelFile is one file of a wheel.
type wheelFile struct {
	path, body string
	mode       os.FileMode
}

// writeWheel writes the pure-Python wheel DIST-VERSION-py3-none-any.whl (dist with
// dashes as underscores) holding files and its metadata into dir.
func writeWheel(dir, dist, version string, files []wheelFile) (string, error) {
	name := strings.ReplaceAll(dist, "-", "_") + "-" + version
	files = append(files,
		wheelFile{name + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: " + dist + "\nVersion: " + version + "\nSummary: test stand-in, not " + dist + "\n", 0o644},
		wheelFile{name + ".dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: flameox-test\nRoot-Is-Purelib: false\nTag: py3-none-any\n", 0o644})
	path := filepath.Join(dir, name+"-py3-none-any.whl")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	z := zip.NewWriter(f)
	var record []string
	for _, e := range files {
		h := &zip.FileHeader{Name: e.path, Method: zip.Deflate}
		h.SetMode(e.mode)
		w, err := z.CreateHeader(h)
		if err != nil {
			return "", err
		}
		w.Write([]byte(e.body))
		sum := sha256.Sum256([]byte(e.body))
		record = append(record, fmt.Sprintf("%s,sha256=%s,%d", e.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(e.body)))
	}
	record = append(record, name+".dist-info/RECORD,,")
	w, _ := z.Create(name + ".dist-info/RECORD")
	w.Write([]byte(strings.Join(record, "\n") + "\n"))
	if err := z.Close(); err != nil {
		return "", err
	}
	return path, f.Close()
}

// RequirePip returns the path of the interpreter python3 runs (sys.executable, not a
// shim) after checking that `python3 -m pip` runs; it skips outside CI and fails in CI
// (.ci/run installs python3-pip).
func RequirePip(t testing.TB) string {
	t.Helper()
	py := Require(t, "python3")
	out, err := exec.Command(py, "-c", "import sys, pip; print(sys.executable)").CombinedOutput()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 -m pip is required in CI (.ci/run installs python3-pip): %v\n%s", err, out)
		}
		t.Skipf("python3 -m pip is not available: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// NoPySpyMachine makes this test process a machine without py-spy whose pip installs
// from a local index: PATH holds only python3 (with pip), sh and cat, HOME is empty,
// FLAMEOX_PY_SPY is unset, and PIP_NO_INDEX/PIP_FIND_LINKS point pip at a directory
// holding a wheel, named as py-spy 0.4.2, whose script is FakePySpy.
func NoPySpyMachine(t testing.TB) {
	t.Helper()
	py := RequirePip(t)
	bin, wheels := t.TempDir(), t.TempDir()
	for name, target := range map[string]string{"python3": py, "sh": "/bin/sh", "cat": "/bin/cat"} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := PySpyWheel(wheels, "0.4.2", FakePySpy); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PIP_NO_INDEX", "1")
	t.Setenv("PIP_FIND_LINKS", wheels)
	t.Setenv("FLAMEOX_PY_SPY", "")
}

// NoMemrayMachine is NoPySpyMachine whose local index also holds a wheel named as memray
// version (MemrayWheel: the FAKE memray package), with FLAMEOX_MEMRAY_PYTHON unset; it
// skips when python3 has memray. It returns a memray capture as the FAKE memray writes it
// (memray's magic, then its records): two leaked allocations, grow then main.
func NoMemrayMachine(t testing.TB, version string) (capture string) {
	t.Helper()
	NoPySpyMachine(t)
	if _, err := MemrayWheel(os.Getenv("PIP_FIND_LINKS"), version); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLAMEOX_MEMRAY_PYTHON", "")
	if exec.Command("python3", "-I", "-c", "import memray").Run() == nil {
		t.Skip("python3 has memray; the test needs a machine without it")
	}
	capture = filepath.Join(t.TempDir(), "memory.bin")
	records := `{"peak_memory":4096,"total_allocations":9,"high_watermark":[],` +
		`"leaked":[{"size":2048,"n_allocations":2,"stack":[["grow","app.py",3],["main","app.py",9]]}]}`
	if err := os.WriteFile(capture, []byte("memray\x00"+records), 0o644); err != nil {
		t.Fatal(err)
	}
	return capture
}
