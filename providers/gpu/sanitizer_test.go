package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// sanitizerTruth reads a Compute Sanitizer log with Python's xml.etree: every record's
// fields by their element paths, and the counts by kind, level and classification.
const sanitizerTruth = `
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
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
rows, kinds, levels, classes, hazards, errors = [], {}, {}, {}, 0, 0
for n, r in enumerate(root.findall("record")):
    src, dst = r.find("what/source"), r.find("what/destination")
    row = {"index": n, "kind": t(r, "kind"), "level": t(r, "level"),
        "text": t(r, "what/text"), "error": t(r, "what/error"), "api": t(r, "what/api"), "api_result": i(r, "what/result"),
        "space": t(r, "what/space"), "direction": t(r, "what/direction"), "size": i(r, "what/size"), "address": t(r, "what/address"),
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
    elif row["space"] or row["direction"] or row["address"]: c = "memory_access"
    else: c = "other"
    row["classification"] = c
    rows.append(row)
    kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    if row["level"] is not None: levels[row["level"]] = levels.get(row["level"], 0) + 1
    classes[c] = classes.get(c, 0) + 1
    hazards += row["hazard_count"] or 0
    errors += 1 if row["level"] == "Error" or c == "api_error" else 0
json.dump({"rows": rows, "metrics": {"record_count": len(rows), "kinds": kinds, "levels": levels, "classifications": classes,
    "hazard_count": hazards, "error_count": errors, "clean": len(rows) == 0}}, sys.stdout)
`

func inputOf(t *testing.T, path string) providers.Input {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return providers.Input{Path: path, Format: gen.FormatComputeSanitizer, Size: st.Size()}
}

// asJSON round-trips v through JSON into generic values.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	return testtool.JSONValue(t, v)
}

// pageAll encodes every row of an analysis.
func pageAll(t *testing.T, a *providers.Analysis) []any {
	t.Helper()
	page, err := a.Rows.Page(context.Background(), 0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := []any{}
	for _, r := range page.Rows {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestSanitizerCorpusAgainstElementTree(t *testing.T) {
	py := testtool.Require(t, "python3")
	for _, tt := range []struct {
		file             string
		records, hazards int
	}{
		{"h200__sanitizer-memcheck-oob.xml", 2, 0},
		{"h200__sanitizer-racecheck.xml", 1, 127},
		{"h200__sanitizer-memcheck-clean.xml", 0, 0},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := testtool.Corpus(t, tt.file)
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
			a, err := inspectSanitizer(context.Background(), &providers.Request[gen.NoFields]{Inputs: []providers.Input{inputOf(t, path)}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(want.Rows, pageAll(t, a)); diff != "" {
				t.Errorf("rows differ from xml.etree (-etree +flameox):\n%s", diff)
			}
			if diff := gocmp.Diff(want.Metrics, asJSON(t, a.Metrics)); diff != "" {
				t.Errorf("metrics differ from xml.etree (-etree +flameox):\n%s", diff)
			}
			// The corpus README's own account of each log.
			if got := len(want.Rows); got != tt.records {
				t.Errorf("etree read %d records, the corpus README says %d", got, tt.records)
			}
			if got := want.Metrics["hazard_count"].(float64); int(got) != tt.hazards {
				t.Errorf("etree counted %v hazards, the corpus README says %d", got, tt.hazards)
			}
			clean := tt.records == 0
			if hasLim := len(a.Limitations) == 1 && strings.HasPrefix(a.Limitations[0], "no_errors_recorded"); hasLim != clean {
				t.Errorf("limitations %q; want the no_errors_recorded limitation only for the clean log", a.Limitations)
			}
		})
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
			_, err := readSanitizer(context.Background(), inputOf(t, p))
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
