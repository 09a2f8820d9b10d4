package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/repository"
	"github.com/flameox/flameox/runtime"
)

// benchStoreSize is the store of BenchmarkViewerQuery: FLAMEOX_BENCH_RECORDS, default
// 10,000 (the 50,000 takes minutes to build on a 2-core box).
func benchStoreSize() int {
	if n, err := strconv.Atoi(os.Getenv("FLAMEOX_BENCH_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// viewerBenchStore returns (building it once) a store of n bundles of distinct one-line
// inputs, the generator of repository/bench_test.go's BenchmarkQuery10k at the same
// place, so a store either benchmark built serves both.
func viewerBenchStore(b *testing.B, n int) string {
	dir := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-bench-query-%d", n))
	store := filepath.Join(dir, "store")
	s := repository.Open(repository.Location{Dir: store, Source: repository.SourceExplicit})
	if ids, f := s.Inventory(); f == nil && len(ids) == n {
		return store
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(dir, "input.txt")
	for i := range n {
		if err := os.WriteFile(src, fmt.Appendf(nil, "input %d\n", i), 0o600); err != nil {
			b.Fatal(err)
		}
		sum, size, err := sourcefile.Hash(src)
		if err != nil {
			b.Fatal(err)
		}
		bundle := &repository.Bundle{
			Kind: "analysis", Operation: gen.OperationNamePreviewArtifact,
			Provider:        gen.StoredProvider{ID: "flameox", Version: "test"},
			Sources:         []repository.SourceFile{{Path: src, SHA256: sum, Size: size, Format: gen.FormatText, Role: "input"}},
			AnalysisSources: []int64{0},
			AnalysisRequest: gen.AnalysisRequestRecord{Operation: gen.OperationNamePreviewArtifact,
				Inputs: []gen.RecordedInput{{SHA256: sum, Format: gen.FormatText, Path: &src, Role: "input"}}, Arguments: map[string]any{"offset": 0}},
			Coverage:  gen.StoredCoverage{RowsReturned: 1, RowsObserved: 1, Complete: true},
			Data:      []byte(`{"status":"complete"}`),
			CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute),
		}
		if _, f := s.Publish(bundle); f != nil {
			b.Fatal(f)
		}
	}
	return store
}

// BenchmarkViewerQuery measures the first page of 50 of a large store (issue 22): through
// the viewer's HTTP server (GET /api/evidence, response read and decoded) beside
// `flameox evidence query`'s in-process call (Runtime.Call of query_evidence). Figures
// are in docs/performance.md; nothing here asserts a time.
func BenchmarkViewerQuery(b *testing.B) {
	n := benchStoreSize()
	store := viewerBenchStore(b, n)
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	srv, ln, f := startViewer(rt, "127.0.0.1:0")
	if f != nil {
		b.Fatal(f)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/api/evidence?page_size=50"
	check := func(b *testing.B, body []byte) {
		var page struct {
			Evidence      []json.RawMessage `json:"evidence"`
			InventorySize int               `json:"inventory_size"`
		}
		if err := json.Unmarshal(body, &page); err != nil || len(page.Evidence) != 50 || page.InventorySize != n {
			b.Fatalf("page: %d evidence of %d (%v): %.200s", len(page.Evidence), page.InventorySize, err, body)
		}
	}
	b.Run(fmt.Sprintf("evidence_query_first_page_%d", n), func(b *testing.B) {
		for b.Loop() {
			res, f := rt.Call(context.Background(), "query_evidence", []byte(`{"page_size":50}`))
			if f != nil {
				b.Fatal(f)
			}
			body, _ := json.Marshal(res)
			check(b, body)
		}
	})
	b.Run(fmt.Sprintf("viewer_api_first_page_%d", n), func(b *testing.B) {
		for b.Loop() {
			resp, err := http.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			check(b, body)
		}
	})
}

// BenchmarkViewerArtifact downloads a preserved 256 MiB artifact through GET
// /api/artifacts/{sha256} (the store's fail-closed check hashes it, then it is streamed)
// beside reading the same payload file and hashing it once (issue 22: downloads at disk
// speed). Figures are in docs/performance.md; nothing here asserts a time.
func BenchmarkViewerArtifact(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "big.bin")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for i := range 256 {
		chunk[0] = byte(i)
		f.Write(chunk)
	}
	f.Close()
	sum, size, err := sourcefile.Hash(src)
	if err != nil {
		b.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	s := repository.Open(repository.Location{Dir: store, Source: repository.SourceExplicit})
	if _, f := s.Publish(&repository.Bundle{Kind: "analysis", Operation: gen.OperationNamePreviewArtifact,
		Provider:        gen.StoredProvider{ID: "flameox", Version: "test"},
		Sources:         []repository.SourceFile{{Path: src, SHA256: sum, Size: size, Format: gen.FormatText, Role: "input"}},
		AnalysisSources: []int64{0},
		AnalysisRequest: gen.AnalysisRequestRecord{Operation: gen.OperationNamePreviewArtifact,
			Inputs: []gen.RecordedInput{{SHA256: sum, Format: gen.FormatText, Path: &src, Role: "input"}}, Arguments: map[string]any{"offset": 0}},
		Coverage: gen.StoredCoverage{RowsReturned: 1, RowsObserved: 1, Complete: true}, Data: []byte(`{"status":"complete"}`),
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); f != nil {
		b.Fatal(f)
	}
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	srv, ln, fl := startViewer(rt, "127.0.0.1:0")
	if fl != nil {
		b.Fatal(fl)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	b.Run("viewer_download_256MiB", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			resp, err := http.Get("http://" + ln.Addr().String() + "/api/artifacts/" + sum)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || n != size {
				b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
			}
		}
	})
	b.Run("read_and_hash_payload_256MiB", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if got, _, err := sourcefile.Hash(s.PayloadPath(sum)); err != nil || got != sum {
				b.Fatal(err)
			}
		}
	})
	b.Run("read_payload_256MiB", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(s.PayloadPath(sum))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, f)
			f.Close()
		}
	})
}
