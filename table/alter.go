package table

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/skiplake/skiplake/log"
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
	// rewritten). Properties skiplake cannot honour as a writer
	// (delta.enableChangeDataFeed, ...) are refused with an error naming them;
	// delta.constraints.* keys are refused (AddConstraint and DropConstraint change
	// CHECK constraints, as in Delta Spark). Only the keys set are validated: the
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
}

// AlterResult describes a committed Alter.
type AlterResult struct {
	// Version is the committed table version.
	Version int64 `json:"version"`
	// Operation is the commitInfo operation: "SET TBLPROPERTIES",
	// "UNSET TBLPROPERTIES", "ADD COLUMNS", "CLUSTER BY", "ADD CONSTRAINT" or
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
		len(opts.ClusterBy) > 0 || opts.ClusterByNone, opts.AddConstraint != nil, opts.DropConstraint != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return nil, fmt.Errorf("%w: alter takes exactly one kind of change (SetProperties, UnsetProperties, AddColumns, ClusterBy, AddConstraint or DropConstraint), got %d", ErrInvalidArgument, kinds)
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
	return commitAlter(ctx, txn, ls.Protocol(), proto, info)
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
