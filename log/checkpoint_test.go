package log

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// buildHistory commits n versions with appends, removes, DV updates, txn and
// domain metadata against a reader-3/writer-7 table.
func buildHistory(t *testing.T, l *Log, n int) {
	t.Helper()
	ctx := context.Background()
	md := testMetadata()
	md.SchemaString = testSchema
	md.PartitionColumns = []string{"part"}
	p := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureDeletionVectors},
		WriterFeatures: []string{FeatureDeletionVectors, FeatureDomainMetadata, FeatureAppendOnly}}
	if _, err := l.Create(ctx, md, p, nil, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	for v := 1; v < n; v++ {
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		tx := snap.NewTransaction(TxnOptions{DisableCheckpoint: true})
		pv := fmt.Sprintf("p%d", v%3)
		a := newAdd(fmt.Sprintf("part=%s/f%02d%%20x.parquet", pv, v), v)
		a.PartitionValues = map[string]*string{"part": &pv}
		if v%4 == 0 {
			a.PartitionValues["part"] = nil
			a.Tags = map[string]string{"k": "v"}
		}
		tx.Add(a)
		if v%5 == 0 {
			old := snap.Files()[0]
			tx.Remove(&Remove{Path: old.Path, DeletionTimestamp: ptr(l.now().UnixMilli()), DataChange: true,
				ExtendedFileMetadata: true, PartitionValues: old.PartitionValues, Size: ptr(old.Size), DeletionVector: old.DeletionVector})
		}
		if v%7 == 0 {
			// Replace a file's deletion vector: remove (path, old dv), add (path, new dv).
			old := snap.Files()[len(snap.Files())-1]
			tx.Remove(&Remove{Path: old.Path, DeletionTimestamp: ptr(l.now().UnixMilli()), DataChange: true, DeletionVector: old.DeletionVector})
			upd := *old
			upd.DeletionVector = &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: fmt.Sprintf("dv%03d", v),
				Offset: ptr(int32(v)), SizeInBytes: 34, Cardinality: 1, MaxRowIndex: ptr(int64(0))}
			tx.Add(&upd)
		}
		if v%6 == 0 {
			tx.SetTxn("stream", int64(v))
			tx.SetDomainMetadata(DomainMetadata{Domain: fmt.Sprintf("d%d", v%2), Configuration: fmt.Sprintf(`{"v":%d}`, v), Removed: v == 12})
		}
		if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
			t.Fatalf("commit %d: %v", v, err)
		}
	}
}

