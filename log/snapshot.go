package log

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Snapshot is the reconciled state of a table at one version. It is
// immutable and safe for concurrent use; returned slices and actions are
// shared and must not be modified.
type Snapshot struct {
	log               *Log
	version           int64
	protocol          Protocol
	metadata          Metadata
	files             []*Add
	tombstones        []*Remove
	txns              map[string]Txn
	domains           []DomainMetadata
	timestamp         int64
	checkpointVersion int64
	// warnings are the checkpoints skipped while building it (Warnings).
	warnings []string
	// pending marks a snapshot from NewTableSnapshot: the table does not exist yet
	// and metadata and protocol are those its creating commit will carry.
	pending bool
	// changeMetadata and changeProtocol mark a snapshot from WithChange: its
	// transactions commit its metadata (and protocol) as a change of the version.
	changeMetadata, changeProtocol bool

	propsOnce sync.Once
	props     *TableProperties
}

// Version returns the snapshot's table version (-1 for the empty snapshot of
// a table that does not exist yet).
func (s *Snapshot) Version() int64 { return s.version }

// Protocol returns the table protocol.
func (s *Snapshot) Protocol() Protocol { return s.protocol }

// Metadata returns the table metadata.
func (s *Snapshot) Metadata() Metadata { return s.metadata }

// Schema parses the table schema.
func (s *Snapshot) Schema() (*StructType, error) { return ParseSchema(s.metadata.SchemaString) }

// PartitionColumns returns the partition column names.
func (s *Snapshot) PartitionColumns() []string { return s.metadata.PartitionColumns }

// Files returns the live files ordered by path (then DV id).
func (s *Snapshot) Files() []*Add { return s.files }

// NumFiles returns the number of live files.
func (s *Snapshot) NumFiles() int { return len(s.files) }

// Tombstones returns the removes that survived reconciliation, ordered by path.
func (s *Snapshot) Tombstones() []*Remove { return s.tombstones }

// TxnVersion returns the last committed version of an idempotent writer.
func (s *Snapshot) TxnVersion(appID string) (int64, bool) {
	t, ok := s.txns[appID]
	return t.Version, ok
}

// DomainMetadata returns the live (not removed) domain metadata, ordered by domain.
func (s *Snapshot) DomainMetadata() []DomainMetadata { return s.domains }

// Timestamp returns the commit time of the snapshot version: the commit's
// inCommitTimestamp or commitInfo.timestamp when present, else the commit
// file's modification time.
func (s *Snapshot) Timestamp() time.Time { return time.UnixMilli(s.timestamp) }

// CheckpointVersion returns the version of the checkpoint the snapshot was
// built from, or -1 when it was replayed from JSON commits only.
func (s *Snapshot) CheckpointVersion() int64 { return s.checkpointVersion }

// Warnings describes what went wrong, without failing, while the snapshot was built:
// each checkpoint that could not be read and was skipped (L3: the snapshot was then
// built from an older checkpoint, or from version 0, and every JSON commit after it,
// as Delta Spark does). Nil when nothing did. The log's ObserveWarnings observers
// receive the same messages.
func (s *Snapshot) Warnings() []string { return s.warnings }

// Properties returns the table properties (metaData.configuration) parsed into
// typed values, once per snapshot (P1). The result is shared: do not modify it.
func (s *Snapshot) Properties() *TableProperties {
	s.propsOnce.Do(func() { s.props = ParseTableProperties(s.metadata.Configuration) })
	return s.props
}

// SnapshotAsOf returns the snapshot of the latest commit whose timestamp is
// at or before t (commitInfo timestamps when present, else file times). A
// t before the first available commit returns ErrTimestampOutOfRange; a t
// after the latest commit returns the latest snapshot.
func (l *Log) SnapshotAsOf(ctx context.Context, t time.Time) (*Snapshot, error) {
	lst, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	if len(lst.commits) == 0 {
		return nil, ErrTableNotFound
	}
	versions := make([]int64, 0, len(lst.commits))
	for v := range lst.commits {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] > versions[j] })
	target := t.UnixMilli()
	var first int64
	for _, v := range versions {
		ts, err := l.commitTimestamp(ctx, lst, v)
		if err != nil {
			return nil, err
		}
		if ts <= target {
			return l.Snapshot(ctx, v)
		}
		first = ts
	}
	return nil, fmt.Errorf("log: %s is before the first available commit, version %d at %s: %w",
		t.UTC().Format(time.RFC3339Nano), versions[len(versions)-1], time.UnixMilli(first).UTC().Format(time.RFC3339Nano), ErrTimestampOutOfRange)
}

