package preview

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	rpprof "runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/jsonvalue"
	"github.com/flameox/flameox/providers/providerstest"
)

// view is a header view read back: its scalar fields and its list sections.
type view struct {
	fields   map[string]any
	sections map[string][]map[string]any
	rows     int
}

// readView previews path in format through preview_artifact's analyzer, paging every
// row as a client does, and checks the shape every header row has: record_index in
// order, input_sha256, and either {key, value} or {section, ...}.
func readView(t *testing.T, path string, format contracts.Format) view {
	t.Helper()
	sum, size, err := sourcefile.Hash(path)
	if err != nil {
		t.Fatal(err)
	}
	in := providerstest.Input(t, path, format)
	in.SHA256 = sum
	a, err := providerstest.Analyze(t, analyze, nil, in)
	if err != nil {
		t.Fatalf("%s as %s: %v", filepath.Base(path), format, err)
	}
	raws := providerstest.Rows(t, a.Rows, 64)
	if len(raws) > maxHeaderRows {
		t.Fatalf("%d rows", len(raws))
	}
	v := view{fields: map[string]any{}, sections: map[string][]map[string]any{}, rows: len(raws)}
	for i, r := range providerstest.Maps(t, raws) {
		raw := raws[i]
		if r["record_index"] != float64(i) || r["input_sha256"] != sum {
			t.Fatalf("row %d: %s", i, raw)
		}
		if k, ok := r["key"].(string); ok {
			if len(r) != 4 {
				t.Fatalf("row %d: %s", i, raw)
			}
			v.fields[k] = r["value"]
			continue
		}
		s, ok := r["section"].(string)
		if !ok {
			t.Fatalf("row %d is neither a field nor a section item: %s", i, raw)
		}
		delete(r, "record_index")
		delete(r, "input_sha256")
		delete(r, "section")
		v.sections[s] = append(v.sections[s], r)
	}
	if v.fields["format"] != string(format) || v.fields["size_bytes"] != float64(size) {
		t.Errorf("common fields %v", v.fields)
	}
	return v
}

func (v view) recognized(t *testing.T) {
	t.Helper()
	if v.fields["recognized"] != true {
		t.Fatalf("not recognized: %v", v.fields["reason"])
	}
}

// python runs a Python script on args and decodes its JSON output.
func python(t *testing.T, script string, out any, args ...string) {
	t.Helper()
	py := testtool.Require(t, "python3")
	b, err := exec.Command(py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("python: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("python: %v", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("python output %s: %v", b, err)
	}
}

// TestPstatsHeaderMatchesPython previews pstats data cProfile writes here and the
// corpus's Python 3 file: the function count and the calls and time pstats prints first
// are Python's pstats.Stats figures. The corpus's Python 2 file is named as such, not
// misread.
func TestPstatsHeaderMatchesPython(t *testing.T) {
	py := testtool.Require(t, "python3")
	fresh := filepath.Join(t.TempDir(), "work.pstats")
	work := "import cProfile\ndef f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\ncProfile.run('sorted(str(f(i)) for i in range(18))', " + strconv.Quote(fresh) + ")\n"
	if out, err := exec.Command(py, "-c", work).CombinedOutput(); err != nil {
		t.Fatalf("cProfile: %v\n%s", err, out)
	}
	const truth = `
import json, pstats, sys
s = pstats.Stats(sys.argv[1])
json.dump({"function_count": len(s.stats), "total_calls": s.total_calls, "primitive_calls": s.prim_calls, "total_time_seconds": s.total_tt}, sys.stdout)
`
	for _, path := range []string{fresh, testtool.Corpus(t, "gprof2dot__print1.pstats")} {
		var want map[string]any
		python(t, truth, &want, path)
		v := readView(t, path, contracts.FormatPstats)
		v.recognized(t)
		got := map[string]any{}
		for k := range want {
			got[k] = v.fields[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-python +flameox):\n%s", filepath.Base(path), diff)
		}
	}
	v := readView(t, testtool.Corpus(t, "gprof2dot__cProfile-py2.pstats"), contracts.FormatPstats)
	if v.fields["recognized"] != false || !strings.Contains(fmt.Sprint(v.fields["reason"]), "Python 2") {
		t.Errorf("Python 2 data: %v", v.fields)
	}
}

// TestPprofHeaderMatchesProfilePackage previews the corpus's pprof profile and a heap
// profile this process writes (runtime/pprof): every header field agrees with
// github.com/google/pprof/profile's parse of the same file.
func TestPprofHeaderMatchesProfilePackage(t *testing.T) {
	heap := filepath.Join(t.TempDir(), "heap.pb.gz")
	f, err := os.Create(heap)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if err := rpprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, path := range []string{testtool.Corpus(t, "speedscope__simple.pprof.gz"), heap} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(raw)
		if err != nil {
			t.Fatal(err)
		}
		v := readView(t, path, contracts.FormatPprof)
		v.recognized(t)
		var types []map[string]any
		for i, st := range p.SampleType {
			types = append(types, map[string]any{"index": float64(i), "type": st.Type, "unit": st.Unit})
		}
		want := map[string]any{"compression": "gzip", "period": float64(p.Period), "time_nanos": projected(p.TimeNanos),
			"duration_nanos": projected(p.DurationNanos), "sample_count": float64(len(p.Sample)), "location_count": float64(len(p.Location)),
			"function_count": float64(len(p.Function)), "mapping_count": float64(len(p.Mapping))}
		if p.PeriodType != nil {
			want["period_type"] = p.PeriodType.Type + "/" + p.PeriodType.Unit
		}
		if p.DefaultSampleType != "" {
			want["default_sample_type"] = p.DefaultSampleType
		}
		got := map[string]any{}
		for k := range want {
			got[k] = v.fields[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-profile +flameox):\n%s", filepath.Base(path), diff)
		}
		if diff := cmp.Diff(types, v.sections["sample_types"]); diff != "" {
			t.Errorf("%s sample types (-profile +flameox):\n%s", filepath.Base(path), diff)
		}
		if len(p.Comments) > 0 && fmt.Sprint(v.fields["comments"]) != fmt.Sprint(p.Comments) {
			t.Errorf("comments %v, profile %v", v.fields["comments"], p.Comments)
		}
	}
}

