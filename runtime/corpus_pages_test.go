package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
)

// maxDefaultPageBytes is what an agent host takes in one tool result (~25,000 tokens).
const maxDefaultPageBytes = 100 * 1024

// maxComparedRows bounds how many rows of one file are paged and compared.
const maxComparedRows = 1500

// pageAll follows next_page from a first call, collecting rows, until the population
// ends or maxComparedRows are collected; it checks every page against the size bound.
func pageAll(t *testing.T, rt *Runtime, tool string, args map[string]any, bound int) (rows []string, stopped bool) {
	t.Helper()
	for page := 0; ; page++ {
		raw, _ := json.Marshal(args)
		res, f := rt.Analyze(context.Background(), tool, raw)
		if f != nil && f.Code == gen.FailureCodeLimitExceeded && fmt.Sprint(f.FieldPath) == "[limits max_result_bytes]" && bound > 0 {
			// One row alone passes the default byte budget (a binary file read as text, a
			// huge JSON entry): a typed stop, and the rows before it still compare.
			return rows, true
		}
		if f != nil {
			t.Fatalf("%s page %d: %v", tool, page, f)
		}
		b, _ := json.Marshal(res)
		if bound > 0 && len(b) > bound {
			t.Errorf("%s page %d is %d bytes of text, over %d", tool, page, len(b), bound)
		}
		table := res.Blocks[len(res.Blocks)-1].(TableBlock)
		for _, r := range table.Rows {
			rows = append(rows, string(r))
		}
		if res.NextPage == nil || len(rows) >= maxComparedRows {
			return rows, false
		}
		nb, _ := json.Marshal(res.NextPage.Arguments)
		args = nil
		json.Unmarshal(nb, &args)
	}
}

// TestCorpusPagesAreBoundedAndConsistent takes every corpus file and every released
// operation that reads its detected format: the default page is at most 100 KB of text,
// and the rows paged with the default byte budget equal the rows of large pages.
func TestCorpusPagesAreBoundedAndConsistent(t *testing.T) {
	dir := testtool.CorpusDirOrSkip(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the shared corpus is missing: %v", err)
	}
	rt := newRuntime(t)
	// Large pages need a server started with a higher result ceiling (limits only lower).
	big, err := New(all.Registry(), []byte(`{"max_result_bytes":67108864,"max_rows":1000}`), WithStoreDir(filepath.Join(t.TempDir(), "store")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(big.Close)
	checked := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "README.md" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		for _, op := range gen.Operations {
			if !op.Released {
				continue
			}
			sources := []any{pathSource(path)}
			if op.MinSources == 2 {
				sources = append(sources, pathSource(path))
			}
			base := map[string]any{"sources": sources}
			if op.Name == gen.OperationNameAnalyzeBenchmarkScaling {
				base["input_dimension"] = "n"
			}
			raw, _ := json.Marshal(base)
			if _, f := rt.Analyze(context.Background(), string(op.Name), raw); f != nil {
				// The operation does not read this file (format, content): nothing to page.
				continue
			}
			t.Run(e.Name()+"/"+string(op.Name), func(t *testing.T) {
				paged, stopped := pageAll(t, rt, string(op.Name), base, maxDefaultPageBytes)
				large := map[string]any{"page_size": 1000}
				for k, v := range base {
					large[k] = v
				}
				whole, _ := pageAll(t, big, string(op.Name), large, 0)
				n := min(len(whole), maxComparedRows)
				if stopped {
					n = min(n, len(paged))
				}
				if len(paged) < n {
					t.Fatalf("paging returned %d rows, large pages %d", len(paged), len(whole))
				}
				for i := range n {
					if paged[i] != whole[i] {
						t.Fatalf("row %d differs:\npaged %s\nlarge %s", i, paged[i], whole[i])
					}
				}
			})
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d file and operation pairs were checked", checked)
	}
}
