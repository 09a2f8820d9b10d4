package kernelval

import (
	"encoding/json"
	"testing"

	"github.com/flameox/flameox/providers/internal/fuzztool"
)

// FuzzDecodeDocument: go test ./providers/kernelval -run '^$' -fuzz FuzzDecodeDocument -fuzztime 1m
func FuzzDecodeDocument(f *testing.F) {
	b, err := json.Marshal(doc())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{`{}`, `[]`, `{"schema_version":"flameox.kernel-validation.v1"}`,
		`{"schema_version":"flameox.kernel-validation.v2","producer":"p","status":"pass","coverage_complete":true,"cases":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decode(b)
		fuzztool.CheckError(t, err)
		if err == nil && d == nil {
			t.Fatal("no document and no error")
		}
	})
}
