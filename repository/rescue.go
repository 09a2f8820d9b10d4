package repository

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
)

// within reports whether p is root or below it.
func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// PreflightRescue checks a rescue destination before anything is decoded or written: an
// absolute, clean path that does not exist, whose parent is an existing directory, and
// that lies outside the active store both as written and after resolving links.
func PreflightRescue(dest string, active Location) *failure.Failure {
	path := failure.Path("destination")
	bad := func(format string, args ...any) *failure.Failure {
		return failure.Invalid(path, nil, format, args...).
			With("rules", []string{"absolute path", "does not exist", "parent is an existing directory", "outside the active evidence store"})
	}
	if !filepath.IsAbs(dest) || filepath.Clean(dest) != dest {
		return bad("the rescue destination must be an absolute, clean path")
	}
	if _, err := os.Lstat(dest); err == nil {
		return bad("the rescue destination already exists; choose a new directory name")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return bad("the rescue destination cannot be checked")
	}
	parent := filepath.Dir(dest)
	st, err := os.Stat(parent)
	if err != nil || !st.IsDir() {
		return bad("the rescue destination's parent must be an existing directory")
	}
	if within(dest, active.Dir) {
		return bad("the rescue destination must be outside the active evidence store")
	}
	realParent, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return bad("the rescue destination's parent cannot be resolved")
	}
	if realRoot, err := filepath.EvalSymlinks(active.Dir); err == nil {
		if within(filepath.Join(realParent, filepath.Base(dest)), realRoot) {
			return bad("the rescue destination must be outside the active evidence store")
		}
	}
	return nil
}

// Rescue writes b as a complete new store at dest: it publishes into a staging store
// beside dest, renames that to dest without replacing anything, fsyncs the parent and
// reads the bundle back from the new store. The active store is not touched.
func Rescue(dest string, active Location, b *Bundle) (*Evidence, *failure.Failure) {
	if f := PreflightRescue(dest, active); f != nil {
		return nil, f
	}
	parent := filepath.Dir(dest)
	removeAbandonedRescues(parent)
	// The staging store is named after its owner, as publication staging is, so that a
	// later rescue into the same parent can remove it once this process is provably gone.
	stage := filepath.Join(parent, rescuePrefix+ownerName())
	staged := Open(Location{Dir: stage, Source: SourceRescueDestination})
	ev, f := staged.Publish(b)
	if f != nil {
		os.RemoveAll(stage)
		return nil, f
	}
	os.Remove(filepath.Join(stage, ".staging"))
	err := renameNoReplace(stage, dest)
	if err != nil {
		os.RemoveAll(stage)
		if errors.Is(err, errExists) {
			return nil, failure.Invalid(failure.Path("destination"), nil,
				"the rescue destination was created by someone else during the rescue; choose a new directory name")
		}
		return nil, staged.ioFailure(err, "written")
	}
	if err := syncDir(parent); err != nil {
		return nil, staged.ioFailure(err, "written")
	}
	return Open(Location{Dir: dest, Source: SourceRescueDestination}).Read(ev.ID, LevelFull)
}

// rescuePrefix begins the name of a rescue's staging store beside its destination; the
// owner name (pid, start time, random bytes) follows.
const rescuePrefix = ".flameox-rescue-"

// removeAbandonedRescues removes rescue staging stores in parent whose owner is provably
// gone, such as those of a rescue killed before its rename. Only real directories named
// for an owner are considered, and nothing is followed out of parent.
func removeAbandonedRescues(parent string) {
	root, err := os.OpenRoot(parent)
	if err != nil {
		return
	}
	defer root.Close()
	removeAbandoned(root, ".", func(name string) (string, bool) {
		owner, ok := strings.CutPrefix(name, rescuePrefix)
		return owner, ok
	})
}

// CheckRescued validates that dest still holds evidence id, as a repeated rescue does.
func CheckRescued(dest, id string) *failure.Failure {
	_, f := Open(Location{Dir: dest, Source: SourceRescueDestination}).Read(id, LevelFull)
	if f != nil && f.Code == gen.FailureCodeMissingEvidence {
		return failure.New(gen.FailureCodeRepositoryCorruption,
			"the rescued store no longer holds the rescued evidence").With("evidence_id", id)
	}
	return f
}
