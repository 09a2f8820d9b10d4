package preview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// Register adds preview_artifact, the direct capture provider (its console is the
// artifact) and the detectors of the text, JSON, JSONL, CSV and Parquet formats and of
// directory sources. Binary formats other families detect are previewed as their header
// view (header.go).
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNamePreviewArtifact, analyze))
	r.Collector(providers.Collect(providers.CollectorSpec[gen.DirectProvider]{Kind: "direct"}))
	r.Detector(providers.Detector{Format: gen.FormatParquet, Suffixes: []string{".parquet"},
		Match: func(_ string, head []byte) bool { return bytes.HasPrefix(head, []byte("PAR1")) }})
	r.Detector(providers.Detector{Format: gen.FormatJsonl, Suffixes: []string{".jsonl", ".ndjson"}, Container: gen.FormatText})
	r.Detector(providers.Detector{Format: gen.FormatCSV, Suffixes: []string{".csv"}, Container: gen.FormatText})
	r.Detector(providers.Detector{Format: gen.FormatJSON, Suffixes: []string{".json"}, Fallback: true, Container: gen.FormatText,
		Match: func(_ string, head []byte) bool {
			t := bytes.TrimLeft(head, " \t\r\n\ufeff")
			return len(t) > 0 && (t[0] == '{' || t[0] == '[')
		}})
	r.Detector(providers.Detector{Format: gen.FormatText, Suffixes: []string{".txt", ".log"}, Fallback: true,
		Match: func(string, []byte) bool { return true }})
	// Any directory is a directory source (catalog section 2: "any directory ->
	// directory"). Only preview_artifact accepts it; an operation that reads a specific
	// directory format (nsys-parquet) never sees it, as the runtime takes the first
	// detected format the operation accepts.
	r.Detector(providers.Detector{Format: gen.FormatDirectory, Directory: func([]string) bool { return true }})
}

// headerLimitation explains header views (decision 0058).
const headerLimitation = "A binary profile, trace, report or database is previewed as its header view: format, size_bytes, magic, recognized (with the reason when the content is not that format) and the format's own header fields, not its records; the operations that accept its format read its contents."

// fragmentLimitation explains fragment mode.
const fragmentLimitation = "Text fragments are decoded with invalid UTF-8 replaced, so they are not byte-exact slices; offsets count fragments, and a fragment is line_terminated only when it ends with LF."

func analyze(ctx context.Context, req *providers.Request[gen.PreviewFields]) (*providers.Analysis, error) {
	fragments := 0
	if n := req.Fields.TextFragmentChars; n != nil {
		fragments = int(*n)
		for _, in := range req.Inputs {
			if in.Format != gen.FormatText {
				return nil, &providers.FieldError{Field: []any{"text_fragment_chars"}, Accepted: []string{"text"},
					Message: fmt.Sprintf("text_fragment_chars applies to text sources only; source %d is %s", in.Index, in.Format),
					Details: map[string]any{"option": "text_fragment_chars", "accepted_formats": []string{"text"}, "source_index": in.Index}}
			}
		}
	}
	srcs := make([]Source, len(req.Inputs))
	for i, in := range req.Inputs {
		if in.Format == gen.FormatDirectory && in.Members == nil {
			return nil, &providers.UnsupportedError{Source: in.Index,
				Message: fmt.Sprintf("source %d is a file, not a directory; declare its own format or omit format", in.Index)}
		}
		srcs[i] = Source{Path: in.Path, Format: in.Format, SHA256: in.SHA256, Size: in.Size, Members: in.Members}
	}
	a := &providers.Analysis{
		Provider:    gen.Provider{ID: "flameox"},
		Metrics:     map[string]any{"input_count": len(srcs)},
		Rows:        rows{sources: srcs, fragments: fragments, maxBytes: req.Limits.MaxInputBytes},
		Offset:      req.Fields.Offset,
		OffsetField: "offset",
	}
	if fragments > 0 {
		a.Limitations = []string{fragmentLimitation}
	}
	for _, src := range srcs {
		if _, ok := headerViews[src.Format]; ok {
			a.Limitations = append(a.Limitations, headerLimitation)
			break
		}
	}
	return a, nil
}

// rows pages the sources lazily: each page streams from the offset.
type rows struct {
	sources   []Source
	fragments int
	maxBytes  int64
}

func (r rows) Page(ctx context.Context, offset, limit int64, fits func(json.RawMessage) bool) (*providers.Page, error) {
	p, err := Read(ctx, r.sources, Options{Offset: offset, MaxRows: int(limit), FragmentChars: r.fragments, Fits: fits, MaxSourceBytes: r.maxBytes})
	if err != nil {
		return nil, err
	}
	page := &providers.Page{Rows: p.Rows, Observed: p.Observed, More: !p.Complete,
		Metrics: map[string]any{"row_count": len(p.Rows)}}
	// The population, when the readers know it: at the end of the sources, or from
	// Parquet footers.
	if p.Complete {
		page.Metrics["population"] = p.Population
	} else if n, ok := Population(r.sources); ok {
		page.Metrics["population"] = n
	}
	if !p.Complete {
		for _, s := range r.sources {
			if s.Format == gen.FormatJSON {
				page.Limitations = append(page.Limitations, "The page stops before the end of a JSON document; JSON after this page has not been validated.")
				break
			}
		}
	}
	if p.Complete && len(p.Rows) == 0 {
		page.Limitations = append(page.Limitations, "The sources hold no logical rows.")
	}
	return page, nil
}
