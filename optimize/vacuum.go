package optimize

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// bloomTagKey is the add.tags key under which package bloom names a data file's
// Bloom index file (bloom.TagKey; repeated here so that VACUUM does not depend on
// the index format beyond the "path" field of the tag).
const bloomTagKey = "skiplake.bloom"

// indexDir is the one hidden directory VACUUM looks into: Bloom index files live
// there and are garbage once nothing references them.
const indexDir = "_delta_index/"

// VacuumOptions configures Vacuum. The zero value deletes unreferenced files older
// than the table's retention period.
type VacuumOptions struct {
	// Retention is how long removed files are kept; default the table property
	// delta.deletedFileRetentionDuration, else DefaultRetention (7 days). A shorter
	// retention than the table's is refused unless Force is set.
	Retention time.Duration
	// Force allows a Retention shorter than the table's retention period (concurrent
	// readers of old versions, or writers still committing files, may then fail).
	Force bool
	// DryRun lists what would be deleted without deleting it.
	DryRun bool
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// VacuumResult lists the files Vacuum deleted (or would delete on a dry run).
type VacuumResult struct {
	// DryRun is true when nothing was deleted.
	DryRun bool `json:"dryRun"`
	// Version is the snapshot version whose references were kept.
	Version int64 `json:"version"`
	// Retention is the retention period applied.
	Retention time.Duration `json:"retentionNanos"`
	// Cutoff is Now minus Retention: older unreferenced files go.
	Cutoff time.Time `json:"cutoff"`
	// Files are the deleted paths (relative to the table root), in path order.
	Files []string `json:"files"`
	// Bytes is their total size.
	Bytes int64 `json:"bytes"`
}

// Vacuum deletes files under the table root that no version inside the retention
// window references (V1): a file is kept when the latest snapshot references it
// (as a data file, a deletion vector file — by UUID, or by absolute path under the
// table root — or, through the skiplake.bloom tag, an index file), when a tombstone younger than the retention references it, or when it
// was modified less than Retention ago (it may belong to a commit in progress).
// Nothing under _delta_log/ is touched, nor any hidden path (a directory or file
// whose name starts with '_' or '.', except partition directories "k=v" and
// _delta_index/). Files are only ever listed and deleted through store paths
// relative to the root, so nothing outside the table can be affected.
func Vacuum(ctx context.Context, lg *log.Log, opts VacuumOptions) (*VacuumResult, error) {
	if lg == nil {
		return nil, &InvalidOptionsError{Problems: []string{"nil log"}}
	}
	if opts.Retention < 0 {
		return nil, &InvalidOptionsError{Problems: []string{fmt.Sprintf("negative Retention %s", opts.Retention)}}
	}
	snap, err := lg.Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	tableRet := DefaultRetention
	if s, ok := lookupProp(snap.Metadata().Configuration, PropDeletedFileRetain); ok {
		d, err := ParseInterval(s)
		if err != nil {
			return nil, &InvalidOptionsError{Problems: []string{fmt.Sprintf("table property %s=%q: %v", PropDeletedFileRetain, s, err)}}
		}
		tableRet = d
	}
	ret := opts.Retention
	if ret == 0 {
		ret = tableRet
	}
	if ret < tableRet && !opts.Force {
		return nil, fmt.Errorf("%w: %s < %s (%s); set Force to override", ErrRetentionTooShort, ret, tableRet, PropDeletedFileRetain)
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	cutoff := now().Add(-ret)
	res := &VacuumResult{DryRun: opts.DryRun, Version: snap.Version(), Retention: ret, Cutoff: cutoff, Files: []string{}}

	keep := map[string]bool{}
	root := storage.RootOf(lg.Storage())
	var absDVs []string // 'p' deletion vectors not resolvable against root
	addRef := func(p string, dv *log.DeletionVectorDescriptor, tags map[string]string) error {
		if d, err := decodeRef(p); err == nil {
			keep[d] = true
		} else {
			return err
		}
		if dv != nil && dv.StorageType == "u" {
			dp, err := dvPath(dv)
			if err != nil {
				return err
			}
			keep[dp] = true
		}
		if dv != nil && dv.StorageType == "p" {
			if rel, err := dvAbsPath(root, dv); err == nil {
				keep[rel] = true
			} else {
				absDVs = append(absDVs, dv.PathOrInlineDv)
			}
		}
		if t, ok := tags[bloomTagKey]; ok {
			var tag struct {
				Path string `json:"path"`
			}
			if json.Unmarshal([]byte(t), &tag) == nil && tag.Path != "" {
				keep[path.Clean(tag.Path)] = true
			}
		}
		return nil
	}
	for _, a := range snap.Files() {
		if err := addRef(a.Path, a.DeletionVector, a.Tags); err != nil {
			return nil, fmt.Errorf("optimize: vacuum: version %d: file %s: %w", snap.Version(), a.Path, err)
		}
	}
	cutMS := cutoff.UnixMilli()
	for _, r := range snap.Tombstones() {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp <= cutMS {
			continue // expired tombstone: the file is garbage
		}
		if err := addRef(r.Path, r.DeletionVector, r.Tags); err != nil {
			return nil, fmt.Errorf("optimize: vacuum: version %d: tombstone %s: %w", snap.Version(), r.Path, err)
		}
	}
	store := lg.Storage()
	objs, err := store.List(ctx, "", "")
	if err != nil {
		return nil, fmt.Errorf("optimize: vacuum: listing the table: %w", err)
	}
	for _, ob := range objs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		p := ob.Path
		if !vacuumable(p) || keep[path.Clean(p)] || !ob.ModTime.Before(cutoff) || namedByAbsolute(p, absDVs) {
			continue
		}
		if !opts.DryRun {
			if err := store.Delete(ctx, p); err != nil {
				return res, fmt.Errorf("optimize: vacuum: deleting %s: %w", p, err)
			}
		}
		res.Files = append(res.Files, p)
		res.Bytes += ob.Size
	}
	return res, nil
}

// vacuumable reports whether a listed path may be deleted at all: not in the log,
// not hidden (except _delta_index/ and partition directories).
func vacuumable(p string) bool {
	if strings.HasPrefix(p, "_delta_log/") || p == "_delta_log" {
		return false
	}
	if strings.HasPrefix(p, indexDir) {
		rest := strings.TrimPrefix(p, indexDir)
		return rest != "" && !hiddenComponent(rest)
	}
	return !hiddenComponent(p)
}

func hiddenComponent(p string) bool {
	parts := strings.Split(p, "/")
	for i, c := range parts {
		if c == "" || c == ".." {
			return true
		}
		if c[0] != '_' && c[0] != '.' {
			continue
		}
		if i < len(parts)-1 && strings.Contains(c, "=") {
			continue // partition directory such as _col=1
		}
		return true
	}
	return false
}

// decodeRef turns a log path into a clean storage path relative to the root.
func decodeRef(p string) (string, error) {
	a := log.Add{Path: p}
	d, err := a.DecodedPath()
	if err != nil {
		return "", err
	}
	return path.Clean(d), nil
}

// dvPath returns the storage path (relative to the root) of a deletion vector file
// with storage type 'u'.
func dvPath(d *log.DeletionVectorDescriptor) (string, error) {
	p, err := dv.Descriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv}.RelativePath("")
	if err != nil {
		return "", fmt.Errorf("optimize: deletion vector %q: %w", d.PathOrInlineDv, err)
	}
	return path.Clean(p), nil
}

