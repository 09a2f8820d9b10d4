package timeline

import (
	"encoding/xml"
	"strings"
	"testing"
)

// TestEscKeepsSVGWellFormed: a name holding any control character, U+FFFE or invalid
// UTF-8 escapes into text that XML parses (issue 40: html.EscapeString left them raw).
func TestEscKeepsSVGWellFormed(t *testing.T) {
	for r := rune(0); r < 0xa0; r++ {
		if r >= 0x20 && r < 0x7f {
			continue
		}
		for _, s := range []string{"a" + string(r) + "b", "\xff\xfe", "x\uFFFEy"} {
			doc := "<svg><text title=\"" + esc(s) + "\">" + esc(s) + "</text></svg>"
			var v struct{}
			if err := xml.NewDecoder(strings.NewReader(doc)).Decode(&v); err != nil {
				t.Errorf("%q: %v", s, err)
			}
		}
	}
}
