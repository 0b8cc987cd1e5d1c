package table

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// The values of the _change_type column (log.ChangeTypeColumn) that a change read
// returns after the table's columns, with the commit's version and timestamp
// (log.CommitVersionColumn, log.CommitTimestampColumn; PROTOCOL.md "Reader
// Requirements for AddCDCFile").
const (
	// ChangeInsert: a row the commit added.
	ChangeInsert = tableview.ChangeInsert
	// ChangeDelete: a row the commit deleted.
	ChangeDelete = tableview.ChangeDelete
	// ChangeUpdatePreimage: an updated row as it was before the commit.
	ChangeUpdatePreimage = tableview.ChangeUpdatePreimage
	// ChangeUpdatePostimage: an updated row as the commit left it.
	ChangeUpdatePostimage = tableview.ChangeUpdatePostimage
)

// changeColumns are the columns a change read adds to the table's: _change_type is
// read from change data files (a file column that the inserts and deletes derived
// from add and remove actions replace with a constant), the commit's version and
// time are constants of every file.
func changeColumns() []scanexec.Column {
	typ := arrow.Field{Name: log.ChangeTypeColumn, Type: arrow.BinaryTypes.String}
	ver := arrow.Field{Name: log.CommitVersionColumn, Type: arrow.PrimitiveTypes.Int64}
	ts := arrow.Field{Name: log.CommitTimestampColumn, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}
	return []scanexec.Column{
		{Field: typ, Physical: log.ChangeTypeColumn, Read: tableview.ChangeTypeField, Override: true},
		{Field: ver, Partition: true, Physical: log.CommitVersionColumn},
		{Field: ts, Partition: true, Physical: log.CommitTimestampColumn},
	}
}

// changeMapper maps the change columns to themselves and the table's columns as
// base does: _change_type is a column of the change data files, and the version and
// time are among every change file's constants (scanexec.Task.PartVals).
func changeMapper(base skipping.PathMapper) skipping.PathMapper {
	return func(path []string) ([]string, bool) {
		if len(path) == 1 {
			for _, c := range log.ChangeDataColumns {
				if strings.EqualFold(path[0], c) {
					return []string{c}, true
				}
			}
		}
		return scanexec.MapPath(base, path)
	}
}

// ChangeScan is a planned read of a table's change data feed (Table.PlanChanges):
// the versions it covers, the files holding their changes with what skipping
// decided for each, and the projection and filter. It reads no data; Read streams
// the rows. A ChangeScan is immutable and safe for concurrent use.
type ChangeScan struct {
	sc       *Scan
	from, to int64
}

// ChangeReader streams the rows of a change read (Table.Changes). It is a Reader
// (the same batches, limits, read-ahead, Report and Release) with the range of
// versions it covers.
type ChangeReader struct {
	*Reader
	// FromVersion and ToVersion are the first and the last version whose changes
	// the reader returns. When nothing was committed after the version a consumer
	// resumes from (the start is the latest version plus one and the end the
	// latest), ToVersion is FromVersion-1 and there are no rows.
	FromVersion, ToVersion int64
}

// Changes reads the changes committed to the table in versions from through to
// (both included): every row inserted, deleted or updated, with the table's columns
// plus _change_type (ChangeInsert, ChangeDelete, ChangeUpdatePreimage,
// ChangeUpdatePostimage), _commit_version and _commit_timestamp — Delta's change
// data feed, for tables with delta.enableChangeDataFeed=true. It is PlanChanges
// followed by ChangeScan.Read; the caller releases the reader.
func (t *Table) Changes(ctx context.Context, from, to Ref, opts ...ScanOption) (*ChangeReader, error) {
	cs, err := t.PlanChanges(ctx, from, to, opts...)
	if err != nil {
		return nil, err
	}
	rd, err := cs.Read(ctx)
	if err != nil {
		return nil, err
	}
	return &ChangeReader{Reader: rd, FromVersion: cs.from, ToVersion: cs.to}, nil
}

