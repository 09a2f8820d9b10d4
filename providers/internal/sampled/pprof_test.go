package sampled_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sampled"
	"github.com/flameox/flameox/providers/internal/sampled/sampledtest"
)

// goToolPprofTop runs `go tool pprof -top` in nanoseconds and returns flat and cum by
// function name.
func goToolPprofTop(t *testing.T, path string) map[string][2]int64 {
	t.Helper()
	ambiguous := map[string]bool{}
	gobin := testtool.Require(t, "go")
	out, err := exec.Command(gobin, "tool", "pprof", "-top", "-nodecount=1000000", "-unit=ns", path).Output()
	if err != nil {
		t.Fatalf("go tool pprof: %v", err)
	}
	res := map[string][2]int64{}
	started := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" {
			started = true
			continue
		}
		if !started || len(f) < 6 {
			continue
		}
		flat, err1 := strconv.ParseInt(strings.TrimSuffix(f[0], "ns"), 10, 64)
		cum, err2 := strconv.ParseInt(strings.TrimSuffix(f[3], "ns"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("cannot parse %q", line)
		}
		// "(partial-inline)" marks a function met both inlined and not: one figure.
		res[strings.TrimSuffix(strings.Join(f[5:], " "), " (partial-inline)")] = [2]int64{flat, cum}
	}
	if len(res) == 0 {
		t.Fatalf("no rows in:\n%s", out)
	}
	// pprof lists a function's inlined occurrences apart, as "name (inline)"; this reader
	// expands inlined calls into the same function. A name listed once, inlined only,
	// compares under its plain name; a name listed both ways has no single pprof figure
	// and is left out.
	for name, v := range res {
		plain, ok := strings.CutSuffix(name, " (inline)")
		if !ok {
			continue
		}
		delete(res, name)
		if _, both := res[plain]; both {
			delete(res, plain)
			ambiguous[plain] = true
		} else if !ambiguous[plain] {
			res[plain] = v
		}
	}
	for name := range ambiguous {
		delete(res, name)
	}
	return res
}

// ourTop ranks the pprof file and returns flat and cum in ns by function name.
func ourTop(t *testing.T, path string) map[string][2]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, info, err := sampled.DecodePprof(f, sampled.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Unit != "seconds" || info.SampleType != "cpu" {
		t.Fatalf("unit %s sample type %s", s.Unit, info.SampleType)
	}
	res := map[string][2]int64{}
	for i, fr := range s.Frames {
		// Sum frames of one name, as pprof's function granularity does.
		v := res[fr.Function]
		res[fr.Function] = [2]int64{v[0] + int64(s.Self[i]), v[1] + int64(s.Inclusive[i])}
	}
	return res
}

// TestPprofMatchesGoToolPprof compares flat and cumulative time per function with
// `go tool pprof -top` on the corpus profile and on one written during the test.
func TestPprofMatchesGoToolPprof(t *testing.T) {
	gobin := testtool.Require(t, "go")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/burn\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "burn_test.go"), []byte(`package burn

import "testing"

//go:noinline
func inner(n int) int { s := 0; for i := 0; i < n; i++ { s += i % 7 }; return s }

//go:noinline
func outer(n int) int { return inner(n) + inner(n/2) }

func TestBurn(t *testing.T) {
	for i := 0; i < 40; i++ {
		if outer(10_000_000) < 0 { t.Fatal() }
	}
}
`), 0o644)
	prof := filepath.Join(dir, "cpu.pprof")
	cmd := exec.Command(gobin, "test", "-cpuprofile", prof, "-o", filepath.Join(dir, "burn.test"), ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test: %v\n%s", err, b)
	}
	// A generated profile shaped like a real one, with inlined frames and unsymbolized
	// addresses (pprof lists those per library, as "[libfast.so]"; Flameox per address,
	// so they are not compared).
	synthetic := sampledtest.PprofFile(t, 3000, 20000)
	for _, p := range []string{testtool.Corpus(t, "speedscope__simple.pprof.gz"), prof, synthetic} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			want := goToolPprofTop(t, p)
			got := ourTop(t, p)
			if len(want) < 3 {
				t.Fatalf("go tool pprof lists only %v", want)
			}
			for name, w := range want {
				if strings.HasPrefix(name, "[") {
					continue
				}
				if g := got[name]; g != w {
					t.Errorf("%s: flat/cum = %v, go tool pprof says %v", name, g, w)
				}
			}
		})
	}
}

