// Package testtool helps tests that run real tools (python3, perf, node, go): it finds
// them, and in CI, where .ci/run installs them, a missing tool fails the test instead of
// skipping it.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of the named executable, skipping the test when it is missing
// outside CI and failing it in CI.
func Require(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI (.ci/run installs it): %v", name, err)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}
