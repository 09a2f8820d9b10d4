package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

var (
	parquetDirOnce sync.Once
	parquetDir     string
	parquetDirErr  error
)

// corpusParquetDir is the corpus SQLite export converted in the test into the layout of
// nsys export --type parquetdir (testtool.NsysParquetDir: python3's sqlite3 reads every
// table, parquet-go writes one <TABLE>.parquet each). It is a conversion, not nsys output.
func corpusParquetDir(t *testing.T) string {
	t.Helper()
	corpus := corpusFile(t, nsysCorpus)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	parquetDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "flameox-nsys-parquetdir-test-")
		if err != nil {
			parquetDirErr = err
			return
		}
		parquetDir = filepath.Join(d, "report_pqtdir")
		parquetDirErr = testtool.NsysParquetDir(py, corpus, parquetDir)
	})
	if parquetDirErr != nil {
		t.Fatal(parquetDirErr)
	}
	return parquetDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if parquetDir != "" {
		os.RemoveAll(filepath.Dir(parquetDir))
	}
	os.Exit(code)
}

func parquetInput(t *testing.T, dir string) providers.Input {
	t.Helper()
	members, _, _, err := sourcefile.HashDirectory(context.Background(), dir, 1000, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return providers.Input{Path: dir, Format: gen.FormatNsysParquet, Members: members}
}

// pageJSON is what a page shows: its rows, whether more follow, and the metrics.
func pageJSON(t *testing.T, a *providers.Analysis, offset, limit int64) string {
	t.Helper()
	p, err := a.Rows.Page(context.Background(), offset, limit, nil)
	if err != nil {
		t.Fatalf("page at %d: %v", offset, err)
	}
	m := map[string]any{}
	for k, v := range a.Metrics {
		m[k] = v
	}
	for k, v := range p.Metrics {
		m[k] = v
	}
	b, err := json.MarshalIndent(map[string]any{"rows": p.Rows, "more": p.More, "observed": p.Observed, "limited": p.Limited, "metrics": m}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNsysParquetEqualsSQLite runs every operation that reads Nsight Systems exports on
// the corpus SQLite export and on the parquetdir converted from it: the first page and a
// continued page (a new analysis, as a continuation is) must be byte-identical JSON,
// rows and metrics, and the parquetdir names its own reader.
func TestNsysParquetEqualsSQLite(t *testing.T) {
	sqlite := providers.Input{Path: corpusFile(t, nsysCorpus), Format: gen.FormatNsysSqlite}
	pq := parquetInput(t, corpusParquetDir(t))
	ops := []struct {
		name    string
		analyze func(providers.Input) (*providers.Analysis, error)
		offset  int64
	}{
		{"summarize_trace", withFields(summarize), 5000},
		{"summarize_trace_operations", withFields(summarizeOperations), 20},
		{"summarize_trace_lifecycle", withFields(summarizeLifecycle), 12000},
		{"inspect_trace_call_graph", withFields(callGraph), 10},
		{"inspect_gpu_launches", withFields(inspectLaunches), 2000},
		{"inspect_trace_window", func(in providers.Input) (*providers.Analysis, error) {
			return window(context.Background(), &providers.Request[gen.WindowFields]{Inputs: []providers.Input{in},
				Fields: &gen.WindowFields{StartNS: json.Number("400000000"), EndNS: json.Number("9223372036854775807")}})
		}, 3000},
		// View "tables": all 52 tables, and the operation's own filter.
		{"summarize_trace tables", func(in providers.Input) (*providers.Analysis, error) {
			return summarize(context.Background(), sliceReq(tablesReq(in)))
		}, 9000},
		{"summarize_trace_operations tables", func(in providers.Input) (*providers.Analysis, error) {
			return summarizeOperations(context.Background(), sliceReq(tablesReq(in)))
		}, 7500},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for _, offset := range []int64{0, op.offset} {
				want, err := op.analyze(sqlite)
				if err != nil {
					t.Fatal(err)
				}
				got, err := op.analyze(pq)
				if err != nil {
					t.Fatal(err)
				}
				if got.Provider != nsysParquetProvider() {
					t.Errorf("provider %+v, want nsight-systems-parquetdir parquetdir-v1", got.Provider)
				}
				w, g := pageJSON(t, want, offset, 100), pageJSON(t, got, offset, 100)
				if w != g {
					t.Errorf("page at %d (-sqlite +parquetdir):\n%s", offset, cmp.Diff(w, g))
				}
				if len(w) < 500 {
					t.Errorf("page at %d is nearly empty:\n%s", offset, w)
				}
			}
		})
	}
}

// TestNsysParquetDetection: the directory detector recognizes the parquetdir by its
// top-level names, and nothing else.
func TestNsysParquetDetection(t *testing.T) {
	dir := corpusParquetDir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	r := providers.NewRegistry()
	Register(r)
	if got := r.DetectDirectory(names); !cmp.Equal(got, []gen.Format{gen.FormatNsysParquet}) {
		t.Errorf("detected %v, want [nsys-parquet]", got)
	}
	if !r.IsDirectoryFormat(gen.FormatNsysParquet) {
		t.Error("nsys-parquet is not a directory format")
	}
	for _, names := range [][]string{
		{"StringIds.parquet"},
		{"CUPTI_ACTIVITY_KIND_KERNEL.parquet", "NVTX_EVENTS.parquet"},
		{"StringIds.csv", "NVTX_EVENTS.csv"},
		{"a.parquet", "b.parquet"},
	} {
		if got := r.DetectDirectory(names); len(got) != 0 {
			t.Errorf("%v detected as %v", names, got)
		}
	}
}

// TestNsysParquetUnsupported: a declared nsys-parquet source that is not a parquetdir
// export is UNSUPPORTED_FORMAT (a directory of other Parquet files, a file); a table
// that is not Parquet is DECODE_FAILURE.
func TestNsysParquetUnsupported(t *testing.T) {
	src := corpusParquetDir(t)
	other := t.TempDir()
	for _, n := range []string{"a.parquet", "StringIds.parquet"} {
		b, err := os.ReadFile(filepath.Join(src, "StringIds.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken := t.TempDir()
	for _, n := range []string{"StringIds.parquet", "CUPTI_ACTIVITY_KIND_KERNEL.parquet"} {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if n == "CUPTI_ACTIVITY_KIND_KERNEL.parquet" {
			b = b[:len(b)/2]
		}
		if err := os.WriteFile(filepath.Join(broken, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := providers.Input{Path: filepath.Join(src, "StringIds.parquet"), Format: gen.FormatNsysParquet}
	unsupported := func(err error) bool { var e *providers.UnsupportedError; return errors.As(err, &e) }
	decode := func(err error) bool { var e *providers.DecodeError; return errors.As(err, &e) }
	for _, c := range []struct {
		name string
		in   providers.Input
		want func(error) bool
	}{
		{"no_nsys_tables", parquetInput(t, other), unsupported},
		{"a_file", file, unsupported},
		{"truncated_table", parquetInput(t, broken), decode},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := inspectLaunches(context.Background(), &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{c.in}})
			if !c.want(err) {
				t.Fatalf("got %T %v", err, err)
			}
			if strings.Contains(err.Error(), os.TempDir()) {
				t.Errorf("message %q names a host path", err)
			}
		})
	}
}

// TestNsysParquetScratchRemoved: the scratch database is gone after an eager analysis
// and after a lazy analysis's page.
func TestNsysParquetScratchRemoved(t *testing.T) {
	pq := parquetInput(t, corpusParquetDir(t))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	req := &providers.Request[gen.TableViewFields]{Fields: &gen.TableViewFields{}, Inputs: []providers.Input{pq}}
	if _, err := summarizeOperations(context.Background(), sliceReq(req)); err != nil {
		t.Fatal(err)
	}
	a, err := inspectLaunches(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Rows.Page(context.Background(), 0, 10, nil); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("scratch left behind: %v", left)
	}
}

// withFields runs an analyzer on one input with its fields' zero value.
func withFields[F any](f func(context.Context, *providers.Request[F]) (*providers.Analysis, error)) func(providers.Input) (*providers.Analysis, error) {
	return func(in providers.Input) (*providers.Analysis, error) {
		return f(context.Background(), &providers.Request[F]{Fields: new(F), Inputs: []providers.Input{in}})
	}
}

// TestNsysParquetDecodedBound: a parquetdir of a few kilobytes whose dictionary decodes to
// a gibibyte (issue 40) fails typed at 64 times its Parquet files' bytes, in bounded
// memory; one whose dictionary page alone declares more decompressed bytes than the bound
// fails before any row is read.
func TestNsysParquetDecodedBound(t *testing.T) {
	for _, c := range []struct {
		name string
		bomb testtool.ParquetBomb
		what string
	}{
		{"values", testtool.ParquetBomb{Rows: 1 << 20, ValueBytes: 1 << 10}, "their values"},
		{"declared pages", testtool.ParquetBomb{Rows: 4, ValueBytes: 16 << 20}, "its pages declare"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "report_pqtdir")
			size, err := c.bomb.Write(dir)
			if err != nil {
				t.Fatal(err)
			}
			bound := parquetExpansion * size
			if size > 64<<10 || c.bomb.Decoded() < 1000*size {
				t.Fatalf("the directory is %d bytes and decodes to %d: not a bomb", size, c.bomb.Decoded())
			}
			var err2 error
			peak := testtool.PeakHeap(func() {
				_, err2 = withFields(inspectLaunches)(parquetInput(t, dir))
			})
			var le *providers.LimitError
			if !errors.As(err2, &le) {
				t.Fatalf("got %T %v, want a LimitError", err2, err2)
			}
			if le.Limit != bound || le.Unit != "bytes" || le.Details["reason"] != "parquet_decoded_bytes" || le.Details["input_bytes"] != size {
				t.Errorf("limit %d %s %v, want %d bytes (64 x %d)", le.Limit, le.Unit, le.Details, bound, size)
			}
			if !strings.Contains(le.Message, c.what) || !strings.Contains(le.Message, fmt.Sprint(bound)) || strings.Contains(le.Message, dir) {
				t.Errorf("message %q", le.Message)
			}
			if peak > 64<<20 {
				t.Errorf("the load held %d bytes of heap", peak)
			}
			t.Logf("%d bytes on disk, %d decoded, bound %d, peak heap %d", size, c.bomb.Decoded(), bound, peak)
		})
	}
}