// projected is an integer as a preview row carries it: a string beyond +-(2^53-1).
func projected(n int64) any {
	if n > jsonvalue.MaxSafe || n < -jsonvalue.MaxSafe {
		return strconv.FormatInt(n, 10)
	}
	return float64(n)
}

// perfHeaderLine reads "# key : value" lines of perf report --header-only.
var perfHeaderLine = regexp.MustCompile(`^# ([a-z][a-z ]*[a-z]) *: (.*)$`)

// TestPerfDataHeaderMatchesPerf records a short workload with perf record and previews
// the perf.data it writes: the header fields are what perf report --header-only prints,
// and the record counts what perf report --stats counts, type by type.
func TestPerfDataHeaderMatchesPerf(t *testing.T) {
	perf := testtool.RequirePerfRecord(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	if out, err := exec.Command(perf, "record", "-F", "999", "-o", data, "--", "sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done").CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	out, err := exec.Command(perf, "report", "-i", data, "--header-only").Output()
	if err != nil {
		t.Fatalf("perf report --header-only: %v", err)
	}
	hdr := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := perfHeaderLine.FindStringSubmatch(sc.Text()); m != nil {
			if _, dup := hdr[m[1]]; !dup {
				hdr[m[1]] = strings.TrimSpace(m[2])
			}
		}
	}
	v := readView(t, data, contracts.FormatPerfData)
	v.recognized(t)
	num := func(s string) float64 {
		n, err := strconv.ParseFloat(strings.Fields(s)[0], 64)
		if err != nil {
			t.Fatalf("perf prints %q", s)
		}
		return n
	}
	want := map[string]any{"data_offset": num(hdr["data offset"]), "data_size": num(hdr["data size"]), "feature_offset": num(hdr["feat offset"]),
		"hostname": hdr["hostname"], "osrelease": hdr["os release"], "version": hdr["perf version"], "arch": hdr["arch"],
		"nrcpus_online": num(hdr["nrcpus online"]), "nrcpus_avail": num(hdr["nrcpus avail"]), "cpudesc": hdr["cpudesc"],
		"cpuid": hdr["cpuid"], "total_mem_kb": num(hdr["total memory"]), "cmdline": hdr["cmdline"]}
	got := map[string]any{}
	for k := range want {
		got[k] = v.fields[k]
	}
	if args, ok := got["cmdline"].([]any); ok {
		s := make([]string, len(args))
		for i, a := range args {
			s[i] = a.(string)
		}
		got["cmdline"] = strings.Join(s, " ")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("header (-perf +flameox):\n%s", diff)
	}
	if ev, ok := v.fields["events"].([]any); !ok || len(ev) == 0 || !strings.Contains(hdr["event"], "name = "+ev[0].(string)) {
		t.Errorf("events %v; perf: %s", v.fields["events"], hdr["event"])
	}

	out, err = exec.Command(perf, "report", "-i", data, "--stats").Output()
	if err != nil {
		t.Fatalf("perf report --stats: %v", err)
	}
	wantStats := map[string]float64{}
	statLine := regexp.MustCompile(`^\s*([A-Z0-9_]+) events:\s+(\d+)`)
	sc = bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := statLine.FindStringSubmatch(sc.Text()); m != nil {
			if _, dup := wantStats[m[1]]; !dup {
				n, _ := strconv.ParseFloat(m[2], 64)
				wantStats[m[1]] = n
			}
		}
	}
	gotStats := map[string]float64{"TOTAL": v.fields["record_count"].(float64)}
	for _, r := range v.sections["records"] {
		gotStats[r["name"].(string)] = r["count"].(float64)
	}
	if diff := cmp.Diff(wantStats, gotStats); diff != "" || wantStats["SAMPLE"] == 0 {
		t.Errorf("record counts (-perf +flameox):\n%s", diff)
	}
}

