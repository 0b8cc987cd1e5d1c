package log

import (
	"context"
	"sort"
	"time"

	"github.com/skiplake/skiplake/storage"
)

// CommitScan is one commit file ScanCommits read.
type CommitScan struct {
	// Version is the commit's version.
	Version int64
	// ModTime is the commit file's modification time (what PROTOCOL.md's change
	// data readers take as the commit's time when it has no in-commit timestamp).
	ModTime time.Time
	// Info is its commitInfo (nil when it has none).
	Info *CommitInfo
	// Actions are its other actions, in file order.
	Actions []Action
}

// ScanCommits calls fn for every commit file still in the log whose version lies in
// [from, to] (to < 0: up to the latest), in version order; versions whose JSON was
// cleaned up are skipped. Files are fetched in parallel, a window at a time, so that
// scanning a long history costs few round trips. fn's error stops the scan and is
// returned.
func (l *Log) ScanCommits(ctx context.Context, from, to int64, fn func(*CommitScan) error) error {
	lst, err := l.list(ctx, "")
	if err != nil {
		return err
	}
	if lst.maxVersion < 0 {
		return ErrTableNotFound
	}
	if to < 0 || to > lst.maxVersion {
		to = lst.maxVersion
	}
	var versions []int64
	for v := range lst.commits {
		if v >= from && v <= to {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	for start := 0; start < len(versions); start += commitFetchWindow {
		end := min(len(versions), start+commitFetchWindow)
		data := make([][]byte, end-start)
		errs := make([]error, end-start)
		storage.ForEachLimit(ctx, end-start, commitFetchParallelism, func(ctx context.Context, i int) {
			data[i], errs[i] = l.fetchCommit(ctx, lst.commits[versions[start+i]].Path)
		})
		for i := range data {
			if err := ctx.Err(); err != nil {
				return err
			}
			if errs[i] != nil {
				return errs[i]
			}
			v := versions[start+i]
			cs := &CommitScan{Version: v, ModTime: lst.commits[v].ModTime}
			ci, err := parseCommit(lst.commits[v].Path, data[i], func(a *Action) error {
				cs.Actions = append(cs.Actions, *a)
				return nil
			})
			if err != nil {
				return err
			}
			cs.Info = ci
			if err := fn(cs); err != nil {
				return err
			}
		}
	}
	return nil
}

// CommitFile is one commit file of the log.
type CommitFile struct {
	// Version is the commit's version.
	Version int64
	// ModTime is the file's modification time.
	ModTime time.Time
}

// CommitFiles lists the commit files still in the log, in version order, from one
// listing of _delta_log/ (no commit is read). ErrTableNotFound when there are none.
func (l *Log) CommitFiles(ctx context.Context) ([]CommitFile, error) {
	lst, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	if lst.maxVersion < 0 {
		return nil, ErrTableNotFound
	}
	out := make([]CommitFile, 0, len(lst.commits))
	for v, o := range lst.commits {
		out = append(out, CommitFile{Version: v, ModTime: o.ModTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// WriteVolume is how many bytes the commits still in the log added to the table.
type WriteVolume struct {
	// FromVersion and ToVersion are the oldest and newest commit read (-1 when none).
	FromVersion, ToVersion int64
	// Commits counts the commit files read.
	Commits int
	// DataBytes and DataFiles count files added with dataChange=true: appends,
	// overwrites, and the files DML rewrites.
	DataBytes, DataFiles int64
	// RearrangedBytes and RearrangedFiles count files added with dataChange=false:
	// OPTIMIZE, compaction and backfills, which only rewrite data already there.
	RearrangedBytes, RearrangedFiles int64
}

// WriteVolume sums the sizes of the files the commits up to version to (< 0: the
// latest) wrote, by whether they changed data. An add of a path an earlier scanned
// commit added already (a new deletion vector, a row ID backfill) wrote no data and
// is not counted; commits whose JSON was cleaned up are not read. It reads every
// commit file still in the log.
func (l *Log) WriteVolume(ctx context.Context, to int64) (*WriteVolume, error) {
	w := &WriteVolume{FromVersion: -1, ToVersion: -1}
	seen := map[string]bool{}
	err := l.ScanCommits(ctx, 0, to, func(c *CommitScan) error {
		if w.FromVersion < 0 {
			w.FromVersion = c.Version
		}
		w.ToVersion = c.Version
		w.Commits++
		for _, a := range c.Actions {
			if a.Add == nil {
				continue
			}
			p := canonicalPath(a.Add.Path)
			if seen[p] {
				continue
			}
			seen[p] = true
			if a.Add.DataChange {
				w.DataBytes += a.Add.Size
				w.DataFiles++
			} else {
				w.RearrangedBytes += a.Add.Size
				w.RearrangedFiles++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}