// parsedPprof aggregates path through profile.Parse, the reader the streaming one must
// agree with.
func parsedPprof(b []byte, o sampled.Options) (*sampled.Sampled, sampled.PprofInfo, error) {
	p, err := profile.ParseData(b)
	if err != nil {
		return nil, sampled.PprofInfo{}, err
	}
	return sampled.AggregateParsed(p, o)
}

// sampledLines renders an aggregation for comparison: a line per frame and per edge.
func sampledLines(s *sampled.Sampled) []string {
	out := []string{fmt.Sprintf("%s %v %d %v %d %d", s.Unit, s.Scale, s.Samples, s.TotalWeight, s.Unresolved, len(s.Frames))}
	for i, f := range s.Frames {
		out = append(out, fmt.Sprintf("F %q %v %v %d", f, s.Self[i], s.Inclusive[i], s.SelfSamples[i]))
	}
	for k, e := range s.Edges {
		out = append(out, fmt.Sprintf("E %q %q %+v", s.Frames[k[0]], s.Frames[k[1]], *e))
	}
	sort.Strings(out)
	return out
}

// TestPprofStreamMatchesParse checks the streaming reader against profile.Parse: on the
// corpus and a go test profile, on generated ones with every feature the reader handles
// (inlined frames, addresses with and without a mapping, sparse ids, labels, three
// sample types and a default, recursion, gzip or not), and on every truncation and
// single-byte change of a small one. Where the streaming reader takes a profile, Parse
// must too, with the same aggregation; where it does not, Parse must refuse it as well
// (but for varints longer than protobuf allows, which Parse reads).
func TestPprofStreamMatchesParse(t *testing.T) {
	testtool.Short(t, "reads every pprof file twice")
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var buf bytes.Buffer
	if err := awkwardPprof(3000, 5000).Write(&buf); err != nil {
		t.Fatal(err)
	}
	profiles := map[string][]byte{"corpus": read(testtool.Corpus(t, "speedscope__simple.pprof.gz")),
		"synthetic": read(sampledtest.PprofFile(t, 3000, 20000)), "awkward": buf.Bytes()}
	for name, b := range profiles {
		for _, o := range []sampled.Options{{Edges: true}, {SampleType: "samples"}, {SampleType: "alloc_space"}, {SampleType: "missing"}} {
			want, wantInfo, wantErr := parsedPprof(b, o)
			got, gotInfo, gotErr := sampled.StreamPprof(bytes.NewReader(b), o)
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) || !cmp.Equal(wantInfo, gotInfo) {
				t.Fatalf("%s %+v: Parse %v %+v, streaming %v %+v", name, o, wantErr, wantInfo, gotErr, gotInfo)
			}
			if wantErr == nil {
				if diff := cmp.Diff(sampledLines(want), sampledLines(got)); diff != "" {
					t.Fatalf("%s %+v (-Parse +streaming):\n%s", name, o, diff)
				}
			}
		}
	}
	var small bytes.Buffer
	if err := awkwardPprof(4, 6).WriteUncompressed(&small); err != nil {
		t.Fatal(err)
	}
	good := small.Bytes()
	var variants [][]byte
	for n := 0; n < len(good); n++ {
		variants = append(variants, good[:n])
	}
	for off := range good {
		for _, v := range []byte{0, 1, 2, 5, 7, 0x7f, 0x80, 0xff, good[off] ^ 1, good[off] ^ 4, good[off] + 8} {
			b := append([]byte(nil), good...)
			b[off] = v
			variants = append(variants, b)
		}
	}
	taken := 0
	for _, b := range variants {
		want, _, wantErr := parsedPprof(b, sampled.Options{Edges: true})
		got, _, gotErr := sampled.StreamPprof(bytes.NewReader(b), sampled.Options{Edges: true})
		switch {
		case gotErr == nil:
			taken++
			if wantErr != nil {
				t.Fatalf("%x: streamed, but Parse says %v", b, wantErr)
			}
			if diff := cmp.Diff(sampledLines(want), sampledLines(got)); diff != "" {
				t.Fatalf("%x (-Parse +streaming):\n%s", b, diff)
			}
		case errors.Is(gotErr, sampled.ErrNotStreamed):
			if wantErr == nil && !longVarint(b) {
				t.Fatalf("%x: Parse reads it, the streaming reader does not", b)
			}
		default:
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
				t.Fatalf("%x: Parse %v, streaming %v", b, wantErr, gotErr)
			}
		}
	}
	if taken < len(variants)/10 {
		t.Errorf("only %d of %d variants streamed", taken, len(variants))
	}
}

