package log

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/value"
)

func strMapType() *arrow.MapType {
	return arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
}

func nf(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

var (
	i64 = arrow.PrimitiveTypes.Int64
	i32 = arrow.PrimitiveTypes.Int32
	str = arrow.BinaryTypes.String
	bln = arrow.FixedWidthTypes.Boolean
)

func dvStruct() arrow.DataType {
	return arrow.StructOf(nf("storageType", str), nf("pathOrInlineDv", str), nf("offset", i32),
		nf("sizeInBytes", i32), nf("cardinality", i64), nf("maxRowIndex", i64))
}

// checkpointSchema is the classic checkpoint schema (PROTOCOL.md "Checkpoint Schema"),
// in the field order Delta Spark writes: add's stats after its other fields, then
// partitionValues_parsed when partitionsParsed is non-nil and stats_parsed when
// statsParsed is non-nil (delta.checkpoint.writeStatsAsStruct). remove carries no
// stats and no tags (PROTOCOL.md "Checkpoints": tombstones need neither).
func checkpointSchema(partitionsParsed, statsParsed *arrow.StructType) *arrow.Schema {
	addFields := []arrow.Field{nf("path", str), nf("partitionValues", strMapType()), nf("size", i64),
		nf("modificationTime", i64), nf("dataChange", bln), nf("tags", strMapType()),
		nf("deletionVector", dvStruct()), nf("baseRowId", i64), nf("defaultRowCommitVersion", i64),
		nf("clusteringProvider", str), nf("stats", str)}
	if partitionsParsed != nil {
		addFields = append(addFields, nf("partitionValues_parsed", partitionsParsed))
	}
	if statsParsed != nil {
		addFields = append(addFields, nf("stats_parsed", statsParsed))
	}
	return arrow.NewSchema([]arrow.Field{
		nf("txn", arrow.StructOf(nf("appId", str), nf("version", i64), nf("lastUpdated", i64))),
		nf("add", arrow.StructOf(addFields...)),
		nf("remove", arrow.StructOf(nf("path", str), nf("deletionTimestamp", i64), nf("dataChange", bln),
			nf("extendedFileMetadata", bln), nf("partitionValues", strMapType()), nf("size", i64),
			nf("deletionVector", dvStruct()), nf("baseRowId", i64), nf("defaultRowCommitVersion", i64))),
		nf("metaData", arrow.StructOf(nf("id", str), nf("name", str), nf("description", str),
			nf("format", arrow.StructOf(nf("provider", str), nf("options", strMapType()))),
			nf("schemaString", str), nf("partitionColumns", arrow.ListOf(str)),
			nf("configuration", strMapType()), nf("createdTime", i64))),
		nf("protocol", arrow.StructOf(nf("minReaderVersion", i32), nf("minWriterVersion", i32),
			nf("readerFeatures", arrow.ListOf(str)), nf("writerFeatures", arrow.ListOf(str)))),
		nf("domainMetadata", arrow.StructOf(nf("domain", str), nf("configuration", str), nf("removed", bln))),
	}, nil)
}

// Column indexes in checkpointSchema.
const (
	colTxn = iota
	colAdd
	colRemove
	colMetaData
	colProtocol
	colDomain
	numCheckpointCols
)

func appendStr(b array.Builder, s string, valid bool) {
	sb := b.(*array.StringBuilder)
	if !valid {
		sb.AppendNull()
		return
	}
	sb.Append(s)
}

func appendI64(b array.Builder, v *int64) {
	ib := b.(*array.Int64Builder)
	if v == nil {
		ib.AppendNull()
		return
	}
	ib.Append(*v)
}

func appendPtrMap(b array.Builder, m map[string]*string, valid bool) {
	mb := b.(*array.MapBuilder)
	if !valid {
		mb.AppendNull()
		return
	}
	mb.Append(true)
	kb := mb.KeyBuilder().(*array.StringBuilder)
	ib := mb.ItemBuilder().(*array.StringBuilder)
	for _, k := range sortedKeys(m) {
		kb.Append(k)
		if v := m[k]; v != nil {
			ib.Append(*v)
		} else {
			ib.AppendNull()
		}
	}
}

func appendMap(b array.Builder, m map[string]string, valid bool) {
	var pm map[string]*string
	if valid {
		pm = make(map[string]*string, len(m))
		for k, v := range m {
			pm[k] = &v
		}
	}
	appendPtrMap(b, pm, valid)
}

func appendList(b array.Builder, l []string, valid bool) {
	lb := b.(*array.ListBuilder)
	if !valid {
		lb.AppendNull()
		return
	}
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for _, s := range l {
		vb.Append(s)
	}
}

func appendDV(b array.Builder, d *DeletionVectorDescriptor) {
	sb := b.(*array.StructBuilder)
	if d == nil {
		sb.AppendNull()
		return
	}
	sb.Append(true)
	appendStr(sb.FieldBuilder(0), d.StorageType, true)
	appendStr(sb.FieldBuilder(1), d.PathOrInlineDv, true)
	ob := sb.FieldBuilder(2).(*array.Int32Builder)
	if d.Offset != nil {
		ob.Append(*d.Offset)
	} else {
		ob.AppendNull()
	}
	sb.FieldBuilder(3).(*array.Int32Builder).Append(d.SizeInBytes)
	sb.FieldBuilder(4).(*array.Int64Builder).Append(d.Cardinality)
	appendI64(sb.FieldBuilder(5), d.MaxRowIndex)
}

// checkpointWriter accumulates one action per row.
type checkpointWriter struct {
	rb   *array.RecordBuilder
	rows int64
	// statsJSON writes add.stats (delta.checkpoint.writeStatsAsJson); statsParsed,
	// when set, builds add.stats_parsed (delta.checkpoint.writeStatsAsStruct), each
	// file's stats JSON first decoded into scratch (rows accumulate there unread, up
	// to a row group's worth) so that stats the struct cannot hold leave that file's
	// stats_parsed null instead of a half-appended row.
	statsJSON   bool
	statsParsed *arrow.StructType
	scratch     *array.StructBuilder
	scratchMem  memory.Allocator // scratch's allocator, for its replacements
	// partitions, when set, builds add.partitionValues_parsed (a partitioned table
	// with delta.checkpoint.writeStatsAsStruct): one typed field per partition column.
	partitions *parsedPartitions
	// fw receives the rows built so far as one row group whenever
	// checkpointRowGroupRows of them are pending (flushFull), so that the Arrow
	// builders hold one row group, not the whole checkpoint.
	fw *pqarrow.FileWriter
}

// checkpointRowGroupRows is the number of actions per row group of a classic
// checkpoint: the builders of one row group are all the Arrow memory writing a
// checkpoint takes, whatever the number of files (a variable so tests can make it small).
var checkpointRowGroupRows = 1 << 15

// flushFull writes the pending rows as a row group once there are
// checkpointRowGroupRows of them.
func (w *checkpointWriter) flushFull() error {
	if w.rb.Field(0).Len() < checkpointRowGroupRows {
		return nil
	}
	return w.flush()
}

// flush writes the pending rows, if any, as one row group and resets the builders.
func (w *checkpointWriter) flush() error {
	if w.rb.Field(0).Len() == 0 {
		return nil
	}
	rec := w.rb.NewRecordBatch()
	defer rec.Release()
	return w.fw.Write(rec)
}

func (w *checkpointWriter) struct_(col int) *array.StructBuilder {
	return w.rb.Field(col).(*array.StructBuilder)
}

// row appends nulls to every column except col and returns col's builder.
func (w *checkpointWriter) row(col int) *array.StructBuilder {
	for i := 0; i < numCheckpointCols; i++ {
		if i != col {
			w.struct_(i).AppendNull()
		}
	}
	sb := w.struct_(col)
	sb.Append(true)
	w.rows++
	return sb
}

func (w *checkpointWriter) add(a *Add) error {
	sb := w.row(colAdd)
	appendStr(sb.FieldBuilder(0), a.Path, true)
	appendPtrMap(sb.FieldBuilder(1), a.PartitionValues, true)
	sb.FieldBuilder(2).(*array.Int64Builder).Append(a.Size)
	sb.FieldBuilder(3).(*array.Int64Builder).Append(a.ModificationTime)
	sb.FieldBuilder(4).(*array.BooleanBuilder).Append(a.DataChange)
	appendMap(sb.FieldBuilder(5), a.Tags, a.Tags != nil)
	appendDV(sb.FieldBuilder(6), a.DeletionVector)
	appendI64(sb.FieldBuilder(7), a.BaseRowID)
	appendI64(sb.FieldBuilder(8), a.DefaultRowCommitVersion)
	appendStr(sb.FieldBuilder(9), a.ClusteringProvider, a.ClusteringProvider != "")
	appendStr(sb.FieldBuilder(10), a.Stats, w.statsJSON && a.Stats != "")
	next := 11
	if w.partitions != nil {
		if err := w.partitions.append(sb.FieldBuilder(next).(*array.StructBuilder), a); err != nil {
			return err
		}
		next++
	}
	if w.statsParsed != nil {
		return w.appendStatsParsed(sb.FieldBuilder(next).(*array.StructBuilder), a.Stats)
	}
	return nil
}

// parsedPartitions builds add.partitionValues_parsed (PROTOCOL.md "Checkpoints"): a
// struct with one field per partition column, named by its physical name, holding the
// column's typed value, in metaData.partitionColumns order (as Delta Spark writes it).
type parsedPartitions struct {
	typ   *arrow.StructType
	names []string // physical names, the keys of add.partitionValues
}

// partitionsParsedType returns the partitionValues_parsed writer of snap's table, or
// nil when the table is not partitioned.
func partitionsParsedType(snap *Snapshot) (*parsedPartitions, error) {
	cols := snap.PartitionColumns()
	if len(cols) == 0 {
		return nil, nil
	}
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	p := &parsedPartitions{names: make([]string, len(cols))}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		f := schema.Field(c)
		if f == nil {
			f = schema.FieldFold(c)
		}
		if f == nil {
			return nil, fmt.Errorf("partition column %q is not in the schema: %w", c, ErrInvalidSchema)
		}
		t, err := toArrowType(f.Type, f.Name, ArrowOptions{})
		if err != nil {
			return nil, err
		}
		p.names[i] = f.PhysicalName()
		fields[i] = nf(p.names[i], t)
	}
	p.typ = arrow.StructOf(fields...)
	return p, nil
}

