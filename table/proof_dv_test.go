package table_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// Deletion vectors on skiplake's own tables: rows are marked deleted by a hand-made
// commit (remove the file, add it back with a deletionVector descriptor, protocol
// upgraded to reader 3 / writer 7 with deletionVectors), as Spark's DELETE does. Scans
// must never return them, Count must subtract them (also when it answers from the log),
// and filters on a file with a DV, including row-group skipping inside it, stay exact.

var proofDVSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// proofDVBatch makes rows k0..k0+n-1 in partition part; v is incompressible text so a
// large batch spans several ~1 MiB row groups.
func proofDVBatch(rng *rand.Rand, k0 int64, n int, part int32) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, proofDVSchema)
	defer b.Release()
	buf := make([]byte, 120)
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(k0 + int64(i))
		for j := range buf {
			buf[j] = byte('!' + rng.IntN(90))
		}
		b.Field(1).(*array.StringBuilder).Append(string(buf))
		b.Field(2).(*array.Int32Builder).Append(part)
	}
	return b.NewRecordBatch()
}

// proofDeleteRows commits deletion vectors: for each data file path in dels, the rows
// at the given positions (which the caller computed from the file itself). inline
// selects storage type 'i' instead of a deletion_vector_<uuid>.bin file ('u').
func proofDeleteRows(t *testing.T, tb *table.Table, st storage.Storage, dels map[string][]uint64, inline bool) int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	ls := snap.Log()
	txn := ls.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	p := ls.Protocol()
	if p.MinReaderVersion < 3 {
		txn.SetProtocol(log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{log.FeatureDeletionVectors},
			WriterFeatures: []string{log.FeatureAppendOnly, log.FeatureInvariants, log.FeatureDeletionVectors}})
	}
	now := time.Now().UnixMilli()
	found := 0
	for _, a := range ls.Files() {
		path, err := a.DecodedPath()
		if err != nil {
			t.Fatal(err)
		}
		rows, ok := dels[path]
		if !ok {
			continue
		}
		found++
		if a.DeletionVector != nil {
			t.Fatalf("%s already has a deletion vector", path)
		}
		bm := roaring64.BitmapOf(rows...)
		var d dv.Descriptor
		if inline {
			d, err = dv.EncodeInline(bm)
		} else {
			var data []byte
			data, d, err = dv.EncodeFile(bm, uuid.New(), "dv")
			if err == nil {
				var rel string
				if rel, err = d.RelativePath(""); err == nil {
					err = st.PutIfAbsent(ctx, rel, data)
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		desc := &log.DeletionVectorDescriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
			SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
		if d.StorageType != dv.StorageInline {
			off := d.Offset
			desc.Offset = &off
		}
		size := a.Size
		txn.Remove(&log.Remove{Path: a.Path, DeletionTimestamp: &now, DataChange: true, ExtendedFileMetadata: true,
			PartitionValues: a.PartitionValues, Size: &size, Tags: a.Tags})
		na := *a
		na.DeletionVector = desc
		na.DataChange = true
		txn.Add(&na)
	}
	if found != len(dels) {
		t.Fatalf("only %d of %d files to delete from are live", found, len(dels))
	}
	v, err := txn.Commit(ctx, log.CommitInfo{Operation: "DELETE"})
	if err != nil {
		t.Fatalf("commit deletion vectors: %v", err)
	}
	return v
}

func TestProofDeletionVectors(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) { proofDVRun(t, inline) })
	}
}

