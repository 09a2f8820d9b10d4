package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
)

// previewTree writes a directory tree: nested and empty directories, an empty file, and
// files whose sort order differs from their creation order.
func previewTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"z.txt":            "last\n",
		"a/b/deep.json":    `{"k":1}`,
		"a/empty":          "",
		"a.txt":            "first\n",
		"m/n/o/p/q.csv":    "x,y\n1,2\n",
		"a/b/c/d/zz.jsonl": "{}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPreviewDirectorySource: a directory source previews as one row per regular file
// (catalog section 9: "{path (relative POSIX), size_bytes}"), sorted by relative path,
// each with the directory's bundle digest, paged with a continuation.
func TestPreviewDirectorySource(t *testing.T) {
	rt := newRuntime(t)
	dir := previewTree(t)
	want := []struct {
		path string
		size float64
	}{{"a.txt", 6}, {"a/b/c/d/zz.jsonl", 3}, {"a/b/deep.json", 7}, {"a/empty", 0}, {"m/n/o/p/q.csv", 8}, {"z.txt", 5}}
	args := map[string]any{"sources": []any{map[string]any{"kind": "path", "path": dir}}, "page_size": 4}
	var got []map[string]any
	var digest string
	for page := 0; ; page++ {
		res, f := call(t, rt, "preview_artifact", args)
		if f != nil {
			t.Fatal(f)
		}
		r := res.(*Result)
		if r.Inputs[0].Format != gen.FormatDirectory {
			t.Fatalf("input = %+v", r.Inputs[0])
		}
		digest = r.Inputs[0].SHA256
		got = append(got, tableRows(t, r)...)
		if r.Token == "" {
			if page != 1 {
				t.Errorf("%d pages of 4 rows, want 2", page+1)
			}
			break
		}
		args["continuation"] = r.Token
	}
	if len(got) != len(want) {
		t.Fatalf("rows = %v", got)
	}
	for i, w := range want {
		if got[i]["path"] != w.path || got[i]["size_bytes"] != w.size || got[i]["input_sha256"] != digest || len(got[i]) != 3 {
			t.Errorf("row %d = %v, want %s (%v bytes)", i, got[i], w.path, w.size)
		}
	}
	for _, r := range got {
		if strings.Contains(r["path"].(string), dir) {
			t.Errorf("row %v names the host directory", r)
		}
	}
}

// TestPreviewDirectoryBounds: a directory source counts its files against
// limits.max_input_files and its bytes against max_input_bytes (LIMIT_EXCEEDED), and a
// symbolic link inside it, here one leading out of the directory, is never followed: the
// source is refused.
func TestPreviewDirectoryBounds(t *testing.T) {
	rt := newRuntime(t)
	dir := previewTree(t)
	src := []any{map[string]any{"kind": "path", "path": dir}}
	_, f := call(t, rt, "preview_artifact", map[string]any{"sources": src, "limits": map[string]any{"max_input_files": 5}})
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || mustJSON(f.FieldPath) != `["limits","max_input_files"]` {
		t.Errorf("6 files with max_input_files 5: %v", f)
	}
	if _, f := call(t, rt, "preview_artifact", map[string]any{"sources": src, "limits": map[string]any{"max_input_files": 6}}); f != nil {
		t.Errorf("6 files with max_input_files 6: %v", f)
	}
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	_, f = call(t, rt, "preview_artifact", map[string]any{"sources": src, "limits": map[string]any{"max_input_bytes": 2048}})
	if f == nil || f.Code != gen.FailureCodeLimitExceeded || mustJSON(f.FieldPath) != `["limits","max_input_bytes"]` {
		t.Errorf("2077 bytes with max_input_bytes 2048: %v", f)
	}
	os.Remove(big)

	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "a", "link.txt")); err != nil {
		t.Fatal(err)
	}
	res, f := call(t, rt, "preview_artifact", map[string]any{"sources": src})
	if f == nil || f.Code != gen.FailureCodeUnsupportedFormat || f.Details["reason"] != "not_regular" {
		t.Fatalf("a directory holding a link: %v %v", res, f)
	}
	if strings.Contains(f.Message, outside) || strings.Contains(f.Message, dir) {
		t.Errorf("the message names a host path: %s", f.Message)
	}
}

// TestPreviewDirectoryDeclared: format "directory" may be declared on a directory; on a
// file it is refused, never an empty page.
func TestPreviewDirectoryDeclared(t *testing.T) {
	rt := newRuntime(t)
	dir := previewTree(t)
	res, f := call(t, rt, "preview_artifact", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": dir, "format": "directory"}}})
	if f != nil || len(tableRows(t, res)) != 6 {
		t.Fatalf("declared directory: %v", f)
	}
	_, f = call(t, rt, "preview_artifact", map[string]any{"sources": []any{map[string]any{"kind": "path", "path": filepath.Join(dir, "a.txt"), "format": "directory"}}})
	if f == nil || f.Code != gen.FailureCodeUnsupportedFormat {
		t.Errorf("a file declared directory: %v", f)
	}
}
