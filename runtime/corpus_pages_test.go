package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers/all"
)

// corpusPageBudget is the max_result_bytes the bounded server is started with (about what an
// agent host takes in one tool result, ~25,000 tokens, less the structured copy), and
// maxPageBytes what one of its pages may take as text.
const (
	corpusPageBudget = 64 * 1024
	maxPageBytes     = 100 * 1024
)

// maxComparedRows bounds how many rows of one file are paged and compared.
const maxComparedRows = 1500

// pageAll follows next_page from a first call, collecting rows, until the population
// ends or maxComparedRows are collected; with a bound, every page holds at most bound
// bytes of text, or is one row alone (a row larger than the budget is returned whole,
// decision 0011).
func pageAll(t *testing.T, rt *Runtime, tool string, args map[string]any, bound int) (rows []string) {
	rows, _ = pageAllFirst(t, rt, tool, args, bound)
	return rows
}

// pageAllFirst is pageAll, also returning the first page.
func pageAllFirst(t *testing.T, rt *Runtime, tool string, args map[string]any, bound int) (rows []string, first *Result) {
	t.Helper()
	for page := 0; ; page++ {
		raw, _ := json.Marshal(args)
		res, f := rt.Analyze(context.Background(), tool, raw)
		if f != nil {
			t.Fatalf("%s page %d: %v", tool, page, f)
		}
		if first == nil {
			first = res
		}
		b, _ := json.Marshal(res)
		table := res.Blocks[len(res.Blocks)-1].(TableBlock)
		if bound > 0 && len(b) > bound && len(table.Rows) > 1 {
			t.Errorf("%s page %d is %d bytes of text in %d rows, over %d", tool, page, len(b), len(table.Rows), bound)
		}
		for _, r := range table.Rows {
			rows = append(rows, string(r))
		}
		if res.NextPage == nil || len(rows) >= maxComparedRows {
			return rows, first
		}
		nb, _ := json.Marshal(res.NextPage.Arguments)
		args = nil
		json.Unmarshal(nb, &args)
	}
}

var updateCorpusDigests = flag.Bool("update-corpus-digests", false, "rewrite testdata/corpus_outputs.txt from this run")

// corpusDigests is the file that records a digest of every corpus output.
const corpusDigests = "testdata/corpus_outputs.txt"

// outputDigest is the SHA-256 of what an analysis says of a file: the provider's id, the
// first page's metrics, coverage and limitations, and the rows of its large pages (the
// inputs, which name host paths, and the version and continuation, which change with
// every release, are left out).
func outputDigest(first *Result, rows []string) string {
	h := sha256.New()
	var metrics []any
	for _, b := range first.Blocks {
		if _, ok := b.(TableBlock); !ok {
			metrics = append(metrics, b)
		}
	}
	head, _ := json.Marshal(map[string]any{"provider": first.Provider.ID, "blocks": metrics, "coverage": first.Coverage,
		"limitations": first.Limitations})
	h.Write(head)
	for _, r := range rows {
		h.Write([]byte{'\n'})
		h.Write([]byte(r))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestCorpusPagesAreBoundedAndConsistent takes every corpus file and every released
// operation that reads its detected format: under a server's 64 KiB max_result_bytes a
// page is at most 100 KB of text (or one larger row alone), and the rows paged so equal
// the rows of large pages of the default server, which has no byte ceiling. The digest of
// each output is compared with testdata/corpus_outputs.txt, so a change that is meant to
// keep every answer (a refactoring, a faster reader) shows that it did, and one that
// changes answers names them (go test ./runtime -run TestCorpusPages
// -update-corpus-digests rewrites the file; its diff is the list).
func TestCorpusPagesAreBoundedAndConsistent(t *testing.T) {
	testtool.Short(t, "pages every corpus file")
	dir := testtool.CorpusDirOrSkip(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the shared corpus is missing: %v", err)
	}
	rt, err := New(all.Registry(), []byte(fmt.Sprintf(`{"max_result_bytes":%d}`, corpusPageBudget)), WithStoreDir(filepath.Join(t.TempDir(), "store")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	// Large pages need a server started with a higher row ceiling (limits only lower).
	big, err := New(all.Registry(), []byte(`{"max_rows":1000}`), WithStoreDir(filepath.Join(t.TempDir(), "store")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(big.Close)
	checked := 0
	digests := map[string]string{}
	t.Cleanup(func() { compareDigests(t, digests) })
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
				paged := pageAll(t, rt, string(op.Name), base, maxPageBytes)
				large := map[string]any{"page_size": 1000}
				for k, v := range base {
					large[k] = v
				}
				whole, first := pageAllFirst(t, big, string(op.Name), large, 0)
				digests[e.Name()+" "+string(op.Name)] = outputDigest(first, whole)
				n := min(len(whole), maxComparedRows)
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

// compareDigests compares the outputs' digests with the recorded ones, or records them.
func compareDigests(t *testing.T, got map[string]string) {
	if t.Failed() && !*updateCorpusDigests {
		return
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(got)) {
		fmt.Fprintf(&b, "%s %s\n", k, got[k])
	}
	if *updateCorpusDigests {
		if err := os.MkdirAll(filepath.Dir(corpusDigests), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(corpusDigests, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(corpusDigests)
	if err != nil {
		t.Fatalf("%v (go test ./runtime -run TestCorpusPages -update-corpus-digests records them)", err)
	}
	want := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) == 3 {
			want[f[0]+" "+f[1]] = f[2]
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("corpus outputs changed (-recorded +now); if the change is meant, rerun with -update-corpus-digests and say why in the commit:\n%s", d)
	}
}