func snapshotsEqual(t *testing.T, a, b *Snapshot) {
	t.Helper()
	if a.Version() != b.Version() {
		t.Fatalf("versions %d %d", a.Version(), b.Version())
	}
	if !reflect.DeepEqual(a.Protocol(), b.Protocol()) {
		t.Errorf("protocol %+v vs %+v", a.Protocol(), b.Protocol())
	}
	if !reflect.DeepEqual(a.Metadata(), b.Metadata()) {
		t.Errorf("metadata %+v vs %+v", a.Metadata(), b.Metadata())
	}
	if !reflect.DeepEqual(a.Files(), b.Files()) {
		t.Errorf("files differ: %d vs %d", a.NumFiles(), b.NumFiles())
		for i := range a.Files() {
			if i < len(b.Files()) && !reflect.DeepEqual(a.Files()[i], b.Files()[i]) {
				t.Errorf("first difference: %+v vs %+v", a.Files()[i], b.Files()[i])
				break
			}
		}
	}
	if !reflect.DeepEqual(a.Tombstones(), b.Tombstones()) {
		t.Errorf("tombstones differ: %d vs %d", len(a.Tombstones()), len(b.Tombstones()))
	}
	if !reflect.DeepEqual(a.DomainMetadata(), b.DomainMetadata()) {
		t.Errorf("domains %v vs %v", a.DomainMetadata(), b.DomainMetadata())
	}
	if !reflect.DeepEqual(a.txns, b.txns) {
		t.Errorf("txns %v vs %v", a.txns, b.txns)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := memStore()
	l := New(s)
	buildHistory(t, l, 28)
	jsonSnap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if jsonSnap.CheckpointVersion() != -1 {
		t.Fatal("expected a JSON-only replay before checkpointing")
	}
	if len(jsonSnap.Tombstones()) == 0 || len(jsonSnap.DomainMetadata()) == 0 {
		t.Fatal("history lacks tombstones or domain metadata")
	}
	if err := l.Checkpoint(ctx, jsonSnap); err != nil {
		t.Fatal(err)
	}
	if hint := l.readLastCheckpoint(ctx); hint != jsonSnap.Version() {
		t.Fatalf("_last_checkpoint version %d", hint)
	}
	cpSnap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if cpSnap.CheckpointVersion() != jsonSnap.Version() {
		t.Fatalf("snapshot not read from the checkpoint (cp %d)", cpSnap.CheckpointVersion())
	}
	snapshotsEqual(t, jsonSnap, cpSnap)
	if v, ok := cpSnap.TxnVersion("stream"); !ok || v != 24 {
		t.Errorf("txn after checkpoint %d %v", v, ok)
	}

	// Rewriting the same checkpoint is allowed and identical.
	first, _ := s.Get(ctx, CheckpointPath(jsonSnap.Version()))
	if err := l.Checkpoint(ctx, cpSnap); err != nil {
		t.Fatal(err)
	}
	second, _ := s.Get(ctx, CheckpointPath(jsonSnap.Version()))
	if !bytes.Equal(first, second) {
		t.Error("re-checkpointing the same snapshot produced different bytes")
	}
}

func TestCheckpointDropsExpiredTombstones(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	createTable(t, l, map[string]string{"delta.deletedFileRetentionDuration": "interval 1 hours"}, "old", "recent")
	snap, _ := l.Snapshot(ctx, -1)
	now := l.now().UnixMilli()
	tx := snap.NewTransaction(TxnOptions{})
	tx.Remove(&Remove{Path: "old", DeletionTimestamp: ptr(now - 2*3600*1000), DataChange: true})
	tx.Remove(&Remove{Path: "recent", DeletionTimestamp: ptr(now), DataChange: true})
	if _, err := tx.Commit(ctx, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	if err := l.Checkpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	if len(snap.Tombstones()) != 1 || snap.Tombstones()[0].Path != "recent" {
		t.Fatalf("tombstones %v", snap.Tombstones())
	}
}

func TestCheckpointRefusals(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	if err := l.Checkpoint(ctx, nil); err == nil {
		t.Error("nil snapshot accepted")
	}
	createTable(t, l, nil, "a")
	snap, _ := l.Snapshot(ctx, -1)
	if err := New(memStore()).Checkpoint(ctx, snap); err == nil {
		t.Error("snapshot of another log accepted")
	}
}

// TestStatsParsedOnlyCheckpoint reads a checkpoint whose add carries only
// stats_parsed and partitionValues_parsed: they are rendered back to the
// JSON stats string and the serialized partition values.
func TestStatsParsedOnlyCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := rawLog(t, 2)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tsType := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	statsType := arrow.StructOf(nf("numRecords", i64),
		nf("minValues", arrow.StructOf(nf("id", i64), nf("ts", tsType))),
		nf("nullCount", arrow.StructOf(nf("id", i64))))
	addType := arrow.StructOf(nf("path", str), nf("size", i64), nf("modificationTime", i64), nf("dataChange", bln),
		nf("stats_parsed", statsType), nf("partitionValues_parsed", arrow.StructOf(nf("d", arrow.FixedWidthTypes.Date32))))
	sch := arrow.NewSchema([]arrow.Field{nf("add", addType), nf("protocol", arrow.StructOf(nf("minReaderVersion", i32), nf("minWriterVersion", i32))),
		nf("metaData", arrow.StructOf(nf("id", str), nf("schemaString", str)))}, nil)
	rb := array.NewRecordBuilder(mem, sch)
	defer rb.Release()
	ab := rb.Field(0).(*array.StructBuilder)
	pb := rb.Field(1).(*array.StructBuilder)
	mb := rb.Field(2).(*array.StructBuilder)
	// row 0: protocol
	ab.AppendNull()
	mb.AppendNull()
	pb.Append(true)
	pb.FieldBuilder(0).(*array.Int32Builder).Append(1)
	pb.FieldBuilder(1).(*array.Int32Builder).Append(2)
	// row 1: metaData
	ab.AppendNull()
	pb.AppendNull()
	mb.Append(true)
	mb.FieldBuilder(0).(*array.StringBuilder).Append("x")
	mb.FieldBuilder(1).(*array.StringBuilder).Append(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`)
	// row 2: add with parsed stats only
	pb.AppendNull()
	mb.AppendNull()
	ab.Append(true)
	ab.FieldBuilder(0).(*array.StringBuilder).Append("d=2024-01-02/p.parquet")
	ab.FieldBuilder(1).(*array.Int64Builder).Append(10)
	ab.FieldBuilder(2).(*array.Int64Builder).Append(1)
	ab.FieldBuilder(3).(*array.BooleanBuilder).Append(true)
	sp := ab.FieldBuilder(4).(*array.StructBuilder)
	sp.Append(true)
	sp.FieldBuilder(0).(*array.Int64Builder).Append(3)
	mv := sp.FieldBuilder(1).(*array.StructBuilder)
	mv.Append(true)
	mv.FieldBuilder(0).(*array.Int64Builder).Append(-4)
	mv.FieldBuilder(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_123_456))
	nc := sp.FieldBuilder(2).(*array.StructBuilder)
	nc.Append(true)
	nc.FieldBuilder(0).(*array.Int64Builder).AppendNull()
	pp := ab.FieldBuilder(5).(*array.StructBuilder)
	pp.Append(true)
	pp.FieldBuilder(0).(*array.Date32Builder).Append(arrow.Date32(19724))
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(sch, &buf, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, CheckpointPath(1), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	snap, err := New(s).Snapshot(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion() != 1 || snap.NumFiles() != 1 {
		t.Fatalf("cp %d files %d", snap.CheckpointVersion(), snap.NumFiles())
	}
	a := snap.Files()[0]
	want := `{"minValues":{"id":-4,"ts":"2023-11-14T22:13:20.123Z"},"nullCount":{},"numRecords":3}`
	if a.Stats != want {
		t.Errorf("stats\n got %s\nwant %s", a.Stats, want)
	}
	if v, isNull := a.PartitionValue("d"); isNull || v != "2024-01-02" {
		t.Errorf("partition value %q null=%v", v, isNull)
	}
}
