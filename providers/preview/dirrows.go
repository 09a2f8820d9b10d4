package preview

import (
	"encoding/json"
	"io"

	"github.com/flameox/flameox/internal/sourcefile"
)

// dirReader yields one row per regular file of a directory source, {path, size_bytes,
// input_sha256}, in the order the runtime hashed them (sorted by relative path). It reads
// the member list only: no file is opened and no link followed (the runtime refuses a
// directory holding links or special files, within max_input_files and max_input_bytes).
type dirReader struct {
	members []sourcefile.Member
	sha256  string
	i       int
}

func openDirectory(src Source) (*dirReader, error) {
	return &dirReader{members: src.Members, sha256: src.SHA256}, nil
}

func (r *dirReader) skip(n int64) (int64, error) {
	k := min(n, int64(len(r.members)-r.i))
	r.i += int(k)
	if k < n {
		return k, io.EOF
	}
	return k, nil
}

func (r *dirReader) next() (json.RawMessage, error) {
	if r.i >= len(r.members) {
		return nil, io.EOF
	}
	m := r.members[r.i]
	r.i++
	o := newObject()
	o.str("path", m.Rel)
	o.int("size_bytes", m.Size)
	o.str("input_sha256", r.sha256)
	return o.done(), nil
}

func (r *dirReader) Close() error { return nil }
