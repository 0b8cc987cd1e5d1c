package log

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// WithClock returns a Log of the same table whose clock (commit timestamps, tombstone
// and log expiry) is now: scheduled maintenance and simulations run "at" a chosen
// time with it. The receiver is not changed.
func (l *Log) WithClock(now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{store: l.store, now: now, warnings: l.warnings}
}

// LogCleanup describes expired log files (CleanupExpiredLog).
type LogCleanup struct {
	// DryRun is true when nothing was deleted.
	DryRun bool `json:"dryRun"`
	// Enabled is false when delta.enableExpiredLogCleanup is false (nothing is done).
	Enabled bool `json:"enabled"`
	// Retention is delta.logRetentionDuration; Cutoff is now minus Retention,
	// truncated to midnight UTC (as Delta does).
	Retention time.Duration `json:"retentionNanos"`
	Cutoff    time.Time     `json:"cutoff"`
	// CheckpointVersion is the newest checkpoint no newer than the newest commit at
	// or before Cutoff: everything older goes, it and everything after stay (-1:
	// there is none, nothing is deleted).
	CheckpointVersion int64 `json:"checkpointVersion"`
	// Files are the deleted (or, on a dry run, deletable) log files, oldest first;
	// Bytes their total size.
	Files []string `json:"files"`
	Bytes int64    `json:"bytes"`
}

// CleanupExpiredLog deletes the log files that the log retention lets go (PROTOCOL.md
// "Metadata Cleanup"): with cutoff = now − delta.logRetentionDuration (default 30
// days) truncated to midnight UTC, the newest commit at or before the cutoff and the
// newest complete checkpoint at or before that commit; commit files, checkpoints and
// .crc files of versions below that checkpoint, and log compaction files starting
// at or before it, are deleted, oldest first. Only commits a checkpoint covers go:
// the checkpoint, its commit and every later commit stay, so every version from the
// checkpoint on stays readable (time travel to older versions is what the retention
// gives up). The checkpoint is read in full before anything is deleted; when it
// cannot be read nothing is. Commit times are the commit files' modification times,
// made increasing as Delta does (a commit is never older than the one before it).
// With delta.enableExpiredLogCleanup=false nothing is deleted. Sidecar files of v2
// checkpoints are not touched.
func (l *Log) CleanupExpiredLog(ctx context.Context, snap *Snapshot, dryRun bool) (*LogCleanup, error) {
	props := snap.Properties()
	c := &LogCleanup{DryRun: dryRun, Enabled: props.EnableExpiredLogCleanup, Retention: props.LogRetention, CheckpointVersion: -1}
	if err := props.Err(PropLogRetentionDuration, PropEnableExpiredLogCleanup); err != nil {
		return nil, fmt.Errorf("log: log cleanup: %w", err)
	}
	if !c.Enabled {
		return c, nil
	}
	c.Cutoff = l.now().Add(-c.Retention).UTC().Truncate(24 * time.Hour)
	lst, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	versions := make([]int64, 0, len(lst.commits))
	for v := range lst.commits {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	cutoffCommit := int64(-1)
	var prev time.Time
	for _, v := range versions {
		ts := lst.commits[v].ModTime
		if !prev.IsZero() && !ts.After(prev) {
			ts = prev.Add(time.Millisecond)
		}
		prev = ts
		if ts.After(c.Cutoff) {
			break
		}
		cutoffCommit = v
	}
	if cutoffCommit < 0 {
		return c, nil
	}
	var cp *checkpointSet
	for i := range lst.checkpoints {
		if lst.checkpoints[i].version <= cutoffCommit && lst.checkpoints[i].version <= snap.version {
			cp = &lst.checkpoints[i]
		}
	}
	if cp == nil {
		return c, nil
	}
	// The checkpoint must be whole and readable: after the cleanup nothing older is
	// left to fall back to.
	var hasProtocol, hasMetadata bool
	if err := l.readCheckpoint(ctx, *cp, nil, func(a *Action) error {
		hasProtocol = hasProtocol || a.Protocol != nil
		hasMetadata = hasMetadata || a.Metadata != nil
		return nil
	}); err != nil {
		return nil, fmt.Errorf("log: log cleanup: checkpoint %d cannot be read, nothing deleted: %w", cp.version, err)
	}
	if !hasProtocol || !hasMetadata {
		return nil, fmt.Errorf("log: log cleanup: checkpoint %d lacks protocol or metaData, nothing deleted: %w", cp.version, ErrCorruptLog)
	}
	c.CheckpointVersion = cp.version
	objs, err := l.store.List(ctx, logDir, "")
	if err != nil {
		return nil, fmt.Errorf("log: listing %s: %w", logDir, err)
	}
	type victim struct {
		version int64
		obj     storage.ObjectInfo
	}
	var victims []victim
	for _, o := range objs {
		name := strings.TrimPrefix(o.Path, logDir)
		if strings.Contains(name, "/") {
			continue
		}
		v, rest, ok := parseVersionPrefix(name)
		if !ok {
			continue
		}
		switch {
		case rest == "json" || rest == "crc" || strings.HasPrefix(rest, "checkpoint."):
			if v < cp.version {
				victims = append(victims, victim{v, o})
			}
		case strings.HasSuffix(rest, ".compacted.json"):
			if v <= cp.version {
				victims = append(victims, victim{v, o})
			}
		}
	}
	sort.SliceStable(victims, func(i, j int) bool {
		if victims[i].version != victims[j].version {
			return victims[i].version < victims[j].version
		}
		return victims[i].obj.Path < victims[j].obj.Path
	})
	for _, vi := range victims {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		if !dryRun {
			if err := l.store.Delete(ctx, vi.obj.Path); err != nil && !errors.Is(err, storage.ErrNotExist) {
				return c, fmt.Errorf("log: log cleanup: deleting %s: %w", vi.obj.Path, err)
			}
		}
		c.Files = append(c.Files, vi.obj.Path)
		c.Bytes += vi.obj.Size
	}
	return c, nil
}
