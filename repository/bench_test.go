package repository

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/flameox/flameox/internal/sourcefile"
	"github.com/flameox/flameox/internal/testtool"
)

// gibFile writes (once) a 1 GiB file of numbered lines.
func gibFile(b *testing.B) string {
	p := filepath.Join(testtool.BenchDir(), "flameox-bench-preserve-1g")
	const size = 1 << 30
	if st, err := os.Stat(p); err == nil && st.Size() == size {
		return p
	}
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for i := 0; n < size; i++ {
		line := fmt.Sprintf("%012d the quick brown fox jumps over the lazy dog\n", i)
		if n+int64(len(line)) > size {
			line = line[:size-n]
		}
		k, _ := w.WriteString(line)
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return p
}

// BenchmarkPreserve1GiB publishes one 1 GiB artifact into a fresh store: the re-hash of
// the source, the verified copy, fsync and validation. BenchmarkHash1GiB is the hashing
// figure it is compared with.
func BenchmarkPreserve1GiB(b *testing.B) {
	src := gibFile(b)
	bundle := testBundle(src)
	b.SetBytes(bundle.Sources[0].Size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		b.StartTimer()
		s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
		if _, f := s.Publish(bundle); f != nil {
			b.Fatal(f)
		}
		b.StopTimer()
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

func BenchmarkHash1GiB(b *testing.B) {
	src := gibFile(b)
	st, _ := os.Stat(src)
	b.SetBytes(st.Size())
	for i := 0; i < b.N; i++ {
		if _, _, err := sourcefile.Hash(src); err != nil {
			b.Fatal(err)
		}
	}
}

// queryStore builds (once) a store of n bundles of distinct one-line inputs. fsync is
// skipped while building it; the queries read it as any store.
func queryStore(b *testing.B, n int) *Store {
	dir := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-bench-query-%d", n))
	s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
	if ids, f := s.Inventory(); f == nil && len(ids) == n {
		return s
	}
	os.RemoveAll(dir)
	os.MkdirAll(dir, 0o700)
	skipSync = true
	defer func() { skipSync = false }()
	src := filepath.Join(dir, "input.txt")
	for i := 0; i < n; i++ {
		if err := os.WriteFile(src, []byte(fmt.Sprintf("input %d\n", i)), 0o600); err != nil {
			b.Fatal(err)
		}
		bundle := testBundle(src)
		bundle.CreatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		if _, f := s.Publish(bundle); f != nil {
			b.Fatal(f)
		}
	}
	return s
}

// BenchmarkQuery10k pages through 10,000 manifests (FLAMEOX_BENCH_RECORDS sets another
// count, e.g. the 50,000 of issue 13): the first page of 50, a deep page of 50 starting
// 100 before the end, and a filter that matches nothing (a full scan), each on one Store
// as a long-lived process keeps it (its inventory cache warm); and the first page on a
// new Store each time, as a one-shot CLI process lists it. Every manifest read is
// validated (topology, schema, identity, invariants).
func BenchmarkQuery10k(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("FLAMEOX_BENCH_RECORDS")); err == nil && v > 100 {
		n = v
	}
	s := queryStore(b, n)
	ids, f := s.Inventory()
	if f != nil || len(ids) != n {
		b.Fatalf("inventory = %d, %v", len(ids), f)
	}
	inv := InventoryDigest(ids)
	none := "capture"
	for _, bc := range []struct {
		name   string
		filter Filter
		cursor string
		want   int
	}{
		{"first_page", Filter{}, "", 50},
		{"deep_page", Filter{}, EncodeCursor(inv, Filter{}.Digest(), n-100), 50},
		{"no_match_full_scan", Filter{Kind: &none}, "", 0},
		{"first_page_new_store", Filter{}, "", 50},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				store := s
				if bc.name == "first_page_new_store" {
					store = Open(s.Location())
				}
				page, f := store.Query(bc.filter, bc.cursor, 50)
				if f != nil {
					b.Fatal(f)
				}
				if len(page.Evidence) != bc.want {
					b.Fatalf("%d results, want %d", len(page.Evidence), bc.want)
				}
			}
		})
	}
}
