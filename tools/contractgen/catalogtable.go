package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"strconv"
)

// catalogGo writes catalog_gen.go: the tools of catalog.json (given as written) as a Go
// table of CatalogTool (support.go.tmpl), in the same order, so that a runtime loads its
// catalog without decoding JSON at every start (issue 36: 1.3-2.1 ms of a cold start).
func catalogGo(catalog []byte) ([]byte, error) {
	var cat struct {
		Tools []struct {
			Name        string `json:"name"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Family      string `json:"family"`
			Toolset     string `json:"toolset"`
			Operation   string `json:"operation"`
			Annotations struct {
				ReadOnlyHint    bool  `json:"readOnlyHint"`
				DestructiveHint *bool `json:"destructiveHint"`
				IdempotentHint  bool  `json:"idempotentHint"`
				OpenWorldHint   bool  `json:"openWorldHint"`
			} `json:"annotations"`
			InputSchema  string   `json:"input_schema"`
			OutputSchema string   `json:"output_schema"`
			Providers    []string `json:"capture_providers"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(catalog, &cat); err != nil {
		return nil, fmt.Errorf("catalog.json: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(header + `package contracts

var catalogTrue, catalogFalse = true, false

// CatalogTools are the tools of contracts/catalog.json.
var CatalogTools = []CatalogTool{
`)
	for _, t := range cat.Tools {
		destructive := "nil"
		if d := t.Annotations.DestructiveHint; d != nil {
			destructive = "&catalogFalse"
			if *d {
				destructive = "&catalogTrue"
			}
		}
		providers := "nil"
		if t.Providers != nil {
			providers = "[]string{"
			for i, p := range t.Providers {
				if i > 0 {
					providers += ", "
				}
				providers += strconv.Quote(p)
			}
			providers += "}"
		}
		fmt.Fprintf(&b, "\t{Name: %q, Title: %q, Description: %q, Family: %q, Toolset: %q, Operation: %q,\n"+
			"\t\tAnnotations: CatalogAnnotations{ReadOnlyHint: %t, IdempotentHint: %t, OpenWorldHint: %t, DestructiveHint: %s},\n"+
			"\t\tInputSchema: %q, OutputSchema: %q, CaptureProviders: %s},\n",
			t.Name, t.Title, t.Description, t.Family, t.Toolset, t.Operation,
			t.Annotations.ReadOnlyHint, t.Annotations.IdempotentHint, t.Annotations.OpenWorldHint, destructive,
			t.InputSchema, t.OutputSchema, providers)
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt catalog_gen.go: %w", err)
	}
	return src, nil
}
