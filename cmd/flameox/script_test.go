package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
	"github.com/flameox/flameox/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testscripts/*.txtar")

func TestMain(m *testing.M) {
	// The test binary is also the analysis worker of the runtimes the tests build.
	if code, ok := runtime.ServeWorker(all.Registry); ok {
		os.Exit(code)
	}
	testscript.Main(m, map[string]func(){
		"flameox": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		// fx is flameox with the test's directories written back as $WORK and $CORPUS, so
		// that goldens compare with plain cmp and -update can rewrite them.
		"fx": func() {
			var out, errb bytes.Buffer
			code := run(os.Args[1:], os.Stdin, &out, &errb)
			r := strings.NewReplacer(os.Getenv("WORK"), "$WORK", os.Getenv("CORPUS"), "$CORPUS")
			os.Stdout.WriteString(r.Replace(out.String()))
			os.Stderr.WriteString(r.Replace(errb.String()))
			os.Exit(code)
		},
	})
}

// corpusDir is the shared corpus of third-party artifacts beside the repository; a test
// that needs it is skipped without it (a user's clone has none).
func corpusDir(t testing.TB) string {
	t.Helper()
	return testtool.CorpusDirOrSkip(t)
}

func TestScripts(t *testing.T) {
	// Scripts that read the corpus begin with [!corpus] skip; the others run without it.
	corpus := testtool.CorpusDir()
	_, corpusErr := os.Stat(corpus)
	e2e, err := filepath.Abs("../../e2e")
	if err != nil {
		t.Fatal(err)
	}
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(e2e, "node_modules", "@modelcontextprotocol", "sdk"))
	e2eReady := nodeErr == nil && modErr == nil
	if !e2eReady && os.Getenv("CI") != "" {
		t.Fatal("CI must run the end-to-end MCP client: install node and run make e2e-deps")
	}
	// Debian's python3-torch serves /usr/bin/python3 only; CI installs it.
	torchReady := exec.Command("/usr/bin/python3", "-c", "import torch.profiler").Run() == nil
	if !torchReady && os.Getenv("CI") != "" {
		t.Fatal("CI must run the torch-profiler capture: install python3-torch for /usr/bin/python3")
	}
	// Debian's python3-pytest and python3-pytest-xdist serve /usr/bin/python3 only; CI installs them.
	pytestReady := exec.Command("/usr/bin/python3", "-c", "import pytest, xdist").Run() == nil
	if !pytestReady && os.Getenv("CI") != "" {
		t.Fatal("CI must run the pytest capture: install python3-pytest and python3-pytest-xdist for /usr/bin/python3")
	}
	// Debian's python3-coverage serves /usr/bin/python3 only; CI installs it.
	coverageReady := exec.Command("/usr/bin/python3", "-c", "import coverage").Run() == nil
	// prepare.txtar needs a python3 on PATH without memray for memray's reader to be missing.
	pyMemray := exec.Command("python3", "-I", "-c", "import memray").Run() == nil
	if !coverageReady && os.Getenv("CI") != "" {
		t.Fatal("CI must run the coverage capture: install python3-coverage for /usr/bin/python3")
	}
	fakeMemray, err := filepath.Abs("../../providers/memory/testdata/fakememray")
	if err != nil {
		t.Fatal(err)
	}
	goCache := os.Getenv("GOCACHE")
	if goCache == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			goCache = strings.TrimSpace(string(out))
		}
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testscripts",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("CORPUS", corpus)
			env.Setenv("E2E", e2e)
			// A FAKE memray package (no real memray is installable here): memray.txtar
			// installs it into a virtual environment.
			env.Setenv("FAKEMEMRAY", fakeMemray)
			// Every script has its own evidence store; nothing touches the user's.
			env.Setenv("FLAMEOX_DATA_DIR", filepath.Join(env.WorkDir, "store"))
			// go install (update.txtar) shares the build cache but nothing else of the user's.
			env.Setenv("GOCACHE", goCache)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "corpus":
				return corpusErr == nil, nil
			case "e2e":
				return e2eReady, nil
			case "torch":
				return torchReady, nil
			case "pytest":
				return pytestReady, nil
			case "coverage":
				return coverageReady, nil
			case "pymemray":
				return pyMemray, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkparquet":   cmdMkparquet,
			"mkexact":     cmdMkExactParquet,
			"nsysparquet": cmdNsysParquet,
			"follow":      cmdFollow,
			"getjson":     cmdGetJSON,
			"storedir":    cmdStoreDir,
			"flipbyte":    cmdFlipByte,
			"cpexe":       cmdCpExe,
			"subst":       cmdSubst,
			"mkfolded":    cmdMkFolded,
			"mkproxy":     cmdMkProxy,
			"pyspywheel":  cmdPySpyWheel,
			"memraywheel": cmdMemrayWheel,
		},
	})
}