// append appends a's partition values, typed. A value that does not parse as its
// column's type (another writer's spelling this reader does not know) is NULL in the
// struct, as Delta Spark's non-ANSI cast makes it; add.partitionValues keeps the text.
func (p *parsedPartitions) append(b *array.StructBuilder, a *Add) error {
	b.Append(true)
	for i, name := range p.names {
		raw, isNull := a.PartitionValue(name)
		v, err := partition.Parse(raw, !isNull, p.typ.Field(i).Type)
		if err != nil {
			v = value.Null()
		}
		if err := value.Append(b.FieldBuilder(i), v); err != nil {
			return fmt.Errorf("partitionValues_parsed %q: %w", name, err)
		}
	}
	return nil
}

// appendStatsParsed appends the typed form of one file's stats JSON, or NULL when the
// file has none or they do not fit the struct (a value of another type, a timestamp
// with a zone on a zone-less column, ...): readers then treat the file as having no
// statistics in the struct, which only costs skipping, never correctness.
func (w *checkpointWriter) appendStatsParsed(b *array.StructBuilder, statsJSON string) error {
	if statsJSON == "" {
		b.AppendNull()
		return nil
	}
	row := []byte("[" + statsJSON + "]") // the builders decode a JSON array of rows
	before := w.scratch.Len()
	err := w.scratch.UnmarshalJSON(row)
	ok := err == nil && w.scratch.Len() == before+1
	if !ok || w.scratch.Len() >= checkpointRowGroupRows {
		// A failed decode can leave the scratch builder's children half-appended, and
		// what it holds is never read: start a fresh one rather than materialising an
		// array per file to reset it (that cost an arrow.StructOf and an ArrayData per
		// child for every file).
		w.scratch.Release()
		w.scratch = array.NewStructBuilder(w.scratchMem, w.statsParsed)
	}
	if !ok {
		b.AppendNull()
		return nil
	}
	if err := b.UnmarshalJSON(row); err != nil { // not expected: the same row decoded above
		return fmt.Errorf("stats_parsed: %w", err)
	}
	return nil
}

