package trace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// traceOperations are the operations this package registers.
var traceOperations = []gen.OperationName{gen.OperationNameSummarizeTrace, gen.OperationNameInspectTraceCallGraph,
	gen.OperationNameSummarizePytorchTrace, gen.OperationNameInspectTraceWindow, gen.OperationNameSummarizeTraceOperations,
	gen.OperationNameSummarizeTraceLifecycle, gen.OperationNameInspectGPULaunches}

// TestFormatTableCoversTheCatalog checks that every format a trace operation declares in
// the catalog has its row in the format table, and that its source has what the
// operation's analyzer asks of it (or answers unavailable), so that a format added to
// the contract is not refused as unsupported by an analyzer.
func TestFormatTableCoversTheCatalog(t *testing.T) {
	// needs is the capability each analyzer asks for, one of the listed ones.
	needs := map[gen.OperationName]func(source) bool{
		gen.OperationNameSummarizeTrace:           func(s source) bool { return is[sliceSource](s) || is[spanSource](s) },
		gen.OperationNameInspectTraceCallGraph:    is[sliceSource],
		gen.OperationNameSummarizePytorchTrace:    is[sliceSource],
		gen.OperationNameInspectTraceWindow:       func(s source) bool { return is[sliceSource](s) || is[spanSource](s) },
		gen.OperationNameSummarizeTraceOperations: func(s source) bool { return is[operationSource](s) || is[sliceSource](s) },
		gen.OperationNameSummarizeTraceLifecycle:  is[lifecycleSource],
		gen.OperationNameInspectGPULaunches:       is[launchSource],
	}
	rows := map[gen.Format]int{}
	for _, r := range formats {
		rows[r.format]++
	}
	seen := 0
	for _, op := range gen.Operations {
		need, ok := needs[op.Name]
		if !ok {
			continue
		}
		seen++
		for _, f := range op.Formats {
			if rows[f] != 1 {
				t.Errorf("%s reads %s, which has %d rows in the format table, want 1", op.Name, f, rows[f])
				continue
			}
			s := sourceOf(providers.Input{Format: f})
			if s.available() == nil && !need(s) {
				t.Errorf("%s reads %s, whose source (%T) lacks the capability its analyzer asks for", op.Name, f, s)
			}
		}
	}
	if seen != len(traceOperations) {
		t.Errorf("found %d of the %d trace operations in the catalog", seen, len(traceOperations))
	}
}

func is[T any](s source) bool {
	_, ok := s.(T)
	return ok
}

// TestTableFormats checks that the formats view "tables" names, derived from the
// table's capabilities, are those the catalog gives (§1.3), in their order.
func TestTableFormats(t *testing.T) {
	nsys := "nsys-sqlite, nsys-rep, nsys-parquet"
	for op, want := range map[gen.OperationName]string{
		gen.OperationNameSummarizeTrace:           nsys + ", otlp",
		gen.OperationNameSummarizeTraceOperations: nsys,
		gen.OperationNameSummarizeTraceLifecycle:  nsys,
		gen.OperationNameInspectGPULaunches:       nsys,
	} {
		if got := strings.Join(tableFormats(op), ", "); got != want {
			t.Errorf("%s: view \"tables\" reads %s, want %s", op, got, want)
		}
	}
}

// formatTableFiles may tell formats apart: the format table. (The detectors in
// register.go name formats but compare none.)
var formatTableFiles = map[string]bool{"format.go": true}

// TestNoFormatSwitchOutsideTheTable fails when a file of the package other than the
// format table and the detectors tells formats apart: compares a format (a gen.Format
// constant, or an input's Format) with == or !=, switches on one or lists one in a case,
// indexes a table of its own by one or looks one up in a list (slices.Contains), or calls
// a helper that classifies formats. An
// analyzer opens its source (open) and asks for a capability instead (decision 0064).
func TestNoFormatSwitchOutsideTheTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || formatTableFiles[name] {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		contracts := importName(f, "github.com/flameox/flameox/generated/contracts")
		isFormat := func(e ast.Expr) bool { return formatExpr(e, contracts) }
		report := func(n ast.Node, what string) {
			t.Errorf("%s: %s: an analyzer tells formats apart; open the source and ask for a capability (format.go, source.go)", fset.Position(n.Pos()), what)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isFormat(n.X) || isFormat(n.Y)) {
					report(n, "a format compared")
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isFormat(n.Tag) {
					report(n, "a switch on a format")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isFormat(e) {
						report(e, "a format in a case")
					}
				}
			case *ast.IndexExpr:
				if isFormat(n.Index) {
					report(n, "a table indexed by a format")
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "familyOf" || id.Name == "isNsys" || id.Name == "isOTLP") {
					report(n, "a call of "+id.Name)
				}
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "slices" && len(n.Args) == 2 && isFormat(n.Args[1]) {
						report(n, "a format looked up in a list")
					}
				}
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files; run the test in the package directory", checked)
	}
}

// importName is the name file f imports path under ("" when it does not).
func importName(f *ast.File, path string) string {
	for _, s := range f.Imports {
		if strings.Trim(s.Path.Value, `"`) != path {
			continue
		}
		if s.Name != nil {
			return s.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}

// formatExpr reports whether e is a format: a Format constant of the contracts package
// (contracts: its name in the file), an x.Format field, or either converted
// (string(...)).
func formatExpr(e ast.Expr, contracts string) bool {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.CallExpr:
			if len(x.Args) != 1 {
				return false
			}
			e = x.Args[0]
			continue
		case *ast.SelectorExpr:
			if x.Sel.Name == "Format" {
				return true
			}
			id, ok := x.X.(*ast.Ident)
			return ok && contracts != "" && id.Name == contracts && strings.HasPrefix(x.Sel.Name, "Format")
		}
		return false
	}
}
