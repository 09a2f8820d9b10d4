package ahead

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// childVariable makes the test binary a child process that reports, with its own
// arguments, what this package's initialization started.
const childVariable = "FLAMEOX_AHEAD_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childVariable) == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child prints what initialization started. With FLAMEOX_AHEAD_TEST_MODE=take it takes
// the helper and prints whether one started and how many waiting helpers this process
// has before and after ending it; with abandon it calls Abandon and prints how many are
// left and whether anything is left to take.
func child() int {
	if os.Getenv("FLAMEOX_AHEAD_TEST_MODE") == "abandon" {
		Abandon()
		fmt.Printf("after=%d taken=%v\n", len(testtool.WaitingHelpers()), Take() == nil)
		return 0
	}
	c := Take()
	if c == nil {
		fmt.Println("none")
		return 0
	}
	p := <-c
	before := len(testtool.WaitingHelpers())
	p.Abandon()
	fmt.Printf("started=%v waiting=%d after=%d\n", p != nil, before, len(testtool.WaitingHelpers()))
	return 0
}

// TestHelperStartsDuringInitialization: a process whose arguments are a capture call has
// a waiting helper started by the time its packages are initialized, which Abandon ends;
// a call for help, another command and a test binary's own arguments start none.
// Abandon ends a helper nobody took.
func TestHelperStartsDuringInitialization(t *testing.T) {
	if Take() != nil {
		t.Fatal("the test binary's own arguments started a helper")
	}
	for _, c := range []struct {
		mode string
		args []string
		want string
	}{
		{"take", []string{"capture", "--provider", "direct", "--", "true"}, "started=true waiting=1 after=0"},
		{"take", []string{"--json", "capture"}, "started=true waiting=1 after=0"},
		{"take", []string{"capture", "--help"}, "none"},
		{"take", []string{"mcp", "serve"}, "none"},
		{"abandon", []string{"capture", "--provider", "direct", "--", "true"}, "after=0 taken=true"},
	} {
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), childVariable+"=1", "FLAMEOX_AHEAD_TEST_MODE="+c.mode)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("flameox %s: %q (%v), want %q", strings.Join(c.args, " "), got, err, c.want)
		}
	}
}