// statsParsedType is the type of add.stats_parsed for snap's table: numRecords,
// minValues and maxValues over the data columns (physical names, partition columns
// left out; nested structs kept) whose type has bounds, nullCount over every data
// leaf, and tightBounds. Columns a file has no statistics for are NULL in it.
func statsParsedType(snap *Snapshot) (*arrow.StructType, error) {
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	physical, err := ToArrow(schema, ArrowOptions{PhysicalNames: true})
	if err != nil {
		return nil, err
	}
	isPart := map[string]bool{}
	for _, c := range snap.PartitionColumns() {
		isPart[strings.ToLower(c)] = true
	}
	var data []arrow.Field
	for i, f := range schema.Fields {
		if !isPart[strings.ToLower(f.Name)] {
			data = append(data, physical.Field(i))
		}
	}
	fields := []arrow.Field{nf("numRecords", i64)}
	if bounds := boundFields(data); len(bounds) > 0 {
		fields = append(fields, nf("minValues", arrow.StructOf(bounds...)), nf("maxValues", arrow.StructOf(bounds...)))
	}
	if counts := nullCountFields(data); len(counts) > 0 {
		fields = append(fields, nf("nullCount", arrow.StructOf(counts...)))
	}
	fields = append(fields, nf("tightBounds", bln))
	return arrow.StructOf(fields...), nil
}

