package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/layout"
	"github.com/skiplake/skiplake/internal/scanexec"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// Table is a handle on one Delta table. It is safe for concurrent use by many
// goroutines and never goes stale: every operation on the latest version first reads
// the log's newest version. What it keeps between operations (see CacheOptions) is
// reused only where that is safe: the latest snapshot while the log has not advanced,
// and the parsed footers of data files, which Delta never changes in place (keyed by
// path, size and modification time; the scan reader, internal/scanexec, keys them).
type Table struct {
	store   storage.Storage
	log     *log.Log
	filters filterHook // ObserveFilters
	cache   tableCache // WithCache
}

// CreateOptions configures Create. The zero value creates an unpartitioned table
// with default properties.
type CreateOptions struct {
	// PartitionColumns are top-level primitive columns to partition by, in order.
	PartitionColumns []string
	// Properties are table properties (metaData.configuration), e.g.
	// "delta.checkpointInterval", "delta.targetFileSize", "delta.dataSkippingNumIndexedCols".
	// They follow Delta Spark's rules (log.NormalizeProperties): a known delta.* key
	// in any letter case is validated and stored under its canonical spelling, an
	// unknown delta.* or skiplake.* key is refused, delta.feature.<name>=supported
	// adds a table feature; properties that need a feature (deletion vectors, column
	// mapping, v2 checkpoints) give the table the protocol that has it.
	Properties map[string]string
	// ClusterBy makes the table a clustered table (Delta liquid clustering): the
	// clustering feature and a delta.clustering domain naming these columns (at most
	// log.MaxClusteringColumns): top-level columns, or primitive fields nested in
	// structs ("st.x", stored as ["st","x"]; never inside an array or map). Each must
	// have min/max statistics under the table's data-skipping properties. OPTIMIZE without
	// flags then clusters the table by them incrementally, and writes always collect
	// their statistics. Clustering and PartitionColumns are exclusive, as in Delta.
	// Change them later with Alter (AlterOptions.ClusterBy).
	ClusterBy []string
	// Constraints are CHECK constraints of the new table (CREATE TABLE ... CONSTRAINT
	// name CHECK (expr), as Delta Spark stores them: delta.constraints.<name>, the
	// protocol at writer version 3, or with checkConstraints when it lists features).
	// Each must parse and be an expression skiplake evaluates exactly as Spark
	// (else ErrWriteRules); every write then checks its rows against them (see
	// AlterOptions.AddConstraint).
	Constraints []CheckConstraint
	// ColumnRules are write rules of top-level columns of the new table (CREATE TABLE
	// ... c date GENERATED ALWAYS AS (expr), id bigint GENERATED ALWAYS AS IDENTITY),
	// stored as Delta Spark does in the column's metadata (PROTOCOL.md "Generated
	// Columns", "Identity Columns", "Column Invariants"), the protocol gaining the
	// features they need (writer version 4 for generated columns, 6 for identity
	// columns, or generatedColumns / identityColumns when it lists features). A rule
	// sets one of Generated, Identity (Start, Step, Always; no HighWaterMark: none is
	// recorded until a write generates values) or Invariant. Every expression must
	// parse, bind to the schema and be one skiplake evaluates exactly as Spark (else
	// ErrWriteRules, naming the function it lacks); a generated column's expression
	// must have the column's type and read no generated column; an identity column
	// is a bigint and not a partition column. ParseSchemaRules reads them from DDL.
	ColumnRules []ColumnRule
	// Name and Description are stored in the metadata; both optional.
	Name, Description string
	// AllowNonEmpty creates the table even when the location already holds files
	// that are not part of a Delta table (default false: such a location is refused
	// with ErrLocationNotEmpty). Hidden files (names starting with '_' or '.'),
	// anything under _delta_log/ and leftovers with skiplake's own data-file names
	// never count. The files that were there are never deleted by VACUUM, which
	// keeps every file older than the table (see vacuum.Run).
	AllowNonEmpty bool
}

