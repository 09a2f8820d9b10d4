package nsys

import "testing"

// TestIsSQLiteHead: the detector takes SQLite named *.sqlite, not coverage.py's data
// files, other names or other heads.
func TestIsSQLiteHead(t *testing.T) {
	head := append([]byte("SQLite format 3\x00"), make([]byte, 84)...)
	for _, c := range []struct {
		name string
		head []byte
		want bool
	}{
		{"report.sqlite", head, true},
		{".coverage", head, false},
		{"x.coverage.sqlite", head, false},
		{"report.db", head, false},
		{"report.sqlite", []byte("{}"), false},
	} {
		if got := IsSQLiteHead(c.name, c.head); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestIsParquetDir: a parquetdir's top-level names hold StringIds and one of the tables
// that mark an export, as Parquet files.
func TestIsParquetDir(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  bool
	}{
		{[]string{"StringIds.parquet", "CUPTI_ACTIVITY_KIND_KERNEL.parquet"}, true},
		{[]string{"StringIds.parquet", "TARGET_INFO_SESSION_START_TIME.parquet", "other.parquet"}, true},
		{[]string{"StringIds.parquet"}, false},
		{[]string{"CUPTI_ACTIVITY_KIND_KERNEL.parquet", "NVTX_EVENTS.parquet"}, false},
		{[]string{"StringIds.csv", "NVTX_EVENTS.csv"}, false},
		{[]string{"Trace1.run", "corespace", "form.template", "instrument_data", "open.creq", "shared_data"}, false},
	} {
		if got := IsParquetDir(c.names); got != c.want {
			t.Errorf("%v: %v, want %v", c.names, got, c.want)
		}
	}
}
