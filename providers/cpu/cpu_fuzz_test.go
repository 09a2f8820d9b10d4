package cpu

import (
	"bytes"
	"encoding/hex"
	"io"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
)

// FuzzDecodePstats: go test ./providers/cpu -run '^$' -fuzz FuzzDecodePstats -fuzztime 1m
func FuzzDecodePstats(f *testing.F) {
	fuzztool.Corpus(f, "gprof2dot__print1.pstats", "gprof2dot__cProfile-py2.pstats")
	for _, h := range []string{
		"", "30", "7b30", "fb30", "7b",
		// {('a.py', 1, 'f'): (1, 2, 0.5, 1.0, {('b.py', 2, 'g'): (1, 1, 0.25, 0.5)})}, as marshal.dumps writes it
		"7ba903fa04612e7079e901000000da016629057202000000e902000000e7000000000000e03fe7000000000000f03f7ba903fa04622e70797204000000da0167a90472020000007202000000e7000000000000d03f72050000003030",
		// profile.py's shape: a bare call count per caller, a built-in's key
		"7ba903fa04612e7079e901000000da0166290572020000007202000000e7000000000000e03fe7000000000000f03f7b30a903fa017ee900000000fa153c6275696c742d696e206d6574686f64206c656e3e2905e903000000720a000000e70000000000000000720b0000007b7200000000720a0000003030",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			tab, err := decodePstatsTable(bytes.NewReader(b), true)
			fuzztool.CheckError(t, err)
			if err != nil {
				return
			}
			fs := tab.functions()
			if len(fs) != len(tab.funcs) {
				t.Fatalf("%d functions of %d records", len(fs), len(tab.funcs))
			}
			edges := 0
			for _, fn := range fs {
				edges += len(fn.Callers)
				for _, c := range fn.Callers {
					// cProfile's (nc, cc, tt, ct) sets all three, profile.py's bare count none.
					if (c.PrimitiveCalls == nil) != (c.SelfSeconds == nil) || (c.SelfSeconds == nil) != (c.CumSeconds == nil) {
						t.Fatalf("caller %v of %v has a partial tuple", c.Caller, fn.Func)
					}
				}
			}
			if edges != len(tab.callers) || edges > tab.edges {
				t.Fatalf("%d caller edges returned, %d kept, %d counted", edges, len(tab.callers), tab.edges)
			}
			// The ranking of every metric is a permutation of the functions (NaN last).
			for _, m := range pstatsMetrics {
				order := tab.rank(m)
				if len(order) != len(fs) {
					t.Fatalf("rank(%s) has %d of %d functions", m, len(order), len(fs))
				}
				seen := make([]bool, len(fs))
				for _, i := range order {
					if i < 0 || int(i) >= len(fs) || seen[i] {
						t.Fatalf("rank(%s) is not a permutation: %v", m, order)
					}
					seen[i] = true
				}
			}
			if len(fs) > 0 {
				tab.callerEdges(fs[0].Function, "both")
			}
		})
	})
}

