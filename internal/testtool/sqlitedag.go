package testtool

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// SQLiteDAG copies the SQLite database src and rewires every interior table b-tree page
// so that all its cells point at the page's right-most child: the tree becomes a DAG in
// which a scan visits that child once per cell, at every level (issue 40's amplifying
// input: a small file that a query reads N^depth times). It fails the test when src has
// no interior table page.
func SQLiteDAG(t testing.TB, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint16(b[16:18]))
	if size == 1 {
		size = 65536
	}
	rewired := 0
	// Page 1 (the schema's root) is left alone, so that the file opens and its tables
	// are found: only their trees are rewired.
	for p := 1; (p+1)*size <= len(b); p++ {
		page := b[p*size : (p+1)*size]
		h := 0
		if page[h] != 0x05 { // interior table b-tree page
			continue
		}
		cells := int(binary.BigEndian.Uint16(page[h+3 : h+5]))
		right := page[h+8 : h+12]
		for i := 0; i < cells; i++ {
			off := int(binary.BigEndian.Uint16(page[h+12+2*i : h+14+2*i]))
			copy(page[off:off+4], right)
		}
		rewired++
	}
	if rewired == 0 {
		t.Fatalf("%s has no interior table page to rewire", filepath.Base(src))
	}
	dst := filepath.Join(t.TempDir(), "dag-"+filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}
