package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestToolsListAdvertisesTheCeilings checks that tools/list's page_size and limits maxima
// are this server's ceilings, at the default and under --limits, that a value between
// the ceiling and the contract's maximum is still LIMIT_EXCEEDED with its safe retry,
// and that query_evidence's own page_size is left alone (decision 0043).
func TestToolsListAdvertisesTheCeilings(t *testing.T) {
	for _, c := range []struct {
		name           string
		limits         string
		maxRows, bytes float64
	}{
		{"default", "", 100, 67108864},
		{"startup limits", `{"max_rows":7,"max_result_bytes":8192}`, 7, 8192},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := connect(t, c.limits)
			res, err := s.cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range res.Tools {
				b, _ := json.Marshal(tl.InputSchema)
				var schema struct {
					Properties struct {
						PageSize *struct{ Maximum float64 } `json:"page_size"`
						Limits   *struct {
							Properties map[string]struct{ Maximum float64 }
						} `json:"limits"`
					}
				}
				if err := json.Unmarshal(b, &schema); err != nil {
					t.Fatal(err)
				}
				p := schema.Properties
				switch {
				case tl.Name == "query_evidence":
					if p.PageSize == nil || p.PageSize.Maximum != 200 {
						t.Errorf("query_evidence page_size %+v, want its own maximum 200", p.PageSize)
					}
				case p.Limits != nil:
					if p.PageSize == nil || p.PageSize.Maximum != c.maxRows {
						t.Errorf("%s page_size %+v, want maximum %v", tl.Name, p.PageSize, c.maxRows)
					}
					if got := p.Limits.Properties["max_rows"].Maximum; got != c.maxRows {
						t.Errorf("%s limits.max_rows maximum %v, want %v", tl.Name, got, c.maxRows)
					}
					if got := p.Limits.Properties["max_result_bytes"].Maximum; got != c.bytes {
						t.Errorf("%s limits.max_result_bytes maximum %v, want %v", tl.Name, got, c.bytes)
					}
				}
			}
			example, err := filepath.Abs("../../examples/aiperf_profile_export.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			over := c.maxRows + 1
			got, isErr := s.preview(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": example}}, "page_size": over})
			retry, _ := got["details"].(map[string]any)["safe_retry"].(map[string]any)
			if !isErr || got["code"] != "LIMIT_EXCEEDED" || retry["max_rows"] != c.maxRows {
				t.Errorf("page_size %v: %v %v %v, want LIMIT_EXCEEDED with safe_retry max_rows %v", over, isErr, got["code"], got["message"], c.maxRows)
			}
			got, isErr = s.preview(map[string]any{"sources": []any{map[string]any{"kind": "path", "path": example}}, "page_size": 1001})
			if !isErr || got["code"] != "INVALID_INPUT" {
				t.Errorf("page_size 1001: %v %v, want INVALID_INPUT (above the contract's maximum)", got["code"], got["message"])
			}
		})
	}
}
