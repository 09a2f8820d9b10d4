package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// sanitizerTruth reads a Compute Sanitizer log with Python's xml.etree: every record's
// fields by their element paths, the counts by kind, level and classification, and the
// console summary lines in the text around the XML (cut out by string search, since
// xml.etree refuses text outside the root element).
const sanitizerTruth = `
import json, re, sys
import xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
start = text.index("<ComputeSanitizerOutput")
close = "</ComputeSanitizerOutput>"
end = text.index(close) + len(close) if close in text else text.index("/>", start) + 2
root = ET.fromstring(text[start:end])
assert root.tag == "ComputeSanitizerOutput", root.tag
def t(e, p):
    x = e.find(p)
    return None if x is None else (x.text or "").strip()
def i(e, p):
    v = t(e, p)
    return None if v is None else int(v)
def xyz(e, p):
    x = e.find(p)
    return None if x is None else [int(x.find(a).text) for a in "xyz"]
def first(*vs):
    return next((v for v in vs if v is not None), None)
def is_error(row):
    if row["classification"] == "api_error": return True
    if row["classification"] == "race_hazard": return (row["level"] or "").lower() == "error"
    return row["level"] is None or row["level"].lower() not in ("warning", "info", "information")
rows, kinds, levels, classes, hazards, errors = [], {}, {}, {}, 0, 0
for n, r in enumerate(root.findall("record")):
    src, dst = r.find("what/source"), r.find("what/destination")
    row = {"index": n, "kind": t(r, "kind"), "level": t(r, "level"),
        "text": t(r, "what/text"), "error": t(r, "what/error"), "api": t(r, "what/api"), "api_result": i(r, "what/result"),
        "space": t(r, "what/space"), "direction": t(r, "what/direction"),
        "size": first(i(r, "what/size"), i(r, "what/accessSize"), i(r, "accessSize")),
        "address": first(t(r, "what/address"), t(r, "what/accessAddress"), t(r, "accessAddress")),
        "block": xyz(r, "who/blockIdx"), "thread": xyz(r, "who/threadIdx"),
        "hazard_type": None, "hazard_count": None,
        "destination_function": None, "destination_file": None, "destination_line": None}
    loc = src.find("where") if src is not None else r.find("where")
    row.update({"function": t(loc, "func") if loc is not None else None, "file": t(loc, "path") if loc is not None else None,
        "line": i(loc, "line") if loc is not None else None, "pc": t(loc, "pc") if loc is not None else None})
    if src is not None or dst is not None:
        row["hazard_type"] = (t(r, "what/source/direction") or "").lower() + "/" + (t(r, "what/destination/direction") or "").lower()
        row["hazard_count"] = i(r, "what/destination/count") if r.find("what/destination/count") is not None else i(r, "what/source/count")
        row["destination_function"] = t(r, "what/destination/where/func")
        row["destination_file"] = t(r, "what/destination/where/path")
        row["destination_line"] = i(r, "what/destination/where/line")
    if row["kind"] == "Api" or row["api"] is not None: c = "api_error"
    elif row["hazard_type"] is not None: c = "race_hazard"
    elif row["space"] is not None or row["direction"] is not None or row["address"] is not None: c = "memory_access"
    else: c = "other"
    row["classification"] = c
    rows.append(row)
    kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    if row["level"] is not None: levels[row["level"]] = levels.get(row["level"], 0) + 1
    classes[c] = classes.get(c, 0) + 1
    hazards += row["hazard_count"] or 0
    errors += 1 if is_error(row) else 0
outside = [re.sub(r"<\?xml.*?\?>", "", text[:start]), text[end:], root.text or ""] + [c.tail or "" for c in root]
total = not_printed = None
for line in "\n".join(outside).split("\n"):
    m = re.search(r"([0-9]+) errors? (?:were|was) not printed", line)
    if m:
        not_printed = max(not_printed or 0, int(m.group(1)))
        continue
    m = re.search(r"ERROR SUMMARY: *([0-9]+) errors?\s*$", line)
    if m: total = max(total or 0, int(m.group(1)))
reported = total if total is not None else (errors + not_printed if not_printed is not None else None)
if (not_printed or 0) > 0 or (reported is not None and reported > len(rows)): truncated = True
elif reported is not None: truncated = False
else: truncated = len(rows) == 100 or errors == 100
json.dump({"rows": rows, "metrics": {"record_count": len(rows), "kinds": kinds, "levels": levels, "classifications": classes,
    "hazard_count": hazards, "error_count": errors, "possibly_truncated": truncated, "reported_error_count": reported,
    "clean": len(rows) == 0 and not truncated}}, sys.stdout)
`

