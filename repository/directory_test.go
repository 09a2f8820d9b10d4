package repository

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/sourcefile"
)

// TestPublishDirectorySource: a directory source is preserved as one artifact per member
// (role <role>:<relative path>) under a logical source with is_directory, its bundle
// digest and relative paths; it reads back valid, selects with its members, and a
// changed member refuses a second publication.
func TestPublishDirectorySource(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "export")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "StringIds.parquet"), []byte("strings"), 0o644)
	os.WriteFile(filepath.Join(src, "sub", "KERNEL.parquet"), []byte("kernels"), 0o644)
	members, sum, size, err := sourcefile.HashDirectory(context.Background(), src, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b := testBundle(writeFile(t, dir, "a.txt", "alpha\n"))
	b.Sources[0] = SourceFile{Path: src, SHA256: sum, Size: size, Format: gen.FormatNsysParquet, Role: "input", Members: members}
	b.AnalysisRequest.Inputs[0].SHA256, b.AnalysisRequest.Inputs[0].Format = sum, gen.FormatNsysParquet
	s := Open(Location{Dir: filepath.Join(dir, "store"), Source: SourceExplicit})
	ev, f := s.Publish(b)
	if f != nil {
		t.Fatal(f)
	}
	read, f := s.Read(ev.ID, LevelFull)
	if f != nil {
		t.Fatalf("read back: %v", f)
	}
	layout := read.Manifest.Body.SourceLayout.Sources[0]
	if !layout.IsDirectory || layout.SHA256 != sum || len(layout.RelativePaths) != 2 || layout.RelativePaths[0] != "StringIds.parquet" ||
		read.Manifest.Body.Artifacts[1].Role != "input:sub/KERNEL.parquet" {
		t.Fatalf("layout = %+v, artifacts %+v", layout, read.Manifest.Body.Artifacts)
	}
	sel, f := read.Select(nil, nil)
	if f != nil || sel.SHA256 != sum || len(sel.Members) != 2 {
		t.Fatalf("select = %+v, %v", sel, f)
	}
	for _, m := range sel.Members {
		if got, _, _ := sourcefile.Hash(s.PayloadPath(m.SHA256)); got != m.SHA256 {
			t.Errorf("member %s is not stored", m.Rel)
		}
	}
	// A changed member is refused before anything else is written.
	os.WriteFile(filepath.Join(src, "sub", "KERNEL.parquet"), []byte("changed"), 0o644)
	b.Data = []byte(`{"status":"complete","n":2}`)
	if _, f := s.Publish(b); f == nil || f.Code != gen.FailureCodeMissingOrChangedInput {
		t.Fatalf("a changed member: %v", f)
	}
}