func proofDVRun(t *testing.T, inline bool) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, proofDVSchema, table.CreateOptions{PartitionColumns: []string{"part"}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	// Version 1: one large file (several row groups) in part=0. Version 2: two small
	// files in part=1 and part=2.
	big := proofDVBatch(rng, 0, 30000, 0)
	defer big.Release()
	// TargetFileSize 8 MiB: row groups of 1 MiB (the writer's floor), one file.
	if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{big}, table.WriteOptions{TargetFileSize: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	s1, s2 := proofDVBatch(rng, 100000, 500, 1), proofDVBatch(rng, 200000, 500, 2)
	defer s1.Release()
	defer s2.Release()
	if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{s1, s2}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	// Ground truth: each file's k values in file order (row position = index).
	fileKs := proofFileIDs(t, st, before, "k")
	var bigPath string
	for p, ks := range fileKs {
		if len(ks) == 30000 {
			bigPath = p
		}
	}
	if bigPath == "" || len(fileKs) != 3 {
		t.Fatalf("want one 30000-row file and two small ones, got %d files", len(fileKs))
	}
	raw, err := st.Get(ctx, bigPath)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	rgs := pr.NumRowGroups()
	pr.Close()
	if rgs < 2 {
		t.Errorf("the large file has %d row group(s); the DV offset test needs several", rgs)
	}
	t.Logf("large file: %d rows in %d row groups", len(fileKs[bigPath]), rgs)

	// Delete: in the large file every 7th row, the first and last row and a whole run
	// across a row-group boundary region; in one small file every row but one.
	dels := map[string][]uint64{}
	deleted := map[int64]bool{}
	mark := func(path string, pos uint64) {
		dels[path] = append(dels[path], pos)
		deleted[fileKs[path][pos]] = true
	}
	for pos := uint64(0); pos < 30000; pos++ {
		if pos%7 == 0 || pos == 29999 || (pos >= 9000 && pos < 12000) {
			mark(bigPath, pos)
		}
	}
	var smallPath string
	for p, ks := range fileKs {
		if p != bigPath && ks[0] == 100000 {
			smallPath = p
		}
	}
	for pos := uint64(0); pos < 500; pos++ {
		if pos != 250 {
			mark(smallPath, pos)
		}
	}
	version := proofDeleteRows(t, tb, st, dels, inline)

	var all, live []int64
	for _, ks := range fileKs {
		for _, k := range ks {
			all = append(all, k)
			if !deleted[k] {
				live = append(live, k)
			}
		}
	}
	slices.Sort(all)
	slices.Sort(live)
	want := func(pred func(k int64) bool) []int64 {
		var out []int64
		for _, k := range live {
			if pred(k) {
				out = append(out, k)
			}
		}
		return out
	}
	pick := func(deletedOne bool) int64 {
		for _, k := range fileKs[bigPath][1:] {
			if deleted[k] == deletedOne {
				return k
			}
		}
		t.Fatal("no such row")
		return 0
	}
	dk, lk := pick(true), pick(false)

	cases := []struct {
		name   string
		filter string
		want   []int64
		rgSkip bool // row groups of the large file must be skipped
	}{
		{"no filter: deleted rows never appear", "", live, false},
		{"range inside the large file (row-group skipping + DV offsets)", "k BETWEEN 20000 AND 20500", want(func(k int64) bool { return k >= 20000 && k <= 20500 }), true},
		{"range over the deleted run", "k >= 8990 AND k < 12010", want(func(k int64) bool { return k >= 8990 && k < 12010 }), false},
		{"equality on a deleted row finds nothing", fmt.Sprintf("k = %d", dk), nil, false},
		{"IN with a deleted and a live row finds the live one", fmt.Sprintf("k IN (%d, %d)", dk, lk), []int64{lk}, false},
		{"partition filter on the almost-empty file", "part = 1", []int64{100250}, false},
		{"partition filter on the untouched file", "part = 2", want(func(k int64) bool { return k >= 200000 }), false},
		{"string filter reads every row", "v LIKE '%'", live, false},
		{"filter proven true for the whole table (MustMatch)", "k >= 0", live, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []table.ScanOption
			if c.filter != "" {
				opts = append(opts, table.WithFilter(c.filter))
			}
			got, rep, _, err := proofScanIDs(t, tb, "k", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if c.rgSkip && rep.Level("rowgroup").Skipped == 0 {
				t.Errorf("scan %q skipped no row group (%+v): the DV offset check is vacuous", c.filter, rep.Level("rowgroup"))
			}
			if !slices.Equal(got, c.want) {
				missing, extra := proofDiffIDs(got, c.want)
				t.Errorf("scan %q: %d rows, want %d (missing %v, extra %v)", c.filter, len(got), len(c.want), missing, extra)
			}
			// Only the filter's columns (or none at all): another read path.
			n, rep, err := tb.Count(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(c.want)) {
				t.Errorf("Count %q = %d, want %d (levels %+v)", c.filter, n, len(c.want), rep.Levels)
			}
		})
	}
	t.Run("metadata-only Count subtracts the cardinality", func(t *testing.T) {
		n, rep, err := tb.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		md := rep.Level("metadata")
		if md.MustMatch != 3 || md.Kept != 3 {
			t.Errorf("Count without a filter should answer all 3 files from the log, got %+v", md)
		}
		if n != int64(len(live)) {
			t.Errorf("Count = %d, want %d (%d rows minus %d deleted)", n, len(live), len(all), len(deleted))
		}
	})
	t.Run("partition column only (no data column read)", func(t *testing.T) {
		got, err := tb.ReadAll(ctx, table.WithColumns("part"))
		if err != nil {
			t.Fatal(err)
		}
		defer got.Release()
		if got.NumRows() != int64(len(live)) {
			t.Errorf("projection onto the partition column returned %d rows, want %d", got.NumRows(), len(live))
		}
	})
	t.Run("describe counts deleted rows", func(t *testing.T) {
		d, err := tb.Describe(ctx, table.Latest())
		if err != nil {
			t.Fatal(err)
		}
		if d.NumDeletedRows != int64(len(deleted)) || d.MinReaderVersion != 3 {
			t.Errorf("describe: %d deleted rows, reader %d; want %d, 3", d.NumDeletedRows, d.MinReaderVersion, len(deleted))
		}
	})
	t.Run("time travel before the delete sees every row", func(t *testing.T) {
		got, _, _, err := proofScanIDs(t, snapshotAt(t, tb, table.AtVersion(version-1)), "k")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, all) {
			t.Errorf("version %d: %d rows, want %d", version-1, len(got), len(all))
		}
	})
	t.Run("appends after the delete keep the vectors", func(t *testing.T) {
		more := proofDVBatch(rng, 300000, 10, 1)
		defer more.Release()
		if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{more}, table.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		n, _, err := tb.Count(ctx, table.WithFilter("part = 1"))
		if err != nil {
			t.Fatal(err)
		}
		if n != 11 {
			t.Errorf("part = 1 after append: %d rows, want 11 (1 live + 10 new)", n)
		}
		if _, err := tb.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		got, _, _, err := proofScanIDs(t, tb, "k", table.WithFilter("part = 0"))
		if err != nil {
			t.Fatal(err)
		}
		if w := want(func(k int64) bool { return k < 100000 }); !slices.Equal(got, w) {
			t.Errorf("after checkpoint: %d rows in part 0, want %d", len(got), len(w))
		}
	})
}