// etreeTruth runs sanitizerTruth on the log at path: the rows and metrics it expects.
func etreeTruth(t *testing.T, path string) (rows []any, metrics map[string]any) {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", sanitizerTruth, path).Output()
	if err != nil {
		t.Fatalf("xml.etree: %v", err)
	}
	var want struct {
		Rows    []any          `json:"rows"`
		Metrics map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	return want.Rows, want.Metrics
}

// inspectFile runs inspect_sanitizer_failures on the log at path.
func inspectFile(t *testing.T, path string) *providers.Analysis {
	t.Helper()
	a, err := providerstest.Analyze(t, inspectSanitizer, nil, providerstest.Input(t, path, gen.FormatComputeSanitizer))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// againstEtree compares the rows and metrics of a with sanitizerTruth's for the log at path.
func againstEtree(t *testing.T, path string, a *providers.Analysis) (etreeRows []any, etreeMetrics map[string]any) {
	t.Helper()
	rows, metrics := etreeTruth(t, path)
	if diff := gocmp.Diff(rows, providerstest.Decode[any](t, providerstest.Rows(t, a.Rows, 100))); diff != "" {
		t.Errorf("rows differ from xml.etree (-etree +flameox):\n%s", diff)
	}
	if diff := gocmp.Diff(metrics, asJSON(t, a.Metrics)); diff != "" {
		t.Errorf("metrics differ from xml.etree (-etree +flameox):\n%s", diff)
	}
	return rows, metrics
}

// asJSON round-trips v through JSON into generic values.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	return testtool.JSONValue(t, v)
}

func TestSanitizerCorpusAgainstElementTree(t *testing.T) {
	for _, tt := range []struct {
		file                     string
		records, hazards, errors int
	}{
		// The corpus README's account of each log; errors by the rule: the Precise
		// out-of-bounds write and the Api record are errors, and so is the racecheck record
		// of level Error, as racecheck's own summary counts it.
		{"h200__sanitizer-memcheck-oob.xml", 2, 0, 2},
		{"h200__sanitizer-racecheck.xml", 1, 127, 1},
		{"h200__sanitizer-memcheck-clean.xml", 0, 0, 0},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := testtool.Corpus(t, tt.file)
			a := inspectFile(t, path)
			rows, metrics := againstEtree(t, path, a)
			if got := len(rows); got != tt.records {
				t.Errorf("etree read %d records, the corpus README says %d", got, tt.records)
			}
			if got := metrics["hazard_count"].(float64); int(got) != tt.hazards {
				t.Errorf("etree counted %v hazards, the corpus README says %d", got, tt.hazards)
			}
			got := asJSON(t, a.Metrics).(map[string]any)
			if got["error_count"] != float64(tt.errors) || got["possibly_truncated"] != false || got["reported_error_count"] != nil {
				t.Errorf("error_count %v, possibly_truncated %v, reported_error_count %v; want %d, false, null",
					got["error_count"], got["possibly_truncated"], got["reported_error_count"], tt.errors)
			}
			clean := tt.records == 0
			if hasLim := len(a.Limitations) == 1 && strings.HasPrefix(a.Limitations[0], "no_errors_recorded"); hasLim != clean {
				t.Errorf("limitations %q; want the no_errors_recorded limitation only for the clean log", a.Limitations)
			}
		})
	}
}

