// Command ogenlazy rewrites the pattern map ogen generates (var regexMap, one compiled
// ogenregex.Regexp per schema pattern, built at package initialization) so that each
// pattern compiles on its first match (internal/lazyregex). It checks first that every
// pattern compiles, as the generated code did at start-up, and fails on ogen output it
// does not recognize. make generate runs it on generated/viewerapi after ogen.
//
// Usage: go run ./tools/ogenlazy DIR
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ogen-go/ogen/ogenregex"
)

const (
	mapStart    = "var regexMap = map[string]ogenregex.Regexp{\n"
	eager       = "ogenregex.MustCompile("
	lazy        = "lazyregex.MustCompile("
	lazyImport  = "\t\"github.com/flameox/flameox/internal/lazyregex\"\n"
	ogenImports = "\tht \"github.com/ogen-go/ogen/http\"\n"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ogenlazy DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "ogenlazy:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		if !bytes.Contains(src, []byte(mapStart)) {
			continue
		}
		out, err := rewrite(name, src)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return os.WriteFile(name, out, 0o644)
	}
	return nil // no patterns: nothing compiles at start-up
}

// rewrite returns src with regexMap's values compiled lazily.
func rewrite(name string, src []byte) ([]byte, error) {
	s := string(src)
	start := strings.Index(s, mapStart)
	if start < 0 {
		return nil, fmt.Errorf("no regexMap")
	}
	end := strings.Index(s[start:], "\n}\n")
	if end < 0 {
		return nil, fmt.Errorf("regexMap has no end")
	}
	end += start
	block := s[start:end]
	n := strings.Count(block, eager)
	if n == 0 && strings.Count(block, lazy) == strings.Count(block, "\n") {
		return src, check(name, src, strings.Count(block, lazy)) // rewritten before
	}
	if n == 0 || n != strings.Count(block, "\n") {
		return nil, fmt.Errorf("regexMap is not one %s... per line", eager)
	}
	if strings.Count(s, eager) != n {
		return nil, fmt.Errorf("ogenregex.MustCompile is called outside regexMap")
	}
	if !strings.Contains(s, ogenImports) {
		return nil, fmt.Errorf("the import block does not hold %q", strings.TrimSpace(ogenImports))
	}
	s = s[:start] + strings.ReplaceAll(block, eager, lazy) + s[end:]
	s = strings.Replace(s, ogenImports, lazyImport+ogenImports, 1)
	out, err := format.Source([]byte(s))
	if err != nil {
		return nil, err
	}
	return out, check(name, out, n)
}

// check parses the rewritten file and compiles each of regexMap's n patterns.
func check(name string, src []byte, n int) error {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	if err != nil {
		return err
	}
	compiled := 0
	var bad error
	ast.Inspect(f, func(node ast.Node) bool {
		call, ok := node.(*ast.CallExpr)
		if !ok || bad != nil {
			return bad == nil
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "MustCompile" {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "lazyregex" || len(call.Args) != 1 {
			bad = fmt.Errorf("unexpected call %s", sel.Sel.Name)
			return false
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			bad = fmt.Errorf("a pattern that is not a string literal")
			return false
		}
		exp, err := strconv.Unquote(lit.Value)
		if err == nil {
			_, err = ogenregex.Compile(exp)
		}
		if err != nil {
			bad = fmt.Errorf("pattern %s does not compile: %v", lit.Value, err)
			return false
		}
		compiled++
		return true
	})
	if bad == nil && compiled != n {
		bad = fmt.Errorf("%d patterns checked, %d rewritten", compiled, n)
	}
	return bad
}
