package table

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/vacuum"
)

// NewColumn is a column Alter adds (AlterOptions.AddColumns): a path (one name for
// a top-level column, more to add a field to a struct column) and a Delta type.
// ParseColumn builds one from "name type" text.
type NewColumn = log.NewColumn

// ParseColumn parses a column definition "name type" as ALTER TABLE ADD COLUMNS
// takes it: "amount decimal(10,2)", "address.zip int", "`my col` string". Types
// are Spark SQL's (bigint, int, string, timestamp, array<...>, map<...>,
// struct<...>, ...; see log.ParseDDLType).
func ParseColumn(def string) (NewColumn, error) {
	c, err := log.ParseColumnDefinition(def)
	if err != nil {
		return NewColumn{}, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return c, nil
}

// AlterOptions describes one change of a table (ALTER TABLE). Exactly one kind of
// change must be given, as each is one Delta operation in the table history:
// SetProperties (SET TBLPROPERTIES), UnsetProperties (UNSET TBLPROPERTIES),
// AddColumns (ADD COLUMNS), ClusterBy (CLUSTER BY), AddConstraint (ADD CONSTRAINT)
// or DropConstraint (DROP CONSTRAINT).
type AlterOptions struct {
	// SetProperties sets table properties. They are validated and canonicalised as
	// at creation (see CreateOptions.Properties): a known delta.* key in any letter
	// case is stored under its canonical spelling, unknown delta.* and skiplake.*
	// keys are refused, delta.feature.<name>=supported adds a table feature, and a
	// property that needs a feature the protocol lacks upgrades the protocol (a
	// legacy reader 1 / writer 2 table moves to reader 3 / writer 7, listing the
	// features the legacy versions implied). delta.columnMapping.mode may only go
	// from none to name. delta.enableRowTracking=true gives every live file row IDs
	// in the same commit (its files are re-added with dataChange=false; no data is
	// rewritten). delta.enableChangeDataFeed=true makes DML record its changes from
	// the next commit on (Table.Changes); it is refused while a column has a name
	// the change data feed reserves. Properties skiplake cannot honour as a writer
	// are refused with an error naming them; delta.constraints.* keys are refused
	// (AddConstraint and DropConstraint change CHECK constraints, as in Delta
	// Spark). Only the keys set are validated: the
	// rest of the configuration is kept as it is.
	SetProperties map[string]string
	// UnsetProperties removes table properties (a known key in any letter case).
	// Removing a key the table does not have is an error unless IfExists is set.
	// Internal keys, table features and column mapping cannot be removed.
	UnsetProperties []string
	// IfExists makes UnsetProperties ignore keys the table does not have, and
	// DropConstraint a constraint the table does not have.
	IfExists bool
	// ClusterBy changes the clustering columns (ALTER TABLE CLUSTER BY): a
	// metadata-only commit of the delta.clustering domain that rewrites no file. An
	// unpartitioned table that is not clustered yet becomes clustered (the protocol
	// gains the clustering feature). Every live file must have statistics for every
	// column that becomes a clustering column (PROTOCOL.md "Writer Requirements for
	// Clustered Table"), else the change is
	// refused naming the files; the columns must qualify as at creation
	// (CreateOptions.ClusterBy). Files already clustered keep their layout; OPTIMIZE
	// clusters new and unclustered data by the new columns (Full re-clusters all).
	ClusterBy []string
	// ClusterByNone removes the clustering columns (CLUSTER BY NONE): the table stays
	// a clustered table with an empty column list, and OPTIMIZE only compacts.
	ClusterByNone bool
	// AddColumns appends nullable columns, in order, at the end of the table (or of
	// the struct column a path names). With column mapping each new column gets
	// the next id and a fresh physical name. Data files already written lack the
	// columns, which read as null.
	AddColumns []NewColumn
	// AddConstraint adds a CHECK constraint. Every live row is checked first (files
	// whose statistics prove the expression TRUE for all their rows are not read): a
	// row for which it is not TRUE fails the change with a *ViolationError naming the
	// row, an expression that does not parse, or that skiplake cannot evaluate exactly
	// as Spark (ErrWriteRules), fails it too, and nothing is committed. From the
	// commit on, every write that adds rows checks them against it. A legacy protocol
	// moves to writer version 3 if it is lower; a table-features protocol gains
	// checkConstraints.
	AddConstraint *CheckConstraint
	// DropConstraint removes the CHECK constraint of that name (case-insensitively);
	// a name the table lacks is an error unless IfExists is set.
	DropConstraint string
	// RenameColumn renames a column or struct field (RENAME COLUMN). Renaming needs
	// column mapping: a table without it gets it in the same commit, in name mode
	// with the current names as physical names (reader 3 / writer 7 with the
	// columnMapping feature), so no data file is rewritten and every reader that
	// supports column mapping reads the files written before. Refused: a name the
	// struct has already (case-insensitively).
	RenameColumn *ColumnRename
	// DropColumns drops columns or struct fields (DROP COLUMNS), enabling column
	// mapping as RenameColumn does; the data files keep the values, which readers no
	// longer see. Refused: a partition column, a clustering column (or a struct
	// holding one), the table's last data column, a struct's last field.
	DropColumns []string
	// ChangeType widens a column's type (ALTER COLUMN ... TYPE) under the
	// typeWidening table feature, which the commit adds (with
	// delta.enableTypeWidening=true) when the table lacks it; a table with
	// delta.enableTypeWidening=false refuses. Supported are Delta's widenings (see
	// log.CanWiden): byte→short→int→long, float→double, byte/short/int→double,
	// date→timestamp_ntz, decimal to a wider decimal, integers to a wide enough
	// decimal. The change is recorded in delta.typeChanges; files written before it
	// read back widened, and no file is rewritten.
	ChangeType *ColumnType
	// SetComment sets a column's comment (its "comment" metadata; "" removes it).
	SetComment *ColumnComment
}

// ColumnRename is a RENAME COLUMN: Column is a path ("address.zip"; backticks quote
// names with dots), NewName the field's new name.
type ColumnRename struct {
	Column, NewName string
}

// ColumnType is an ALTER COLUMN ... TYPE: Column is a path ("address.zip",
// "tags.element", "attrs.value"), Type the new type in SQL or Delta spelling
// ("bigint", "decimal(12,2)", "timestamp_ntz").
type ColumnType struct {
	Column, Type string
}

// ColumnComment is an ALTER COLUMN ... COMMENT: Column is a path, Comment the text.
type ColumnComment struct {
	Column, Comment string
}

// AlterResult describes a committed Alter.
type AlterResult struct {
	// Version is the committed table version.
	Version int64 `json:"version"`
	// Operation is the commitInfo operation: "SET TBLPROPERTIES",
	// "UNSET TBLPROPERTIES", "ADD COLUMNS", "RENAME COLUMN", "DROP COLUMNS",
	// "CHANGE COLUMN" (type and comment), "CLUSTER BY", "ADD CONSTRAINT" or
	// "DROP CONSTRAINT".
	Operation string `json:"operation"`
	// ProtocolUpgraded is true when the commit also raised the protocol.
	ProtocolUpgraded bool `json:"protocolUpgraded"`
	// MinReaderVersion, MinWriterVersion, ReaderFeatures and WriterFeatures are the
	// protocol after the commit.
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
	// FilesChecked and FilesSkipped count, for AddConstraint, the live files read to
	// check the constraint and those whose statistics proved it without a read.
	FilesChecked int64 `json:"filesChecked,omitempty"`
	FilesSkipped int64 `json:"filesSkipped,omitempty"`
	// Warnings are consequences of the change worth a look that did not stop it: a
	// delta.deletedFileRetentionDuration set below vacuum.SafetyFloor (accepted, as
	// Delta Spark accepts it; Vacuum and Maintain then refuse to vacuum without Force).
	Warnings []string `json:"warnings,omitempty"`
}

// Alter commits one metaData change of the latest version (see AlterOptions), and
// a protocol change with it when a property needs a table feature. Everything is
// validated before anything is written; an invalid change leaves the table
// untouched. Like every metaData change it conflicts with a concurrent commit
// that changes metaData or protocol (the loser fails with a *log.ConflictError
// matching log.ErrMetadataChanged or log.ErrProtocolChanged and commits nothing);
// concurrent appends do not make it fail.
func (t *Table) Alter(ctx context.Context, opts AlterOptions) (*AlterResult, error) {
	kinds := 0
	for _, set := range []bool{len(opts.SetProperties) > 0, len(opts.UnsetProperties) > 0, len(opts.AddColumns) > 0,
		len(opts.ClusterBy) > 0 || opts.ClusterByNone, opts.RenameColumn != nil, len(opts.DropColumns) > 0,
		opts.ChangeType != nil, opts.SetComment != nil, opts.AddConstraint != nil, opts.DropConstraint != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return nil, fmt.Errorf("%w: alter takes exactly one kind of change (SetProperties, UnsetProperties, AddColumns, ClusterBy, RenameColumn, DropColumns, ChangeType, SetComment, AddConstraint or DropConstraint), got %d", ErrInvalidArgument, kinds)
	}
	snap, err := t.Snapshot(ctx, Latest())
	if err != nil {
		return nil, err
	}
	ls := snap.log
	if len(opts.ClusterBy) > 0 || opts.ClusterByNone {
		if len(opts.ClusterBy) > 0 && opts.ClusterByNone {
			return nil, fmt.Errorf("%w: ClusterBy and ClusterByNone together", ErrInvalidArgument)
		}
		return alterClustering(ctx, snap, opts.ClusterBy)
	}
	if opts.AddConstraint != nil {
		return addConstraint(ctx, snap, *opts.AddConstraint)
	}
	if opts.DropConstraint != "" {
		return dropConstraint(ctx, snap, opts.DropConstraint, opts.IfExists)
	}
	if opts.RenameColumn != nil || len(opts.DropColumns) > 0 || opts.ChangeType != nil || opts.SetComment != nil {
		return alterColumn(ctx, snap, opts)
	}
	var (
		proto log.Protocol
		md    log.Metadata
		info  log.CommitInfo
	)
	switch {
	case len(opts.SetProperties) > 0:
		proto, md, err = log.ApplyPropertyChange(ls.Protocol(), ls.Metadata(), log.PropertyChange{Set: opts.SetProperties})
		if err != nil {
			return nil, propertyErr(err)
		}
		// Record what was stored: canonical keys and values (features and
		// protocol versions are not stored, but are part of the request). This
		// copies the new configuration's text into commitInfo; it interprets no
		// property, so it reads the raw map (typed reads go through
		// log.TableProperties).
		stored := map[string]string{}
		for k, v := range opts.SetProperties {
			c, _ := log.CanonicalPropertyKey(k)
			if v2, ok := md.Configuration[c]; ok {
				stored[c] = v2
			} else {
				stored[k] = v
			}
		}
		info = log.CommitInfo{Operation: "SET TBLPROPERTIES", OperationParameters: map[string]string{"properties": paramJSON(stored)}}
	case len(opts.UnsetProperties) > 0:
		proto, md, err = log.ApplyPropertyChange(ls.Protocol(), ls.Metadata(), log.PropertyChange{Unset: opts.UnsetProperties, IfExists: opts.IfExists})
		if err != nil {
			return nil, propertyErr(err)
		}
		keys := make([]string, len(opts.UnsetProperties))
		for i, k := range opts.UnsetProperties {
			keys[i], _ = log.CanonicalPropertyKey(k)
		}
		sort.Strings(keys)
		info = log.CommitInfo{Operation: "UNSET TBLPROPERTIES", OperationParameters: map[string]string{
			"properties": paramJSON(keys), "ifExists": strconv.FormatBool(opts.IfExists)}}
	default:
		proto, md, err = log.AddColumns(ls.Protocol(), ls.Metadata(), opts.AddColumns)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		cols := make([]string, len(opts.AddColumns))
		for i, c := range opts.AddColumns {
			cols[i] = log.NewColumnJSON(c)
		}
		info = log.CommitInfo{Operation: "ADD COLUMNS", OperationParameters: map[string]string{"columns": paramString("[" + strings.Join(cols, ",") + "]")}}
	}
	txn := ls.NewTransaction(log.TxnOptions{})
	txn.SetMetadata(md)
	if txn.Properties().EnableRowTracking && !ls.Properties().EnableRowTracking {
		// PROTOCOL.md "Writer Requirements for Row Tracking": every live file needs row
		// IDs in the version that enables row
		// tracking. The files without them are re-added (dataChange=false) and the
		// commit assigns theirs; a concurrent removal of one of them is a conflict.
		backfill := ls.BackfillRowIDs()
		for _, a := range backfill {
			txn.ReadFiles(a.Path)
		}
		txn.Add(backfill...)
	}
	res, err := commitAlter(ctx, txn, ls.Protocol(), proto, info)
	if err != nil {
		return nil, err
	}
	res.Warnings = retentionWarnings(opts.SetProperties, md)
	return res, nil
}

// retentionWarnings warns when set (the properties just set) put the table's
// delta.deletedFileRetentionDuration (in md) below VACUUM's safety floor.
func retentionWarnings(set map[string]string, md log.Metadata) []string {
	for k := range set {
		if c, _ := log.CanonicalPropertyKey(k); c != log.PropDeletedFileRetentionDuration {
			continue
		}
		props := log.ParseTableProperties(md.Configuration)
		if props.Err(log.PropDeletedFileRetentionDuration) != nil || props.DeletedFileRetention >= vacuum.SafetyFloor {
			return nil
		}
		return []string{fmt.Sprintf("%s=%s is below VACUUM's safety floor of %d days: vacuum and maintain refuse to vacuum this table without --force (Force), which lets readers of versions older than the retention lose files",
			log.PropDeletedFileRetentionDuration, md.Configuration[log.PropDeletedFileRetentionDuration], vacuum.SafetyFloor/(24*time.Hour))}
	}
	return nil
}

// commitAlter commits an alter transaction, with proto as its protocol when it
// differs from the table's (old), and describes the result.
func commitAlter(ctx context.Context, txn *log.Transaction, old, proto log.Protocol, info log.CommitInfo) (*AlterResult, error) {
	upgraded := !reflect.DeepEqual(proto, old)
	if upgraded {
		txn.SetProtocol(proto)
	}
	v, err := txn.Commit(ctx, info)
	if err != nil {
		return nil, err
	}
	return &AlterResult{Version: v, Operation: info.Operation, ProtocolUpgraded: upgraded,
		MinReaderVersion: proto.MinReaderVersion, MinWriterVersion: proto.MinWriterVersion,
		ReaderFeatures: proto.ReaderFeatures, WriterFeatures: proto.WriterFeatures}, nil
}

// alterColumn commits one column change (rename, drop, type, comment): a metaData
// commit (with a protocol upgrade when the change needs column mapping or type
// widening the table lacks), which like every metaData change conflicts with any
// concurrent commit that changes metaData or protocol; it reads no data.
func alterColumn(ctx context.Context, snap *Snapshot, opts AlterOptions) (*AlterResult, error) {
	ls := snap.log
	p, md := ls.Protocol(), ls.Metadata()
	var (
		proto log.Protocol
		nmd   log.Metadata
		info  log.CommitInfo
		err   error
	)
	invalid := func(err error) error { return fmt.Errorf("%w: %w", ErrInvalidArgument, err) }
	switch {
	case opts.RenameColumn != nil:
		path, err := log.ParseColumnPath(opts.RenameColumn.Column)
		if err != nil {
			return nil, invalid(err)
		}
		if err := checkColumnChange(md, opRename, [][]string{path}); err != nil {
			return nil, err
		}
		var old []string
		if proto, nmd, old, err = log.RenameColumn(p, md, path, opts.RenameColumn.NewName); err != nil {
			return nil, invalid(err)
		}
		newPath := append(append([]string(nil), old[:len(old)-1]...), strings.TrimSpace(opts.RenameColumn.NewName))
		info = log.CommitInfo{Operation: "RENAME COLUMN", OperationParameters: map[string]string{
			"oldColumnPath": paramString(strings.Join(old, ".")), "newColumnPath": paramString(strings.Join(newPath, "."))}}
	case len(opts.DropColumns) > 0:
		paths := make([][]string, len(opts.DropColumns))
		for i, c := range opts.DropColumns {
			if paths[i], err = log.ParseColumnPath(c); err != nil {
				return nil, invalid(err)
			}
		}
		if err := checkColumnChange(md, opDrop, paths); err != nil {
			return nil, err
		}
		cl, err := snap.view.Clustering()
		if err != nil {
			return nil, err
		}
		var clustering [][]string
		if cl != nil {
			clustering = cl.Columns
		}
		var dropped [][]string
		if proto, nmd, dropped, err = log.DropColumns(p, md, paths, clustering); err != nil {
			return nil, invalid(err)
		}
		names := make([]string, len(dropped))
		for i, d := range dropped {
			names[i] = strings.Join(d, ".")
		}
		info = log.CommitInfo{Operation: "DROP COLUMNS", OperationParameters: map[string]string{"columns": paramJSON(names)}}
	case opts.ChangeType != nil:
		path, err := log.ParseColumnPath(opts.ChangeType.Column)
		if err != nil {
			return nil, invalid(err)
		}
		t, err := log.ParseDDLType(opts.ChangeType.Type)
		if err != nil {
			return nil, invalid(err)
		}
		if err := checkColumnChange(md, opChangeType, [][]string{path}); err != nil {
			return nil, err
		}
		var resolved []string
		if proto, nmd, resolved, _, err = log.ChangeColumnType(p, md, path, t); err != nil {
			return nil, invalid(err)
		}
		if info, err = changeColumnInfo(nmd, resolved); err != nil {
			return nil, err
		}
	default:
		path, err := log.ParseColumnPath(opts.SetComment.Column)
		if err != nil {
			return nil, invalid(err)
		}
		var resolved []string
		if proto, nmd, resolved, err = log.SetColumnComment(p, md, path, opts.SetComment.Comment); err != nil {
			return nil, invalid(err)
		}
		if info, err = changeColumnInfo(nmd, resolved); err != nil {
			return nil, err
		}
	}
	// The new metadata must resolve as a table version does (TV1) before it is
	// committed.
	if _, err := newSnapshot(snap.store, ls.WithChange(nmd, proto)); err != nil {
		return nil, invalid(err)
	}
	txn := ls.NewTransaction(log.TxnOptions{})
	txn.SetMetadata(nmd)
	return commitAlter(ctx, txn, ls.Protocol(), proto, info)
}

// changeColumnInfo is the commitInfo of CHANGE COLUMN (a type or comment change):
// the changed field as Spark records it.
func changeColumnInfo(md log.Metadata, path []string) (log.CommitInfo, error) {
	field, err := log.FieldJSON(md, path)
	if err != nil {
		return log.CommitInfo{}, err
	}
	return log.CommitInfo{Operation: "CHANGE COLUMN", OperationParameters: map[string]string{"column": paramString(field)}}, nil
}