// Generated records, shaped as compute-sanitizer writes them with --xml.
const (
	// initcheckRecord: kind InitcheckApiError, no level, the access in accessAddress
	// and accessSize (Compute Sanitizer 2026.2.1).
	initcheckRecord = `<record><kind>InitcheckApiError</kind>` +
		`<who><threadIdx><x>%[1]d</x><y>0</y><z>0</z></threadIdx><blockIdx><x>0</x><y>0</y><z>0</z></blockIdx></who>` +
		`<what><text>Uninitialized __global__ memory read of size 4 bytes</text>` +
		`<accessAddress>0x7f00000%04[1]x</accessAddress><accessSize>4</accessSize><errorAddress>0x7f0000000000</errorAddress></what>` +
		`<where><func>read_uninit</func><path>/tmp/gpuart/k.cu</path><line>12</line><pc>0x80</pc></where></record>` + "\n"
	// memcheckRecord: a Precise out-of-bounds write of level Error.
	memcheckRecord = `<record><kind>Precise</kind><level>Error</level>` +
		`<who><threadIdx><x>%[1]d</x><y>0</y><z>0</z></threadIdx><blockIdx><x>16384</x><y>0</y><z>0</z></blockIdx></who>` +
		`<what><text>Invalid __global__ write of size 4 bytes is out of bounds</text><space>__global__</space><size>4</size>` +
		`<direction>write</direction><error>out of bounds</error><address>0x7f64638%05[1]x</address></what>` +
		`<where><func>write_past_end</func><path>/tmp/gpuart/k.cu</path><line>6</line><pc>0xc0</pc></where></record>` + "\n"
	// raceRecord: a racecheck Analysis record of level %[2]s standing for %[1]d hazards.
	raceRecord = `<record><kind>Analysis</kind><level>%[2]s</level><what><text>Race condition</text>` +
		`<source><direction>Write</direction><where><func>shared_race</func><path>/tmp/gpuart/k.cu</path><line>8</line><pc>0x60</pc></where></source>` +
		`<destination><direction>Read</direction><where><func>shared_race</func><path>/tmp/gpuart/k.cu</path><line>9</line><pc>0x70</pc></where>` +
		`<count>%[1]d</count></destination></what></record>` + "\n"
	// synccheckRecord: a divergent barrier of level %[2]s.
	synccheckRecord = `<record><kind>Precise</kind><level>%[2]s</level>` +
		`<who><threadIdx><x>%[1]d</x><y>0</y><z>0</z></threadIdx><blockIdx><x>0</x><y>0</y><z>0</z></blockIdx></who>` +
		`<what><text>Barrier error detected. Divergent thread(s) in block</text></what>` +
		`<where><func>divergent_barrier</func><path>/tmp/gpuart/k.cu</path><line>20</line><pc>0x90</pc></where></record>` + "\n"
)

// records repeats a record template n times, the record's number as its first operand
// and arg, where given, as its second.
func records(n int, template string, arg ...any) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, template, append([]any{i}, arg...)...)
	}
	return b.String()
}

// sanitizerLogText is a log: head, the XML holding body, then tail.
func sanitizerLogText(head, body, tail string) string {
	return head + `<?xml version="1.0" encoding="utf-8"?>` + "\n<ComputeSanitizerOutput>\n" + body + "</ComputeSanitizerOutput>\n" + tail
}

// Console summary lines, as compute-sanitizer prints them after a run.
const (
	summary1024   = "========= ERROR SUMMARY: 1024 errors\n"
	notPrinted924 = "========= ERROR SUMMARY: 924 errors were not printed. Use --print-limit option to adjust the number of printed errors\n"
)

