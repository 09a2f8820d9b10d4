package xctrace

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/flameox/flameox/providers"
)

// maxTOCBytes bounds the table of contents read (its runs are counted).
const maxTOCBytes = 64 << 20

// Runs counts the runs of the table of contents `xctrace export --toc` wrote of source
// index (<trace-toc><run ...>), reading at most 64 MiB of it. A document that is not
// XML is a DecodeError, and so is one that lists no run.
func Runs(r io.Reader, index int) (int, error) {
	d := xml.NewDecoder(io.LimitReader(r, maxTOCBytes))
	d.Strict = true
	depth, runs, root := 0, 0, false
	bad := func(err error) (int, error) {
		return 0, &providers.DecodeError{Source: index, Message: fmt.Sprintf("the table of contents xctrace exported of source %d is not readable", index), Err: err}
	}
	for {
		t, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bad(err)
		}
		switch e := t.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				root = e.Name.Local == "trace-toc"
			}
			if depth == 2 && root && e.Name.Local == "run" {
				runs++
			}
		case xml.EndElement:
			depth--
		}
	}
	if runs == 0 {
		return 0, &providers.DecodeError{Source: index, Message: fmt.Sprintf("source %d is an Instruments trace without a run: xctrace export --toc lists none", index)}
	}
	return runs, nil
}