// PlanChanges plans a read of the change data feed from version from through to,
// reading the log only (Changes reads the rows). The range:
//
//   - from: AtVersion(v), the first version read; AtTimestamp(t), the first version
//     committed at or after t; Latest(), the latest version. A consumer that
//     processed the changes up to version v resumes from AtVersion(v+1): when v is
//     the latest version, the result is empty (ChangeScan.FromVersion is v+1,
//     ToVersion v); a version beyond that is an error.
//   - to: AtVersion(v), the last version read; AtTimestamp(t), the last version
//     committed at or before t; Latest(), the latest version.
//
// Commit times are those of the rows' _commit_timestamp: in-commit timestamps
// where a commit has one, else the modification times of the commit files (as
// Delta Spark and delta-kernel-rs read them). When both ends are timestamps between
// the same two commits the range is empty, as in Spark.
//
// The changes of each version come from its cdc actions when it has any (the
// change data files DELETE, UPDATE and MERGE write), else from its add and remove
// actions with dataChange=true: a new file's rows are inserts, a removed file's
// live rows deletes, and a file removed and added back in the same commit with
// another deletion vector contributes the rows its new vector deletes (deletes) and
// those it no longer deletes (inserts). Rows that commits with dataChange=false
// rearranged (OPTIMIZE, compaction, clustering, purges) are not changes. A MERGE
// whose commit says it inserted, updated and deleted nothing contributes nothing,
// as in Spark.
//
// The result has the columns of the table at version to followed by the three
// change columns; WithColumns projects onto any of them and WithFilter filters on
// any of them, skipping as scans do: files whose partition values, change columns
// (version, time and, for derived changes, the change type) or, for add and remove
// actions, statistics prove that no row matches are not read; inside the files read,
// row groups and pages by their footers and page indexes. The read options
// (WithBatchSize, WithParallelism, WithReadAhead, WithLimit, WithAllocator,
// WithProgress) apply as to Scan.Read: memory is bounded by the read-ahead, not the
// range.
//
// Refused, wrapping ErrChangesUnavailable and naming the version: a version in the
// range whose table did not have the change data feed on (it was never enabled,
// or disabled by a later metaData); a version whose commit file the log no longer
// has (log cleanup); a change file or data file VACUUM deleted (when read); a schema
// change in the range that the end version's schema cannot read — a column dropped,
// renamed (column mapping), retyped, made NOT NULL, or a partitioning change, as
// Spark refuses it (read the versions before and after it separately); added
// columns read as NULL in the earlier versions. A version after the latest (other
// than the resume point above), or a start after the end, is ErrInvalidArgument.
func (t *Table) PlanChanges(ctx context.Context, from, to Ref, opts ...ScanOption) (*ChangeScan, error) {
	reqs, ctx := requestCounter(ctx, t.store)
	r, err := t.resolveChangeRange(ctx, from, to)
	if err != nil {
		return nil, err
	}
	end, err := t.changeSnapshot(ctx, r.to)
	if err != nil {
		return nil, err
	}
	cols := append(scanexec.TableColumns(end.view), changeColumns()...)
	sc := &Scan{snap: end, cfg: newScanConfig(opts), report: ScanReport{Version: r.to},
		cols: cols, mapper: changeMapper(scanexec.MapperOf(end.view))}
	if err := sc.bindFilter(); err != nil {
		return nil, err
	}
	if sc.proj, err = sc.project(sc.cfg.columns, false); err != nil {
		return nil, err
	}
	sc.report.Files = skipping.LevelStats{Level: "files", Unit: skipping.UnitFiles}
	cs := &ChangeScan{sc: sc, from: r.from, to: r.to}
	if r.from > r.to {
		sc.report.Requests = countsOf(reqs)
		return cs, nil // nothing committed after the resume point
	}
	start := end
	if r.from != r.to {
		if start, err = t.changeSnapshot(ctx, r.from); err != nil {
			return nil, err
		}
	}
	p := &changePlanner{sc: sc, end: end, from: r.from, to: r.to}
	if err := p.checkVersion(start.view.Metadata(), r.from); err != nil {
		return nil, err
	}
	if err := p.checkVersion(end.view.Metadata(), r.to); err != nil {
		return nil, err
	}
	if err := p.plan(ctx, t.log); err != nil {
		return nil, err
	}
	sc.report.Requests = countsOf(reqs)
	return cs, nil
}