// Open opens the table stored in store (rooted at the table root). It fails with
// ErrNotATable when there is no log.
func Open(ctx context.Context, store storage.Storage) (*Table, error) {
	l := log.New(store)
	if _, err := l.LatestVersion(ctx); err != nil {
		if errors.Is(err, log.ErrTableNotFound) || errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", ErrNotATable, err)
		}
		return nil, err
	}
	return &Table{store: store, log: l}, nil
}

// Create creates a new table with the given Arrow schema in store. It fails with
// ErrTableExists if a log is already there (the version-0 commit is created with
// put-if-absent, so two concurrent creators cannot both succeed), and with
// ErrLocationNotEmpty when the location holds other files (unless
// opts.AllowNonEmpty). The schema, partition columns and properties are validated
// before anything is written (see CreateOptions.Properties); an invalid one leaves
// the store untouched. To create a table together with its first rows, in one
// commit, use CreateWrite.
func Create(ctx context.Context, store storage.Storage, schema *arrow.Schema, opts CreateOptions) (*Table, error) {
	nt, err := newTableMetadata(schema, opts)
	if err != nil {
		return nil, err
	}
	return create(ctx, store, nt, opts.AllowNonEmpty)
}

// newTable is what a table's version 0 records.
type newTable struct {
	md      log.Metadata
	proto   log.Protocol
	domains []log.DomainMetadata // the clustering domain of a clustered table
}

// newTableMetadata validates a new table's schema, partition columns, clustering
// columns and properties and returns its version-0 metadata, protocol and domains.
// Nothing is written.
func newTableMetadata(schema *arrow.Schema, opts CreateOptions) (*newTable, error) {
	if schema == nil || schema.NumFields() == 0 {
		return nil, fmt.Errorf("%w: empty schema", ErrInvalidArgument)
	}
	ds, err := log.FromArrow(schema)
	if err != nil {
		return nil, err
	}
	if err := checkColumnNames(schema); err != nil {
		return nil, err
	}
	if err := applyColumnRules(ds, opts.ColumnRules); err != nil {
		return nil, err
	}
	parts, err := resolvePartitionColumns(schema, opts.PartitionColumns)
	if err != nil {
		return nil, err
	}
	if len(parts) > 0 && len(opts.ClusterBy) > 0 {
		return nil, fmt.Errorf("%w: partition columns %v and clustering columns %v: clustering and partitioning are exclusive (as in Delta)",
			ErrInvalidArgument, parts, opts.ClusterBy)
	}
	now := time.Now().UnixMilli()
	md := log.Metadata{
		ID:               uuid.NewString(),
		Name:             opts.Name,
		Description:      opts.Description,
		Format:           log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     ds.JSON(),
		PartitionColumns: parts,
		CreatedTime:      &now,
	}
	props := opts.Properties
	if len(opts.ClusterBy) > 0 {
		// The table's protocol lists exactly the features it needs, clustering too.
		props = make(map[string]string, len(opts.Properties)+1)
		for k, v := range opts.Properties {
			props[k] = v
		}
		props[log.PrefixFeature+log.FeatureClustering] = "supported"
	}
	proto, md, err := log.PrepareCreate(md, props)
	if err != nil {
		return nil, propertyErr(err)
	}
	if proto, md, err = withConstraints(proto, md, ds, opts.Constraints); err != nil {
		return nil, err
	}
	if len(opts.ColumnRules) > 0 {
		if err := checkNewRules(md, proto); err != nil {
			return nil, err
		}
	}
	nt := &newTable{md: md, proto: proto}
	if len(opts.ClusterBy) > 0 {
		_, phys, err := resolveClustering(md, opts.ClusterBy)
		if err != nil {
			return nil, err
		}
		nt.domains = []log.DomainMetadata{log.ClusteringDomain(phys)}
	}
	return nt, nil
}

