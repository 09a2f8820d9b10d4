//go:build !linux

package broker

import (
	"io/fs"
	"path/filepath"
)

// tree walks root with filepath.WalkDir and says whether the walk goes on.
func (w *sizeWalk) tree(root string) bool {
	more := true
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !w.visit() {
			more = false
			return filepath.SkipAll
		}
		if d.Type().IsRegular() && !w.skip[p] {
			if info, err := d.Info(); err == nil {
				w.total += info.Size()
			}
		}
		return nil
	})
	return more
}