// changeSnapshot loads version v for a change read: a version the log no longer
// holds is ErrChangesUnavailable.
func (t *Table) changeSnapshot(ctx context.Context, v int64) (*Snapshot, error) {
	s, err := t.Snapshot(ctx, AtVersion(v))
	if errors.Is(err, log.ErrVersionNotFound) || errors.Is(err, log.ErrMissingVersion) {
		return nil, fmt.Errorf("%w: version %d can no longer be read (log cleanup removed what it needs): %w", ErrChangesUnavailable, v, err)
	}
	return s, err
}

// Read starts reading the planned change files and returns a Reader of their rows,
// version after version (within a version, in the order of the commit's actions).
// The caller releases it.
func (c *ChangeScan) Read(ctx context.Context) (*Reader, error) {
	return newReader(ctx, c.sc, c.sc.cfg, c.sc.proj, c.sc.tasks, c.sc.report.clone()), nil
}

// Schema is the schema of every batch a Reader of the change scan returns.
func (c *ChangeScan) Schema() *arrow.Schema { return c.sc.proj.Schema }

// FromVersion is the first version the scan reads.
func (c *ChangeScan) FromVersion() int64 { return c.from }

// ToVersion is the last version the scan reads (FromVersion-1: none).
func (c *ChangeScan) ToVersion() int64 { return c.to }

// NumFiles is the number of files the scan will read.
func (c *ChangeScan) NumFiles() int { return len(c.sc.tasks) }

// Report returns what planning decided: the files level counts the change files,
// data files and removed files of the range, skipped or kept, with their sizes.
// The caller owns the copy.
func (c *ChangeScan) Report() *ScanReport { return c.sc.report.clone() }

// changeRange is a resolved range of versions (from > to: empty).
type changeRange struct{ from, to int64 }

// resolveChangeRange turns the ends of a change read into versions (see
// PlanChanges).
func (t *Table) resolveChangeRange(ctx context.Context, from, to Ref) (changeRange, error) {
	commits, err := t.log.CommitFiles(ctx)
	if errors.Is(err, log.ErrTableNotFound) {
		return changeRange{}, fmt.Errorf("%w: %w", ErrNotATable, err)
	}
	if err != nil {
		return changeRange{}, err
	}
	latest := commits[len(commits)-1].Version
	var times []int64
	if from.kind == refTimestamp || to.kind == refTimestamp {
		if times, err = t.commitTimes(ctx, commits); err != nil {
			return changeRange{}, err
		}
	}
	at := func(i int) string {
		return fmt.Sprintf("version %d, committed at %s", commits[i].Version, time.UnixMilli(times[i]).UTC().Format(time.RFC3339Nano))
	}
	var r changeRange
	switch to.kind {
	case refLatest:
		r.to = latest
	case refVersion:
		if to.version < 0 {
			return r, fmt.Errorf("%w: change data: negative end version %d", ErrInvalidArgument, to.version)
		}
		if to.version > latest {
			return r, fmt.Errorf("%w: change data: end version %d does not exist (the latest version is %d)", ErrInvalidArgument, to.version, latest)
		}
		r.to = to.version
	case refTimestamp:
		ms := to.at.UnixMilli()
		i := sort.Search(len(times), func(i int) bool { return times[i] > ms }) - 1
		if i < 0 {
			return r, fmt.Errorf("%w: change data: end timestamp %s is before the first commit in the log (%s)",
				ErrInvalidArgument, to.at.UTC().Format(time.RFC3339Nano), at(0))
		}
		r.to = commits[i].Version
	}
	switch from.kind {
	case refLatest:
		r.from = latest
	case refVersion:
		if from.version < 0 {
			return r, fmt.Errorf("%w: change data: negative start version %d", ErrInvalidArgument, from.version)
		}
		if from.version > latest+1 || (from.version == latest+1 && to.kind != refLatest) {
			return r, fmt.Errorf("%w: change data: start version %d does not exist (the latest version is %d)", ErrInvalidArgument, from.version, latest)
		}
		r.from = from.version
	case refTimestamp:
		ms := from.at.UnixMilli()
		i := sort.Search(len(times), func(i int) bool { return times[i] >= ms })
		if i == len(times) {
			return r, fmt.Errorf("%w: change data: start timestamp %s is after the latest commit (%s)",
				ErrInvalidArgument, from.at.UTC().Format(time.RFC3339Nano), at(len(times)-1))
		}
		r.from = commits[i].Version
	}
	switch {
	case r.from <= r.to:
	case from.kind == refVersion && r.from == latest+1:
		// Resuming after the latest version: nothing new yet.
	case from.kind == refTimestamp && to.kind == refTimestamp && r.from == r.to+1 && !from.at.After(to.at):
		// Both ends fall between the same two commits (Spark returns nothing).
	default:
		return r, fmt.Errorf("%w: change data: start version %d is after end version %d", ErrInvalidArgument, r.from, r.to)
	}
	return r, nil
}

