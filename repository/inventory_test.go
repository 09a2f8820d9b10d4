package repository

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// moveClock moves the racy rule's clock by d. An hour ahead, every shard the test made
// looks older than racyWindow: a cached listing is reused while its shard's status is
// unchanged. An hour back, every shard is within the racy window.
func moveClock(t *testing.T, d time.Duration) {
	t.Helper()
	old := inventoryNow
	inventoryNow = func() time.Time { return time.Now().Add(d) }
	t.Cleanup(func() { inventoryNow = old })
}

// waitForTick returns once the file system's clock has moved on from the time of the
// call: a change made afterwards gets another mtime and ctime than anything made before,
// however coarse the file system's timestamps. (The racy rule covers this in a real
// process; a test that moves inventoryNow does not have it.)
func waitForTick(t *testing.T, dir string) {
	t.Helper()
	probe := filepath.Join(dir, "tick")
	ctime := func() int64 {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		st, _, err := lstatStatus(probe)
		if err != nil {
			t.Fatal(err)
		}
		return st.ctime
	}
	for start := ctime(); ctime() == start; {
		time.Sleep(time.Millisecond)
	}
	os.Remove(probe)
}

// TestInventoryCache changes a store whose inventory is cached and checks, per later
// inventory, how many shards were listed afresh (the rest were reused from the cache),
// that the ids and digest are exactly those of an uncached listing, and that corruption
// is reported after caching as before.
func TestInventoryCache(t *testing.T) {
	// shardOfFirst returns the shard directory of the store's first id.
	shardOfFirst := func(t *testing.T, s *Store) string {
		ids, f := Open(s.loc).Inventory()
		if f != nil || len(ids) == 0 {
			t.Fatal(ids, f)
		}
		return s.path("evidence", "sha256", ids[0][:2])
	}
	publish := func(t *testing.T, s *Store, name string) {
		p := writeFile(t, filepath.Dir(s.loc.Dir), name, name+"\n")
		if _, f := s.Publish(testBundle(p)); f != nil {
			t.Fatal(f)
		}
	}
	moveAway := func(t *testing.T, shard string) string {
		moved := filepath.Join(t.TempDir(), "moved")
		if err := os.Rename(shard, moved); err != nil {
			t.Fatal(err)
		}
		return moved
	}
	const bundles = 6
	for _, tc := range []struct {
		name    string
		settled bool // the racy rule's clock is an hour ahead, else an hour back
		change  func(t *testing.T, s *Store)
		// relisted is the number of shards listed afresh by each inventory after the
		// change; -1 is every shard of the store.
		relisted      []int
		problem       string // the failure every inventory after the change reports
		digestChanges bool
	}{
		{name: "unchanged", settled: true, change: func(*testing.T, *Store) {}, relisted: []int{0, 0}},
		{
			name: "unchanged but every shard within the racy window", change: func(*testing.T, *Store) {},
			relisted: []int{-1, -1, -1},
		},
		{
			name: "one shard's mtime within the racy window", settled: true,
			change: func(t *testing.T, s *Store) {
				future := inventoryNow().Add(time.Hour)
				if err := os.Chtimes(shardOfFirst(t, s), future, future); err != nil {
					t.Fatal(err)
				}
			},
			relisted: []int{1, 1, 1},
		},
		{
			name: "publication by another process", settled: true,
			change:   func(t *testing.T, s *Store) { publish(t, Open(s.loc), "other") },
			relisted: []int{1, 0}, digestChanges: true,
		},
		{
			name: "publication by this store", settled: true,
			change:   func(t *testing.T, s *Store) { publish(t, s, "same") },
			relisted: []int{1, 0}, digestChanges: true,
		},
		{
			name: "shard replaced by a directory of the same bundles", settled: true,
			change: func(t *testing.T, s *Store) {
				shard := shardOfFirst(t, s)
				moved := moveAway(t, shard)
				if err := os.Mkdir(shard, 0o700); err != nil {
					t.Fatal(err)
				}
				entries, _ := os.ReadDir(moved)
				for _, e := range entries {
					if err := os.Rename(filepath.Join(moved, e.Name()), filepath.Join(shard, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
			},
			relisted: []int{1, 0},
		},
		{
			name: "shard replaced by a symbolic link", settled: true,
			change: func(t *testing.T, s *Store) {
				shard := shardOfFirst(t, s)
				if err := os.Symlink(moveAway(t, shard), shard); err != nil {
					t.Fatal(err)
				}
			},
			problem: "inventory_topology",
		},
		{
			name: "shard replaced by a file", settled: true,
			change: func(t *testing.T, s *Store) {
				shard := shardOfFirst(t, s)
				moveAway(t, shard)
				writeFile(t, filepath.Dir(shard), filepath.Base(shard), "x")
			},
			problem: "inventory_topology",
		},
		{
			name: "bad name added to a shard", settled: true,
			change: func(t *testing.T, s *Store) {
				if err := os.Mkdir(filepath.Join(shardOfFirst(t, s), "zz"), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			problem: "inventory_topology",
		},
		{
			// Rewinding the shard's mtime after adding the entry changes its ctime, which
			// no process can set: the shard is relisted and the entry is found.
			name: "bad name added to a shard and its mtime rewound", settled: true,
			change: func(t *testing.T, s *Store) {
				shard := shardOfFirst(t, s)
				st, _, err := lstatStatus(shard)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(filepath.Join(shard, "zz"), 0o700); err != nil {
					t.Fatal(err)
				}
				mtime := time.Unix(0, st.mtime)
				if err := os.Chtimes(shard, mtime, mtime); err != nil {
					t.Fatal(err)
				}
			},
			problem: "inventory_topology",
		},
		{
			name: "bad entry beside the shards", settled: true,
			change: func(t *testing.T, s *Store) {
				writeFile(t, s.path("evidence", "sha256"), "zz", "x")
			},
			problem: "inventory_topology",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.settled {
				moveClock(t, time.Hour)
			} else {
				moveClock(t, -time.Hour)
			}
			dir := t.TempDir()
			s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
			for i := range bundles {
				publish(t, s, fmt.Sprintf("in%d", i))
			}
			before, digest0, f := s.InventorySnapshot()
			if f != nil {
				t.Fatal(f)
			}
			before = slices.Clone(before)
			shards := map[string]bool{}
			for _, id := range before {
				shards[id[:2]] = true
			}
			waitForTick(t, dir)
			tc.change(t, s)
			calls := max(len(tc.relisted), 2)
			for call := range calls {
				n := s.inv.relisted
				ids, digest, f := s.InventorySnapshot()
				if tc.problem != "" {
					if f == nil || f.Details["problem"] != tc.problem {
						t.Fatalf("call %d: got %v, want %s", call, f, tc.problem)
					}
					continue
				}
				if f != nil {
					t.Fatalf("call %d: %v", call, f)
				}
				want := tc.relisted[call]
				if want < 0 {
					want = len(shards)
				}
				if got := s.inv.relisted - n; got != want {
					t.Errorf("call %d relisted %d shards, want %d", call, got, want)
				}
				fresh, f := Open(s.loc).Inventory()
				if f != nil {
					t.Fatal(f)
				}
				if diff := cmp.Diff(fresh, ids); diff != "" {
					t.Errorf("call %d: the cached inventory is not the directory's:\n%s", call, diff)
				}
				if digest != InventoryDigest(fresh) {
					t.Errorf("call %d: digest %s, want InventoryDigest %s", call, digest, InventoryDigest(fresh))
				}
				if changed := digest != digest0; changed != tc.digestChanges {
					t.Errorf("call %d: digest changed = %v, want %v", call, changed, tc.digestChanges)
				}
				if want := len(before); !tc.digestChanges && len(ids) != want || tc.digestChanges && len(ids) != want+1 {
					t.Errorf("call %d: %d ids after %d", call, len(ids), want)
				}
			}
		})
	}
}

// TestInventoryDigest: the digest composes per shard, depends on every id and is the
// SHA-256 of nothing for the empty inventory.
func TestInventoryDigest(t *testing.T) {
	id := func(prefix string, c byte) string {
		b := []byte(prefix)
		for len(b) < 64 {
			b = append(b, c)
		}
		return string(b)
	}
	a1, a2, b1 := id("aa", '1'), id("aa", '2'), id("ab", '1')
	seen := map[string][]string{}
	for _, ids := range [][]string{nil, {a1}, {a2}, {a1, a2}, {b1}, {a1, b1}, {a2, b1}, {a1, a2, b1}} {
		d := InventoryDigest(ids)
		if other, ok := seen[d]; ok {
			t.Errorf("%v and %v have one digest", other, ids)
		}
		seen[d] = ids
	}
	if got := InventoryDigest(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty inventory digest = %s", got)
	}
}

// TestInventoryListsManyShards lists a store of 256 shards, which the inventory lists on
// several goroutines: the ids are exactly the sorted names made, the digest is that of
// the sorted ids, and with bad entries in two shards the failure names the lower shard's,
// as a walk in shard order would, whatever the goroutines' timing.
func TestInventoryListsManyShards(t *testing.T) {
	s := Open(Location{Dir: filepath.Join(t.TempDir(), "store"), Source: SourceExplicit})
	p := writeFile(t, filepath.Dir(s.loc.Dir), "seed", "seed\n")
	if _, f := s.Publish(testBundle(p)); f != nil {
		t.Fatal(f)
	}
	want, f := s.Inventory()
	if f != nil {
		t.Fatal(f)
	}
	base := s.path("evidence", "sha256")
	for k := range 256 {
		for j := range 3 {
			id := fmt.Sprintf("%02x%062x", k, k*7+j)
			if err := os.MkdirAll(filepath.Join(base, id[:2], id), 0o700); err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
	}
	slices.Sort(want)
	ids, digest, f := Open(s.loc).InventorySnapshot()
	if f != nil {
		t.Fatal(f)
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	if digest != InventoryDigest(want) {
		t.Errorf("digest %s, want %s", digest, InventoryDigest(want))
	}
	for _, bad := range []string{"f0/not-an-id", "1a/also-not-an-id"} {
		if err := os.Mkdir(filepath.Join(base, bad), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		_, _, f := Open(s.loc).InventorySnapshot()
		if f == nil || f.Details["problem"] != "inventory_topology" || f.Details["entry"] != "also-not-an-id" {
			t.Fatalf("failure = %v", f)
		}
	}
}