// boundFields keeps the fields whose type has a minimum and maximum in Delta stats
// (numbers, decimals, dates, timestamps, strings), recursing into structs.
func boundFields(fs []arrow.Field) []arrow.Field {
	var out []arrow.Field
	for _, f := range fs {
		switch t := f.Type.(type) {
		case *arrow.StructType:
			if sub := boundFields(t.Fields()); len(sub) > 0 {
				out = append(out, nf(f.Name, arrow.StructOf(sub...)))
			}
		case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type, *arrow.Float32Type,
			*arrow.Float64Type, *arrow.Decimal128Type, *arrow.Date32Type, *arrow.TimestampType, *arrow.StringType:
			out = append(out, nf(f.Name, f.Type))
		}
	}
	return out
}

// nullCountFields gives every leaf (a list or map counts as one) a long null count,
// recursing into structs.
func nullCountFields(fs []arrow.Field) []arrow.Field {
	var out []arrow.Field
	for _, f := range fs {
		if t, ok := f.Type.(*arrow.StructType); ok {
			if sub := nullCountFields(t.Fields()); len(sub) > 0 {
				out = append(out, nf(f.Name, arrow.StructOf(sub...)))
			}
			continue
		}
		out = append(out, nf(f.Name, i64))
	}
	return out
}

func (w *checkpointWriter) remove(r *Remove) {
	sb := w.row(colRemove)
	appendStr(sb.FieldBuilder(0), r.Path, true)
	appendI64(sb.FieldBuilder(1), r.DeletionTimestamp)
	sb.FieldBuilder(2).(*array.BooleanBuilder).Append(r.DataChange)
	sb.FieldBuilder(3).(*array.BooleanBuilder).Append(r.ExtendedFileMetadata)
	pv := r.PartitionValues
	if pv == nil && r.ExtendedFileMetadata {
		pv = map[string]*string{} // present with extendedFileMetadata, as in JSON
	}
	appendPtrMap(sb.FieldBuilder(4), pv, pv != nil)
	appendI64(sb.FieldBuilder(5), r.Size)
	appendDV(sb.FieldBuilder(6), r.DeletionVector)
	appendI64(sb.FieldBuilder(7), r.BaseRowID)
	appendI64(sb.FieldBuilder(8), r.DefaultRowCommitVersion)
}

func (w *checkpointWriter) metadata(m *Metadata) {
	sb := w.row(colMetaData)
	appendStr(sb.FieldBuilder(0), m.ID, true)
	appendStr(sb.FieldBuilder(1), m.Name, m.Name != "")
	appendStr(sb.FieldBuilder(2), m.Description, m.Description != "")
	fb := sb.FieldBuilder(3).(*array.StructBuilder)
	fb.Append(true)
	provider := m.Format.Provider
	if provider == "" {
		provider = "parquet"
	}
	appendStr(fb.FieldBuilder(0), provider, true)
	appendMap(fb.FieldBuilder(1), m.Format.Options, true)
	appendStr(sb.FieldBuilder(4), m.SchemaString, true)
	appendList(sb.FieldBuilder(5), m.PartitionColumns, true)
	appendMap(sb.FieldBuilder(6), m.Configuration, true)
	appendI64(sb.FieldBuilder(7), m.CreatedTime)
}

