package static_test

import (
	"os"
	"path/filepath"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
)

// Every corpus log, and a SARIF log named .json, is detected as sarif among all the
// families' detectors; JSON that only mentions a version is not.
func TestDetect(t *testing.T) {
	r := all.Registry()
	head := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b[:min(len(b), 4096)]
	}
	for _, name := range []string{"local__flawfinder_2.0.19.sarif", "local__clang14_static_analyzer.sarif", "sarif-tutorials__CodeFlows.sarif",
		"sarif-tutorials__Suppressions.sarif", "sarif-tutorials__Empty_runs.sarif", "sarif-tutorials__Catastrophic_execution_error.sarif"} {
		p := testtool.Corpus(t, name)
		if got := r.Detect(name, head(p)); len(got) == 0 || got[0] != gen.FormatSarif {
			t.Errorf("%s: detected %v", name, got)
		}
		if got := r.Detect(filepath.Base(name)+".json", head(p)); len(got) == 0 || got[0] != gen.FormatSarif {
			t.Errorf("%s as .json: detected %v", name, got)
		}
	}
	for _, doc := range []string{`{"version": "1.0", "benchmarks": []}`, `{"version": "2.1.0", "items": []}`, `[{"runs": 1}]`} {
		if got := r.Detect("x.json", []byte(doc)); len(got) > 0 && got[0] == gen.FormatSarif {
			t.Errorf("%s detected as sarif", doc)
		}
	}
}
