package trace

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/trace/xctrace/xctracetest"
)

// xctraceOn sets the host the xctrace provider sees, and what finds xcrun and xctrace,
// for the rest of the test.
func xctraceOn(t *testing.T, goos string, xcrun string, xctrace string) {
	t.Helper()
	host, look, find := xctraceHost, lookXcrun, findXctrace
	t.Cleanup(func() { xctraceHost, lookXcrun, findXctrace = host, look, find })
	xctraceHost = goos
	lookXcrun = func() (string, error) {
		if xcrun == "" {
			return "", errors.New("not found")
		}
		return xcrun, nil
	}
	findXctrace = func(string) string { return xctrace }
}

func executable(t *testing.T, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestXctraceCommand: xcrun xctrace record with the template (the contract's default when
// none is given), the bundle in the artifact directory, no prompt, the workload's stdout
// on the console, and the workload launched as it names itself.
func TestXctraceCommand(t *testing.T) {
	exe := &providers.Executable{Path: "/usr/bin/xcrun"}
	c := providers.Case{Argv: []string{"python3", "-c", "print(1)"}, Named: "/usr/bin/python3"}
	for _, tc := range []struct {
		template string
		want     string
	}{
		{"", "Metal System Trace"},
		{"Metal System Trace", "Metal System Trace"},
		{"Time Profiler", "Time Profiler"},
	} {
		got := xctraceCommand(&gen.XctraceProvider{Kind: "xctrace", Template: tc.template}, exe, c, "/run/ex1")
		want := []string{"/usr/bin/xcrun", "xctrace", "record", "--template", tc.want, "--output", "/run/ex1/xctrace/capture.trace",
			"--no-prompt", "--target-stdout", "-", "--launch", "--", "/usr/bin/python3", "-c", "print(1)"}
		if !slices.Equal(got, want) {
			t.Errorf("template %q:\n got %q\nwant %q", tc.template, got, want)
		}
	}
	if xctraceCollector.File() != xctraceDir {
		t.Errorf("artifact %q", xctraceCollector.File())
	}
	if d, ok := xctraceCollector.(providers.DirectoryArtifact); !ok || !d.Directory() {
		t.Error("the xctrace artifact is not a directory")
	}
}

// TestXctraceAdmission: capture is admitted only on macOS where xcrun finds xctrace; every
// other host answers unavailable before anything runs, saying why.
func TestXctraceAdmission(t *testing.T) {
	dir := t.TempDir()
	xcrun := executable(t, dir, "xcrun", "#!/bin/sh\nexit 0\n")
	xctrace := executable(t, dir, "xctrace", "#!/bin/sh\nexit 0\n")
	for _, tc := range []struct {
		name, goos, xcrun, xctrace string
		want                       string // "" when admitted
	}{
		{"linux", "linux", xcrun, xctrace, "exists only on macOS; this host runs linux"},
		{"windows", "windows", xcrun, xctrace, "this host runs windows"},
		{"no xcrun", "darwin", "", xctrace, "xcrun is not on PATH"},
		{"no xctrace", "darwin", xcrun, "", "xcrun finds no xctrace"},
		{"relative xctrace", "darwin", xcrun, "xctrace", "xcrun finds no xctrace"},
		{"unreadable xctrace", "darwin", xcrun, filepath.Join(dir, "missing"), "cannot be read"},
		{"admitted", "darwin", xcrun, xctrace, ""},
	} {
		xctraceOn(t, tc.goos, tc.xcrun, tc.xctrace)
		exe, err := xctraceCollector.Admit(nil, nil)
		var ue *providers.UnavailableError
		switch {
		case tc.want == "" && (err != nil || exe == nil || exe.Path != xcrun || len(exe.SHA256) != 64):
			t.Errorf("%s: %+v, %v", tc.name, exe, err)
		case tc.want != "" && (!errors.As(err, &ue) || !strings.Contains(ue.Message, tc.want) || ue.Provider != "xctrace" || ue.Remediation == ""):
			t.Errorf("%s: %v, want unavailable saying %q", tc.name, err, tc.want)
		}
	}
}

// TestXctraceDetection: the registry takes an export by its root element and a bundle
// by its entries as xctrace (xctrace.IsExport, xctrace.IsDirectory), and no other
// format's detector takes the bundle.
func TestXctraceDetection(t *testing.T) {
	r := providers.NewRegistry()
	Register(r)
	bundle := []string{"Trace1.run", "corespace", "form.template", "instrument_data", "open.creq", "shared_data"}
	if got := r.DetectDirectory(bundle); !slices.Equal(got, []gen.Format{gen.FormatXctrace}) {
		t.Errorf("the bundle detected as %v", got)
	}
}

// xctraceInput is a fixture as an xctrace input.
func xctraceInput(name string) providers.Input {
	return providers.Input{Index: 0, Path: filepath.Join("testdata", "xctrace", name), Format: gen.FormatXctrace}
}

var xctraceLimits = gen.EffectiveLimits{TimeoutSeconds: 30, MaxOutputBytes: 16 << 20, MaxMemoryBytes: 1 << 30}

type xctraceRow struct {
	ID          int64   `json:"id"`
	ParentID    *int64  `json:"parent_id"`
	Name        string  `json:"name"`
	Ts          int64   `json:"ts"`
	Dur         int64   `json:"dur"`
	TrackID     int64   `json:"track_id"`
	Category    *string `json:"category"`
	ThreadName  *string `json:"thread_name"`
	ProcessName *string `json:"process_name"`
}

// TestXctraceSummarize: summarize_trace over a real export lists every interval of
// Microsoft's baseline by start, with its thread and process names, on every host.
func TestXctraceSummarize(t *testing.T) {
	xctraceOn(t, "linux", "", "")
	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Inputs: []providers.Input{xctraceInput("trace_memory.xml.gz")}, Limits: xctraceLimits})
	if err != nil {
		t.Fatal(err)
	}
	rows, m := pageAll[xctraceRow](t, a.Rows, 700)
	want := xctracetest.Baseline(t, "trace_memory_baseline.xml.gz", "Memory")
	if len(rows) != len(want) || m["slice_count"] != int64(len(want)) || m["event_count"] != int64(len(want)) {
		t.Fatalf("%d rows, metrics %v, baseline %d", len(rows), m, len(want))
	}
	type key struct {
		ts, dur int64
		name    string
		process string
	}
	var got, exp []key
	for i, r := range rows {
		if i > 0 && r.Ts < rows[i-1].Ts {
			t.Fatalf("row %d starts before row %d", i, i-1)
		}
		if r.ThreadName == nil || r.ProcessName == nil || *r.Category != "virtual-memory" {
			t.Fatalf("row %d: %+v", i, r)
		}
		got = append(got, key{r.Ts, r.Dur, r.Name, *r.ProcessName})
	}
	for _, w := range want {
		exp = append(exp, key{xctracetest.Atoi(t, w[0]), xctracetest.Atoi(t, w[1]), w[3], w[5]})
	}
	cmp := func(a, b key) int {
		if a.ts != b.ts {
			return int(a.ts - b.ts)
		}
		if a.dur != b.dur {
			return int(a.dur - b.dur)
		}
		return strings.Compare(a.name+a.process, b.name+b.process)
	}
	slices.SortFunc(got, cmp)
	slices.SortFunc(exp, cmp)
	if !slices.Equal(got, exp) {
		t.Error("the rows are not the baseline's intervals")
	}
}

