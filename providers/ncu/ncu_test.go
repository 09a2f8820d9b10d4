package ncu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// truthRow is one row as testdata/truth.py (Python's csv module) reads it.
type truthRow struct {
	Kind    string   `json:"kind"`
	Launch  int64    `json:"launch"`
	Section string   `json:"section"`
	Metric  string   `json:"metric,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Value   any      `json:"value,omitempty"`
	Rule    string   `json:"rule,omitempty"`
	Type    string   `json:"type,omitempty"`
	Speedup *float64 `json:"speedup,omitempty"`
}

type truth struct {
	Rows   []truthRow                  `json:"rows"`
	Counts map[string]map[string]int64 `json:"counts"`
}

func pythonTruth(t *testing.T, path string) truth {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "testdata/truth.py", path).Output()
	if err != nil {
		t.Fatalf("truth.py: %v", err)
	}
	var tr truth
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func decodeFile(t *testing.T, path string, keep page) *report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newReport()
	if err := decodePage(context.Background(), f, 0, keep, r); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return r
}

// asTruth projects the decoded rows onto truth.py's shape.
func asTruth(r *report) ([]truthRow, map[string]map[string]int64) {
	var rows []truthRow
	counts := map[string]map[string]int64{}
	for i := range r.entries {
		row := r.row(i)
		tr := truthRow{Kind: row.EvidenceKind, Launch: row.LaunchID}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		tr.Section = str(row.Section)
		if row.EvidenceKind == "measurement" {
			tr.Metric, tr.Unit = str(row.Metric), str(row.Unit)
			switch v := row.Value.(type) {
			case json.Number:
				f, _ := v.Float64()
				tr.Value = f
			default:
				tr.Value = v
			}
		} else {
			tr.Rule, tr.Type, tr.Speedup = str(row.Rule), str(row.RuleType), row.EstimatedSpeedup
		}
		rows = append(rows, tr)
		k := strconv.FormatInt(row.LaunchID, 10)
		if counts[k] == nil {
			counts[k] = map[string]int64{"measurement": 0, "observation": 0}
		}
		counts[k][row.EvidenceKind]++
	}
	return rows, counts
}

func TestCorpusPagesAgainstPythonCSV(t *testing.T) {
	for _, tc := range []struct {
		file                   string
		launches, metrics, obs int64
		sections               int
	}{
		{"h200__ncu-saxpy-details.csv", 3, 150, 6, 5},
		{"h200__ncu-saxpy-raw.csv", 3, 3 * 555, 0, 0},
		{"h200__ncu-torch-matmul-gelu-details.csv", 3, 150, 12, 7},
		{"nsightful__ncu-copy_blocked.csv", 1, 72, 11, 19},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := testtool.Corpus(t, tc.file)
			want := pythonTruth(t, path)
			r := decodeFile(t, path, keepAll)
			rows, counts := asTruth(r)
			// Python's float() also reads numbers as numbers: the two must agree on every value.
			if diff := cmp.Diff(want.Rows, rows); diff != "" {
				t.Errorf("rows (-python +flameox):\n%s", diff)
			}
			if diff := cmp.Diff(want.Counts, counts); diff != "" {
				t.Errorf("per-launch counts (-python +flameox):\n%s", diff)
			}
			got := []int64{int64(len(r.launches)), r.metrics, r.observed, int64(len(r.sections))}
			if diff := cmp.Diff([]int64{tc.launches, tc.metrics, tc.obs, int64(tc.sections)}, got); diff != "" {
				t.Errorf("launches, metrics, observations, sections:\n%s", diff)
			}
		})
	}
}

// TestThousandsSeparators checks values printed with separators against the figures the
// corpus README states, read independently with Python.
func TestThousandsSeparators(t *testing.T) {
	path := testtool.Corpus(t, "nsightful__ncu-copy_blocked.csv")
	r := decodeFile(t, path, keepAll)
	var duration, dram any
	for i := range r.entries {
		row := r.row(i)
		if row.Metric == nil {
			continue
		}
		switch *row.Metric {
		case "Duration":
			duration = row.Value
		case "DRAM Frequency":
			dram = row.Value
		}
	}
	want := []any{json.Number("21058944"), json.Number("4963609951.19")}
	if diff := cmp.Diff(want, []any{duration, dram}); diff != "" {
		t.Error(diff)
	}
}

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		num  bool
	}{
		{"21,058,944", "21058944", true},
		{"3.19", "3.19", true},
		{"0", "0", true},
		{"-1,000.5", "-1000.5", true},
		{"+7", "7", true},
		{"007", "7", true},
		{"1e3", "1e3", true},
		{"1,2", "1,2", false},
		{"12,34,567", "12,34,567", false},
		{"n/a", "n/a", false},
		{"(256, 1, 1)", "(256, 1, 1)", false},
		{"inf", "inf", false},
		{"", "", false},
	} {
		v, num := parseValue(tc.in)
		if v != tc.want || num != tc.num {
			t.Errorf("parseValue(%q) = %q, %v; want %q, %v", tc.in, v, num, tc.want, tc.num)
		}
	}
}

func TestMalformed(t *testing.T) {
	head := `"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"` + "\n"
	launch := `"0","1","k","h","kern","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0",`
	for _, tc := range []struct {
		name, in string
		want     any
	}{
		{"empty", "", &providers.DecodeError{}},
		{"other csv", "a,b,c\n1,2,3\n", &providers.UnsupportedError{}},
		{"bad id", head + `"x"` + launch[3:] + `"S","M","u","1",` + "\n", &providers.DecodeError{}},
		{"too many fields", head + launch + strings.Repeat(`"a",`, 10) + `"a"` + "\n", &providers.DecodeError{}},
		{"too few fields", head + launch + `"S"` + "\n", &providers.DecodeError{}},
		{"bad quote", head + launch + `"S","M","u","1` + "\n", &providers.DecodeError{}},
		{"raw ragged", `"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","m"` + "\n" + launch[:len(launch)-1] + "\n", &providers.DecodeError{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decodePage(context.Background(), strings.NewReader(tc.in), 0, keepAll, newReport())
			switch tc.want.(type) {
			case *providers.DecodeError:
				var e *providers.DecodeError
				if !errors.As(err, &e) {
					t.Fatalf("err = %T %v, want a DecodeError", err, err)
				}
			case *providers.UnsupportedError:
				var e *providers.UnsupportedError
				if !errors.As(err, &e) {
					t.Fatalf("err = %T %v, want an UnsupportedError", err, err)
				}
			}
		})
	}
}

func TestLineBound(t *testing.T) {
	head := `"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","m"` + "\n"
	long := head + `"0"` + strings.Repeat(`,"1"`, 10) + "," + strings.Repeat("x", maxLineBytes) + "\n"
	err := decodePage(context.Background(), strings.NewReader(long), 0, keepAll, newReport())
	var le *providers.LimitError
	if !errors.As(err, &le) || le.Limit != maxLineBytes {
		t.Fatalf("err = %T %v, want the line bound", err, err)
	}
}

func TestDetect(t *testing.T) {
	head, err := os.ReadFile(testtool.Corpus(t, "h200__ncu-saxpy-raw.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !IsCSVHead(head[:256]) || IsCSVHead([]byte("ID,Process ID\n")) {
		t.Error("CSV head detection")
	}
	rep, err := os.ReadFile(testtool.Corpus(t, "h200__ncu-saxpy.ncu-rep"))
	if err != nil {
		t.Fatal(err)
	}
	if !detectors[0].Match("x", rep[:64]) {
		t.Error("the native report's magic is not recognized")
	}
}
