// Package protowalktest holds what the tests of the readers built on protowalk share:
// protoc --decode_raw's reading of a message (DecodeRaw), the independent truth a
// hand-written protobuf reader is checked against. It is imported by tests only.
package protowalktest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/flameox/flameox/internal/testtool"
)

// Raw is one field of `protoc --decode_raw` text output, or the message at its root.
type Raw struct {
	Num     int
	Val     string
	Kids    []*Raw
	Message bool
}

// All are the fields numbered num of message n, in order.
func (n *Raw) All(num int) []*Raw {
	var out []*Raw
	for _, k := range n.Kids {
		if k.Num == num {
			out = append(out, k)
		}
	}
	return out
}

// One is the last field numbered num of message n (nil: none), as protobuf reads a
// repeated singular field.
func (n *Raw) One(num int) *Raw {
	if a := n.All(num); len(a) > 0 {
		return a[len(a)-1]
	}
	return nil
}

// Uint is One(num) as an unsigned integer; false when absent or not a number.
func (n *Raw) Uint(num int) (uint64, bool) {
	k := n.One(num)
	if k == nil || k.Message {
		return 0, false
	}
	v, err := strconv.ParseUint(k.Val, 10, 64)
	return v, err == nil
}

// DecodeRaw is protoc --decode_raw's reading of the message in the file at path (the
// test is skipped, or fails where tools are required, without protoc).
func DecodeRaw(t testing.TB, path string) *Raw {
	t.Helper()
	protoc := testtool.Require(t, "protoc")
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(protoc, "--decode_raw")
	cmd.Stdin = in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc --decode_raw: %v", err)
	}
	return parseRaw(t, string(out))
}

// parseRaw parses protoc --decode_raw output: lines `N: value`, `N {` and `}`.
func parseRaw(t testing.TB, text string) *Raw {
	t.Helper()
	root := &Raw{Message: true}
	stack := []*Raw{root}
	for _, line := range strings.Split(text, "\n") {
		s := strings.TrimSpace(line)
		switch {
		case s == "":
		case s == "}":
			stack = stack[:len(stack)-1]
		case strings.HasSuffix(s, " {"):
			num, err := strconv.Atoi(strings.TrimSuffix(s, " {"))
			if err != nil {
				t.Fatalf("decode_raw line %q", line)
			}
			n := &Raw{Num: num, Message: true}
			top := stack[len(stack)-1]
			top.Kids = append(top.Kids, n)
			stack = append(stack, n)
		default:
			k, v, ok := strings.Cut(s, ": ")
			num, err := strconv.Atoi(k)
			if !ok || err != nil {
				t.Fatalf("decode_raw line %q", line)
			}
			top := stack[len(stack)-1]
			top.Kids = append(top.Kids, &Raw{Num: num, Val: v})
		}
	}
	return root
}
