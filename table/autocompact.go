package table

import (
	"context"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
)

// AutoCompaction is what auto-compaction did after a write (WriteResult.AutoCompact):
// the table property delta.autoOptimize.autoCompact makes every write that commits
// compact, in a separate commit, the small files of the partitions it touched once a
// partition has skiplake.autoCompact.minNumFiles of them (default 50) — files below
// skiplake.autoCompact.smallFileSize, by default three quarters of the target size.
// On a clustered table the new files are clustered incrementally instead (with the
// size tiers of incremental liquid clustering). Its failure never fails the write.
type AutoCompaction struct {
	// Versions are the versions it committed (none when nothing was due).
	Versions []int64 `json:"versions,omitempty"`
	// FilesRemoved, FilesAdded and BytesRewritten count what it rewrote.
	FilesRemoved   int   `json:"filesRemoved"`
	FilesAdded     int   `json:"filesAdded"`
	BytesRewritten int64 `json:"bytesRewritten"`
	// Clustered is true when it clustered (a clustered table).
	Clustered bool `json:"clustered,omitempty"`
	// Err is its failure, if any (the write itself succeeded).
	Err error `json:"-"`
	// Error is Err's text, for JSON.
	Error string `json:"error,omitempty"`
}

// autoCompactAfter runs auto-compaction after a write that committed adds to the
// table whose properties are props (the write's snapshot), or returns nil when the
// table does not ask for it or nothing was written. It plans on the latest version,
// keying the touched partitions by that version's view (physical partition names).
func (t *Table) autoCompactAfter(ctx context.Context, props *log.TableProperties, adds []*log.Add) *AutoCompaction {
	if !props.AutoCompact || len(adds) == 0 {
		return nil
	}
	ac := &AutoCompaction{}
	fail := func(err error) *AutoCompaction {
		ac.Err, ac.Error = err, err.Error()
		return ac
	}
	snap, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return fail(err)
	}
	v := snap.view
	p := v.Properties()
	o := optimize.Options{MinFiles: p.AutoCompactMinNumFiles, MinFileSize: p.AutoCompactSmallFileSize, Auto: true}
	seen := map[string]bool{}
	for _, a := range adds {
		if k := v.PartitionKey(a); !seen[k] {
			seen[k] = true
			o.Partitions = append(o.Partitions, a.PartitionValues)
		}
	}
	plan, err := optimize.NewPlanOn(ctx, v, t.store, o)
	if err != nil {
		return fail(err)
	}
	if plan.NumBins == 0 {
		return nil
	}
	ac.Clustered = plan.Liquid
	m, err := optimize.Execute(ctx, plan)
	if m != nil {
		ac.Versions, ac.FilesRemoved, ac.FilesAdded, ac.BytesRewritten = m.Versions, m.NumRemovedFiles, m.NumAddedFiles, m.NumAddedBytes
	}
	if err != nil {
		return fail(err)
	}
	return ac
}
