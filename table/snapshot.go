package table

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Ref names a version of a table: the latest, a version number, or the version that
// was current at a point in time. The zero Ref is the latest version.
type Ref struct {
	kind    refKind
	version int64
	at      time.Time
}

type refKind uint8

const (
	refLatest refKind = iota
	refVersion
	refTimestamp
)

// Latest refers to the newest version.
func Latest() Ref { return Ref{} }

// AtVersion refers to version v (time travel).
func AtVersion(v int64) Ref { return Ref{kind: refVersion, version: v} }

// AtTimestamp refers to the newest version committed at or before t.
func AtTimestamp(t time.Time) Ref { return Ref{kind: refTimestamp, at: t} }

// String renders the reference for messages.
func (r Ref) String() string {
	switch r.kind {
	case refVersion:
		return fmt.Sprintf("version %d", r.version)
	case refTimestamp:
		return "timestamp " + r.at.UTC().Format(time.RFC3339Nano)
	}
	return "latest version"
}

// Snapshot is one version of a table, resolved once into its view (package
// tableview: schemas, column mapping, partition and clustering columns, writer
// settings) that every operation on it reads. It is immutable and safe for
// concurrent use.
type Snapshot struct {
	log     *log.Snapshot
	view    *tableview.View
	store   storage.Storage       // where the data files are
	fm      *scanexec.Meta        // typed stats, partition values and skipping index, built on first use
	filters *filterHook           // the table's ObserveFilters callbacks (nil: none)
	footers *datafile.FooterCache // the table's footer cache (nil: none)
	// loadRequests counts the requests loading the snapshot made (nil: the storage
	// does not count them); every ScanReport of the snapshot carries it.
	loadRequests *storage.RequestCounts
}

// Snapshot loads the table at ref. Reading fails (with an error naming the features)
// when the table needs reader features skiplake does not implement (L4). For Latest,
// the snapshot loaded last is reused when the log's newest version is still its
// version (one listing of the log instead of a load; CacheOptions.NoSnapshot turns it
// off); its SnapshotRequests are then those of the check.
func (t *Table) Snapshot(ctx context.Context, ref Ref) (*Snapshot, error) {
	var (
		ls  *log.Snapshot
		err error
	)
	reqs, ctx := requestCounter(ctx, t.store)
	switch ref.kind {
	case refVersion:
		if ref.version < 0 {
			return nil, fmt.Errorf("%w: negative version %d", ErrInvalidArgument, ref.version)
		}
		ls, err = t.log.Snapshot(ctx, ref.version)
	case refTimestamp:
		ls, err = t.log.SnapshotAsOf(ctx, ref.at)
	default:
		if s := t.reuseLatest(ctx); s != nil {
			s.loadRequests = countsOf(reqs)
			return s, nil
		}
		ls, err = t.log.Snapshot(ctx, -1)
	}
	if err != nil {
		return nil, err
	}
	s, err := newSnapshot(t.store, ls)
	if err != nil {
		return nil, err
	}
	s.filters = &t.filters
	s.footers = t.footerCache()
	s.loadRequests = countsOf(reqs)
	if ref.kind == refLatest {
		t.keepLatest(s)
	}
	return s, nil
}

// newSnapshot resolves ls into its view (validated there: L4 and the schema).
func newSnapshot(store storage.Storage, ls *log.Snapshot) (*Snapshot, error) {
	v, err := tableview.New(ls)
	if err != nil {
		return nil, err
	}
	return &Snapshot{log: ls, view: v, store: store, fm: new(scanexec.Meta)}, nil
}

// Version is the snapshot's table version.
func (s *Snapshot) Version() int64 { return s.log.Version() }

// Timestamp is the commit time of the snapshot's version.
func (s *Snapshot) Timestamp() time.Time { return s.log.Timestamp() }

// Schema is the table's Arrow schema (logical column names), as scans return it.
func (s *Snapshot) Schema() *arrow.Schema { return s.view.Logical() }

// DeltaSchema is the table's Delta schema.
func (s *Snapshot) DeltaSchema() *log.StructType { return s.view.Delta() }

// PartitionColumns are the partition columns, in order.
func (s *Snapshot) PartitionColumns() []string { return s.log.PartitionColumns() }

// Properties returns the table properties parsed into typed values (shared; do not
// modify). Every property skiplake interprets is read from it (P1).
func (s *Snapshot) Properties() *log.TableProperties { return s.view.Properties() }

// Configuration returns a copy of the raw table properties (metaData.configuration).
func (s *Snapshot) Configuration() map[string]string {
	return s.view.Properties().Configuration()
}

// Log returns the underlying log snapshot (live add actions, protocol, metadata).
func (s *Snapshot) Log() *log.Snapshot { return s.log }

// meta is what planning knows about the snapshot's live files (built on first use,
// shared by every scan of the snapshot and its copies).
func (s *Snapshot) meta() (*scanexec.Meta, error) {
	return s.fm.Load(s.log.Files(), s.view, s.store)
}
