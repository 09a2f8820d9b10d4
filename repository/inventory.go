package repository

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"io/fs"
	"os"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flameox/flameox/internal/failure"
)

// The inventory is the directory listing of evidence/sha256/<2 hex>/<id>. A long-lived
// process (MCP server, viewer) keeps, per Store, a cache of each shard directory's
// validated, sorted ids and their digest, keyed by the shard's status (device, inode,
// mtime, ctime). The base directory (at most 256 shard names) is listed and validated on
// every call and every shard is stat'ed on every call; a shard's cached ids are reused
// only when its status is identical to the one taken before it was listed AND that status
// was older than racyWindow at the listing (git's racy-index rule: a directory changed in
// the same timestamp granule as its listing may change again without a visible change of
// status). Anything else relists and revalidates the shard. The cache is derived from and
// checked against the directory; it is never the source of truth and never persisted.

// racyWindow is how long before a shard's listing its mtime and ctime must lie for the
// listing to be reused: coarser than the timestamp granularity of any file system the
// store may live on (2 s on FAT, 1 s on ext3 and some network file systems).
const racyWindow = 2 * time.Second

// listWorkers bounds the goroutines that list shards: the CPUs this process may use,
// at most 4.
func listWorkers() int { return min(goruntime.GOMAXPROCS(0), 4) }

// inventoryNow is the clock the racy rule compares shard times with; tests move it.
var inventoryNow = time.Now

// shardStat is the status that identifies one state of a shard directory.
type shardStat struct {
	dev, ino     uint64
	mtime, ctime int64 // nanoseconds since the epoch
}

// shardEntry is the cached listing of one shard directory.
type shardEntry struct {
	present bool
	stat    shardStat
	// trusted is set when stat's times were older than racyWindow when the shard was
	// listed, so that an identical status later means an identical listing.
	trusted bool
	// off and n locate the shard's sorted ids in inventoryCache.ids.
	off, n int
	// digest is the hex SHA-256 of the shard's newline-joined sorted ids.
	digest string
}

// inventoryCache is a Store's in-process inventory cache. It holds one copy of the ids:
// the concatenation of the shards' sorted ids in shard order, which is the sorted
// inventory since shards are named by the ids' first two hex digits.
type inventoryCache struct {
	mu     sync.Mutex
	shards [256]shardEntry
	ids    []string
	digest string
	// relisted counts the shards listed in full (not reused), for tests.
	relisted int
}

// forget makes the next inventory relist shard (the first two hex digits of an id): this
// process has just changed it. The shard's changed status would show it anyway.
func (c *inventoryCache) forget(shard string) {
	k, ok := shardIndex(shard)
	if !ok {
		return
	}
	c.mu.Lock()
	c.shards[k].trusted = false
	c.mu.Unlock()
}

// Inventory returns the sorted evidence ids of the store, validating the inventory's
// topology: two-hex prefix directories holding directories named by full ids with that
// prefix. An absent or empty store has an empty inventory. The slice is the caller's.
func (s *Store) Inventory() ([]string, *failure.Failure) {
	ids, _, f := s.InventorySnapshot()
	if f != nil {
		return nil, f
	}
	return slices.Clone(ids), nil
}

// InventorySnapshot returns the sorted evidence ids of the store and their
// InventoryDigest, validated as Inventory validates them. The ids are shared with the
// store's cache: the caller must not modify them.
func (s *Store) InventorySnapshot() ([]string, string, *failure.Failure) {
	state, f := s.checkRoot()
	if f != nil {
		return nil, "", f
	}
	if state != rootReady {
		return nil, InventoryDigest(nil), nil
	}
	base, f, err := s.realDir("evidence", "sha256")
	if err != nil {
		return nil, InventoryDigest(nil), nil
	}
	if f != nil {
		return nil, "", f
	}
	prefixes, err := readDirUnsorted(base)
	if err != nil {
		return nil, "", s.ioFailure(err, "read")
	}
	var present [256]bool
	for _, p := range prefixes {
		k, ok := shardIndex(p.Name())
		if !ok || p.Type()&fs.ModeSymlink != 0 || !p.IsDir() {
			return nil, "", s.corrupt("inventory_topology", "the evidence inventory holds an unexpected entry").With("entry", safeName(p.Name()))
		}
		present[k] = true
	}

	c := &s.inv
	c.mu.Lock()
	defer c.mu.Unlock()
	racy := inventoryNow().Add(-racyWindow).UnixNano()
	var next [256]shardEntry
	var listed [256][]string // the ids of the shards listed afresh
	total := 0
	// Shards whose cached listing still holds are kept; the others are listed, on up to
	// listWorkers goroutines (listing is mostly getdents, which runs in parallel). A
	// failure is reported for the lowest shard that has one, as a sequential walk would.
	var fails [256]*failure.Failure
	var todo []int
	for k := range 256 {
		if !present[k] {
			continue
		}
		if old := c.shards[k]; old.present && old.trusted {
			name := shardName(k)
			st, f := s.lstatShard(base+"/"+name, name)
			if f != nil {
				fails[k] = f
				continue
			}
			if st == old.stat {
				next[k] = old
				continue
			}
		}
		todo = append(todo, k)
	}
	listOne := func(k int) {
		name := shardName(k)
		ids, st, f := s.listShard(base+"/"+name, name)
		if f != nil {
			fails[k] = f
			return
		}
		listed[k] = ids
		next[k] = shardEntry{present: true, stat: st, trusted: st.mtime < racy && st.ctime < racy,
			n: len(ids), digest: shardDigest(ids)}
	}
	if workers := min(listWorkers(), len(todo)/8); workers > 1 {
		var wg sync.WaitGroup
		var nextTodo atomic.Int64
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(nextTodo.Add(1)) - 1; i < len(todo); i = int(nextTodo.Add(1)) - 1 {
					listOne(todo[i])
				}
			}()
		}
		wg.Wait()
	} else {
		for _, k := range todo {
			listOne(k)
		}
	}
	for k := range 256 {
		if fails[k] != nil {
			return nil, "", fails[k]
		}
		total += next[k].n
	}
	c.relisted += len(todo)

	h := sha256.New()
	for k := range 256 {
		if next[k].n > 0 {
			writeShardLine(h, shardName(k), next[k].digest, next[k].n)
		}
	}
	digest := hex.EncodeToString(h.Sum(nil))

	// The same digest is the same id set: keep the concatenation (its layout by shard is
	// the same). Otherwise build it from the old one and the shards listed afresh.
	ids := c.ids
	if digest != c.digest || len(ids) != total {
		ids = make([]string, 0, total)
		for k := range 256 {
			switch e := next[k]; {
			case !e.present:
			case listed[k] != nil || e.n == 0:
				ids = append(ids, listed[k]...)
			default:
				ids = append(ids, c.ids[e.off:e.off+e.n]...)
			}
		}
	}
	off := 0
	for k := range 256 {
		next[k].off = off
		off += next[k].n
	}
	c.shards, c.ids, c.digest = next, ids, digest
	return ids[:len(ids):len(ids)], digest, nil
}

