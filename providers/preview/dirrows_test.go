package preview

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
)

// TestDirectoryRows pages a directory source's member list: one row per file, in the
// members' order, skipping by offset, with the population known up front.
func TestDirectoryRows(t *testing.T) {
	src := Source{Format: contracts.FormatDirectory, SHA256: "d1",
		Members: []sourcefile.Member{{Rel: "a", Size: 1}, {Rel: "b/c", Size: 0}, {Rel: "d", Size: 7}}}
	if n, ok := Population([]Source{src}); !ok || n != 3 {
		t.Errorf("population = %d %v", n, ok)
	}
	p, err := Read(context.Background(), []Source{src}, Options{Offset: 1, MaxRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 1 || string(p.Rows[0]) != `{"path":"b/c","size_bytes":0,"input_sha256":"d1"}` || p.Complete {
		t.Errorf("page = %s complete %v", p.Rows, p.Complete)
	}
	p, err = Read(context.Background(), []Source{src}, Options{Offset: 2, MaxRows: 5})
	if err != nil || len(p.Rows) != 1 || !p.Complete || p.Population != 3 {
		t.Errorf("last page = %v %v", p, err)
	}
	var row map[string]any
	json.Unmarshal(p.Rows[0], &row)
	if row["path"] != "d" || row["size_bytes"] != 7.0 {
		t.Errorf("row = %v", row)
	}
	if _, err := Read(context.Background(), []Source{src}, Options{Offset: 3, MaxRows: 5}); err == nil {
		t.Error("an offset past the files was accepted")
	}
}
