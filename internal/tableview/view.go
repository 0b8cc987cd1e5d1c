package tableview

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// View is one version of a table resolved once for every engine that reads or
// writes it: the protocol and typed properties, the schemas in their three
// spellings, the column mapping, the partition and clustering columns, the
// statistics configuration and parser, and the data-file writer settings (FileSpec).
// New builds it when a snapshot loads and validates it there; nothing downstream
// derives any of it again from the log.
//
// A View is immutable and safe for concurrent use; the schemas, slices and the
// snapshot it returns are shared and must not be modified.
type View struct {
	snap  *log.Snapshot
	props *log.TableProperties
	delta *log.StructType
	mode  log.ColumnMapping

	logical  *arrow.Schema // logical names, no metadata: what scans return, writers conform to
	read     *arrow.Schema // logical names, mapping metadata (physical name, field id): what readers ask files for
	physical *arrow.Schema // physical names, field ids when mapped: what files and statistics use

	parts    []Partition
	partPhys []string // physical partition column names, in partition order
	// partTimestamps are the timestamp partition columns by physical name: their
	// values are keyed as instants (PartitionKeyOf).
	partTimestamps map[string]*arrow.TimestampType
	dataIdx        []int // table schema indices of the data (non-partition) columns
	data           *arrow.Schema
	readData       *arrow.Schema
	physData       *arrow.Schema

	clustering *log.Clustering
	clusterErr error

	stats  stats.Config // writers' statistics configuration, physical names
	parser *stats.Parser

	bloomCols []string // skiplake.bloomFilter.columns resolved against the data columns
	bloomErr  error

	rules    *WriteRules // the write rules (rules.go), or
	rulesErr error       // why they cannot be enforced

	genParts []genPartition // partition columns generated from data columns (prune.go)
}

// Partition is one partition column.
type Partition struct {
	// Name is the logical name (the schema's spelling).
	Name string
	// Physical is the physical name: the key of add.partitionValues and the
	// directory name of the column.
	Physical string
	// Index is the column's position in the table schema.
	Index int
	// Type is the column's Arrow type.
	Type arrow.DataType
	// DeltaType is its Delta type name, which the serialized value follows.
	DeltaType string
}

// New resolves snap (a loaded version, or a table about to be created from
// log.NewTableSnapshot) and validates it: skiplake can read the protocol (L4), the
// schema parses and converts to Arrow, every field has a physical name (and in id
// mode a field id) unique among its siblings when column mapping is on, and every
// partition column is a top-level column of a primitive type.
func New(snap *log.Snapshot) (*View, error) {
	if snap == nil {
		return nil, fmt.Errorf("%w: nil snapshot", ErrInvalidTable)
	}
	if err := log.CheckReadable(snap.Protocol()); err != nil {
		return nil, err
	}
	ds, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	v := &View{snap: snap, props: snap.Properties(), delta: ds}
	v.mode = v.props.ColumnMappingMode
	if err := v.props.Err(log.PropColumnMappingMode); err != nil {
		return nil, v.errorf("%w", err)
	}
	if err := checkMapping(ds.Fields, "", v.mode, map[int64]string{}); err != nil {
		return nil, v.errorf("%w: %v", ErrInvalidTable, err)
	}
	mapped := v.mode != log.ColumnMappingNone
	if v.logical, err = log.ToArrow(ds, log.ArrowOptions{}); err != nil {
		return nil, v.errorf("%w", err)
	}
	if v.read, err = log.ToArrow(ds, log.ArrowOptions{FieldIDs: v.mode == log.ColumnMappingID, MappingMetadata: mapped}); err != nil {
		return nil, v.errorf("%w", err)
	}
	// Files carry the column ids as Parquet field ids in name and id mode alike
	// (PROTOCOL.md "Writer Requirements for Column Mapping"); readers match
	// them by id only in id mode (v.read).
	if v.physical, err = log.ToArrow(ds, log.ArrowOptions{PhysicalNames: mapped, FieldIDs: mapped}); err != nil {
		return nil, v.errorf("%w", err)
	}
	if err := v.resolvePartitions(); err != nil {
		return nil, err
	}
	v.clustering, v.clusterErr = snap.Clustering()
	v.stats = v.props.StatsConfig()
	if mapped {
		for i, c := range v.stats.StatsColumns {
			v.stats.StatsColumns[i] = v.physicalRef(c)
		}
	}
	if v.clustering != nil {
		v.stats.AlwaysColumns = v.clustering.Physical
	}
	v.parser = stats.NewParser(v.physical, stats.ParseOptions{StringPrefixLength: v.props.StringPrefixForReading()})
	v.bloomCols, v.bloomErr = bloom.ResolveColumns(v.data, v.props.BloomFilterColumns)
	v.resolveRules()
	v.resolveGeneratedPartitions()
	return v, nil
}

