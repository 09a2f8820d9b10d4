package cpu

import (
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/internal/sampled"
)

// wholeSampled compares sampled.Sampled values whole, unexported fields included: the
// struct types of package sampled (Sampled and its edge records) may be introspected.
var wholeSampled = cmp.Exporter(func(t reflect.Type) bool { return t.PkgPath() == reflect.TypeFor[sampled.Sampled]().PkgPath() })

// TestDecodeSpeedscopeAnyChunking requires DecodeSpeedscope to read the corpus
// Speedscope documents (a sampled one, and two evented ones it refuses) and their
// malformed copies the same however the reader splits them.
func TestDecodeSpeedscopeAnyChunking(t *testing.T) {
	inputs := testtool.CorpusInputs(t, "speedscope__two-sampled.speedscope.json")
	inputs = append(inputs, testtool.Refused(testtool.CorpusInputs(t, "speedscope__evented_0.0.1.speedscope.json",
		"speedscope__invalid_out-of-order-events.speedscope.json"))...)
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		s, n, err := DecodeSpeedscope(r, sampled.Options{Edges: true})
		return testtool.Result(struct {
			S        *sampled.Sampled
			Profiles int
		}{s, n}, err)
	}, wholeSampled)
}

// TestDecodeCollapsedAnyChunking requires DecodeCollapsed to read collapsed stacks (the
// corpus has none, so TestCollapsedAndPerfScript's) and their malformed copies the same
// however the reader splits them.
func TestDecodeCollapsedAnyChunking(t *testing.T) {
	inputs := testtool.WithMalformed("collapsed", []byte("main;a;b 5\nmain;a 3\n\nmain;c;b 2\n"))
	inputs = append(inputs, testtool.WithMalformed("collapsed-crlf", []byte("main;;a 1\r\n;;; 2\n 0\nmain;a;main;a 4"))...)
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		s, err := DecodeCollapsed(r, sampled.Options{Edges: true})
		return testtool.Result(s, err)
	}, wholeSampled)
}

// TestDecodePerfScriptAnyChunking requires DecodePerfScript to read perf script output
// (the corpus has none, so TestCollapsedAndPerfScript's and FuzzDecodePerfScript's) and
// its malformed copies the same however the reader splits them.
func TestDecodePerfScriptAnyChunking(t *testing.T) {
	inputs := testtool.WithMalformed("perf-script", []byte("prog 1 [000] 1.0: 1 cpu-clock:\n\t 401000 main.burn+0x10 (/bin/prog)\n\t 402000 main.main+0x2 (/bin/prog)\n\n"+
		"prog 1 [000] 1.1: 1 cpu-clock:\n\t ffff [unknown] ([kernel.kallsyms])\n\n"))
	inputs = append(inputs, testtool.WithMalformed("perf-script-python", []byte("python3 4242 12345.678901:    250000 cpu-clock:pppH:\n\tffffffff813c7e55 sched_balance+0x5 ([kernel.kallsyms])\n"+
		"\t    7f0a1b2c3d4e a;b (/usr/lib/libc.so.6)\n\t               0 (/usr/bin/python3)\n\t 1 f f f\r\nnext 1\n"))...)
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		s, err := DecodePerfScript(r, sampled.Options{Edges: true})
		return testtool.Result(s, err)
	}, wholeSampled)
}

// TestDecodeCPUProfileAnyChunking requires DecodeCPUProfile to read V8 CPU profiles
// (the corpus has none, so TestCPUProfile's and FuzzDecodeCPUProfile's) and their
// malformed copies the same however the reader splits them.
func TestDecodeCPUProfileAnyChunking(t *testing.T) {
	inputs := testtool.WithMalformed("cpuprofile", []byte(`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]},
{"id":2,"callFrame":{"functionName":"main","url":"file:///a.js","lineNumber":0,"columnNumber":0},"children":[3]},
{"id":3,"callFrame":{"functionName":"hot","url":"file:///a.js","lineNumber":4,"columnNumber":2}}],
"startTime":0,"endTime":30,"samples":[3,3,2],"timeDeltas":[0,10,10]}`))
	inputs = append(inputs, testtool.WithMalformed("cpuprofile-hitcounts", []byte(`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]},`+
		`{"id":2,"callFrame":{"functionName":"","url":"","lineNumber":0,"columnNumber":0},"hitCount":4}],"startTime":0,"endTime":1}`))...)
	testtool.CheckAnyChunking(t, inputs, func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		s, err := DecodeCPUProfile(r, sampled.Options{Edges: true})
		return testtool.Result(s, err)
	}, wholeSampled)
}

// TestDecodePstatsAnyChunking requires DecodePstats to read the corpus pstats files
// (Python 3, and Python 2, which it refuses), a larger cProfile file, and their
// malformed copies the same however the reader splits them.
func TestDecodePstatsAnyChunking(t *testing.T) {
	decode := func(r io.Reader, _ func() io.Reader) testtool.ChunkResult {
		fs, err := DecodePstats(r)
		return testtool.Result(fs, err)
	}
	t.Run("corpus", func(t *testing.T) {
		inputs := testtool.CorpusInputs(t, "gprof2dot__print1.pstats")
		inputs = append(inputs, testtool.Refused(testtool.CorpusInputs(t, "gprof2dot__cProfile-py2.pstats"))...)
		testtool.CheckAnyChunking(t, inputs, decode)
	})
	// The corpus files are at most 5 KiB; a cProfile run of python3 is larger than the
	// reader's first buffer.
	t.Run("generated", func(t *testing.T) {
		b, err := os.ReadFile(testtool.CProfileFile(t, 500))
		if err != nil {
			t.Fatal(err)
		}
		testtool.CheckAnyChunking(t, testtool.WithMalformed("cprofile-500.pstats", b), decode)
	})
}