// FuzzDecodeSpeedscope: go test ./providers/cpu -run '^$' -fuzz FuzzDecodeSpeedscope -fuzztime 1m
func FuzzDecodeSpeedscope(f *testing.F) {
	fuzztool.Corpus(f, "speedscope__two-sampled.speedscope.json", "speedscope__evented_0.0.1.speedscope.json",
		"speedscope__invalid_out-of-order-events.speedscope.json")
	for _, s := range []string{
		`{}`, `{"profiles":[]}`,
		`{"shared":{"frames":[{"name":"main","file":"a.py","line":1},{"name":"hot","col":3}]},"profiles":[` +
			`{"type":"sampled","name":"t1","unit":"milliseconds","startValue":0,"endValue":3,"samples":[[0,1],[0],[]],"weights":[1,2,0.5]},` +
			`{"type":"sampled","name":"t2","unit":"seconds","samples":[[1,1,0]],"weights":[0.25]}]}`,
		`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[0],[0,0]],"weights":[1,3]}]}`,
		`{"shared":{"frames":[]},"profiles":[{"type":"sampled","unit":"bytes","samples":[],"weights":[]}]}`,
		`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[1]],"weights":[1]}]}`,
		// a negative weight, and weights whose sum is not finite
		`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[0],[0]],"weights":[-1,0.5]}]}`,
		`{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"seconds","samples":[[0],[0]],"weights":[1e308,1e308]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			s, profiles, err := DecodeSpeedscope(bytes.NewReader(b), sampled.Options{Edges: true})
			fuzztool.CheckError(t, err)
			if err != nil {
				return
			}
			if profiles <= 0 {
				t.Fatalf("%d profiles decoded without an error", profiles)
			}
			sampledtest.Check(t, s, false)
		})
	})
}

// FuzzDecodeCPUProfile: go test ./providers/cpu -run '^$' -fuzz FuzzDecodeCPUProfile -fuzztime 1m
func FuzzDecodeCPUProfile(f *testing.F) {
	const root = `{"id":1,"callFrame":{"functionName":"(root)","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]}`
	for _, s := range []string{
		`{}`, `{"nodes":[]}`,
		`{"nodes":[` + root + `,{"id":2,"callFrame":{"functionName":"main","url":"file:///a.js","lineNumber":0,"columnNumber":0},"children":[3]},` +
			`{"id":3,"callFrame":{"functionName":"hot","url":"file:///a.js","lineNumber":4,"columnNumber":2}}],"startTime":0,"endTime":30,"samples":[3,3,2],"timeDeltas":[0,10,10]}`,
		// node hit counts, no samples
		`{"nodes":[` + root + `,{"id":2,"callFrame":{"functionName":"","url":"","lineNumber":0,"columnNumber":0},"hitCount":4}],"startTime":0,"endTime":1}`,
		// a cycle, a missing child, out-of-order times
		`{"nodes":[{"id":1,"callFrame":{"functionName":"a"},"children":[2]},{"id":2,"callFrame":{"functionName":"b"},"children":[1]}],"samples":[1],"timeDeltas":[1]}`,
		`{"nodes":[` + root + `],"samples":[1,1],"timeDeltas":[5,-3],"startTime":10,"endTime":0}`,
		// hit counts whose sum overflows int64, time deltas whose sum is not finite
		`{"nodes":[{"id":1,"callFrame":{"functionName":"a"},"hitCount":9223372036854775807},{"id":2,"callFrame":{"functionName":"b"},"hitCount":2}]}`,
		`{"nodes":[{"id":1,"callFrame":{"functionName":"a"}}],"samples":[1,1,1],"timeDeltas":[0,1e308,1e308]}`,
	} {
		f.Add([]byte(s))
	}
	fuzzSampled(f, DecodeCPUProfile, nil)
}

// fuzzSampled fuzzes one sampled-profile decoder (edges on): under fuzztool's bounds, a
// typed error or a profile that passes sampledtest.Check and check, when given.
func fuzzSampled(f *testing.F, decode func(io.Reader, sampled.Options) (*sampled.Sampled, error), check func(*testing.T, *sampled.Sampled)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzztool.Bounded(t, func() {
			s, err := decode(bytes.NewReader(b), sampled.Options{Edges: true})
			fuzztool.CheckError(t, err)
			if err != nil {
				return
			}
			sampledtest.Check(t, s, false)
			if check != nil {
				check(t, s)
			}
		})
	})
}

// FuzzDecodePerfScript: go test ./providers/cpu -run '^$' -fuzz FuzzDecodePerfScript -fuzztime 1m
func FuzzDecodePerfScript(f *testing.F) {
	for _, s := range []string{
		"", "\n\n", "\t 401000 orphan (/bin/x)\n",
		"prog 1 [000] 1.0: 1 cpu-clock:\n\t 401000 main.burn+0x10 (/bin/prog)\n\t 402000 main.main+0x2 (/bin/prog)\n\n" +
			"prog 1 [000] 1.1: 1 cpu-clock:\n\t ffff [unknown] ([kernel.kallsyms])\n\n",
		"python3 4242 12345.678901:    250000 cpu-clock:pppH:\n\tffffffff813c7e55 sched_balance+0x5 ([kernel.kallsyms])\n" +
			"\t    7f0a1b2c3d4e a;b (/usr/lib/libc.so.6)\n\t               0 (/usr/bin/python3)\n\t 1 f f f\r\nnext 1\n",
	} {
		f.Add([]byte(s))
	}
	fuzzSampled(f, DecodePerfScript, func(t *testing.T, s *sampled.Sampled) {
		// Every sample weighs 1.
		if s.TotalWeight != float64(s.Samples) {
			t.Fatalf("TotalWeight %v for %d samples", s.TotalWeight, s.Samples)
		}
	})
}

// FuzzDecodeCollapsed: go test ./providers/cpu -run '^$' -fuzz FuzzDecodeCollapsed -fuzztime 1m
func FuzzDecodeCollapsed(f *testing.F) {
	for _, s := range []string{
		"", "nocount\n", "main;a x\n", "main;a -3\n", "main;a +3\n",
		"main;a;b 5\nmain;a 3\n\nmain;c;b 2\n",
		"main;;a 1\r\n;;; 2\n 0\nmain;a;main;a 4",
		"python3;<module> (a.py:1);f (a.py:5) 9223372036854775807\n",
		// counts whose sum overflows int64
		"a 9223372036854775807\na 1\n",
	} {
		f.Add([]byte(s))
	}
	fuzzSampled(f, DecodeCollapsed, nil)
}