// propertyErr marks a property error from package log as a bad argument of this
// package too (errors.Is matches both ErrInvalidArgument and log's sentinel).
func propertyErr(err error) error {
	return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
}

func create(ctx context.Context, store storage.Storage, nt *newTable, allowNonEmpty bool) (*Table, error) {
	if !allowNonEmpty {
		if err := checkEmpty(ctx, store); err != nil {
			return nil, err
		}
	}
	l := log.New(store)
	info := log.CommitInfo{Operation: "CREATE TABLE", OperationParameters: createParameters(nt)}
	txn := l.NewTableSnapshot(nt.md, nt.proto, nt.domains...).NewTransaction(log.TxnOptions{})
	if _, err := txn.Commit(ctx, info); err != nil {
		if errors.Is(err, storage.ErrExist) {
			return nil, fmt.Errorf("%w: %v", ErrTableExists, err)
		}
		var ce *log.ConflictError
		if errors.As(err, &ce) && ce.Version == 0 {
			// Version 0 was there first: an existing table, or a create that won a race.
			return nil, fmt.Errorf("%w: version 0 is already committed (an existing table, or a concurrent create)", ErrTableExists)
		}
		return nil, err
	}
	return &Table{store: store, log: l}, nil
}

// createParameters are CREATE TABLE's commitInfo.operationParameters, in Spark's
// shape (clusterBy as Delta Spark records it for clustered tables).
func createParameters(nt *newTable) map[string]string {
	params := map[string]string{
		"partitionBy": paramJSON(nonNilStrings(nt.md.PartitionColumns)),
		"clusterBy":   paramJSON([]string{}),
		"description": paramOptionalString(nt.md.Description),
		"isManaged":   paramString("false"),
		"properties":  paramJSON(nonNilMap(nt.md.Configuration)),
	}
	for _, d := range nt.domains {
		if d.Domain == log.DomainClustering {
			cols, _ := log.ParseClusteringDomain(d.Configuration)
			names := make([]string, len(cols))
			for i, c := range cols {
				names[i] = strings.Join(c, ".")
			}
			params["clusterBy"] = paramJSON(names)
		}
	}
	return params
}

// checkEmpty refuses a location that holds files VACUUM could one day consider
// (anything but hidden paths and the log) other than skiplake's own leftovers: data
// and index files of an earlier attempt to create the table, or of a concurrent
// creator that is about to win the race (item 11 of issue #10: its loser appends).
func checkEmpty(ctx context.Context, store storage.Storage) error {
	objs, err := store.List(ctx, "", "")
	if err != nil {
		return fmt.Errorf("table: checking that the location is empty: %w", err)
	}
	var foreign []string
	for _, o := range objs {
		if layout.Vacuumable(o.Path) && !layout.WrittenBySkiplake(o.Path) {
			foreign = append(foreign, o.Path)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign
	if len(shown) > 3 {
		shown = shown[:3]
	}
	more := ""
	if len(foreign) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
	}
	return fmt.Errorf("%w: it holds %d file(s) that are not part of a table (%s%s); choose an empty location, "+
		"or allow it explicitly (CreateOptions.AllowNonEmpty, CLI --allow-non-empty): VACUUM never deletes files older than the table",
		ErrLocationNotEmpty, len(foreign), strings.Join(shown, ", "), more)
}

// CreateURL creates a new table at a location (see OpenURL for the forms: a local
// path, a file:// URL or an object-store URL; a location with a scheme is never a
// directory named "s3:"). A missing local directory is created first (and removed
// again if creating the table fails); the schema, partition columns and properties
// are validated before anything is created, so invalid input creates no directory.
// It fails with ErrTableExists when a log is already there and with
// ErrLocationNotEmpty when the location holds other files (unless
// CreateOptions.AllowNonEmpty).
func CreateURL(ctx context.Context, dir string, schema *arrow.Schema, opts CreateOptions) (*Table, error) {
	nt, err := newTableMetadata(schema, opts)
	if err != nil {
		return nil, err
	}
	var t *Table
	err = inNewDir(dir, func(st storage.Storage) error {
		var err error
		t, err = create(ctx, st, nt, opts.AllowNonEmpty)
		return err
	})
	return t, err
}

// inNewDir runs fn on the store of a new table's location: for a local directory
// (a path or file:// URL) on a Local store rooted there, creating the directory first
// when it is missing and removing it again (when still empty) if fn fails; for an
// object-store URL on that store (object stores have no directories to create).
func inNewDir(dir string, fn func(storage.Storage) error) error {
	loc, err := storage.ParseLocation(dir)
	if err != nil {
		return err
	}
	if !loc.IsLocal() {
		st, err := storage.OpenLocation(context.Background(), loc, true) // no I/O: builds the client
		if err != nil {
			return err
		}
		if err := fn(st); err != nil {
			closeStore(st)
			return err
		}
		return nil
	}
	dir = loc.Dir
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("table: create %s: %w", dir, err)
	}
	st, err := storage.NewLocal(dir)
	if err == nil {
		err = fn(st)
	}
	if err != nil && created {
		_ = os.Remove(dir) // only succeeds when nothing was left in it
	}
	return err
}

