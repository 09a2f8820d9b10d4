package sampled_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
)

// goDebugProfile is what the Go runtime writes for a profile with debug=1: pprof's
// legacy text format.
func goDebugProfile(t *testing.T, name string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gperftoolsCPU is a CPU profile in gperftools' binary format, in the word size and
// byte order given: the header words 0, 3, 0, the sampling period in microseconds and 0;
// two samples (count, depth, then the program counters); the trailer 0, 1, 0; then the
// process's memory map as text.
func gperftoolsCPU(order binary.AppendByteOrder, words64 bool) []byte {
	var b bytes.Buffer
	put := func(ws ...uint64) {
		for _, w := range ws {
			if words64 {
				b.Write(order.AppendUint64(nil, w))
			} else {
				b.Write(order.AppendUint32(nil, uint32(w)))
			}
		}
	}
	put(0, 3, 0, 10000, 0)
	put(5, 2, 0x401000, 0x401100)
	put(3, 3, 0x401000, 0x401100, 0x401200)
	put(0, 1, 0)
	b.WriteString("00400000-00402000 r-xp 00000000 08:01 123 /usr/bin/program\n")
	return b.Bytes()
}

// TestLegacyPprofRefused checks that profiles in pprof's legacy formats, written by their
// producers (the Go runtime's debug=1 profiles; gperftools' CPU profile, built to its
// format), are refused as UNSUPPORTED_FORMAT naming the family and the conversion, gzip
// or not. The oracle, github.com/google/pprof/profile, reads each of them, and what it
// reads has no function names: addresses only, which is why the conversion is the
// answer (decision 0044's addendum).
func TestLegacyPprofRefused(t *testing.T) {
	// Make the block and mutex profiles record something.
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)
	defer runtime.SetBlockProfileRate(0)
	defer runtime.SetMutexProfileFraction(0)
	var mu sync.Mutex
	mu.Lock()
	go func() { time.Sleep(time.Millisecond); mu.Unlock() }()
	mu.Lock()
	mu.Unlock()

	cases := []struct {
		name, family string
		data         []byte
	}{
		{"go heap", "heap", goDebugProfile(t, "heap")},
		{"go allocs", "heap", goDebugProfile(t, "allocs")},
		{"go goroutine", "count", goDebugProfile(t, "goroutine")},
		{"go threadcreate", "count", goDebugProfile(t, "threadcreate")},
		{"go block", "contention", goDebugProfile(t, "block")},
		{"go mutex", "contention", goDebugProfile(t, "mutex")},
		{"gperftools cpu, 64-bit little-endian", "cpu", gperftoolsCPU(binary.LittleEndian, true)},
		{"gperftools cpu, 32-bit little-endian", "cpu", gperftoolsCPU(binary.LittleEndian, false)},
		{"gperftools cpu, 64-bit big-endian", "cpu", gperftoolsCPU(binary.BigEndian, true)},
		{"gperftools cpu, 32-bit big-endian", "cpu", gperftoolsCPU(binary.BigEndian, false)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := profile.ParseData(c.data)
			if err != nil {
				t.Fatalf("the oracle does not read it: %v\n%.200s", err, c.data)
			}
			for _, loc := range p.Location {
				if len(loc.Line) != 0 {
					t.Fatalf("the oracle reads symbols from it: %v", loc.Line)
				}
			}
			zipped := sampledtest.Gzip(t, func(w io.Writer) { w.Write(c.data) })
			for form, data := range map[string][]byte{"plain": c.data, "gzip": zipped} {
				_, _, err := sampled.DecodePprof(bytes.NewReader(data), sampled.Options{})
				var ue *providers.UnsupportedError
				if !errors.As(err, &ue) {
					t.Fatalf("%s: got %v (%T), want an UnsupportedError", form, err, err)
				}
				if ue.Details["legacy_format"] != c.family || !strings.Contains(ue.Remediation, "go tool pprof -proto") {
					t.Errorf("%s: legacy_format %v, remediation %q; want %s and the conversion", form, ue.Details["legacy_format"], ue.Remediation, c.family)
				}
			}
		})
	}
}

// TestLegacyPprofRemediationRuns runs the refusal's next action as given: the Go
// runtime's debug=1 goroutine profile of this test binary, converted by `go tool pprof
// -proto` with the binary, is a profile the reader takes, with the functions' names.
func TestLegacyPprofRemediationRuns(t *testing.T) {
	gobin := testtool.Require(t, "go")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	legacy := filepath.Join(dir, "goroutine.prof")
	data := goDebugProfile(t, "goroutine")
	if err := os.WriteFile(legacy, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = sampled.DecodePprof(bytes.NewReader(data), sampled.Options{})
	var ue *providers.UnsupportedError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want an UnsupportedError", err)
	}
	converted := filepath.Join(dir, "profile.pb.gz")
	// The remediation's command, PROGRAM and PROFILE filled in.
	cmdline := strings.NewReplacer("PROGRAM", exe, "PROFILE", legacy, "profile.pb.gz", converted).
		Replace(ue.Remediation[strings.Index(ue.Remediation, "`go ")+1 : strings.LastIndex(ue.Remediation, "`")])
	args := strings.Fields(cmdline)
	if out, err := exec.Command(gobin, args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	f, err := os.Open(converted)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, _, err := sampled.DecodePprof(f, sampled.Options{})
	if err != nil {
		t.Fatalf("the converted profile: %v", err)
	}
	named := false
	for _, fr := range s.Frames {
		named = named || strings.HasPrefix(fr.Function, "runtime/pprof.")
	}
	if !named {
		t.Errorf("the converted profile names no runtime/pprof function: %v", s.Frames)
	}
}

// TestLegacyPprofNotMistaken checks that what is neither profile.proto nor a legacy
// profile stays "not a pprof profile", headers that only look alike included.
func TestLegacyPprofNotMistaken(t *testing.T) {
	for _, data := range []string{
		"", "not a profile\n", "heap profiles are here\n", "goroutine profile: total many\n",
		"two words profile: total 3\n", "\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00",
		"\x00\x00\x00\x00\x02\x00\x00\x00",
	} {
		if got := sampled.LegacyPprof(strings.NewReader(data)); got != "" {
			t.Errorf("%q: %q, want none", data, got)
		}
		_, _, err := sampled.DecodePprof(bytes.NewReader([]byte(data)), sampled.Options{})
		var de *providers.DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%q: got %v (%T), want a DecodeError", data, err, err)
		}
	}
}
