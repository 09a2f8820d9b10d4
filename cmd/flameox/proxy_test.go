package main

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeFlameoxMain is cmd/flameox of the fake module the test proxy serves: it prints its
// version and answers `mcp inspect` with a one-tool catalog.
const fakeFlameoxMain = `package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("flameox version %s")
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "mcp" && os.Args[2] == "inspect" {
		fmt.Println(` + "`" + `{"tool_count": 1, "tools": [{"name": "fake"}]}` + "`" + `)
		return
	}
	os.Exit(2)
}
`

// cmdMkProxy writes a file-system Go module proxy at DIR serving a FAKE
// github.com/flameox/flameox at each VERSION (list, .info, .mod and .zip as the
// GOPROXY protocol lays them out): mkproxy DIR VERSION...
func cmdMkProxy(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mkproxy DIR VERSION...")
	}
	const mod = "github.com/flameox/flameox"
	dir := filepath.Join(ts.MkAbs(args[0]), mod, "@v")
	ts.Check(os.MkdirAll(dir, 0o755))
	gomod := "module " + mod + "\n\ngo 1.21\n"
	for _, v := range args[1:] {
		ts.Check(os.WriteFile(filepath.Join(dir, v+".info"), []byte(`{"Version":"`+v+`","Time":"2024-01-01T00:00:00Z"}`), 0o644))
		ts.Check(os.WriteFile(filepath.Join(dir, v+".mod"), []byte(gomod), 0o644))
		f, err := os.Create(filepath.Join(dir, v+".zip"))
		ts.Check(err)
		z := zip.NewWriter(f)
		for name, body := range map[string]string{
			"go.mod":              gomod,
			"cmd/flameox/main.go": fmt.Sprintf(fakeFlameoxMain, strings.TrimPrefix(v, "v")),
		} {
			w, err := z.Create(mod + "@" + v + "/" + name)
			ts.Check(err)
			_, err = w.Write([]byte(body))
			ts.Check(err)
		}
		ts.Check(z.Close())
		ts.Check(f.Close())
	}
	ts.Check(os.WriteFile(filepath.Join(dir, "list"), []byte(strings.Join(args[1:], "\n")+"\n"), 0o644))
}
