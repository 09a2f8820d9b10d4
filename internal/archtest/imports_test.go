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
		g[pkg] = []string{} // a package without imports is checked too
		for imp := range seen {
			g[pkg] = append(g[pkg], imp)
		}
	}
	return g
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// family is the provider family a package (a path relative to the module) belongs to:
// the direct child of providers/ it is under, other than internal (shared formats and
// helpers), all (which imports every family to register them) and providerstest (the
// test harness every family's tests share); "" for any other.
func family(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "providers/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "internal" || name == "all" || name == "providerstest" {
		return ""
	}
	return name
}

// traceFormat is the trace format reader a package belongs to: the direct child of
// providers/trace/ it is under (perfetto for providers/trace/perfetto and the test
// helpers below it), other than the trace model; "" for any other package.
func traceFormat(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "providers/trace/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "tracemodel" {
		return ""
	}
	return name
}

func TestImportBoundaries(t *testing.T) {
	rules := []struct {
		name   string
		from   func(pkg string) bool
		deps   bool
		banned func(pkg, imp string) bool // whether pkg may not import imp
	}{
		{"runtime reaches no provider family", func(p string) bool { return under(p, "runtime") }, true,
			func(_, i string) bool { return strings.HasPrefix(i, module+"/providers/") }},
		{"providers and the repository import nothing under runtime", func(p string) bool {
			return under(p, "providers") || under(p, "repository")
		}, true, func(_, i string) bool { return under(i, module+"/runtime") }},
		{"internal leaves import no runtime, provider or repository package", func(p string) bool { return under(p, "internal") }, true,
			func(_, i string) bool {
				return under(i, module+"/runtime") || under(i, module+"/providers") || under(i, module+"/repository")
			}},
		{"the provider interface imports only generated contracts and internal leaves", func(p string) bool { return p == "providers" }, false,
			func(_, i string) bool {
				return strings.HasPrefix(i, module+"/") && !under(i, module+"/generated") && !under(i, module+"/internal")
			}},
		{"cmd reaches the store only through the runtime", func(p string) bool { return under(p, "cmd") }, false,
			func(_, i string) bool { return under(i, module+"/repository") }},
		// A format two families read is a package under providers/internal, not one
		// family's exported API (docs/decisions/0044-profile-package.md). The shared
		// leaves import no family at all, and the provider interface and internal/ none
		// either (the rules above), so direct imports are enough: no chain reaches another
		// family.
		{"no provider family imports another family, nor a shared provider leaf any family", func(p string) bool {
			return under(p, "providers") && p != "providers" && !under(p, "providers/all")
		}, false, func(p, i string) bool {
			f := family(strings.TrimPrefix(i, module+"/"))
			return strings.HasPrefix(i, module+"/") && f != "" && f != family(p)
		}},
		// The trace family reads each format in a sub-package (decision 0064): a format
		// reader reads into the trace model (its test helpers, tracemodeltest, beside it)
		// and borrows from the shared provider leaves (providers/internal) and the provider
		// interface's error types, never from the family's analyzers (providers/trace) nor
		// from another format, so that no file reference runs back up or across. Direct
		// imports are enough: what it may import reaches neither (the model by the rule
		// below, the shared leaves and the interface by the ones above).
		{"a trace format reader imports only the trace model, its own packages and shared leaves", func(p string) bool {
			return traceFormat(p) != ""
		}, false, func(p, i string) bool {
			rel, ok := strings.CutPrefix(i, module+"/")
			return ok && rel != "providers" && !under(rel, "providers/trace/tracemodel") && traceFormat(rel) != traceFormat(p) &&
				!under(rel, "providers/internal") && !under(rel, "internal") && !under(rel, "generated")
		}},
		{"the trace model imports no trace package", func(p string) bool { return p == "providers/trace/tracemodel" }, true,
			func(_, i string) bool { return under(i, module+"/providers/trace") }},
		// The containment helper runs from its package's init, which Go runs once every
		// package it needs is initialized and no ready package sorts before it: any other
		// import (golang.org/x/sys, or strings and fmt, which sort or wait behind most of the
		// binary) would hold the helper back until late in start-up
		// (docs/decisions/0067-start-up.md, Addendum; internal/subreaper's package comment).
		// An import added here is measured first (GODEBUG=inittrace=1).
		{"the containment helper and its /proc reader import only standard packages initialized with os", func(p string) bool {
			return p == "internal/subreaper" || p == "internal/procfs"
		}, true, func(_, i string) bool {
			switch i {
			case "bytes", "io", "os", "os/signal", "runtime", "strconv", "syscall", "time", "unsafe", module + "/internal/procfs":
				return false
			}
			return true
		}},
		// Every process of the binary initializes every package it links (decision 0067,
		// sixth addendum): google/pprof/profile compiles its legacy parsers' regexps (154
		// kB at init; decision 0044's addendum) and ogen's runtime brings zap, two YAML
		// packages and decimal (decision 0070). Tests may import them; the binary may not.
		{"the binary links neither google/pprof/profile nor ogen", func(p string) bool { return p == "cmd/flameox" }, true,
			func(_, i string) bool {
				return i == "github.com/google/pprof/profile" || strings.HasPrefix(i, "github.com/ogen-go/")
			}},
		{"internal leaves import only internal and generated packages of the module", func(p string) bool { return under(p, "internal") }, false,
			func(_, i string) bool {
				return strings.HasPrefix(i, module+"/") && !under(i, module+"/internal") && !under(i, module+"/generated")
			}},
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
				if r.banned(pkg, i) {
					t.Errorf("%s: %s imports %s", r.name, pkg, strings.TrimPrefix(i, module+"/"))
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no package matched; the rule checks nothing", r.name)
		}
	}
}
