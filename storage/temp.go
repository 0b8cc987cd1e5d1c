package storage

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// TempCleaner is an optional capability of stores whose writes go through temporary
// objects that a crash (kill -9, power loss) can leave behind, such as Local's
// ".<name>.<16 hex digits>.skiplake-tmp" files. Such leftovers are invisible to List
// and to every other method; VACUUM uses this interface to remove the ones older than
// its retention period, which no write in flight can still own.
type TempCleaner interface {
	// ListTemp returns the temporary objects whose path starts with prefix, in
	// ascending path order. ModTime is their last modification.
	ListTemp(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// DeleteTemp removes one temporary object named by ListTemp. Paths that are not
	// temporary names are refused with ErrInvalidPath, so DeleteTemp can never remove
	// an object.
	DeleteTemp(ctx context.Context, path string) error
}

// ListTemp lists the temporary files of in-flight or abandoned writes under prefix
// (see TempCleaner). Like List it never follows links out of the root.
func (l *Local) ListTemp(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: list temporaries %q: %w", prefix, err)
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	var out []ObjectInfo
	err := fs.WalkDir(l.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if stop, err := walkError(ctx, d, err); stop {
			return err
		}
		if d.IsDir() {
			if p != "." && !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) || !isTempName(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile (its write finished or was aborted)
		}
		out = append(out, ObjectInfo{Path: p, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: list temporaries %q under %q: %w", prefix, l.abs, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// DeleteTemp removes a temporary file named by ListTemp (see TempCleaner).
func (l *Local) DeleteTemp(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: delete temporary %q: %w", p, err)
	}
	if err := ValidatePath(p); err != nil {
		return err
	}
	if !isTempName(path.Base(p)) {
		return fmt.Errorf("%w %q: not a temporary file name (delete temporary)", ErrInvalidPath, p)
	}
	fi, err := l.root.Lstat(p)
	if err != nil {
		return l.mapErr("delete temporary", p, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("storage: delete temporary %q: %w (not a regular file)", p, ErrNotExist)
	}
	if err := l.root.Remove(p); err != nil {
		return l.mapErr("delete temporary", p, err)
	}
	return nil
}