func (w *checkpointWriter) protocol(p *Protocol) {
	sb := w.row(colProtocol)
	sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(p.MinReaderVersion))
	sb.FieldBuilder(1).(*array.Int32Builder).Append(int32(p.MinWriterVersion))
	appendList(sb.FieldBuilder(2), p.ReaderFeatures, p.ReaderFeatures != nil)
	appendList(sb.FieldBuilder(3), p.WriterFeatures, p.WriterFeatures != nil)
}

func (w *checkpointWriter) txn(t Txn) {
	sb := w.row(colTxn)
	appendStr(sb.FieldBuilder(0), t.AppID, true)
	sb.FieldBuilder(1).(*array.Int64Builder).Append(t.Version)
	appendI64(sb.FieldBuilder(2), t.LastUpdated)
}

func (w *checkpointWriter) domain(d DomainMetadata) {
	sb := w.row(colDomain)
	appendStr(sb.FieldBuilder(0), d.Domain, true)
	appendStr(sb.FieldBuilder(1), d.Configuration, true)
	sb.FieldBuilder(2).(*array.BooleanBuilder).Append(d.Removed)
}

// checkpointVersion builds the snapshot at version and checkpoints it.
func (l *Log) checkpointVersion(ctx context.Context, version int64) error {
	snap, err := l.Snapshot(ctx, version)
	if err != nil {
		return err
	}
	return l.Checkpoint(ctx, snap)
}

// Checkpoint writes a checkpoint of snap and then _last_checkpoint. snap must
// come from this log, so its commit exists. Tables without the v2Checkpoint
// feature get the classic single-file checkpoint (%020d.checkpoint.parquet, one
// action per row, Put: a checkpoint may be rewritten identically); tables with it
// get a UUID-named v2 checkpoint in JSON with every action inline
// (%020d.checkpoint.<uuid>.json, no sidecars), whatever delta.checkpointPolicy
// says (a v2 checkpoint is valid whenever the feature is supported). Tombstones
// older than delta.deletedFileRetentionDuration (default 1 week) are dropped; when
// that property holds an invalid value, none are.
func (l *Log) Checkpoint(ctx context.Context, snap *Snapshot) error {
	if snap == nil || snap.version < 0 {
		return fmt.Errorf("log: checkpoint of an empty snapshot: %w", ErrInvalidTransaction)
	}
	if snap.log != l {
		return fmt.Errorf("log: checkpoint of a snapshot from another log: %w", ErrInvalidTransaction)
	}
	var (
		data []byte
		rows int64
		path string
		err  error
	)
	if snap.protocol.Supports(FeatureV2Checkpoint) {
		data, rows, err = l.encodeV2Checkpoint(snap)
		path = fmt.Sprintf("%s%020d.checkpoint.%s.json", logDir, snap.version, uuid.NewString())
	} else {
		data, rows, err = l.encodeCheckpoint(snap)
		path = CheckpointPath(snap.version)
	}
	if err != nil {
		return err
	}
	if err := l.store.Put(ctx, path, data); err != nil {
		return fmt.Errorf("log: writing %s: %w", path, err)
	}
	size := int64(len(data))
	nAdd := int64(len(snap.files))
	lc, err := json.Marshal(LastCheckpoint{Version: snap.version, Size: rows, SizeInBytes: &size, NumOfAddFiles: &nAdd})
	if err != nil {
		return fmt.Errorf("log: encoding _last_checkpoint: %w", err)
	}
	if err := l.store.Put(ctx, lastCheckpointKey, lc); err != nil {
		return fmt.Errorf("log: writing %s: %w", lastCheckpointKey, err)
	}
	return nil
}

// tombstoneCutoff returns the deletion time (ms) before which a tombstone has
// expired: now minus delta.deletedFileRetentionDuration, or the minimum int64
// (nothing expires) when the stored retention is invalid.
func (l *Log) tombstoneCutoff(snap *Snapshot) int64 {
	props := snap.Properties()
	if props.Err(PropDeletedFileRetentionDuration) != nil {
		return math.MinInt64
	}
	return l.now().Add(-props.DeletedFileRetention).UnixMilli()
}

