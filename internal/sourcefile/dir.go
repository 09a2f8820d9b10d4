package sourcefile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Member is one regular file of a directory source: its normalized relative POSIX path,
// SHA-256 and size.
type Member struct {
	Rel    string
	SHA256 string
	Size   int64
}

// Directory errors: the walk stops at the first.
var (
	// ErrTooManyFiles: the directory holds more regular files than allowed.
	ErrTooManyFiles = errors.New("sourcefile: too many files in the directory")
	// ErrTooLarge: the directory's files hold more bytes than allowed.
	ErrTooLarge = errors.New("sourcefile: the directory's files are too large")
	// ErrNotRegular: an entry is a symbolic link, device, socket or pipe.
	ErrNotRegular = errors.New("sourcefile: the directory holds an entry that is not a regular file or directory")
)

// HashDirectory walks dir without following links, hashes every regular file and returns
// the members sorted by relative path, the bundle digest (DirectoryDigest) and the total
// size. At most maxFiles files and maxBytes bytes are read; a link or special file
// anywhere below dir is ErrNotRegular. An empty directory has no members.
func HashDirectory(ctx context.Context, dir string, maxFiles, maxBytes int64) ([]Member, string, int64, error) {
	var members []Member
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == dir {
			if !d.IsDir() {
				return ErrNotRegular
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case !t.IsRegular():
			return ErrNotRegular
		}
		if int64(len(members)) >= maxFiles {
			return ErrTooManyFiles
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > maxBytes {
			return ErrTooLarge
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		sum, n, err := Hash(p)
		if err != nil {
			return err
		}
		members = append(members, Member{Rel: filepath.ToSlash(rel), SHA256: sum, Size: n})
		return nil
	})
	if err != nil {
		return nil, "", 0, err
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Rel < members[j].Rel })
	var size int64
	for _, m := range members {
		size += m.Size
	}
	return members, DirectoryDigest(members), size, nil
}

// DirectoryDigest is the bundle digest of a directory source: SHA-256 over its members
// sorted by relative path, each its path's bytes followed by its raw 32-byte digest.
func DirectoryDigest(members []Member) string {
	sorted := append([]Member(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Rel < sorted[j].Rel })
	h := sha256.New()
	for _, m := range sorted {
		raw, _ := hex.DecodeString(m.SHA256)
		h.Write([]byte(m.Rel))
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ValidRel reports whether rel is a normalized relative POSIX member path.
func ValidRel(rel string) bool {
	return rel != "" && path.Clean(rel) == rel && !path.IsAbs(rel) && rel != ".." &&
		!(len(rel) > 3 && rel[:3] == "../") && !containsBackslash(rel)
}

func containsBackslash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			return true
		}
	}
	return false
}

// Materialize writes members into a new directory dst, each copied (verified) from
// source(member); dst holds the complete directory or the error is returned.
func Materialize(dst string, members []Member, source func(Member) string) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	for _, m := range members {
		if !ValidRel(m.Rel) {
			return ErrNotRegular
		}
		p := filepath.Join(dst, filepath.FromSlash(m.Rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := CopyVerified(source(m), p, m.SHA256, m.Size); err != nil {
			return err
		}
	}
	return nil
}
