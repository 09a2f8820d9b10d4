//go:build !linux

package broker

import "testing"

// containments are the mechanisms eachContainment runs a test under: the one this OS has.
var containments = []string{"default"}

// withContainment skips the test unless mechanism is the default: no other can be
// chosen on this OS (macOS runs process_group by default).
func withContainment(t testing.TB, mechanism string) {
	t.Helper()
	if mechanism != "default" && mechanism != defaultMechanism {
		t.Skipf("the %s containment cannot be chosen on this OS", mechanism)
	}
}
