package all

import (
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// TestExtensions: a format's file extension is its family's (issue 37 item 5: "A format
// owns its media type; cmd/ keeps no per-format table"): declared by its detector, else
// the first suffix it is recognized by, else its container's. Every one is a dot and
// letters the viewer can put in a download name.
func TestExtensions(t *testing.T) {
	r := Registry()
	for f, want := range map[gen.Format]string{
		gen.FormatPstats: ".pstats", gen.FormatPprof: ".pprof", gen.FormatPerfData: ".data",
		gen.FormatChromeTrace: ".json", gen.FormatPyperf: ".json", gen.FormatRocprofPftrace: ".pftrace",
		gen.FormatComputeSanitizer: ".xml", gen.FormatTritonCache: ".autotune.json", gen.FormatText: ".txt",
	} {
		if got := r.Extension(f); got != want {
			t.Errorf("Extension(%s) = %q, want %q", f, got, want)
		}
	}
	for _, f := range gen.FormatValues() {
		ext := r.Extension(f)
		if ext == "" {
			continue
		}
		if !strings.HasPrefix(ext, ".") || strings.Trim(ext, ".abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Errorf("Extension(%s) = %q: not a dot and lowercase letters, digits and dashes", f, ext)
		}
	}
}
