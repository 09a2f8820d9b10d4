package xctrace

import "testing"

// TestDetection: an export is recognized by its root element; a bundle, or a
// directory holding one, by its entries; neighbouring formats are not taken.
func TestDetection(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{`<?xml version="1.0"?>` + "\n<trace-query-result>\n<node xpath='//trace-toc[1]/run[1]/data[1]/table[1]'>", true},
		{`<?xml version="1.0"?><trace-toc><run number="1">`, false},
		{`<?xml version="1.0"?><ComputeSanitizerOutput>`, false},
		{`{"traceEvents":[]}`, false},
	} {
		if got := IsExport([]byte(c.head)); got != c.want {
			t.Errorf("%q: %v", c.head, got)
		}
	}
	bundle := []string{"Trace1.run", "corespace", "form.template", "instrument_data", "open.creq", "shared_data"}
	for _, c := range []struct {
		names []string
		want  bool
	}{
		{bundle, true},
		{[]string{"form.template", "Trace2.run"}, true},
		{[]string{"capture.trace"}, true},
		{[]string{"Run.TRACE"}, true},
		{[]string{"capture.trace", "notes.txt"}, false},
		{[]string{"form.template"}, false},
		{[]string{"TARGET_INFO.parquet", "StringIds.parquet"}, false},
		{[]string{"results.json"}, false},
	} {
		if got := IsDirectory(c.names); got != c.want {
			t.Errorf("%v: %v", c.names, got)
		}
	}
}