// commitTimes returns the commit time (ms) of each of commits, in their order: the
// modification times of the commit files, unless the latest version has in-commit
// timestamps, in which case the commits are read and those that carry one take it.
// The times are made non-decreasing (a later version is never earlier), so that
// ranges by time are ranges of versions.
func (t *Table) commitTimes(ctx context.Context, commits []log.CommitFile) ([]int64, error) {
	times := make([]int64, len(commits))
	idx := map[int64]int{}
	for i, c := range commits {
		times[i] = c.ModTime.UnixMilli()
		idx[c.Version] = i
	}
	latest, err := t.log.Snapshot(ctx, -1)
	if err != nil {
		return nil, err
	}
	if latest.Protocol().Supports(log.FeatureInCommitTimestamp) {
		err := t.log.ScanCommits(ctx, commits[0].Version, -1, func(c *log.CommitScan) error {
			if i, ok := idx[c.Version]; ok {
				times[i] = commitMillis(c)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(times); i++ {
		times[i] = max(times[i], times[i-1])
	}
	return times, nil
}

// commitMillis is a commit's time as change reads give it: its in-commit timestamp
// when it has one, else its file's modification time (PROTOCOL.md "Reader
// Requirements for AddCDCFile").
func commitMillis(c *log.CommitScan) int64 {
	if c.Info != nil && c.Info.InCommitTimestamp != nil {
		return *c.Info.InCommitTimestamp
	}
	return c.ModTime.UnixMilli()
}

// changePlanner builds the tasks of a change read from the commits of its range.
type changePlanner struct {
	sc       *Scan
	end      *Snapshot // the range's last version: its schema is the result's
	from, to int64
}

// checkVersion refuses metadata md (in force at version v of the range) when the
// change data feed is off under it, or when the end version's schema cannot read
// what was written under it (see readCompatible).
func (p *changePlanner) checkVersion(md log.Metadata, v int64) error {
	props := log.ParseTableProperties(md.Configuration)
	if !props.EnableChangeDataFeed {
		return fmt.Errorf("%w: the change data feed is not enabled at version %d (%s is not true there), so its changes were not recorded; "+
			"read from a later version, after it was enabled", ErrChangesUnavailable, v, log.PropEnableChangeDataFeed)
	}
	schema, err := md.Schema()
	if err != nil {
		return fmt.Errorf("table: version %d: %w", v, err)
	}
	endMD := p.end.view.Metadata()
	why := readCompatible(schema, p.end.view.Delta(), props.ColumnMappingMode != log.ColumnMappingNone, "")
	if why == "" && !samePartitioning(md.PartitionColumns, endMD.PartitionColumns) {
		why = fmt.Sprintf("the partition columns changed from [%s] to [%s]", strings.Join(md.PartitionColumns, ", "), strings.Join(endMD.PartitionColumns, ", "))
	}
	if why != "" {
		return fmt.Errorf("%w: reading the changes of versions %d to %d failed: the schema of version %d cannot be read with the schema of version %d: %s; "+
			"read the changes before and after the schema change separately", ErrChangesUnavailable, p.from, p.to, v, p.to, why)
	}
	return nil
}

func samePartitioning(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

// readCompatible says why rows written under schema old cannot be read with schema
// read in a change read ("" when they can), by Delta Spark's rule for batch change
// reads (SchemaUtils.isReadCompatible, forbidding tightened nullability, and
// DeltaColumnMapping.hasNoColumnMappingSchemaChanges): every column of old is in
// read (by name, case-insensitively) with the same type and, under column mapping,
// the same physical name; none turned NOT NULL. Columns only read has are added
// columns, which read as NULL in the older rows.
func readCompatible(old, read *log.StructType, mapped bool, path string) string {
	for i := range old.Fields {
		f := &old.Fields[i]
		name := path + f.Name
		r := read.FieldFold(f.Name)
		if r == nil {
			return fmt.Sprintf("column %q was dropped or renamed", name)
		}
		if mapped && r.PhysicalName() != f.PhysicalName() {
			return fmt.Sprintf("column %q was renamed or dropped and added again (its physical name changed from %s to %s)", name, f.PhysicalName(), r.PhysicalName())
		}
		if f.Nullable && !r.Nullable {
			return fmt.Sprintf("column %q became NOT NULL", name)
		}
		if why := typeReadCompatible(f.Type, r.Type, mapped, name); why != "" {
			return why
		}
	}
	return ""
}

func typeReadCompatible(old, read log.DataType, mapped bool, name string) string {
	switch o := old.(type) {
	case *log.StructType:
		r, ok := read.(*log.StructType)
		if !ok {
			break
		}
		return readCompatible(o, r, mapped, name+".")
	case *log.ArrayType:
		r, ok := read.(*log.ArrayType)
		if !ok {
			break
		}
		if o.ContainsNull && !r.ContainsNull {
			return fmt.Sprintf("the elements of column %q became NOT NULL", name)
		}
		return typeReadCompatible(o.ElementType, r.ElementType, mapped, name+".element")
	case *log.MapType:
		r, ok := read.(*log.MapType)
		if !ok {
			break
		}
		if o.ValueContainsNull && !r.ValueContainsNull {
			return fmt.Sprintf("the values of column %q became NOT NULL", name)
		}
		if why := typeReadCompatible(o.KeyType, r.KeyType, mapped, name+".key"); why != "" {
			return why
		}
		return typeReadCompatible(o.ValueType, r.ValueType, mapped, name+".value")
	default:
		if old.TypeName() == read.TypeName() {
			return ""
		}
	}
	return fmt.Sprintf("column %q changed type from %s to %s", name, old.TypeName(), read.TypeName())
}

// plan reads the commits of the range in order and builds the tasks.
func (p *changePlanner) plan(ctx context.Context, lg *log.Log) error {
	next := p.from
	err := lg.ScanCommits(ctx, p.from, p.to, func(c *log.CommitScan) error {
		if c.Version != next {
			return p.gone(next)
		}
		next++
		return p.commit(c)
	})
	if err != nil {
		return err
	}
	if next != p.to+1 {
		return p.gone(next)
	}
	return nil
}

func (p *changePlanner) gone(v int64) error {
	return fmt.Errorf("%w: the commit of version %d is no longer in the log (log cleanup removed it), so its changes cannot be read; "+
		"read from a later version", ErrChangesUnavailable, v)
}

// commit adds the tasks of one commit: its cdc actions if it has any, else its add
// and remove actions with dataChange=true.
func (p *changePlanner) commit(c *log.CommitScan) error {
	var (
		cdcs    []*log.CDC
		adds    []*log.Add
		removes []*log.Remove
	)
	for i := range c.Actions {
		a := &c.Actions[i]
		switch {
		case a.Protocol != nil:
			if err := log.CheckReadable(*a.Protocol); err != nil {
				return fmt.Errorf("table: change data: version %d: %w", c.Version, err)
			}
		case a.Metadata != nil:
			if c.Version > p.from {
				if err := p.checkVersion(*a.Metadata, c.Version); err != nil {
					return err
				}
			}
		case a.CDC != nil:
			cdcs = append(cdcs, a.CDC)
		case a.Add != nil && a.Add.DataChange:
			adds = append(adds, a.Add)
		case a.Remove != nil && a.Remove.DataChange:
			removes = append(removes, a.Remove)
		}
	}
	ts := commitMillis(c)
	if len(cdcs) > 0 {
		for _, cdc := range cdcs {
			add := &log.Add{Path: cdc.Path, PartitionValues: cdc.PartitionValues, Size: cdc.Size}
			if err := p.task(add, &changeFile{version: c.Version, action: "cdc"}, ts, ""); err != nil {
				return err
			}
		}
		return nil
	}
	if noopMerge(c.Info) {
		return nil
	}
	addByPath := map[string]*log.Add{}
	for _, a := range adds {
		addByPath[canonicalPath(a.Path)] = a
	}
	removeByPath := map[string]*log.Remove{}
	for _, r := range removes {
		removeByPath[canonicalPath(r.Path)] = r
	}
	for _, r := range removes {
		rm := removeAsAdd(r)
		if a := addByPath[canonicalPath(r.Path)]; a != nil {
			// The file stays, with another deletion vector: the rows its new
			// vector deletes and its old one did not are deletes (their values
			// are bounded by the removed file's statistics).
			cf := &changeFile{version: c.Version, action: "remove", pair: true, keep: a.DeletionVector, drop: r.DeletionVector, rows: physicalRows(a)}
			if a.DeletionVector != nil {
				if err := p.task(rm, cf, ts, ChangeDelete); err != nil {
					return err
				}
			}
			continue
		}
		if err := p.task(rm, &changeFile{version: c.Version, action: "remove"}, ts, ChangeDelete); err != nil {
			return err
		}
	}
	for _, a := range adds {
		if r := removeByPath[canonicalPath(a.Path)]; r != nil {
			// The rows its old vector deleted and its new one does not are
			// inserts (a RESTORE brings them back).
			if r.DeletionVector != nil {
				cf := &changeFile{version: c.Version, action: "add", pair: true, keep: r.DeletionVector, drop: a.DeletionVector, rows: physicalRows(a)}
				if err := p.task(a, cf, ts, ChangeInsert); err != nil {
					return err
				}
			}
			continue
		}
		if err := p.task(a, &changeFile{version: c.Version, action: "add"}, ts, ChangeInsert); err != nil {
			return err
		}
	}
	return nil
}

// task adds the read of one file's changed rows: add carries the file's path,
// partition values, size and statistics (and, unless cf is a pair, the deletion
// vector whose rows are not among them); kind is the rows' _change_type ("": read
// from the file). Skipping decides the file from its partition values, the change
// columns and its statistics.
func (p *changePlanner) task(add *log.Add, cf *changeFile, ts int64, kind string) error {
	sc := p.sc
	path, err := add.DecodedPath()
	if err != nil {
		return fmt.Errorf("table: version %d: %s %q: %w", cf.version, cf.action, add.Path, err)
	}
	view := p.end.view
	parts, err := view.PartitionValues(add)
	if err != nil {
		return fmt.Errorf("table: version %d: %s %s: %w", cf.version, cf.action, add.Path, err)
	}
	vals := make(map[string]value.Value, len(parts)+3)
	for k, v := range parts {
		vals[k] = v
	}
	vals[log.CommitVersionColumn] = value.Int64(cf.version)
	vals[log.CommitTimestampColumn] = value.Timestamp(ts * 1000)
	if kind != "" {
		vals[log.ChangeTypeColumn] = value.String(kind)
	}
	fv := skipping.FileVerdict{Verdict: skipping.MightMatch, Level: skipping.NoLevel, Reason: skipping.ReasonNoFilter}
	if sc.table != nil {
		var st *stats.File
		if add.Stats != "" {
			if f, err := view.StatsParser().Parse(add.Stats); err == nil {
				st = f
			}
		}
		fv.Verdict = skipping.EvaluateFile(sc.table, st, vals, sc.mapper)
		fv.Reason = "change file: partition values, change columns and statistics"
	}
	sc.report.Files.Add(fv.Verdict, add.Size)
	if fv.Verdict == skipping.CannotMatch {
		return nil
	}
	sc.tasks = append(sc.tasks, &fileTask{Idx: -1, Add: add, Path: path, PartVals: vals, Verdict: fv,
		Recheck: sc.table != nil && fv.Verdict != skipping.MustMatch, Change: cf})
	return nil
}

// removeAsAdd is a remove action in the shape of the add it removed (the fields
// a read needs).
func removeAsAdd(r *log.Remove) *log.Add {
	a := &log.Add{Path: r.Path, PartitionValues: r.PartitionValues, Stats: r.Stats, Tags: r.Tags, DeletionVector: r.DeletionVector}
	if r.Size != nil {
		a.Size = *r.Size
	}
	return a
}

// physicalRows is a file's physical row count from its statistics (-1: unknown).
func physicalRows(a *log.Add) int64 {
	if n, ok := a.NumRecords(); ok {
		return n
	}
	return -1
}

// canonicalPath is a log path decoded (a path another writer spelled differently
// is the same file).
func canonicalPath(p string) string {
	a := log.Add{Path: p}
	if d, err := a.DecodedPath(); err == nil {
		return d
	}
	return p
}

// noopMerge reports a MERGE commit whose metrics say it inserted, updated and
// deleted no row: Delta Spark's change reader takes no change from its files (a
// MERGE may rewrite files with dataChange=true without changing a row).
func noopMerge(ci *log.CommitInfo) bool {
	if ci == nil || ci.Operation != "MERGE" {
		return false
	}
	for _, k := range []string{"numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"} {
		if ci.OperationMetrics[k] != "0" {
			return false
		}
	}
	return true
}

// changeFile is where a task of a change read comes from: the version and the
// action, and for a file whose deletion vector changed within one commit (pair),
// which of its rows are the changed ones.
type changeFile struct {
	version int64
	action  string // "cdc", "add" or "remove"
	// pair: the rows are those keep's vector deletes and drop's does not (either
	// may be nil: no vector), of a file of rows physical rows (-1: unknown).
	pair       bool
	keep, drop *log.DeletionVectorDescriptor
	rows       int64
}

// Deleted returns the rows of the task's file a change read must not return: its
// add's deletion vector, or for a pair every row but those keep's vector deletes
// and drop's does not.
func (c *changeFile) Deleted(ctx context.Context, store storage.Storage, task *fileTask) (*dv.Deleted, error) {
	if !c.pair {
		return datafile.LoadDeletionVector(ctx, store, task.Add.DeletionVector)
	}
	keep, err := datafile.LoadDeletionVector(ctx, store, c.keep)
	if err != nil {
		return nil, err
	}
	drop, err := datafile.LoadDeletionVector(ctx, store, c.drop)
	if err != nil {
		return nil, err
	}
	sel := keep.Bitmap().Clone()
	sel.AndNot(drop.Bitmap())
	n := c.rows
	if n < 0 {
		if n, err = footerRows(ctx, store, task.Path); err != nil {
			return nil, c.wrap(task.Path, err)
		}
	}
	out := roaring64.New()
	out.AddRange(0, uint64(n))
	out.AndNot(sel)
	return dv.NewDeleted(out), nil
}

// footerRows reads a data file's row count from its footer.
func footerRows(ctx context.Context, store storage.Storage, path string) (int64, error) {
	f, err := store.Open(ctx, path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{Name: path})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return r.NumRows(), nil
}

// wrap names the version and action of an error reading the file at path.
func (c *changeFile) wrap(path string, err error) error {
	if errors.Is(err, storage.ErrNotExist) {
		return c.Missing(path)
	}
	return fmt.Errorf("table: change data of version %d (%s %s): %w", c.version, c.action, path, err)
}

// Missing is the error of a file of the change read that storage no longer has.
func (c *changeFile) Missing(path string) error {
	what := "change data file"
	if c.action != "cdc" {
		what = "data file (" + c.action + " action)"
	}
	return fmt.Errorf("%w: the changes of version %d cannot be read: %s %s no longer exists (VACUUM deletes change data files and removed data files older than its retention): %w",
		ErrChangesUnavailable, c.version, what, path, ErrMissingDataFile)
}
