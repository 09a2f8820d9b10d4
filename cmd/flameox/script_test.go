package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testscripts/*.txtar")

func TestMain(m *testing.M) {
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

// corpusDir is the shared corpus of third-party artifacts beside the repository.
func corpusDir(t testing.TB) string {
	dir, err := filepath.Abs("../../../shared/corpus")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the shared corpus is missing: %v", err)
	}
	return dir
}

func TestScripts(t *testing.T) {
	corpus := corpusDir(t)
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
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testscripts",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("CORPUS", corpus)
			env.Setenv("E2E", e2e)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "e2e":
				return e2eReady, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkparquet": cmdMkparquet,
			"follow":    cmdFollow,
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
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	w := parquet.NewGenericWriter[row](f, parquet.MaxRowsPerRowGroup(7))
	_, err = w.Write(rows)
	ts.Check(err)
	ts.Check(w.Close())
	ts.Check(f.Close())
}

// cmdFollow executes the next_page.argv of the CLI result in FILE as a new process:
// follow FILE.
func cmdFollow(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: follow FILE")
	}
	var res struct {
		NextPage *struct {
			Command string   `json:"command"`
			Argv    []string `json:"argv"`
		} `json:"next_page"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &res))
	if res.NextPage == nil {
		ts.Fatalf("%s has no next_page", args[0])
	}
	err := ts.Exec(res.NextPage.Command, res.NextPage.Argv...)
	if neg != (err != nil) {
		ts.Fatalf("follow: unexpected result %v", err)
	}
}