// lstatShard returns the status of the shard directory dir without following a link; a
// shard that is not a real directory is corrupt.
func (s *Store) lstatShard(dir, name string) (shardStat, *failure.Failure) {
	st, isDir, err := lstatStatus(dir)
	if err != nil {
		return shardStat{}, s.ioFailure(err, "read")
	}
	if !isDir {
		return shardStat{}, s.corrupt("inventory_topology", "the evidence inventory holds an unexpected entry").With("entry", name)
	}
	return st, nil
}

// listShard lists and validates the shard directory dir: its status, taken on the open
// directory before it is read, and its sorted ids.
func (s *Store) listShard(dir, name string) ([]string, shardStat, *failure.Failure) {
	file, err := openDirNoFollow(dir)
	if err != nil {
		if notADirectory(err) {
			return nil, shardStat{}, s.corrupt("inventory_topology", "the evidence inventory holds an unexpected entry").With("entry", name)
		}
		return nil, shardStat{}, s.ioFailure(err, "read")
	}
	defer file.Close()
	st, isDir, err := fileStatus(file)
	if err != nil {
		return nil, shardStat{}, s.ioFailure(err, "read")
	}
	if !isDir {
		return nil, shardStat{}, s.corrupt("inventory_topology", "the evidence inventory holds an unexpected entry").With("entry", name)
	}
	bundles, err := file.ReadDir(-1)
	if err != nil {
		return nil, shardStat{}, s.ioFailure(err, "read")
	}
	ids := make([]string, 0, len(bundles))
	for _, b := range bundles {
		if !isHex(b.Name(), 64) || b.Name()[:2] != name || b.Type()&fs.ModeSymlink != 0 || !b.IsDir() {
			return nil, shardStat{}, s.corrupt("inventory_topology", "the evidence inventory holds an unexpected entry").With("entry", safeName(b.Name()))
		}
		ids = append(ids, b.Name())
	}
	sort.Strings(ids)
	return ids, st, nil
}

// shardIndex returns the number a shard name (two lowercase hex digits) stands for.
func shardIndex(name string) (int, bool) {
	if !isHex(name, 2) {
		return 0, false
	}
	v, err := strconv.ParseUint(name, 16, 8)
	return int(v), err == nil
}

// shardName returns the shard name of k, two lowercase hex digits.
func shardName(k int) string {
	return hex.EncodeToString([]byte{byte(k)})
}

// InventoryDigest is the digest of a sorted inventory that cursors bind. It composes from
// per-shard digests, so that a process that caches shard listings does not rehash every
// id: the SHA-256 of one line "<shard>:<shard digest>:<count>\n" for each non-empty shard
// (the ids' first two hex digits) in order, where a shard digest is the hex SHA-256 of
// that shard's newline-joined sorted ids. Any change in the id set changes it; the empty
// inventory's is the SHA-256 of nothing. It is opaque: clients only compare it.
func InventoryDigest(ids []string) string {
	h := sha256.New()
	for i := 0; i < len(ids); {
		shard := shardOf(ids[i])
		j := i + 1
		for j < len(ids) && shardOf(ids[j]) == shard {
			j++
		}
		writeShardLine(h, shard, shardDigest(ids[i:j]), j-i)
		i = j
	}
	return hex.EncodeToString(h.Sum(nil))
}

func shardOf(id string) string {
	if len(id) < 2 {
		return id
	}
	return id[:2]
}

// shardDigest is the hex SHA-256 of ids joined by newlines, hashed as they stream.
func shardDigest(ids []string) string {
	h := sha256.New()
	for i, id := range ids {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		io.WriteString(h, id)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeShardLine(h hash.Hash, shard, digest string, n int) {
	io.WriteString(h, shard+":"+digest+":"+strconv.Itoa(n)+"\n")
}

// readDirUnsorted lists a directory's entries in directory order: the inventory orders
// shards by number, so the sort os.ReadDir does is wasted work.
func readDirUnsorted(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
