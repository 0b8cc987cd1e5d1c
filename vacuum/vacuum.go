package vacuum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// bloomTagKey is the add.tags key under which package bloom names a data file's
// Bloom index file (bloom.TagKey; repeated here so that VACUUM does not depend on
// the index format beyond the "path" field of the tag).
const bloomTagKey = "skiplake.bloom"

// Options configures Run. The zero value deletes unreferenced files older than the
// table's retention period.
type Options struct {
	// Retention is how long removed files are kept; default (zero, unless
	// RetentionSet) the table property delta.deletedFileRetentionDuration, else
	// DefaultRetention (7 days). A shorter retention than the table's is refused
	// unless Force is set.
	Retention time.Duration
	// RetentionSet makes Retention apply even when it is zero: a zero retention
	// keeps no unreferenced file (Delta's RETAIN 0 HOURS). Without it a zero
	// Retention means the table's retention period.
	RetentionSet bool
	// Force allows a retention shorter than the table's retention period or than
	// SafetyFloor (concurrent readers of old versions may then fail). Files younger
	// than MinUnreferencedAge are kept even then (writes still committing own them).
	Force bool
	// DryRun lists what would be deleted without deleting it.
	DryRun bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Progress, if set, is called as files are deleted: the bytes and files
	// deleted so far of those to delete (not on a dry run).
	Progress func(bytes, totalBytes int64, files, totalFiles int)
}

// Result lists the files Run deleted (or would delete on a dry run).
type Result struct {
	// DryRun is true when nothing was deleted.
	DryRun bool `json:"dryRun"`
	// Version is the snapshot version whose references were kept.
	Version int64 `json:"version"`
	// Retention is the retention period applied.
	Retention time.Duration `json:"retentionNanos"`
	// Cutoff is Now minus the longer of Retention and MinUnreferencedAge: older
	// unreferenced files go.
	Cutoff time.Time `json:"cutoff"`
	// Files are the deleted paths (relative to the table root), in path order:
	// data, deletion vector, Bloom index and workload tree files.
	Files []string `json:"files"`
	// Bytes is their total size.
	Bytes int64 `json:"bytes"`
	// KeptOlderThanTable counts unreferenced files that were kept because they are
	// older than the table itself (see Run): files that were in the location before
	// the table was created there.
	KeptOlderThanTable int `json:"keptOlderThanTable"`
	// KeptRecent counts unreferenced files the retention alone would have deleted
	// that were kept because they are younger than MinUnreferencedAge (a write may
	// still be committing them; V4).
	KeptRecent int `json:"keptRecent"`
	// Temporaries are abandoned temporary files of interrupted writes that were
	// deleted (or would be), in path order; TemporaryBytes is their total size.
	Temporaries    []string `json:"temporaries"`
	TemporaryBytes int64    `json:"temporaryBytes"`
}