// TestXctraceOperations: summarize_trace_operations ranks the intervals by name: the
// virtual-memory operations, with the counts and total durations the baseline gives.
func TestXctraceOperations(t *testing.T) {
	a, err := summarizeOperations(context.Background(), &providers.Request[gen.TraceSliceFields]{Inputs: []providers.Input{xctraceInput("trace_memory.xml.gz")}, Limits: xctraceLimits})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Rows.Page(context.Background(), 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	type agg struct{ count, total int64 }
	want := map[string]agg{}
	for _, w := range xctracetest.Baseline(t, "trace_memory_baseline.xml.gz", "Memory") {
		g := want[w[3]]
		g.count++
		g.total += xctracetest.Atoi(t, w[1])
		want[w[3]] = g
	}
	got := map[string]agg{}
	for _, r := range p.Rows {
		var row struct {
			Operation string      `json:"operation"`
			SpanKind  string      `json:"span_kind"`
			CallCount int64       `json:"call_count"`
			Total     json.Number `json:"total_duration_ns"`
		}
		if err := json.Unmarshal(r, &row); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(string(row.Total), 10, 64)
		got[row.Operation] = agg{row.CallCount, n}
		if row.SpanKind != "virtual-memory" {
			t.Errorf("%+v", row)
		}
	}
	if len(got) != len(want) || len(got) < 2 {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
}

// TestXctraceBundleOffMacOS: a .trace bundle (a directory) answers unavailable off macOS,
// for summarize_trace and summarize_trace_operations, with how to export it on a Mac.
func TestXctraceBundleOffMacOS(t *testing.T) {
	xctraceOn(t, "linux", "/usr/bin/xcrun", "/x/xctrace")
	in := providers.Input{Index: 1, Path: t.TempDir(), Format: gen.FormatXctrace, Members: []sourcefile.Member{}}
	req := &providers.Request[gen.TraceSliceFields]{Inputs: []providers.Input{in}, Limits: xctraceLimits}
	_, err1 := summarize(context.Background(), req)
	_, err2 := summarizeOperations(context.Background(), req)
	for _, err := range []error{err1, err2} {
		var ue *providers.UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(ue.Message, "source 1 is an Instruments .trace bundle") ||
			!strings.Contains(ue.Message, "this host runs linux") || !strings.Contains(ue.Remediation, "xcrun xctrace export") {
			t.Errorf("%v", err)
		}
	}
}

// fakeXcrun writes an xcrun that answers xctrace export as the real one does: the table
// of contents (--toc, two runs) and the tables (--xpath) written to --output, each call
// logged with its arguments.
func fakeXcrun(t *testing.T, dir, tables string, exit int) string {
	t.Helper()
	toc := filepath.Join(dir, "toc.xml")
	if err := os.WriteFile(toc, []byte(`<?xml version="1.0"?>
<trace-toc><run number="1"><info><summary><template-name>Metal System Trace</template-name></summary></info><data><table schema="device-thermal-state-intervals"/></data></run><run number="2"/></trace-toc>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls")
	return executable(t, dir, "xcrun", `#!/bin/sh
printf '%s|' "$@" >> `+log+`
echo >> `+log+`
out=
src=`+tables+`
prev=
for a in "$@"; do
  [ "$prev" = --output ] && out=$a
  [ "$a" = --toc ] && src=`+toc+`
  prev=$a
done
[ `+strconv.Itoa(exit)+` -ne 0 ] && exit `+strconv.Itoa(exit)+`
cp "$src" "$out"
`)
}

// TestXctraceBundleExport: on macOS a bundle is exported with xcrun xctrace through the
// broker (the table of contents, then run 1's tables) and the export is read; the answer
// names xctrace, says that only run 1 of two is read, and the scratch export is removed.
// A failing export fails typed.
func TestXctraceBundleExport(t *testing.T) {
	dir := t.TempDir()
	tables, err := filepath.Abs(filepath.Join("testdata", "xctrace", "trace_thermal.xml"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	xcrun := fakeXcrun(t, bin, tables, 0)
	xctrace := executable(t, bin, "xctrace", "#!/bin/sh\n")
	xctraceOn(t, "darwin", xcrun, xctrace)
	// The collector's artifact: a directory holding the bundle.
	art := filepath.Join(dir, "xctrace")
	if err := os.MkdirAll(filepath.Join(art, "capture.trace", "corespace"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := providers.Input{Index: 0, Path: art, Format: gen.FormatXctrace, Members: []sourcefile.Member{}}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := summarize(ctx, &providers.Request[gen.TraceSliceFields]{Inputs: []providers.Input{in}, Limits: xctraceLimits})
	if err != nil {
		t.Fatal(err)
	}
	rows := pageOnce[xctraceRow](t, a.Rows, 10)
	if len(rows) != 1 || rows[0].Name != "Nominal" || rows[0].Dur != 4531561613 {
		t.Errorf("rows %+v", rows)
	}
	if a.Provider.ID != "xctrace" || !strings.HasPrefix(a.Provider.Version, "sha256:") || a.Implementation["xcrun"] == "" ||
		len(a.Limitations) != 1 || !strings.Contains(a.Limitations[0], "holds 2 runs; only run 1 is read") {
		t.Errorf("analysis %+v", a)
	}
	cancel()
	calls := readLines(t, filepath.Join(bin, "calls"))
	bundle := filepath.Join(art, "capture.trace")
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "xctrace|export|--input|"+bundle+"|--toc|--output|") ||
		!strings.HasPrefix(calls[1], "xctrace|export|--input|"+bundle+"|--xpath|"+xctraceTables+"|--output|") {
		t.Errorf("calls %q", calls)
	}

	// summarize_trace_operations exports the bundle itself.
	o, err := summarizeOperations(context.Background(), &providers.Request[gen.TraceSliceFields]{Inputs: []providers.Input{in}, Limits: xctraceLimits})
	if err != nil || o.Metrics["operation_count"] != 1 || !strings.Contains(strings.Join(o.Limitations, " "), "only run 1 is read") {
		t.Errorf("operations %+v, %v", o, err)
	}
	// Each export's scratch directory is gone once read.
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "flameox-xctrace-export-*"))
	for _, l := range left {
		if b, err := os.ReadFile(filepath.Join(l, "tables.xml")); err == nil && strings.Contains(string(b), "device-thermal-state-intervals") {
			t.Errorf("scratch export left: %s", l)
		}
	}

	// xctrace export failing (a damaged bundle) is a decode failure of the source.
	xctraceOn(t, "darwin", fakeXcrun(t, t.TempDir(), tables, 3), xctrace)
	_, err = summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{Inputs: []providers.Input{in}, Limits: xctraceLimits})
	var de *providers.DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Message, "could not read source 0 as an Instruments trace") {
		t.Errorf("failing export: %v", err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestXctraceNotAnExport: a file declared xctrace that is not an export (a .trace file
// that is no bundle) fails typed when it is read, saying what an export is.
func TestXctraceNotAnExport(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.trace")
	if err := os.WriteFile(p, []byte("not a trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := summarize(context.Background(), &providers.Request[gen.TraceSliceFields]{
		Inputs: []providers.Input{{Path: p, Format: gen.FormatXctrace}}, Limits: xctraceLimits})
	if err == nil {
		_, err = a.Rows.Page(context.Background(), 0, 10, nil)
	}
	var de *providers.DecodeError
	if !errors.As(err, &de) || !strings.Contains(de.Message, "is not a readable xctrace export") {
		t.Errorf("%v", err)
	}
}