// errorf prefixes an error with the version (the package's sentinels in format
// name the package); a table about to be created has none yet.
func (v *View) errorf(format string, args ...any) error {
	if v.snap.Version() < 0 {
		return fmt.Errorf("tableview: new table: "+format, args...)
	}
	return fmt.Errorf("tableview: version %d: "+format, append([]any{v.snap.Version()}, args...)...)
}

// checkMapping checks the column-mapping annotations of fields (at path): under name
// or id mode every field has a physical name unique among its siblings, in id mode a
// field id; field ids are unique in the whole schema (ids collects them).
func checkMapping(fields []log.StructField, path string, mode log.ColumnMapping, ids map[int64]string) error {
	if mode == log.ColumnMappingNone {
		return nil
	}
	names := map[string]string{}
	for i := range fields {
		f := &fields[i]
		p := joinPath(path, f.Name)
		phys, ok := f.Metadata[log.PhysicalNameKey].(string)
		if !ok || phys == "" {
			return fmt.Errorf("column %q has no %s under column mapping mode %s", p, log.PhysicalNameKey, mode)
		}
		if other, dup := names[phys]; dup {
			return fmt.Errorf("columns %q and %q have the same physical name %q", other, p, phys)
		}
		names[phys] = p
		id, hasID := f.FieldID()
		if mode == log.ColumnMappingID && !hasID {
			return fmt.Errorf("column %q has no %s under column mapping mode id", p, log.FieldIDKey)
		}
		if hasID {
			if other, dup := ids[id]; dup {
				return fmt.Errorf("columns %q and %q have the same field id %d", other, p, id)
			}
			ids[id] = p
		}
		for sub, st := range nestedStructs(f.Type, p) {
			if err := checkMapping(st.Fields, sub, mode, ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// nestedStructs yields the structs directly inside t (t itself, or the element,
// key and value types of arrays and maps, through further arrays and maps), with
// their paths below path.
func nestedStructs(t log.DataType, path string) func(yield func(string, *log.StructType) bool) {
	return func(yield func(string, *log.StructType) bool) {
		var walk func(t log.DataType, path string) bool
		walk = func(t log.DataType, path string) bool {
			switch dt := t.(type) {
			case *log.StructType:
				return yield(path, dt)
			case *log.ArrayType:
				return walk(dt.ElementType, path+".element")
			case *log.MapType:
				return walk(dt.KeyType, path+".key") && walk(dt.ValueType, path+".value")
			}
			return true
		}
		walk(t, path)
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// resolvePartitions finds the partition columns in the schema and splits the
// schemas into their data columns.
func (v *View) resolvePartitions() error {
	isPart := make([]bool, v.logical.NumFields())
	for _, name := range v.snap.PartitionColumns() {
		i := findField(v.delta.Fields, name)
		if i < 0 {
			return v.errorf("%w: partition column %q is not in the schema", ErrInvalidTable, name)
		}
		if isPart[i] {
			return v.errorf("%w: partition column %q is listed twice", ErrInvalidTable, name)
		}
		f := v.delta.Fields[i]
		switch f.Type.(type) {
		case *log.StructType, *log.ArrayType, *log.MapType:
			return v.errorf("%w: partition column %q is of type %s, not a primitive type", ErrInvalidTable, name, f.Type.TypeName())
		}
		isPart[i] = true
		phys := v.physical.Field(i).Name
		v.parts = append(v.parts, Partition{Name: f.Name, Physical: phys, Index: i, Type: v.logical.Field(i).Type, DeltaType: f.Type.TypeName()})
		v.partPhys = append(v.partPhys, phys)
		if t, ok := v.logical.Field(i).Type.(*arrow.TimestampType); ok {
			if v.partTimestamps == nil {
				v.partTimestamps = map[string]*arrow.TimestampType{}
			}
			v.partTimestamps[phys] = t
		}
	}
	var data, read, phys []arrow.Field
	for i := range v.logical.Fields() {
		if isPart[i] {
			continue
		}
		v.dataIdx = append(v.dataIdx, i)
		data, read, phys = append(data, v.logical.Field(i)), append(read, v.read.Field(i)), append(phys, v.physical.Field(i))
	}
	v.data, v.readData, v.physData = arrow.NewSchema(data, nil), arrow.NewSchema(read, nil), arrow.NewSchema(phys, nil)
	return nil
}

// Log is the snapshot the view resolves (its files, tombstones, domains).
func (v *View) Log() *log.Snapshot { return v.snap }

// Version is the table version (-1 for a table about to be created).
func (v *View) Version() int64 { return v.snap.Version() }

// Protocol is the table protocol.
func (v *View) Protocol() log.Protocol { return v.snap.Protocol() }

// Metadata is the table metadata.
func (v *View) Metadata() log.Metadata { return v.snap.Metadata() }

// Properties are the typed table properties, parsed once per version (P1).
func (v *View) Properties() *log.TableProperties { return v.props }

// Delta is the table's Delta schema.
func (v *View) Delta() *log.StructType { return v.delta }

// Mapping is the column mapping mode.
func (v *View) Mapping() log.ColumnMapping { return v.mode }

// Logical is the table schema under logical names, without metadata: what scans
// return and what writers conform their input to.
func (v *View) Logical() *arrow.Schema { return v.logical }

// ReadSchema is Logical with each field's column-mapping metadata (physical name,
// and in id mode the field id): the schema a data-file reader asks files for.
func (v *View) ReadSchema() *arrow.Schema { return v.read }

// Physical is the table schema as data files and statistics name it: physical names
// (in id mode with field ids) under column mapping, else Logical's names.
func (v *View) Physical() *arrow.Schema { return v.physical }

// DataIndices are the table schema positions of the data (non-partition) columns.
func (v *View) DataIndices() []int { return v.dataIdx }

// DataSchema is Logical without the partition columns: the columns a data file holds.
func (v *View) DataSchema() *arrow.Schema { return v.data }

// ReadDataSchema is ReadSchema without the partition columns.
func (v *View) ReadDataSchema() *arrow.Schema { return v.readData }

// PhysicalDataSchema is Physical without the partition columns: a data file's schema.
func (v *View) PhysicalDataSchema() *arrow.Schema { return v.physData }

// Partitions are the partition columns, in the table's partition order.
func (v *View) Partitions() []Partition { return v.parts }

// PartitionPhysicalNames are the partition columns' physical names, in order: the
// keys of add.partitionValues.
func (v *View) PartitionPhysicalNames() []string { return v.partPhys }

// PartitionIndex returns the position among Partitions of the partition column name
// (logical, exactly or else case-insensitively), or -1.
func (v *View) PartitionIndex(name string) int {
	for i, p := range v.parts {
		if p.Name == name {
			return i
		}
	}
	for i, p := range v.parts {
		if strings.EqualFold(p.Name, name) {
			return i
		}
	}
	return -1
}

// IsPartition reports whether name (logical, case-insensitive) is a partition column.
func (v *View) IsPartition(name string) bool { return v.PartitionIndex(name) >= 0 }

// PartitionKey is a canonical string of a's partition values: two files are in the
// same partition exactly when their keys are equal ("" on an unpartitioned table).
func (v *View) PartitionKey(a *log.Add) string { return v.PartitionKeyOf(a.PartitionValues) }

// PartitionKeyOf is PartitionKey of serialized partition values keyed by physical name.
//
// Timestamp values are keyed by the instant they name, so that the spellings
// writers use for one value ("2024-03-01 10:00:00" of older writers,
// "2024-03-01T10:00:00.000000Z" of Delta Spark and skiplake today) are one
// partition; a value that does not parse is keyed as written.
func (v *View) PartitionKeyOf(values map[string]*string) string {
	if len(v.partTimestamps) == 0 {
		return partition.Key(v.partPhys, values)
	}
	norm := make(map[string]*string, len(values))
	for k, s := range values {
		norm[k] = s
	}
	for phys, t := range v.partTimestamps {
		s := values[phys]
		if s == nil || *s == "" {
			continue
		}
		deltaType := "timestamp"
		if t.TimeZone == "" {
			deltaType = "timestamp_ntz"
		}
		parsed, err := partition.Parse(*s, true, t)
		if err != nil {
			continue
		}
		if f, _, err := partition.Format(parsed, deltaType); err == nil {
			norm[phys] = &f
		}
	}
	return partition.Key(v.partPhys, norm)
}

// PartitionValues types a's partition values by the schema, keyed by physical name
// (nil on an unpartitioned table). A value that does not parse is an error naming
// the file, the column and the value.
func (v *View) PartitionValues(a *log.Add) (map[string]value.Value, error) {
	if len(v.parts) == 0 {
		return nil, nil
	}
	out := make(map[string]value.Value, len(v.parts))
	for _, p := range v.parts {
		raw, isNull := a.PartitionValue(p.Physical)
		val, err := partition.Parse(raw, !isNull, p.Type)
		if err != nil {
			return nil, v.errorf("file %s: partition column %q value %q: %w", a.Path, p.Name, raw, err)
		}
		out[p.Physical] = val
	}
	return out, nil
}

// PhysicalPath finds a column path (each part matched exactly, else
// case-insensitively; through structs only) and returns it as the schema spells it
// and as files and statistics name it. It is the one logical→physical translation.
func (v *View) PhysicalPath(path []string) (logical, physical []string, ok bool) {
	lf, pf := v.logical.Fields(), v.physical.Fields()
	for _, name := range path {
		idx := -1
		for i, f := range lf {
			if f.Name == name || (idx < 0 && strings.EqualFold(f.Name, name)) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, nil, false
		}
		logical = append(logical, lf[idx].Name)
		physical = append(physical, pf[idx].Name)
		ls, ok1 := lf[idx].Type.(*arrow.StructType)
		ps, ok2 := pf[idx].Type.(*arrow.StructType)
		if ok1 && ok2 {
			lf, pf = ls.Fields(), ps.Fields()
		} else {
			lf, pf = nil, nil
		}
	}
	return logical, physical, true
}

// physicalRef translates a statistics column reference (delta.dataSkippingStatsColumns
// syntax) to physical names; a reference that does not resolve is kept as given.
func (v *View) physicalRef(ref string) string {
	parts, err := stats.ParseColumnPath(ref)
	if err != nil {
		return ref
	}
	_, phys, ok := v.PhysicalPath(parts)
	if !ok {
		return ref
	}
	quoted := make([]string, len(phys))
	for i, p := range phys {
		quoted[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
	}
	return strings.Join(quoted, ".")
}

// Clustering returns the clustering columns of a clustered table, resolved to
// logical and physical paths, or nil when the table is not clustered. A clustering
// domain that does not parse is an error here (and only for callers that cluster).
func (v *View) Clustering() (*log.Clustering, error) { return v.clustering, v.clusterErr }

// StatsConfig is the statistics configuration of the data files writers produce:
// the data-skipping properties with column references in physical names, plus a
// clustered table's clustering columns, which always get statistics.
func (v *View) StatsConfig() stats.Config {
	cfg := v.stats
	cfg.StatsColumns = append([]string(nil), cfg.StatsColumns...)
	return cfg
}

// StatsParser parses the files' JSON statistics against the physical schema, with
// the string prefix readers assume (S1). It is shared and safe for concurrent use.
func (v *View) StatsParser() *stats.Parser { return v.parser }

// BloomColumns are the data columns skiplake.bloomFilter.columns names, resolved
// against DataSchema (its spelling), or an error when the property names a column
// that is not a Bloom-indexable data column.
func (v *View) BloomColumns() ([]string, error) { return v.bloomCols, v.bloomErr }

// SmallFileSize is the size below which a file of the table counts as small for
// compaction, maintenance and the layout report: log.SmallFileSizeFor of the target file size.
func (v *View) SmallFileSize() int64 { return log.SmallFileSizeFor(v.props.TargetFileSize) }

// CheckWritable reports, with an *log.UnsupportedFeatureError naming them (L4),
// the writer features and properties skiplake cannot honour on this version; nil
// when it can write it.
func (v *View) CheckWritable() error { return v.snap.CheckWritable() }

// KeepsStableRowIDs reports whether the rows have stable row IDs that writers must
// keep: row tracking enabled (delta.enableRowTracking=true) and active (the
// protocol supports it and it is not suspended). With the feature merely
// supported, rows copied to new files may take fresh IDs.
func (v *View) KeepsStableRowIDs() bool {
	return v.props.EnableRowTracking && log.RowTrackingActive(v.snap.Protocol(), v.props)
}

// WritesDeletionVectors reports whether DML writes deletion vectors:
// delta.enableDeletionVectors=true and the deletionVectors writer feature in the
// protocol.
func (v *View) WritesDeletionVectors() bool {
	return v.props.EnableDeletionVectors && slices.Contains(log.WriterFeatures(v.snap.Protocol()), log.FeatureDeletionVectors)
}

// RowTrackingFields are the hidden columns that carry stable row IDs and row commit
// versions through a rewrite (OPTIMIZE), marked with RowTrackingKey, or nil when row
// tracking is not enabled and active or the columns are not named.
func (v *View) RowTrackingFields() []arrow.Field {
	p := v.props
	if !v.KeepsStableRowIDs() || p.MaterializedRowIDColumn == "" || p.MaterializedRowCommitVersionColumn == "" {
		return nil
	}
	field := func(name, kind string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{RowTrackingKey}, []string{kind})}
	}
	return []arrow.Field{field(p.MaterializedRowIDColumn, RowTrackingRowID), field(p.MaterializedRowCommitVersionColumn, RowTrackingCommitVersion)}
}

// RowTrackingKey is the field metadata key marking the hidden row tracking fields
// (RowTrackingFields); its value is RowTrackingRowID or RowTrackingCommitVersion.
const RowTrackingKey = "skiplake.rowTracking"

// Values of RowTrackingKey.
const (
	RowTrackingRowID         = "rowId"
	RowTrackingCommitVersion = "rowCommitVersion"
)