// Run deletes files under the table root that no version inside the retention
// window references (V1): a file is kept when the latest snapshot references it
// (as a data file, a deletion vector file — by UUID, or by absolute path under the
// table root — or, through the skiplake.bloom tag, an index file, or, through the
// skiplake.qdtree tag, the workload layout's tree file), when a tombstone younger
// than the retention references it, or when it was modified less than Retention
// ago, or less than MinUnreferencedAge ago whatever the retention (it may belong to
// a commit in progress). Tree files
// (_skiplake_layout/qdtree-<uuid>.json, see package optimize) superseded by a later
// tree are deleted like data files and listed in Result.Files; while an unexpired
// tombstone lacks extended file metadata (its tags may have been dropped), every
// tree file is kept.
//
// A file older than the table is never deleted either: one modified before the
// commit time of version 0 (log.Creation) was in the location before the table was
// created there, unless the log names it (version 0 added it, or a tombstone removed
// it) or it has the name of a file skiplake writes (an orphan of an earlier failed
// attempt to create the table; see internal/layout). Such files are counted in
// KeptOlderThanTable.
//
// Nothing under _delta_log/ is touched, nor any hidden path (a directory or file
// whose name starts with '_' or '.', except partition directories "k=v",
// _delta_index/ and the tree files of _skiplake_layout/), except abandoned temporary files of interrupted writes: on stores
// with the storage.TempCleaner capability, temporaries older than the retention are
// deleted too, wherever they are (including _delta_log/). Files are only ever listed
// and deleted through store paths relative to the root, so nothing outside the table
// can be affected.
//
// Run refuses (with an error wrapping log.ErrUnsupportedFeature) tables whose
// protocol has a reader or writer feature it does not support (log.CheckVacuumable),
// as Delta Spark does, whether or not the table has vacuumProtocolCheck.
func Run(ctx context.Context, lg *log.Log, opts Options) (*Result, error) {
	if lg == nil {
		return nil, fmt.Errorf("%w: nil log", ErrInvalidOptions)
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("%w: negative Retention %s", ErrInvalidOptions, opts.Retention)
	}
	snap, err := lg.Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	if err := log.CheckVacuumable(snap.Protocol()); err != nil {
		return nil, fmt.Errorf("vacuum: refused: %w", err)
	}
	created, err := lg.Creation(ctx)
	if err != nil {
		return nil, fmt.Errorf("vacuum: reading the table's first commit: %w", err)
	}
	props := snap.Properties()
	if err := props.Err(log.PropDeletedFileRetentionDuration); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	tableRet := props.DeletedFileRetention
	ret := opts.Retention
	if ret == 0 && !opts.RetentionSet {
		ret = tableRet
	}
	if !opts.Force {
		switch {
		case ret < tableRet:
			return nil, &RetentionTooShortError{Retention: ret, TableRetention: tableRet}
		case ret < SafetyFloor:
			return nil, &RetentionTooShortError{Retention: ret, TableRetention: tableRet, BelowFloor: true}
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	t := now()
	// V4: a tombstone expires with the retention, but no unreferenced file younger
	// than MinUnreferencedAge goes, whatever the retention.
	tombstoneCutoff := t.Add(-ret)
	cutoff := t.Add(-max(ret, MinUnreferencedAge))
	res := &Result{DryRun: opts.DryRun, Version: snap.Version(), Retention: ret, Cutoff: cutoff, Files: []string{}, Temporaries: []string{}}

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
		if t := tags[layout.TreeTag]; t != "" {
			keep[path.Clean(t)] = true
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
			return nil, fmt.Errorf("vacuum: version %d: file %s: %w", snap.Version(), a.Path, err)
		}
	}
	cutMS := tombstoneCutoff.UnixMilli()
	// keepTrees: an unexpired tombstone without extended file metadata may have
	// dropped the tags of a file laid out by a tree, so which trees the versions
	// inside the window reference is unknown: every tree file is kept.
	keepTrees := false
	for _, r := range snap.Tombstones() {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp <= cutMS {
			continue // expired tombstone: the file is garbage
		}
		if !r.ExtendedFileMetadata {
			keepTrees = true
		}
		if err := addRef(r.Path, r.DeletionVector, r.Tags); err != nil {
			return nil, fmt.Errorf("vacuum: version %d: tombstone %s: %w", snap.Version(), r.Path, err)
		}
	}
	// Files the log names although they may be older than version 0's commit: the
	// files version 0 added (written before it) and every file a tombstone removed.
	known := map[string]bool{}
	if created.Version == 0 {
		for _, a := range created.Adds {
			if d, err := decodeRef(a.Path); err == nil {
				known[d] = true
			}
		}
	}
	for _, r := range snap.Tombstones() {
		if d, err := decodeRef(r.Path); err == nil {
			known[d] = true
		}
	}
	store := lg.Storage()
	objs, err := store.List(ctx, "", "")
	if err != nil {
		return nil, fmt.Errorf("vacuum: listing the table: %w", err)
	}
	var doomed []storage.ObjectInfo
	for _, ob := range objs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		p := ob.Path
		if !layout.Vacuumable(p) || keep[path.Clean(p)] || !ob.ModTime.Before(tombstoneCutoff) || namedByAbsolute(p, absDVs) {
			continue
		}
		if keepTrees && layout.IsTreeFile(p) {
			continue
		}
		if ob.ModTime.Before(created.Time) && !known[path.Clean(p)] && !layout.WrittenBySkiplake(p) {
			res.KeptOlderThanTable++
			continue
		}
		if !ob.ModTime.Before(cutoff) {
			res.KeptRecent++ // old enough for the retention, too young for V4
			continue
		}
		doomed = append(doomed, ob)
	}
	if err := deleteFiles(ctx, store, doomed, opts.DryRun, opts.Progress, res); err != nil {
		return res, err
	}
	if !opts.DryRun {
		// Incomplete multipart uploads of killed writers (S3) older than the retention:
		// best effort, a store may not grant the permission to list them.
		storage.AbortUploadsBefore(ctx, store, cutoff)
	}
	if err := vacuumTemporaries(ctx, store, cutoff, opts.DryRun, res); err != nil {
		return res, err
	}
	return res, nil
}