// checkColumnNames rejects duplicate top-level names (Delta names are case-insensitive).
func checkColumnNames(schema *arrow.Schema) error {
	seen := map[string]string{}
	for _, f := range schema.Fields() {
		k := strings.ToLower(f.Name)
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("%w: duplicate column %q and %q (names are case-insensitive)", ErrInvalidArgument, prev, f.Name)
		}
		if f.Name == "" {
			return fmt.Errorf("%w: empty column name", ErrInvalidArgument)
		}
		seen[k] = f.Name
	}
	return nil
}

// resolvePartitionColumns maps requested partition columns to the schema's spelling and
// checks that each is a top-level primitive column.
func resolvePartitionColumns(schema *arrow.Schema, cols []string) ([]string, error) {
	out := make([]string, 0, len(cols))
	seen := map[string]bool{}
	for _, c := range cols {
		idx := fieldIndexFold(schema, c)
		if idx < 0 {
			return nil, fmt.Errorf("%w: partition column %q is not in the schema (columns: %s)", ErrUnknownColumn, c, fieldNames(schema))
		}
		f := schema.Field(idx)
		switch f.Type.ID() {
		case arrow.STRUCT, arrow.LIST, arrow.MAP, arrow.LARGE_LIST, arrow.BINARY, arrow.LARGE_BINARY:
			return nil, fmt.Errorf("%w: partition column %q has type %s, which cannot be a partition column", ErrInvalidArgument, f.Name, value.DisplayType(f.Type))
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("%w: partition column %q listed twice", ErrInvalidArgument, f.Name)
		}
		seen[f.Name] = true
		out = append(out, f.Name)
	}
	if len(out) > 0 && len(out) == schema.NumFields() {
		return nil, fmt.Errorf("%w: every column is a partition column; at least one data column is needed", ErrInvalidArgument)
	}
	return out, nil
}

// fieldIndexFold is the index of schema's field named name (exactly, else
// case-insensitively), -1 for none; fieldNames lists the names for errors.
var (
	fieldIndexFold = scanexec.FieldIndexFold
	fieldNames     = scanexec.FieldNames
)

// Log returns the table's transaction log (for advanced use: history, checkpoints).
func (t *Table) Log() *log.Log { return t.log }

// WithClock returns a Table of the same table whose clock is now (log.Log.WithClock):
// the commit timestamps of its writes, Alter and Optimize, and the expiry decisions
// of its log and of Vacuum. Tests and simulations use it to place commits at chosen times; nil
// means time.Now. The receiver is not changed.
func (t *Table) WithClock(now func() time.Time) *Table {
	return &Table{store: t.store, log: t.log.WithClock(now)}
}