// longVarint reports ten bytes in a row with the continuation bit, a varint protowire
// refuses where profile.Parse reads it (or a run that does not end a varint).
func longVarint(b []byte) bool {
	run := 0
	for _, c := range b {
		if c&0x80 != 0 {
			if run++; run >= 9 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// awkwardPprof is a profile with what real ones rarely combine: three sample types and
// a default, functions of one name in several files and one (name, file, line) under
// several ids, sparse ids, locations of one to three lines, addresses with and without a
// mapping, labels, recursion and empty stacks.
func awkwardPprof(functions, samples int) *profile.Profile {
	r := rand.New(rand.NewPCG(3, 4))
	lib := &profile.Mapping{ID: 7, Start: 0x1000, Limit: 0x9000, File: "/lib/x.so"}
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}, {Type: "wall", Unit: "microseconds"}},
		DefaultSampleType: "alloc_space",
		Mapping:           []*profile.Mapping{lib},
	}
	for i := 0; i < functions; i++ {
		name, file := fmt.Sprintf("f%d", i%(functions*5/6+1)), fmt.Sprintf("/src/%d.go", i%13)
		if i%500 == 7 {
			name, file = "dup", "/src/dup.go"
		}
		p.Function = append(p.Function, &profile.Function{ID: uint64(10 + i*3), Name: name, SystemName: name + "_sys", Filename: file, StartLine: int64(i % 17)})
	}
	for i := 0; i < functions; i++ {
		loc := &profile.Location{ID: uint64(5 + i*2), Address: uint64(0x100 + i)}
		for j := 0; j < 1+i%3; j++ {
			loc.Line = append(loc.Line, profile.Line{Function: p.Function[(i+j*11)%functions], Line: int64(j)})
		}
		p.Location = append(p.Location, loc)
	}
	for i := 0; i < max(2, functions/10); i++ {
		loc := &profile.Location{ID: uint64(100000 + i), Address: uint64(0xabc0 + i)}
		if i%2 == 0 {
			loc.Mapping = lib
		}
		p.Location = append(p.Location, loc)
	}
	for i := 0; i < samples; i++ {
		s := &profile.Sample{Value: []int64{int64(r.IntN(5)), int64(r.IntN(100000)), int64(r.IntN(1000))}}
		for d := r.IntN(30); d > 0; d-- {
			s.Location = append(s.Location, p.Location[r.IntN(len(p.Location))])
		}
		if i%3 == 0 && len(s.Location) > 2 {
			s.Location = append(s.Location, s.Location[0], s.Location[1])
		}
		if i%5 == 0 {
			s.Label = map[string][]string{"thread": {"t1"}}
			s.NumLabel = map[string][]int64{"bytes": {int64(i)}}
			s.NumUnit = map[string][]string{"bytes": {"bytes"}}
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func TestPprofSampleTypes(t *testing.T) {
	f, _ := os.Open(testtool.Corpus(t, "speedscope__simple.pprof.gz"))
	defer f.Close()
	s, info, err := sampled.DecodePprof(f, sampled.Options{SampleType: "samples"})
	if err != nil || s.Unit != "samples" || info.SampleType != "samples" {
		t.Fatalf("%v %+v", err, info)
	}
	f2, _ := os.Open(testtool.Corpus(t, "speedscope__simple.pprof.gz"))
	defer f2.Close()
	_, _, err = sampled.DecodePprof(f2, sampled.Options{SampleType: "alloc_space"})
	var fe *providers.FieldError
	if !errors.As(err, &fe) || !cmp.Equal(fe.Accepted, []string{"samples", "cpu"}) || !cmp.Equal(fe.Field, []any{"sample_type"}) {
		t.Fatalf("got %v", err)
	}
	if _, _, err := sampled.DecodePprof(strings.NewReader("not a profile"), sampled.Options{}); err == nil {
		t.Error("garbage decoded")
	}
}