func TestSanitizerCountsAndTruncation(t *testing.T) {
	type want struct {
		records, errors, hazards int64
		truncated, clean         bool
		// reported is the summary's error total; -1 for none (null).
		reported int64
		// limitation is a phrase the possibly_truncated limitation must hold; "" for none.
		limitation string
	}
	atLimit := "may hold only the first 100 of more records"
	for _, tt := range []struct {
		name, log string
		want      want
	}{
		{"initcheck at the print limit", sanitizerLogText("", records(100, initcheckRecord), ""),
			want{records: 100, errors: 100, truncated: true, reported: -1, limitation: atLimit}},
		{"initcheck below the print limit", sanitizerLogText("", records(99, initcheckRecord), ""),
			want{records: 99, errors: 99, reported: -1}},
		{"initcheck past the print limit", sanitizerLogText("", records(101, initcheckRecord), ""),
			want{records: 101, errors: 101, reported: -1}},
		{"memcheck with a summary of more errors", sanitizerLogText("", records(100, memcheckRecord), summary1024+notPrinted924),
			want{records: 100, errors: 100, truncated: true, reported: 1024, limitation: "summary reports 1024 errors but the log holds 100 records"}},
		{"console around the XML", sanitizerLogText("========= COMPUTE-SANITIZER\n", records(100, memcheckRecord), notPrinted924+summary1024),
			want{records: 100, errors: 100, truncated: true, reported: 1024, limitation: "only the first 100 of more"}},
		{"only the not-printed line", sanitizerLogText("", records(100, memcheckRecord), "========= ERROR SUMMARY: 33 errors were not printed\n"),
			want{records: 100, errors: 100, truncated: true, reported: 133, limitation: "summary reports 133 errors"}},
		{"a summary that accounts for every record", sanitizerLogText("", records(100, memcheckRecord), "========= ERROR SUMMARY: 100 errors\n"),
			want{records: 100, errors: 100, reported: 100}},
		{"no record but a summary of errors", sanitizerLogText("", "", "========= ERROR SUMMARY: 5 errors\n"),
			want{truncated: true, reported: 5, limitation: "summary reports 5 errors but the log holds 0 records"}},
		{"a clean run's summary", sanitizerLogText("", "", "========= ERROR SUMMARY: 0 errors\n"),
			want{clean: true, reported: 0}},
		{"racecheck", sanitizerLogText("", records(3, raceRecord, "Error")+records(2, raceRecord, "Warning"), ""),
			want{records: 5, errors: 3, hazards: 0 + 1 + 2 + 0 + 1, reported: -1}},
		{"racecheck at the print limit", sanitizerLogText("", records(100, raceRecord, "Error"), ""),
			want{records: 100, errors: 100, hazards: 99 * 100 / 2, truncated: true, reported: -1, limitation: atLimit}},
		{"100 error records among more", sanitizerLogText("", records(100, synccheckRecord, "Error")+records(3, synccheckRecord, "Warning"), ""),
			want{records: 103, errors: 100, truncated: true, reported: -1, limitation: "exactly 100 error records"}},
		{"synccheck errors and warnings", sanitizerLogText("", records(4, synccheckRecord, "Error")+records(2, synccheckRecord, "Warning")+
			records(1, synccheckRecord, "error"), ""),
			want{records: 7, errors: 5, reported: -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "log.xml")
			if err := os.WriteFile(path, []byte(tt.log), 0o600); err != nil {
				t.Fatal(err)
			}
			a := inspectFile(t, path)
			m := asJSON(t, a.Metrics).(map[string]any)
			var reported any
			if tt.want.reported >= 0 {
				reported = float64(tt.want.reported)
			}
			got := []any{m["record_count"], m["error_count"], m["hazard_count"], m["possibly_truncated"], m["clean"], m["reported_error_count"]}
			exp := []any{float64(tt.want.records), float64(tt.want.errors), float64(tt.want.hazards), tt.want.truncated, tt.want.clean, reported}
			if diff := gocmp.Diff(exp, got); diff != "" {
				t.Errorf("record_count, error_count, hazard_count, possibly_truncated, clean, reported_error_count (-want +got):\n%s", diff)
			}
			checkTruncationLimitation(t, a.Limitations, tt.want.limitation, dir)
			t.Run("etree", func(t *testing.T) { againstEtree(t, path, a) })
		})
	}
}