// cmdMkparquet writes FILE with N rows in row groups of 7: mkparquet FILE N.
func cmdMkparquet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mkparquet FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	type row struct {
		ID    int64   `parquet:"id"`
		Name  string  `parquet:"name"`
		Score float64 `parquet:"score"`
		Big   int64   `parquet:"big"`
		Tag   *string `parquet:"tag,optional"`
	}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{ID: int64(i), Name: "row" + strconv.Itoa(i), Score: float64(i) / 2, Big: 1<<60 + int64(i)}
		if i%3 == 0 {
			tag := "t" + strconv.Itoa(i)
			rows[i].Tag = &tag
		}
	}
	writeParquet(ts, args[0], rows, parquet.MaxRowsPerRowGroup(7))
}

// writeParquet writes rows to the script's file name with parquet-go. The writer's name
// is pinned, so the file (and the goldens' digests) do not move with how parquet-go finds
// its own version.
func writeParquet[T any](ts *testscript.TestScript, name string, rows []T, opts ...parquet.WriterOption) {
	f, err := os.Create(ts.MkAbs(name))
	ts.Check(err)
	opts = append(opts, parquet.CreatedBy("github.com/parquet-go/parquet-go", "0.32.0", ""))
	w := parquet.NewGenericWriter[T](f, opts...)
	_, err = w.Write(rows)
	ts.Check(err)
	ts.Check(w.Close())
	ts.Check(f.Close())
}

// cmdMkExactParquet writes FILE with two records of the column types whose preview forms
// decision 0072 made exact (unsigned 64-bit integers, decimals, MAP keys and values,
// float32, JSON numbers): mkexact FILE.
func cmdMkExactParquet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: mkexact FILE")
	}
	type row struct {
		U64 uint64            `parquet:"u64"`
		F   float32           `parquet:"f"`
		D32 int32             `parquet:"d32,decimal(2:9)"`
		DF  [4]byte           `parquet:"df,decimal(1:9)"`
		J   string            `parquet:"j,json"`
		MI  map[int64]uint64  `parquet:"mi"`
		MS  map[string]string `parquet:"ms"`
	}
	rows := []row{
		{U64: math.MaxUint64, F: 0.1, D32: -5, DF: [4]byte{0xff, 0xff, 0xff, 0x85},
			J: `{"n":100000000000000000000,"x":2.50}`, MI: map[int64]uint64{-7: math.MaxUint64, 65: 1}, MS: map[string]string{"k": "v"}},
		{U64: 1 << 53, F: -2.5, D32: 150, J: `[9007199254740993]`},
	}
	writeParquet(ts, args[0], rows)
}

// cmdNsysParquet converts an Nsight Systems SQLite export into the layout of an nsys
// export --type parquetdir directory (testtool.NsysParquetDir: python3's sqlite3 reads
// the tables, parquet-go writes <TABLE>.parquet each); a conversion, not nsys output:
// nsysparquet EXPORT DIR.
func cmdNsysParquet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: nsysparquet EXPORT DIR")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		ts.Fatalf("nsysparquet needs python3: %v", err)
	}
	ts.Check(testtool.NsysParquetDir(py, ts.MkAbs(args[0]), ts.MkAbs(args[1])))
}

// cmdFollow executes the next_page.argv of the CLI result in FILE as a new process:
// follow FILE. A page that fx wrote (it names $WORK or $CORPUS) has those names expanded
// in its argv and is followed through fx, so that its output compares with cmp too.
func cmdFollow(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: follow FILE")
	}
	text := ts.ReadFile(args[0])
	var res struct {
		NextPage *struct {
			Command     string            `json:"command"`
			Argv        []string          `json:"argv"`
			Environment map[string]string `json:"environment"`
		} `json:"next_page"`
	}
	ts.Check(json.Unmarshal([]byte(text), &res))
	if res.NextPage == nil {
		ts.Fatalf("%s has no next_page", args[0])
	}
	command, argv := res.NextPage.Command, res.NextPage.Argv
	expand := func(s string) string { return s }
	if command == "flameox" && (strings.Contains(text, "$WORK") || strings.Contains(text, "$CORPUS")) {
		expand = strings.NewReplacer("$WORK", ts.Getenv("WORK"), "$CORPUS", ts.Getenv("CORPUS")).Replace
		for i, a := range argv {
			argv[i] = expand(a)
		}
		command = "fx"
	}
	// The handoff's environment applies to this command only.
	for k, v := range res.NextPage.Environment {
		v = expand(v)
		old := ts.Getenv(k)
		ts.Setenv(k, v)
		defer ts.Setenv(k, old)
	}
	err := ts.Exec(command, argv...)
	if neg != (err != nil) {
		ts.Fatalf("follow: unexpected result %v", err)
	}
}

