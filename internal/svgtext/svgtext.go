// Package svgtext escapes text for the SVG charts the evidence viewer draws (flame
// graphs, timelines, benchmark charts).
package svgtext

import (
	"encoding/xml"
	"strings"
)

// Escape escapes s for SVG text and attribute values. XML 1.0 cannot hold most control
// characters, not even as character references, so a profile's function name with \x01
// or \x0c would make the SVG ill-formed: encoding/xml's EscapeText writes each of them,
// U+FFFE, U+FFFF and invalid UTF-8 as U+FFFD, and tab, newline and carriage return as
// references, so that attribute values keep them.
func Escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