// checkTruncationLimitation checks that lims hold a possibly_truncated limitation with
// phrase and the rerun advice when phrase is not empty, none otherwise, and no host path.
func checkTruncationLimitation(t *testing.T, lims []string, phrase, dir string) {
	t.Helper()
	var found []string
	for _, l := range lims {
		if strings.Contains(l, dir) {
			t.Errorf("the limitation %q names the host path", l)
		}
		if strings.HasPrefix(l, "possibly_truncated: ") {
			found = append(found, l)
		}
	}
	switch {
	case phrase == "" && len(found) > 0:
		t.Errorf("limitations %q; want no possibly_truncated limitation", lims)
	case phrase != "" && (len(found) != 1 || !strings.Contains(found[0], phrase) || !strings.Contains(found[0], "Rerunning with --print-limit 0 prints them all.")):
		t.Errorf("limitations %q; want one possibly_truncated limitation saying %q and how to print every record", lims, phrase)
	}
}

func TestSanitizerRefusesMalformedAndForeignLogs(t *testing.T) {
	huge := "<ComputeSanitizerOutput><record><kind>" + strings.Repeat("A", maxSanitizerText+1) + "</kind></record></ComputeSanitizerOutput>"
	deep := "<ComputeSanitizerOutput>" + strings.Repeat("<a>", maxSanitizerDepth+1) + strings.Repeat("</a>", maxSanitizerDepth+1) + "</ComputeSanitizerOutput>"
	for _, tt := range []struct {
		name, text string
		want       any
	}{
		{"truncated", "<ComputeSanitizerOutput><record><kind>Precise</kind>", &providers.DecodeError{}},
		{"foreign root", `<?xml version="1.0"?><testsuites><testsuite/></testsuites>`, &providers.UnsupportedError{}},
		{"no element", "just text", &providers.UnsupportedError{}},
		{"bad integer", "<ComputeSanitizerOutput><record><kind>Precise</kind><what><size>four</size></what></record></ComputeSanitizerOutput>", &providers.DecodeError{}},
		{"long text", huge, &providers.LimitError{}},
		{"deep", deep, &providers.LimitError{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "log.xml")
			if err := os.WriteFile(p, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := readSanitizer(context.Background(), providerstest.Input(t, p, gen.FormatComputeSanitizer))
			switch tt.want.(type) {
			case *providers.DecodeError:
				var e *providers.DecodeError
				if !errors.As(err, &e) {
					t.Fatalf("got %T %v; want a DecodeError", err, err)
				}
			case *providers.UnsupportedError:
				var e *providers.UnsupportedError
				if !errors.As(err, &e) {
					t.Fatalf("got %T %v; want an UnsupportedError", err, err)
				}
			case *providers.LimitError:
				var e *providers.LimitError
				if !errors.As(err, &e) {
					t.Fatalf("got %T %v; want a LimitError", err, err)
				}
			}
			if strings.Contains(err.Error(), p) {
				t.Errorf("the message %q names the host path", err)
			}
		})
	}
}

func TestSanitizerDetector(t *testing.T) {
	for _, tt := range []struct {
		head string
		want bool
	}{
		{`<?xml version="1.0" encoding="utf-8"?>` + "\n<ComputeSanitizerOutput/>\n", true},
		{`<?xml version="1.0" encoding="utf-8"?>` + "\n<ComputeSanitizerOutput>\n  <record>", true},
		{`<?xml version="1.0"?><testsuites/>`, false},
	} {
		if got := sanitizerDetector.Match("log.xml", []byte(tt.head)); got != tt.want {
			t.Errorf("Match(%q) = %v; want %v", tt.head, got, tt.want)
		}
	}
}

func TestSanitizerCommand(t *testing.T) {
	o := &gen.ComputeSanitizerProvider{Kind: "compute-sanitizer"}
	o.ApplyDefaults()
	got := sanitizerCommand(o, &providers.Executable{Path: "/opt/cuda/bin/compute-sanitizer"},
		providers.Case{Argv: []string{"./k", "oob"}, Executable: providers.Executable{Path: "/w/k"}}, "/x")
	want := []string{"/opt/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--xml", "--save", "/x/compute-sanitizer.xml",
		"--error-exitcode", "99", "--print-limit", "0", "/w/k", "oob"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
}