// encodeV2Checkpoint renders snap as a v2-spec JSON checkpoint: checkpointMetadata,
// protocol, metaData, txn and domainMetadata actions, then the unexpired removes
// (without stats and tags, as in classic checkpoints) and the adds.
func (l *Log) encodeV2Checkpoint(snap *Snapshot) ([]byte, int64, error) {
	p, md := snap.protocol, snap.metadata
	actions := []Action{{CheckpointMetadata: &CheckpointMetadata{Version: snap.version}}, {Protocol: &p}, {Metadata: &md}}
	for _, id := range sortedKeys(snap.txns) {
		t := snap.txns[id]
		actions = append(actions, Action{Txn: &t})
	}
	for i := range snap.domains {
		actions = append(actions, Action{DomainMetadata: &snap.domains[i]})
	}
	cutoff := l.tombstoneCutoff(snap)
	for _, r := range snap.tombstones {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp < cutoff {
			continue
		}
		tomb := *r
		tomb.Stats, tomb.Tags = "", nil
		actions = append(actions, Action{Remove: &tomb})
	}
	for _, a := range snap.files {
		actions = append(actions, Action{Add: a})
	}
	data, err := MarshalActions(actions)
	if err != nil {
		return nil, 0, fmt.Errorf("log: checkpoint %d: %w", snap.version, err)
	}
	return data, int64(len(actions)), nil
}

// checkpointAllocator allocates the Arrow and Parquet buffers of checkpoint writing (a
// variable so tests can measure them).
var checkpointAllocator memory.Allocator = memory.DefaultAllocator

// encodeCheckpoint renders snap as a classic Parquet checkpoint: protocol, metaData,
// txn and domainMetadata rows, then the unexpired removes and the adds, written one
// row group of checkpointRowGroupRows actions at a time.
func (l *Log) encodeCheckpoint(snap *Snapshot) ([]byte, int64, error) {
	mem := checkpointAllocator
	props := snap.Properties()
	w := &checkpointWriter{statsJSON: props.CheckpointWriteStatsAsJSON}
	if props.CheckpointWriteStatsAsStruct {
		t, err := statsParsedType(snap)
		if err != nil {
			return nil, 0, fmt.Errorf("log: checkpoint %d: stats_parsed: %w", snap.version, err)
		}
		w.statsParsed = t
		w.scratch, w.scratchMem = array.NewStructBuilder(mem, t), mem
		defer func() { w.scratch.Release() }() // appendStatsParsed replaces it
		if w.partitions, err = partitionsParsedType(snap); err != nil {
			return nil, 0, fmt.Errorf("log: checkpoint %d: partitionValues_parsed: %w", snap.version, err)
		}
	}
	var partsType *arrow.StructType
	if w.partitions != nil {
		partsType = w.partitions.typ
	}
	sch := checkpointSchema(partsType, w.statsParsed)
	w.rb = array.NewRecordBuilder(mem, sch)
	defer w.rb.Release()
	var buf bytes.Buffer
	// Decimals of precision <= 18 as INT32/INT64, as Spark writes them (stats_parsed
	// and partitionValues_parsed).
	wprops := parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStoreDecimalAsInteger(true), parquet.WithMaxRowGroupLength(int64(checkpointRowGroupRows)))
	fw, err := pqarrow.NewFileWriter(sch, &buf, wprops, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, 0, fmt.Errorf("log: checkpoint %d: %w", snap.version, err)
	}
	w.fw = fw
	defer fw.Close() // a no-op after the Close below
	p, md := snap.protocol, snap.metadata
	w.protocol(&p)
	w.metadata(&md)
	for _, id := range sortedKeys(snap.txns) {
		w.txn(snap.txns[id])
	}
	for _, d := range snap.domains {
		w.domain(d)
	}
	cutoff := l.tombstoneCutoff(snap)
	for _, r := range snap.tombstones {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp < cutoff {
			continue
		}
		w.remove(r)
		if err := w.flushFull(); err != nil {
			return nil, 0, fmt.Errorf("log: checkpoint %d: %w", snap.version, err)
		}
	}
	for _, a := range snap.files {
		if err := w.add(a); err != nil {
			return nil, 0, fmt.Errorf("log: checkpoint %d: file %s: %w", snap.version, a.Path, err)
		}
		if err := w.flushFull(); err != nil {
			return nil, 0, fmt.Errorf("log: checkpoint %d: %w", snap.version, err)
		}
	}
	if err := w.flush(); err != nil {
		return nil, 0, fmt.Errorf("log: checkpoint %d: %w", snap.version, err)
	}
	if err := fw.Close(); err != nil {
		return nil, 0, fmt.Errorf("log: checkpoint %d: %w", snap.version, err)
	}
	return buf.Bytes(), w.rows, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