// Storage returns the storage the table lives in.
func (t *Table) Storage() storage.Storage { return t.store }

// Checkpoint writes a checkpoint of the latest version (and _last_checkpoint).
func (t *Table) Checkpoint(ctx context.Context) (int64, error) {
	snap, err := t.log.Snapshot(ctx, -1)
	if err != nil {
		return -1, err
	}
	if err := t.log.Checkpoint(ctx, snap); err != nil {
		return -1, err
	}
	return snap.Version(), nil
}

// HistoryEntry is one commit of the table, newest first in History.
// OperationParameters are as Delta Spark's DESCRIBE HISTORY shows them
// (log.CommitInfo.DisplayParameters): a string value's text (mode: Append,
// partitionBy: ["a"]), any other value's JSON text (version: 1, auto: false).
type HistoryEntry struct {
	// Version is the commit's version.
	Version int64 `json:"version"`
	// Timestamp is the commit's time: its in-commit timestamp or commitInfo
	// timestamp when present, else the modification time of its commit file.
	Timestamp time.Time `json:"timestamp"`
	// Operation is the commitInfo operation (WRITE, DELETE, MERGE, OPTIMIZE, ...);
	// empty for a commit without commitInfo.
	Operation string `json:"operation"`
	// OperationParameters are the operation's parameters, displayed as above.
	OperationParameters map[string]string `json:"operationParameters,omitempty"`
	// OperationMetrics are the metrics the writer recorded (Spark's names).
	OperationMetrics map[string]string `json:"operationMetrics,omitempty"`
	// ReadVersion is the version the transaction read, when recorded.
	ReadVersion *int64 `json:"readVersion,omitempty"`
	// IsolationLevel is the isolation level the commit ran at, when recorded.
	IsolationLevel string `json:"isolationLevel,omitempty"`
	// IsBlindAppend says whether the commit only added rows without reading the
	// table, when recorded.
	IsBlindAppend *bool `json:"isBlindAppend,omitempty"`
	// EngineInfo names the writer that made the commit, when recorded.
	EngineInfo string `json:"engineInfo,omitempty"`
}

// History returns up to limit commits, newest first (limit <= 0: all).
func (t *Table) History(ctx context.Context, limit int) ([]HistoryEntry, error) {
	recs, err := t.log.History(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(recs))
	for _, r := range recs {
		e := HistoryEntry{Version: r.Version, Timestamp: r.Timestamp}
		if ci := r.CommitInfo; ci != nil {
			e.Operation = ci.Operation
			e.OperationParameters = ci.DisplayParameters()
			e.OperationMetrics = ci.OperationMetrics
			e.ReadVersion = ci.ReadVersion
			e.IsolationLevel = ci.IsolationLevel
			e.IsBlindAppend = ci.IsBlindAppend
			e.EngineInfo = ci.EngineInfo
		}
		out = append(out, e)
	}
	return out, nil
}