// dvAbsPath returns the storage path (relative to root) of a deletion vector stored
// by absolute path ('p'), when it lies under the table root root.
func dvAbsPath(root string, d *log.DeletionVectorDescriptor) (string, error) {
	p, err := dv.Descriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv}.RelativePath(root)
	if err != nil {
		return "", err
	}
	return path.Clean(p), nil
}

// namedByAbsolute reports whether one of the absolute deletion vector paths (which
// could not be resolved against a known table root) ends with the listed path p:
// such a file is kept, as it may be the referenced deletion vector.
func namedByAbsolute(p string, abs []string) bool {
	for _, a := range abs {
		if strings.HasSuffix(a, "/"+p) {
			return true
		}
	}
	return false
}

// ParseInterval parses a Delta interval property such as "interval 7 days",
// "interval 1 week" or "interval 168 hours" (a bare duration like "168h" is also
// accepted).
func ParseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 1 {
		if d, err := time.ParseDuration(f[0]); err == nil && d >= 0 {
			return d, nil
		}
	}
	if len(f) != 2 {
		return 0, fmt.Errorf("optimize: invalid interval %q", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("optimize: invalid interval %q", s)
	}
	units := map[string]time.Duration{
		"millisecond": time.Millisecond, "second": time.Second, "minute": time.Minute,
		"hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
	}
	u, ok := units[strings.TrimSuffix(f[1], "s")]
	if !ok {
		return 0, fmt.Errorf("optimize: invalid interval unit in %q", s)
	}
	if n > int64(1<<62)/int64(u) {
		return 0, fmt.Errorf("optimize: interval %q overflows", s)
	}
	return time.Duration(n) * u, nil
}
