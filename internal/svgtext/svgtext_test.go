package svgtext

import (
	"encoding/xml"
	"strings"
	"testing"
)

// TestEscapeKeepsSVGWellFormed: a name holding any control character, U+FFFE or invalid
// UTF-8 escapes into text and attribute values that XML parses (issue 40: the charts
// used html.EscapeString, which left them raw).
func TestEscapeKeepsSVGWellFormed(t *testing.T) {
	for r := rune(0); r < 0xa0; r++ {
		if r >= 0x20 && r < 0x7f {
			continue
		}
		for _, s := range []string{"a" + string(r) + "b", "\xff\xfe", "x\uFFFEy", `<&>"'`} {
			doc := "<svg><text title=\"" + Escape(s) + "\">" + Escape(s) + "</text></svg>"
			var v struct{}
			if err := xml.NewDecoder(strings.NewReader(doc)).Decode(&v); err != nil {
				t.Errorf("%q: %v", s, err)
			}
		}
	}
}