func (l *Log) commitTimestamp(ctx context.Context, lst *listing, v int64) (int64, error) {
	o := lst.commits[v]
	ci, err := l.readCommit(ctx, o.Path, nil)
	if err != nil {
		return 0, err
	}
	if ci != nil && commitTime(ci) > 0 {
		return commitTime(ci), nil
	}
	return o.ModTime.UnixMilli(), nil
}

// CommitRecord is one entry of the table history.
type CommitRecord struct {
	// Version is the commit version.
	Version int64
	// Timestamp is the commit time (commitInfo timestamp, else file time).
	Timestamp time.Time
	// Operation is commitInfo.operation ("" when absent).
	Operation string
	// CommitInfo is the commit's commitInfo (Raw holds every field), or nil.
	CommitInfo *CommitInfo
}

// History returns up to limit commits, newest first (limit <= 0: all
// available). Only the needed commit files are read; commits whose JSON was
// cleaned up are not listed.
func (l *Log) History(ctx context.Context, limit int) ([]CommitRecord, error) {
	lst, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	if lst.maxVersion < 0 {
		return nil, ErrTableNotFound
	}
	var out []CommitRecord
	for v := lst.maxVersion; v >= 0; v-- {
		o, ok := lst.commits[v]
		if !ok {
			if len(out) > 0 {
				break // older JSON commits were cleaned up
			}
			continue
		}
		ci, err := l.readCommit(ctx, o.Path, nil)
		if err != nil {
			return nil, err
		}
		rec := CommitRecord{Version: v, CommitInfo: ci, Timestamp: o.ModTime}
		if ci != nil {
			rec.Operation = ci.Operation
			if ts := commitTime(ci); ts > 0 {
				rec.Timestamp = time.UnixMilli(ts)
			}
		}
		out = append(out, rec)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// Creation describes the beginning of a table as far as its log still shows it.
type Creation struct {
	// Version is the oldest commit in the log: 0, unless log cleanup removed older
	// commits (then the oldest checkpoint's version when no commit is left).
	Version int64
	// Time is that commit's time (commitInfo timestamp, else the commit file's
	// modification time). When Version is not 0 it is later than the table's real
	// creation, which errs on the side of treating more files as older than the table.
	Time time.Time
	// Adds are the add actions of that commit (nil when only a checkpoint is left).
	// For version 0 these are the files written for the table's creation, which are
	// older than the commit itself.
	Adds []*Add
}

// Creation reads the oldest commit still in the log (version 0 unless it was cleaned
// up) and reports when it was committed and which files it added. VACUUM uses it to
// tell files that were in the table's location before the table from the table's own.
func (l *Log) Creation(ctx context.Context) (*Creation, error) {
	lst, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	if lst.maxVersion < 0 {
		return nil, ErrTableNotFound
	}
	oldest := int64(-1)
	for v := range lst.commits {
		if oldest < 0 || v < oldest {
			oldest = v
		}
	}
	if oldest < 0 {
		cp := lst.checkpoints[0]
		return &Creation{Version: cp.version, Time: cp.files[0].ModTime}, nil
	}
	c := &Creation{Version: oldest}
	o := lst.commits[oldest]
	ci, err := l.readCommit(ctx, o.Path, func(a *Action) error {
		if a.Add != nil {
			c.Adds = append(c.Adds, a.Add)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.Time = o.ModTime
	if ci != nil && commitTime(ci) > 0 {
		c.Time = time.UnixMilli(commitTime(ci))
	}
	return c, nil
}