// progressChunk is how many files deleteFiles deletes between progress reports
// (S3's DeleteObjects takes 1,000 keys a request).
const progressChunk = 4000

// deleteFiles deletes the files (unless dryRun) in batches and in parallel where the
// store can (storage.DeleteMany: S3 DeleteObjects, 1,000 keys a request) and records
// the ones gone in res. A file already missing counts as deleted. progress, if set,
// is called after each chunk of progressChunk files.
func deleteFiles(ctx context.Context, store storage.Storage, files []storage.ObjectInfo, dryRun bool,
	progress func(bytes, totalBytes int64, files, totalFiles int), res *Result) error {
	var errs []error
	if !dryRun && len(files) > 0 {
		var total, done int64
		for _, f := range files {
			total += f.Size
		}
		errs = make([]error, 0, len(files))
		for lo := 0; lo < len(files); lo += progressChunk {
			chunk := files[lo:min(lo+progressChunk, len(files))]
			paths := make([]string, len(chunk))
			for i, f := range chunk {
				paths[i] = f.Path
				done += f.Size
			}
			if cerrs := storage.DeleteMany(ctx, store, paths); cerrs != nil {
				errs = append(errs, cerrs...)
			} else {
				errs = append(errs, make([]error, len(chunk))...)
			}
			if progress != nil {
				progress(done, total, lo+len(chunk), len(files))
			}
		}
	}
	var first error
	for i, f := range files {
		if errs != nil && errs[i] != nil && !errors.Is(errs[i], storage.ErrNotExist) {
			if first == nil {
				first = fmt.Errorf("vacuum: deleting %s: %w", f.Path, errs[i])
			}
			continue
		}
		res.Files = append(res.Files, f.Path)
		res.Bytes += f.Size
	}
	return first
}

// vacuumTemporaries deletes the temporary files of interrupted writes that are older
// than cutoff (no write in flight can own them), when the store can list them.
func vacuumTemporaries(ctx context.Context, store storage.Storage, cutoff time.Time, dryRun bool, res *Result) error {
	tc, ok := store.(storage.TempCleaner)
	if !ok {
		return nil
	}
	temps, err := tc.ListTemp(ctx, "")
	if err != nil {
		return fmt.Errorf("vacuum: listing temporary files: %w", err)
	}
	for _, ob := range temps {
		if !ob.ModTime.Before(cutoff) {
			continue
		}
		if !dryRun {
			if err := tc.DeleteTemp(ctx, ob.Path); err != nil {
				if errors.Is(err, storage.ErrNotExist) {
					continue // its write finished or was aborted meanwhile
				}
				return fmt.Errorf("vacuum: deleting temporary file %s: %w", ob.Path, err)
			}
		}
		res.Temporaries = append(res.Temporaries, ob.Path)
		res.TemporaryBytes += ob.Size
	}
	return nil
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
		return "", fmt.Errorf("vacuum: deletion vector %q: %w", d.PathOrInlineDv, err)
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
