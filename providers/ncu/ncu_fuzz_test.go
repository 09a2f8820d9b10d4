package ncu

import (
	"bytes"
	"context"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// FuzzDecodeCSV: go test ./providers/ncu -run '^$' -fuzz FuzzDecodeCSV -fuzztime 1m
func FuzzDecodeCSV(f *testing.F) {
	fuzztool.Corpus(f, "h200__ncu-saxpy-details.csv", "h200__ncu-saxpy-raw.csv", "nsightful__ncu-copy_blocked.csv")
	const launch = `"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",`
	for _, s := range []string{
		``, `a,b`,
		launch + `"Section Name","Metric Name","Metric Unit","Metric Value"` + "\n" +
			`"0","1","p","h","k","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","Speed Of Light","Duration","usecond","2.5"` + "\n",
		launch + `"dram__bytes.sum","gpu__time_duration.sum"` + "\n" + `"","","","","","","","","","","","byte","nsecond"` + "\n" +
			`"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,024","2,000"` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newReport()
		err := decodePage(context.Background(), bytes.NewReader(b), 0, keepAll, r)
		fuzztool.CheckError(t, err)
		if err != nil {
			return
		}
		fuzztool.NonNegative(t, "metrics", r.metrics)
		fuzztool.NonNegative(t, "observed", r.observed)
		if int64(len(r.entries)) > r.rows() {
			t.Fatalf("%d entries kept of %d rows", len(r.entries), r.rows())
		}
		for _, e := range r.entries {
			if e.launch < 0 || int(e.launch) >= len(r.launches) {
				t.Fatalf("entry names launch %d of %d", e.launch, len(r.launches))
			}
		}
	})
}