// perfettoTruth walks a Perfetto protobuf trace with Python: the packets (field 1 of
// Trace) and, per packet, the first field that is not one every packet may carry.
const perfettoTruth = `
import json, sys
data = open(sys.argv[1], "rb").read()
common = {3, 8, 10, 12, 13, 41, 42, 58, 79, 87, 98}
def varint(b, i):
    v, s = 0, 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
def skip(b, i, wt):
    if wt == 0:
        return varint(b, i)[1]
    if wt == 1:
        return i + 8
    if wt == 5:
        return i + 4
    n, i = varint(b, i)
    return i + n
i, packets, kinds = 0, 0, {}
while i < len(data):
    tag, i = varint(data, i)
    assert tag == (1 << 3 | 2)
    n, i = varint(data, i)
    end, kind = i + n, 0
    packets += 1
    while i < end:
        t, i = varint(data, i)
        i = skip(data, i, t & 7)
        if kind == 0 and (t >> 3) not in common:
            kind = t >> 3
    kinds[kind] = kinds.get(kind, 0) + 1
json.dump({"packets": packets, "kinds": [[k, kinds[k]] for k in sorted(kinds)]}, sys.stdout)
`

// TestPerfettoHeaderMatchesPython previews the corpus's two Perfetto traces: the packet
// count and the packets per payload kind are Python's walk of the same bytes.
func TestPerfettoHeaderMatchesPython(t *testing.T) {
	for _, name := range []string{"local__chromium156_trace_startup_proto.pftrace", "perfetto-mcp-rs__basic.perfetto-trace"} {
		path := testtool.Corpus(t, name)
		var want struct {
			Packets float64
			Kinds   [][2]float64
		}
		python(t, perfettoTruth, &want, path)
		v := readView(t, path, contracts.FormatPerfetto)
		v.recognized(t)
		var got [][2]float64
		for _, k := range v.sections["packet_kinds"] {
			got = append(got, [2]float64{k["field"].(float64), k["count"].(float64)})
		}
		if v.fields["packet_count"] != want.Packets || !cmp.Equal(got, want.Kinds) {
			t.Errorf("%s: %v packets, kinds %v; Python %v, %v", name, v.fields["packet_count"], got, want.Packets, want.Kinds)
		}
		if name == "local__chromium156_trace_startup_proto.pftrace" && !strings.Contains(fmt.Sprint(v.sections["packet_kinds"]), "track_event") {
			t.Errorf("no track_event packets named: %v", v.sections["packet_kinds"])
		}
	}
}

// sqliteTruth reads an SQLite file's header with struct and its tables with sqlite3.
const sqliteTruth = `
import json, sqlite3, struct, sys
h = open(sys.argv[1], "rb").read(100)
page = struct.unpack(">H", h[16:18])[0]
out = {"page_size": 65536 if page == 1 else page, "write_version": h[18], "read_version": h[19],
       "page_count": struct.unpack(">I", h[28:32])[0], "freelist_page_count": struct.unpack(">I", h[36:40])[0],
       "schema_cookie": struct.unpack(">I", h[40:44])[0], "schema_format": struct.unpack(">I", h[44:48])[0],
       "text_encoding": {1: "UTF-8", 2: "UTF-16le", 3: "UTF-16be"}[struct.unpack(">I", h[56:60])[0]],
       "user_version": struct.unpack(">i", h[60:64])[0], "application_id": struct.unpack(">i", h[68:72])[0],
       "sqlite_version_number": struct.unpack(">I", h[96:100])[0]}
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
out["table_count"] = len(names)
out["tables"] = [{"name": n, "row_count": db.execute('SELECT count(*) FROM "%s"' % n.replace('"', '""')).fetchone()[0]} for n in names]
json.dump(out, sys.stdout)
`

