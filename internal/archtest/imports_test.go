package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/flameox/flameox"

// graph parses the import clauses of every non-test Go file of the module (so that
// the test cache sees each file it depends on) and returns each package with its direct
// imports, or with its transitive imports inside the module and out when deps is set.
func graph(t *testing.T, deps bool) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	direct := map[string]map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if direct[pkg] == nil {
			direct[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			direct[pkg][strings.Trim(imp.Path.Value, `"`)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g := map[string][]string{}
	for pkg := range direct {
		seen := map[string]bool{}
		var visit func(p string)
		visit = func(p string) {
			for imp := range direct[p] {
				if seen[imp] {
					continue
				}
				seen[imp] = true
				if deps && strings.HasPrefix(imp, module+"/") {
					visit(strings.TrimPrefix(imp, module+"/"))
				}
			}
		}
		visit(pkg)
		for imp := range seen {
			g[pkg] = append(g[pkg], imp)
		}
	}
	return g
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func TestImportBoundaries(t *testing.T) {
	rules := []struct {
		name   string
		from   func(pkg string) bool
		deps   bool
		banned func(imp string) bool
	}{
		{"runtime reaches no provider family", func(p string) bool { return under(p, "runtime") }, true,
			func(i string) bool { return strings.HasPrefix(i, module+"/providers/") }},
		{"providers and the repository import nothing under runtime", func(p string) bool {
			return under(p, "providers") || under(p, "repository")
		}, true, func(i string) bool { return under(i, module+"/runtime") }},
		{"internal leaves import no runtime, provider or repository package", func(p string) bool { return under(p, "internal") }, true,
			func(i string) bool {
				return under(i, module+"/runtime") || under(i, module+"/providers") || under(i, module+"/repository")
			}},
		{"the provider interface imports only generated contracts and internal leaves", func(p string) bool { return p == "providers" }, false,
			func(i string) bool {
				return strings.HasPrefix(i, module+"/") && !under(i, module+"/generated") && !under(i, module+"/internal")
			}},
		{"cmd reaches the store only through the runtime", func(p string) bool { return under(p, "cmd") }, false,
			func(i string) bool { return under(i, module+"/repository") }},
	}
	direct, deps := graph(t, false), graph(t, true)
	for _, r := range rules {
		g := direct
		if r.deps {
			g = deps
		}
		checked := 0
		for pkg, imps := range g {
			if !r.from(pkg) {
				continue
			}
			checked++
			for _, i := range imps {
				if r.banned(i) {
					t.Errorf("%s: %s imports %s", r.name, pkg, strings.TrimPrefix(i, module+"/"))
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no package matched; the rule checks nothing", r.name)
		}
	}
}
