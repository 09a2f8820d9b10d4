package xctrace

import (
	"bytes"
	"strings"
)

// IsExport reports whether a file starting with head is an xctrace export: its root
// element, after the XML declaration, is <trace-query-result>.
func IsExport(head []byte) bool {
	return bytes.Contains(head, []byte("<trace-query-result"))
}

// IsDirectory reports whether a directory whose top-level entries are names is an
// Instruments trace: a .trace bundle (form.template beside the run data), or a directory
// holding exactly one entry named *.trace (the xctrace collector's artifact).
func IsDirectory(names []string) bool {
	if len(names) == 1 && strings.HasSuffix(strings.ToLower(names[0]), ".trace") {
		return true
	}
	form, data := false, false
	for _, n := range names {
		switch {
		case n == "form.template":
			form = true
		case n == "corespace" || n == "instrument_data" || n == "shared_data" || n == "open.creq" || strings.HasSuffix(n, ".run"):
			data = true
		}
	}
	return form && data
}
