package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// jsonbinOptions shape a generated --jsonbin directory.
type jsonbinOptions struct {
	// absolute records filenames as NVBench before #405 did for an absolute --jsonbin
	// path: the path it was given plus -bin/N.bin, here under a directory that does not
	// exist.
	absolute bool
}

// writeJSONBin writes into dir what nvbench --jsonbin dir/results.json writes, built on
// the corpus's NVBench document (NVIDIA/nvbench scripts/test_ref.json): results.json
// with, for every state that ran, an nv/json/bin:nv/cold/sample_times and an
// nv/json/freqs-bin:nv/cold/sample_freqs summary (json_printer.cu's tags, names, hints
// and data), and the files they name, results.json-bin/N.bin and
// results.json-freqs-bin/N.bin, each holding the state's nv/cold/sample_size samples as
// little-endian float32: GPU times drawn around the state's mean with its relative
// noise, SM clocks around 1.98 GHz. It returns the number of samples written.
func writeJSONBin(t testing.TB, dir string, o jsonbinOptions) int {
	t.Helper()
	raw, err := os.ReadFile(testtool.Corpus(t, "nvbench__test_ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"results.json-bin", "results.json-freqs-bin"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(58, 2026))
	files, total := 0, 0
	value := func(sums []any, tag string) string {
		for _, s := range sums {
			m := s.(map[string]any)
			if m["tag"] == tag {
				return fmt.Sprint(m["data"].([]any)[0].(map[string]any)["value"])
			}
		}
		t.Fatalf("no summary %s", tag)
		return ""
	}
	prefix := ""
	if o.absolute {
		prefix = "/nonexistent/capture-0001/nvbench/results.json"
	}
	for _, b := range doc["benchmarks"].([]any) {
		for _, s := range b.(map[string]any)["states"].([]any) {
			st := s.(map[string]any)
			if st["is_skipped"] == true {
				continue
			}
			sums := st["summaries"].([]any)
			n, _ := strconv.Atoi(value(sums, "nv/cold/sample_size"))
			mean, _ := strconv.ParseFloat(value(sums, "nv/cold/time/gpu/mean"), 64)
			noise, _ := strconv.ParseFloat(value(sums, "nv/cold/time/gpu/stdev/relative"), 64)
			for _, kind := range []struct{ dir, tag, prefix, name, hint string }{
				{"results.json-bin", "nv/cold/sample_times", "nv/json/bin:", "Sample Times File", "file/sample_times"},
				{"results.json-freqs-bin", "nv/cold/sample_freqs", "nv/json/freqs-bin:", "Sample Frequencies File", "file/sample_freqs"},
			} {
				buf := make([]byte, 4*n)
				for i := range n {
					v := mean + mean*noise*rng.NormFloat64()
					if kind.tag == "nv/cold/sample_freqs" {
						v = 1.98e9 + 5e6*rng.NormFloat64()
					}
					binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(v)))
				}
				name := fmt.Sprintf("%d.bin", files)
				if err := os.WriteFile(filepath.Join(dir, kind.dir, name), buf, 0o644); err != nil {
					t.Fatal(err)
				}
				filename := kind.dir + "/" + name
				if o.absolute {
					filename = prefix + strings.TrimPrefix(kind.dir, "results.json") + "/" + name
				}
				sums = append(sums, map[string]any{"tag": kind.prefix + kind.tag, "name": kind.name, "hint": kind.hint,
					"description": "Binary file containing " + strings.TrimPrefix(kind.hint, "file/") + " as little-endian float32.",
					"data": []any{
						map[string]any{"name": "filename", "type": "string", "value": filename},
						map[string]any{"name": "size", "type": "int64", "value": strconv.Itoa(n)},
					}, "hide": "Not needed in table."})
				total += n
			}
			files++
			st["summaries"] = sums
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return total
}

// corpusNVBenchCount is the number of summary values of the corpus NVBench document.
func corpusNVBenchCount(t *testing.T) int {
	t.Helper()
	f, err := os.Open(testtool.Corpus(t, "nvbench__test_ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := DecodeNVBench(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// dirInput is dir as the runtime hands a directory source to an analyzer: its regular
// files hashed and sorted.
func dirInput(t testing.TB, dir string) providers.Input {
	t.Helper()
	members, sum, size, err := sourcefile.HashDirectory(context.Background(), dir, 1<<20, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	return providers.Input{Index: 0, Path: dir, Format: gen.FormatNvbench, SHA256: sum, Size: size, Members: members}
}

// jsonbinTruth reads a --jsonbin directory with Python's json and struct modules: for
// every state that ran, every nv/json/bin (times, whole nanoseconds, half away from
// zero) and nv/json/freqs-bin (Hz) file, unpacked as little-endian float32 with the
// count its summary states, grouped into series as Flameox identifies them (benchmark:tag,
// unit, axis values) in first-seen order: count, mean, median, sample stdev, min, max.
// A filename that is absolute is read as the file of the same name beside the JSON.
const jsonbinTruth = `
import json, math, os, statistics, struct, sys
path = sys.argv[1]
base = os.path.dirname(path)
d = json.load(open(path))
series, total = {}, 0
for b in d["benchmarks"]:
    for s in b["states"]:
        if s.get("is_skipped"):
            continue
        dims = tuple(sorted((a["name"], str(a["value"])) for a in (s.get("axis_values") or [])))
        for m in s.get("summaries") or []:
            for prefix, unit in (("nv/json/bin:", "ns"), ("nv/json/freqs-bin:", "Hz")):
                if not m["tag"].startswith(prefix):
                    continue
                data = {x["name"]: x["value"] for x in m["data"]}
                n, name = int(data["size"]), data["filename"]
                if os.path.isabs(name):
                    name = os.path.join(os.path.basename(os.path.dirname(name)), os.path.basename(name))
                raw = open(os.path.join(base, name), "rb").read()
                assert len(raw) == 4 * n, (name, len(raw), n)
                vals = list(struct.unpack("<%df" % n, raw))
                if unit == "ns":
                    vals = [math.floor(v * 1e9 + 0.5) for v in vals]
                series.setdefault((b["name"] + ":" + m["tag"][len(prefix):], unit, dims), []).extend(vals)
                total += n
def stdev(v):
    m = statistics.fmean(v)
    return math.sqrt(math.fsum((x - m) ** 2 for x in v) / (len(v) - 1))
out = [[k[0], k[1], dict(k[2]), len(v), statistics.fmean(v), statistics.median(v), stdev(v), min(v), max(v)]
       for k, v in series.items()]
json.dump({"total": total, "series": out}, sys.stdout)
`

// TestNVBenchJSONBinDirectoryMatchesPython reads a generated --jsonbin directory (the
// corpus document's 88 states that ran, each with 499-ish GPU sample times and SM
// clock samples in float32 files) as a directory source: the per-sample series agree
// with Python's reading of the same bytes, figure by figure, and the summary rows of the
// JSON are still there. Filenames as NVBench wrote them before #405 (the absolute
// --jsonbin path) read the same files.
func TestNVBenchJSONBinDirectoryMatchesPython(t *testing.T) {
	python := testtool.Require(t, "python3")
	for _, o := range []jsonbinOptions{{}, {absolute: true}} {
		t.Run(fmt.Sprintf("absolute=%v", o.absolute), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "nvbench")
			samples := writeJSONBin(t, dir, o)
			out, err := exec.Command(python, "-c", jsonbinTruth, filepath.Join(dir, "results.json")).Output()
			if err != nil {
				t.Fatalf("python: %v", err)
			}
			var want struct {
				Total  int
				Series [][9]any
			}
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			if want.Total != samples || samples < 80_000 {
				t.Fatalf("python reads %d samples, the test wrote %d", want.Total, samples)
			}
			a, rows := seriesRows(t, []providers.Input{dirInput(t, dir)})
			if len(a.Limitations) != 0 {
				t.Errorf("limitations %v", a.Limitations)
			}
			// The JSON's own summary rows: as a --json read of the corpus document gives.
			summaryOnly := corpusNVBenchCount(t)
			if got := a.Metrics["measurement_count"]; got != summaryOnly+samples {
				t.Errorf("measurement_count %v, want %d summary values + %d samples", got, summaryOnly, samples)
			}
			var got []gen.BenchmarkSeriesRow
			for _, r := range rows {
				if strings.HasSuffix(r.Benchmark, ":nv/cold/sample_times") || strings.HasSuffix(r.Benchmark, ":nv/cold/sample_freqs") {
					got = append(got, r)
				}
			}
			if len(got) != len(want.Series) || len(got) < 40 {
				t.Fatalf("%d sample series; Python has %d", len(got), len(want.Series))
			}
			for i, r := range got {
				w := want.Series[i]
				dims, _ := json.Marshal(r.Dimensions)
				wantDims, _ := json.Marshal(w[2])
				if r.Benchmark != w[0] || r.Unit != w[1] || string(dims) != string(wantDims) || float64(r.ValueCount) != w[3] {
					t.Fatalf("series %d: %s %s %s %d values; Python %v", i, r.Benchmark, r.Unit, dims, r.ValueCount, w[:4])
				}
				for j, g := range []*float64{r.Mean, r.Median, r.Stdev, r.Min, r.Max} {
					wv := w[4+j].(float64)
					if g == nil || math.Abs(*g-wv) > 1e-9*math.Max(1, math.Abs(wv)) {
						t.Errorf("series %d (%s %v) figure %d: %v, Python %v", i, r.Benchmark, r.Dimensions, j, g, wv)
					}
				}
			}
		})
	}
}

// TestNVBenchJSONBinFileAlone: the results JSON of a --jsonbin run given as a file lists
// its summary values and says that its sample files were not read.
func TestNVBenchJSONBinFileAlone(t *testing.T) {
	dir := t.TempDir()
	writeJSONBin(t, dir, jsonbinOptions{})
	in := providerstest.Input(t, filepath.Join(dir, "results.json"), gen.FormatNvbench)
	a, _ := seriesRows(t, []providers.Input{in})
	summaryOnly := corpusNVBenchCount(t)
	if a.Metrics["measurement_count"] != summaryOnly || len(a.Limitations) != 1 ||
		!strings.Contains(a.Limitations[0], "the 176 per-sample files") || !strings.Contains(a.Limitations[0], "give the directory") {
		t.Errorf("measurements %v (want %d), limitations %q", a.Metrics["measurement_count"], summaryOnly, a.Limitations)
	}
}

// TestNVBenchJSONBinDirectoryDetection: the directory --jsonbin writes is detected by its
// names (X.json beside X.json-bin or X.json-freqs-bin), nothing else is.
func TestNVBenchJSONBinDirectoryDetection(t *testing.T) {
	for names, want := range map[string]bool{
		"results.json results.json-bin":       true,
		"r.json r.json-freqs-bin":             true,
		"results.json":                        false,
		"results.json other.json-bin":         false,
		"StringIds.parquet results.json-bins": false,
	} {
		if got := isNVBenchDirNames(strings.Fields(names)); got != want {
			t.Errorf("%s: %v, want %v", names, got, want)
		}
	}
}

// editJSON rewrites the results JSON of dir: edit receives the summaries of the first
// state that ran of the first benchmark.
func editJSON(t *testing.T, dir string, edit func(sums []any) []any) {
	t.Helper()
	p := filepath.Join(dir, "results.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	st := doc["benchmarks"].([]any)[0].(map[string]any)["states"].([]any)[0].(map[string]any)
	st["summaries"] = edit(st["summaries"].([]any))
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// binSummary returns the index and data of the state's nv/json/bin summary.
func binSummary(t *testing.T, sums []any) (int, []any) {
	t.Helper()
	for i, s := range sums {
		m := s.(map[string]any)
		if m["tag"] == "nv/json/bin:nv/cold/sample_times" {
			return i, m["data"].([]any)
		}
	}
	t.Fatal("no nv/json/bin summary")
	return 0, nil
}

func setData(data []any, name string, v any) {
	for _, d := range data {
		if m := d.(map[string]any); m["name"] == name {
			m["value"] = v
		}
	}
}

// TestNVBenchJSONBinHostile: a size that does not match the file, a name that leaves the
// directory (.., absolute), a missing file, a file named twice, a count beyond the bound,
// a size that is no count and a NaN sample each end typed, at the summary's field in the
// document and, where one is involved, naming the member; a sample file swapped for a
// link out of the directory after hashing is never read.
func TestNVBenchJSONBinHostile(t *testing.T) {
	testtool.Short(t, "reads hostile inputs up to every bound")
	// The first state of the first benchmark ("simple", Device=0) has 9 summaries of its
	// own; its nv/json/bin summary follows them.
	const binAt = 9
	at := func(di int) []any {
		return []any{"benchmarks", 0, "states", 0, "summaries", binAt, "data", di, "value"}
	}
	for _, c := range []struct {
		name   string
		edit   func(t *testing.T, dir string)
		reason string
		field  []any
		limit  bool
		member string
	}{
		{"size mismatch", func(t *testing.T, dir string) {
			editJSON(t, dir, func(sums []any) []any { _, d := binSummary(t, sums); setData(d, "size", "500"); return sums })
		}, "size_mismatch", at(1), false, "results.json-bin/0.bin"},
		{"truncated file", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, "results.json-bin", "0.bin"), 17)
		}, "size_mismatch", at(1), false, "results.json-bin/0.bin"},
		{"dot-dot escape", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(filepath.Dir(dir), "outside.bin"), make([]byte, 4*499), 0o644)
			editJSON(t, dir, func(sums []any) []any {
				_, d := binSummary(t, sums)
				setData(d, "filename", "../outside.bin")
				return sums
			})
		}, "path_escape", at(0), false, ""},
		{"absolute escape", func(t *testing.T, dir string) {
			editJSON(t, dir, func(sums []any) []any {
				_, d := binSummary(t, sums)
				setData(d, "filename", "/etc/passwd")
				return sums
			})
		}, "path_escape", at(0), false, ""},
		{"missing file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "results.json-bin", "0.bin"))
		}, "missing_file", at(0), false, ""},
		{"named twice", func(t *testing.T, dir string) {
			editJSON(t, dir, func(sums []any) []any {
				_, d := binSummary(t, sums)
				setData(d, "filename", "results.json-freqs-bin/0.bin")
				return sums
			})
		}, "duplicate_file", []any{"benchmarks", 0, "states", 0, "summaries", binAt + 1, "data", 0, "value"}, false, "results.json-freqs-bin/0.bin"},
		{"count beyond the bound", func(t *testing.T, dir string) {
			editJSON(t, dir, func(sums []any) []any {
				_, d := binSummary(t, sums)
				setData(d, "size", strconv.Itoa(MaxMeasurements+1))
				return sums
			})
		}, "", at(1), true, ""},
		{"size not a count", func(t *testing.T, dir string) {
			editJSON(t, dir, func(sums []any) []any { _, d := binSummary(t, sums); setData(d, "size", "-3"); return sums })
		}, "bad_size", at(1), false, ""},
		{"NaN sample", func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "results.json-bin", "0.bin"), os.O_WRONLY, 0)
			f.WriteAt(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.NaN()))), 8)
			f.Close()
		}, "", []any{"benchmarks", 0, "states", 0, "summaries", binAt}, false, "results.json-bin/0.bin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "nvbench")
			writeJSONBin(t, dir, jsonbinOptions{})
			c.edit(t, dir)
			ctx := context.Background()
			_, _, err := decodeAll(ctx, []providers.Input{dirInput(t, dir)}, gen.EffectiveLimits{}, func(*Measurement) error { return nil })
			var details map[string]any
			var de *providers.DecodeError
			var le *providers.LimitError
			switch {
			case c.limit && errors.As(err, &le):
				details = le.Details
			case !c.limit && errors.As(err, &de):
				details = de.Details
			default:
				t.Fatalf("err = %T %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "source 0: ") || strings.Contains(err.Error(), dir) {
				t.Errorf("message %q: not attributed to source 0, or it names the host path", err)
			}
			if c.reason != "" && details["reason"] != c.reason {
				t.Errorf("reason %v, want %s (%v)", details["reason"], c.reason, err)
			}
			if !reflect.DeepEqual(details["document_field_path"], c.field) {
				t.Errorf("document_field_path %v, want %v (%v)", details["document_field_path"], c.field, err)
			}
			if c.member != "" && details["member"] != c.member {
				t.Errorf("member %v, want %s", details["member"], c.member)
			}
		})
	}
	t.Run("link swapped in after hashing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nvbench")
		writeJSONBin(t, dir, jsonbinOptions{})
		in := dirInput(t, dir)
		outside := filepath.Join(filepath.Dir(dir), "secret.bin")
		bin := filepath.Join(dir, "results.json-bin", "0.bin")
		st, _ := os.Stat(bin)
		os.WriteFile(outside, make([]byte, st.Size()), 0o644)
		os.Remove(bin)
		if err := os.Symlink(outside, bin); err != nil {
			t.Skip(err)
		}
		_, _, err := decodeAll(context.Background(), []providers.Input{in}, gen.EffectiveLimits{}, func(*Measurement) error { return nil })
		var ie *providers.InputError
		if !errors.As(err, &ie) || ie.Source != 0 {
			t.Fatalf("err = %T %v", err, err)
		}
	})
	t.Run("no results file", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "x.json-bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "x.json-bin", "0.bin"), make([]byte, 8), 0o644)
		_, _, err := decodeAll(context.Background(), []providers.Input{dirInput(t, dir)}, gen.EffectiveLimits{}, func(*Measurement) error { return nil })
		var de *providers.DecodeError
		if !errors.As(err, &de) || de.Details["reason"] != "no_results_json" {
			t.Fatalf("err = %T %v", err, err)
		}
	})
}