// cmdGetJSON sets VAR to the string or number at a dotted PATH (object keys and array
// indices) of the JSON document in FILE: getjson FILE PATH VAR.
func cmdGetJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: getjson FILE PATH VAR")
	}
	var v any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &v))
	for _, k := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			ts.Check(err)
			if i >= len(x) {
				ts.Fatalf("getjson: index %d out of range", i)
			}
			v = x[i]
		default:
			ts.Fatalf("getjson: %s is not a container at %q", args[1], k)
		}
	}
	if v == nil {
		ts.Fatalf("getjson: %s is absent or null", args[1])
	}
	ts.Setenv(args[2], fmt.Sprint(v))
}

// cmdStoreDir sets VAR to the directory of an evidence bundle or an artifact in the
// store at $FLAMEOX_DATA_DIR: storedir VAR evidence|artifact DIGEST.
func cmdStoreDir(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || (args[1] != "evidence" && args[1] != "artifact") || len(args[2]) != 64 {
		ts.Fatalf("usage: storedir VAR evidence|artifact DIGEST")
	}
	top := map[string]string{"evidence": "evidence", "artifact": "artifacts"}[args[1]]
	ts.Setenv(args[0], filepath.Join(ts.Getenv("FLAMEOX_DATA_DIR"), top, "sha256", args[2][:2], args[2]))
}

// cmdFlipByte inverts the bits of the byte at OFFSET of FILE in place: flipbyte FILE OFFSET.
func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR, 0)
	ts.Check(err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	ts.Check(err)
	b[0] ^= 0xff
	_, err = f.WriteAt(b, off)
	ts.Check(err)
}

// cmdCpExe copies the executable SRC to DST (mode 0755): cpexe SRC DST. testscript's cp
// holds DST open for writing while other scripts of this process fork their commands;
// a child forked then holds the descriptor until it execs, and executing DST meanwhile
// fails with "text file busy" (golang/go#22315). cpexe writes DST under syscall.ForkLock,
// which every fork of this process takes, so no child inherits it.
func cmdCpExe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cpexe SRC DST")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o755))
}

// cmdSubst replaces every OLD with NEW in FILE, failing when OLD is absent: subst FILE OLD NEW.
func cmdSubst(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: subst FILE OLD NEW")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	if !strings.Contains(string(b), args[1]) {
		ts.Fatalf("subst: %q is not in %s", args[1], args[0])
	}
	st, err := os.Stat(p)
	ts.Check(err)
	ts.Check(os.WriteFile(p, []byte(strings.ReplaceAll(string(b), args[1], args[2])), st.Mode()))
}

// cmdMkFolded writes collapsed stacks with N distinct leaf functions fn0001..fnN under
// main, function i with i samples: mkfolded FILE N.
func cmdMkFolded(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mkfolded FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "main;dispatch;fn%04d %d\n", i, i)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o644))
}

// cmdMemrayWheel writes a wheel named as memray VERSION (the pinned one by default) whose
// package is the FAKE memray (testtool.MemrayWheel) into DIR, a local index for pip:
// memraywheel DIR [VERSION].
func cmdMemrayWheel(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: memraywheel DIR [VERSION]")
	}
	version := prepare.MemrayVersion
	if len(args) == 2 {
		version = args[1]
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	_, err := testtool.MemrayWheel(dir, version)
	ts.Check(err)
}

// cmdPySpyWheel writes a wheel named as py-spy 0.4.2 whose script is a FAKE py-spy
// (testtool.FakePySpy) into DIR, a local index for pip: pyspywheel DIR.
func cmdPySpyWheel(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: pyspywheel DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	_, err := testtool.PySpyWheel(dir, "0.4.2", testtool.FakePySpy)
	ts.Check(err)
}