// Description summarises one version of a table.
type Description struct {
	// Version is the version described.
	Version int64 `json:"version"`
	// Timestamp is that version's commit time (as HistoryEntry.Timestamp).
	Timestamp time.Time `json:"timestamp"`
	// ID, Name and Description are the table's metadata action's id, name and
	// description (the last two often empty).
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Schema is the table's schema as a scan reads it (logical names).
	Schema *arrow.Schema `json:"-"`
	// SchemaString is the schema as the log stores it (Delta's JSON schema).
	SchemaString string `json:"schemaString"`
	// PartitionColumns are the partition columns, in order (none: unpartitioned).
	PartitionColumns []string `json:"partitionColumns"`
	// Properties are the table properties the metadata action sets.
	Properties map[string]string `json:"properties"`
	// MinReaderVersion and MinWriterVersion are the protocol versions;
	// ReaderFeatures and WriterFeatures the table features (protocol 3 and 7).
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
	// NumFiles and SizeBytes count the version's live data files and their bytes.
	NumFiles  int   `json:"numFiles"`
	SizeBytes int64 `json:"sizeBytes"`
	// NumRecords is the sum of numRecords over files that have stats; FilesWithoutStats
	// counts the others (their rows are not included).
	NumRecords        int64 `json:"numRecords"`
	FilesWithoutStats int   `json:"filesWithoutStats"`
	// NumDeletedRows is the number of rows hidden by deletion vectors.
	NumDeletedRows int64 `json:"numDeletedRows"`
	// Settings are the effective values of the properties skiplake interprets
	// (typed and canonical: sizes in bytes, durations as intervals, defaults marked),
	// next to Properties, the configuration as stored.
	Settings []log.Setting `json:"settings"`
	// PropertyNotes point out stored properties that are not interpreted as their
	// writer may have meant: a known key in a non-canonical spelling (ignored, as
	// Delta ignores it) or a value that does not parse.
	PropertyNotes []string `json:"propertyNotes,omitempty"`
	// ClusteringColumns are a clustered table's clustering columns (empty after
	// CLUSTER BY NONE; nil for a table that is not clustered).
	ClusteringColumns []string `json:"clusteringColumns,omitempty"`
	// Constraints are the CHECK constraints (delta.constraints.*), by name.
	Constraints []CheckConstraint `json:"constraints,omitempty"`
	// ColumnRules are the write rules of columns: invariants, generation expressions
	// and identity definitions, in schema order.
	ColumnRules []ColumnRule `json:"columnRules,omitempty"`
	// WriteRulesError, when set, says why skiplake cannot enforce the table's write
	// rules: writes that add rows are refused (reads and OPTIMIZE work).
	WriteRulesError string `json:"writeRulesError,omitempty"`
}

// Describe summarises the table at ref.
func (t *Table) Describe(ctx context.Context, ref Ref) (*Description, error) {
	snap, err := t.Snapshot(ctx, ref)
	if err != nil {
		return nil, err
	}
	ls := snap.log
	md := ls.Metadata()
	p := ls.Protocol()
	d := &Description{
		Version: ls.Version(), Timestamp: ls.Timestamp(), ID: md.ID, Name: md.Name, Description: md.Description,
		Schema: snap.view.ReadSchema(), SchemaString: md.SchemaString, PartitionColumns: append([]string{}, md.PartitionColumns...),
		Properties: map[string]string{}, MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion,
		ReaderFeatures: p.ReaderFeatures, WriterFeatures: p.WriterFeatures, NumFiles: ls.NumFiles(),
	}
	for k, v := range md.Configuration {
		d.Properties[k] = v
	}
	if d.ClusteringColumns, err = snap.ClusteringColumns(); err != nil {
		return nil, err
	}
	props := ls.Properties()
	d.Settings = props.Settings()
	for _, k := range sortedKeys(props.Unknown) {
		if c, known := log.CanonicalPropertyKey(k); known && c != k {
			d.PropertyNotes = append(d.PropertyNotes, fmt.Sprintf("%s is ignored: the canonical spelling is %s (set it with alter --set-property)", k, c))
		}
	}
	for _, e := range props.Invalid {
		d.PropertyNotes = append(d.PropertyNotes, fmt.Sprintf("%s=%q is invalid (%s); the default is used where it is read, and writes that depend on it are refused", e.Key, e.Value, e.Reason))
	}
	if err := describeRules(snap, d); err != nil {
		return nil, err
	}
	for _, a := range ls.Files() {
		d.SizeBytes += a.Size
		if n, ok := a.NumRecords(); ok {
			d.NumRecords += n
		} else {
			d.FilesWithoutStats++
		}
		if a.DeletionVector != nil {
			d.NumDeletedRows += a.DeletionVector.Cardinality
		}
	}
	return d, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