// TestSQLiteHeaderMatchesPython previews the corpus's coverage.py data file and Nsight
// Systems SQLite export: the database header and every table's row count are Python's
// (struct and sqlite3) reading of the same file.
func TestSQLiteHeaderMatchesPython(t *testing.T) {
	for _, c := range []struct {
		name   string
		format contracts.Format
	}{{"local__coverage_py_branch.coverage", contracts.FormatCoverage}, {"nsightful__nsys-power_iteration.sqlite", contracts.FormatNsysSqlite}} {
		path := testtool.Corpus(t, c.name)
		var want map[string]any
		python(t, sqliteTruth, &want, path)
		v := readView(t, path, c.format)
		v.recognized(t)
		got := map[string]any{}
		for k := range want {
			got[k] = v.fields[k]
		}
		var tables []any
		for _, r := range v.sections["tables"] {
			tables = append(tables, map[string]any(r))
		}
		got["tables"] = tables
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-python +flameox):\n%s", c.name, diff)
		}
	}
}

// leadingStringsTruth lists the printable ASCII runs of 6 bytes or more of a file's first
// 64 KiB, at most 32, as strings(1) would.
const leadingStringsTruth = `
import json, re, sys
head = open(sys.argv[1], "rb").read(65536)
out = [[m.start(), m.group().decode()] for m in re.finditer(rb"[\t\x20-\x7e]{6,}", head)][:32]
json.dump(out, sys.stdout)
`

// TestPrivateFormatHeader previews the corpus's Nsight Compute report, a private format:
// its magic is recognized and its leading strings (host, kernel, CPU) are Python's.
// A file that is not what its name says (an NVBench sample file, which memray's .bin
// suffix claims) is previewed as not recognized, with the reason.
func TestPrivateFormatHeader(t *testing.T) {
	path := testtool.Corpus(t, "h200__ncu-saxpy.ncu-rep")
	var want [][2]any
	python(t, leadingStringsTruth, &want, path)
	v := readView(t, path, contracts.FormatNsightCompute)
	v.recognized(t)
	var got [][2]any
	for _, s := range v.sections["strings"] {
		got = append(got, [2]any{s["offset"], s["text"]})
	}
	if len(want) == 0 || !cmp.Equal(want, got) {
		t.Errorf("strings %v; Python %v", got, want)
	}
	if v.fields["magic"] != "4e5652000200000008077d0000000800" {
		t.Errorf("magic %v", v.fields["magic"])
	}

	bin := filepath.Join(t.TempDir(), "0.bin")
	os.WriteFile(bin, bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 499), 0o644)
	v = readView(t, bin, contracts.FormatMemray)
	if v.fields["recognized"] != false || !strings.Contains(fmt.Sprint(v.fields["reason"]), "memray") || v.rows != 5 {
		t.Errorf("a file that is not memray: %v (%d rows)", v.fields, v.rows)
	}
}

// TestHeaderViewsOfTruncatedFiles cuts every real file above at many lengths: each view
// either pages (bounded rows, the cut content reported as not recognized) or fails typed;
// nothing panics or reads past the file.
func TestHeaderViewsOfTruncatedFiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		format contracts.Format
	}{
		{"gprof2dot__print1.pstats", contracts.FormatPstats},
		{"speedscope__simple.pprof.gz", contracts.FormatPprof},
		{"local__chromium156_trace_startup_proto.pftrace", contracts.FormatPerfetto},
		{"local__coverage_py_branch.coverage", contracts.FormatCoverage},
		{"h200__ncu-saxpy.ncu-rep", contracts.FormatNsightCompute},
	} {
		raw, err := os.ReadFile(testtool.Corpus(t, c.name))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 16, 99, 100, 101, 1000, len(raw) / 3, len(raw) - 1} {
			if n > len(raw) {
				continue
			}
			p := filepath.Join(dir, fmt.Sprintf("%s.%d", c.name, n))
			os.WriteFile(p, raw[:n], 0o644)
			sum, size, _ := sourcefile.Hash(p)
			page, err := Read(context.Background(), []Source{{Path: p, Format: c.format, SHA256: sum, Size: size}}, Options{MaxRows: 1000})
			var de *providers.DecodeError
			switch {
			case err == nil:
				if len(page.Rows) > maxHeaderRows || !page.Complete {
					t.Errorf("%s cut at %d: %d rows", c.name, n, len(page.Rows))
				}
			case errors.As(err, &de):
			default:
				t.Errorf("%s cut at %d: %T %v", c.name, n, err, err)
			}
		}
	}
}
