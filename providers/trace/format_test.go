package trace

import (
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestFormatTableCoversTheCatalog checks that every format a trace operation declares in
// the catalog has its row in the format table, so that a format added to the contract is
// not read by a default branch.
func TestFormatTableCoversTheCatalog(t *testing.T) {
	ops := map[gen.OperationName]bool{}
	for _, name := range []gen.OperationName{gen.OperationNameSummarizeTrace, gen.OperationNameInspectTraceCallGraph,
		gen.OperationNameSummarizePytorchTrace, gen.OperationNameInspectTraceWindow, gen.OperationNameSummarizeTraceOperations,
		gen.OperationNameSummarizeTraceLifecycle, gen.OperationNameInspectGPULaunches} {
		ops[name] = true
	}
	seen := 0
	for _, op := range gen.Operations {
		if !ops[op.Name] {
			continue
		}
		seen++
		for _, f := range op.Formats {
			if familyOf(f) == familyNone {
				t.Errorf("%s reads %s, which has no row in the format table", op.Name, f)
			}
		}
	}
	if seen != len(ops) {
		t.Errorf("found %d of the %d trace operations in the catalog", seen, len(ops))
	}
}
