package table_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// readerTable writes n rows (k ascending, a partition column p with 3 values, a
// string) in files of about 64 KiB, so a scan has many files to stream.
func readerTable(t *testing.T, n int) *table.Table {
	t.Helper()
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "p", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	tb, err := table.Create(ctx, storage.NewMemory(), schema, table.CreateOptions{PartitionColumns: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%07d-%d", i, i*7919%1009))
		b.Field(2).(*array.Int32Builder).Append(int32(i % 3))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{TargetFileSize: 64 << 10, Parallelism: 1}); err != nil {
		t.Fatal(err)
	}
	return tb
}

// readKeys reads column k of every batch, in order, and checks the batch size cap.
func readKeys(t *testing.T, rd *table.Reader, maxBatch int64) []int64 {
	t.Helper()
	var ks []int64
	for rd.Next() {
		rec := rd.RecordBatch()
		if rec.NumRows() > maxBatch {
			t.Fatalf("batch of %d rows, cap %d", rec.NumRows(), maxBatch)
		}
		ks = append(ks, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	return ks
}

// assertNoLeak checks that every buffer of the checked allocator was freed (the
// Parquet readers' pooled buffers are returned by finalizers, arrow-go note G5).
func assertNoLeak(t *testing.T, mem *memory.CheckedAllocator) {
	t.Helper()
	for range 5 {
		if mem.CurrentAlloc() == 0 {
			return
		}
		runtime.GC()
	}
	mem.AssertSize(t, 0)
}

// TestReaderOrderIsIndependentOfParallelismAndBudget: the same rows in the same
// order for every parallelism and read-ahead budget (down to one byte, where only
// the row group being consumed may proceed), with and without a filter.
func TestReaderOrderIsIndependentOfParallelismAndBudget(t *testing.T) {
	ctx := context.Background()
	const n = 60000
	tb := readerTable(t, n)
	for _, filter := range []string{"", "(k >= 5000 AND k < 9000) OR p = 1", "k >= 1000 AND k < 50000 AND s LIKE 'row-000%'"} {
		var want []int64
		for _, par := range []int{1, 2, 8} {
			for _, budget := range []int64{1, 256 << 10, 0} {
				name := fmt.Sprintf("filter=%q/parallelism=%d/budget=%d", filter, par, budget)
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				opts := []table.ScanOption{table.WithColumns("k", "p"), table.WithParallelism(par), table.WithReadAhead(budget),
					table.WithBatchSize(700), table.WithAllocator(mem)}
				if filter != "" {
					opts = append(opts, table.WithFilter(filter))
				}
				sc, err := tb.Scan(ctx, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if filter == "" && sc.NumFiles() < 6 {
					t.Fatalf("%s: %d files; the test needs many", name, sc.NumFiles())
				}
				rd, err := sc.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got := readKeys(t, rd, 700)
				rd.Release()
				assertNoLeak(t, mem)
				if want == nil {
					want = got
					if filter == "" && len(got) != n {
						t.Fatalf("%s: %d rows, want %d", name, len(got), n)
					}
					continue
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %d rows differ from the first configuration's %d", name, len(got), len(want))
				}
			}
		}
	}
}

// TestReaderLimitStopsEarly: a limit returns exactly that many rows, the first ones
// in plan order, and releases everything read ahead.
func TestReaderLimitStopsEarly(t *testing.T) {
	ctx := context.Background()
	tb := readerTable(t, 30000)
	all, err := tb.ReadAll(ctx, table.WithColumns("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer all.Release()
	var order []int64
	for _, c := range all.Column(0).Data().Chunks() {
		order = append(order, c.(*array.Int64).Int64Values()...)
	}
	for _, limit := range []int64{1, 10, 999, 1000, 1001, 29999, 30000, 40000} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		sc, err := tb.Scan(ctx, table.WithColumns("k"), table.WithLimit(limit), table.WithBatchSize(1000), table.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := sc.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := readKeys(t, rd, 1000)
		if rd.Next() {
			t.Fatalf("limit %d: Next after the end returned true", limit)
		}
		rep := rd.Report()
		rd.Release()
		assertNoLeak(t, mem)
		want := order[:min(int(limit), len(order))]
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: got %d rows, want the first %d", limit, len(got), len(want))
		}
		if rep.RowsReturned != int64(len(want)) {
			t.Fatalf("limit %d: report says %d rows returned", limit, rep.RowsReturned)
		}
	}
}

// TestReaderCancelAndEarlyRelease: cancelling the context fails the read with the
// context's error; releasing a Reader mid-way, or before its first Next, frees
// every buffer.
func TestReaderCancelAndEarlyRelease(t *testing.T) {
	tb := readerTable(t, 30000)
	t.Run("cancel", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sc, err := tb.Scan(ctx, table.WithBatchSize(500), table.WithAllocator(mem), table.WithReadAhead(1))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := sc.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !rd.Next() {
			t.Fatalf("no first batch: %v", rd.Err())
		}
		cancel()
		for rd.Next() {
		}
		if !errors.Is(rd.Err(), context.Canceled) {
			t.Fatalf("after cancel: error %v, want context.Canceled", rd.Err())
		}
		rd.Release()
		assertNoLeak(t, mem)
	})
	for _, after := range []int{0, 1, 5} {
		t.Run(fmt.Sprintf("release-after-%d-batches", after), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			ctx := context.Background()
			sc, err := tb.Scan(ctx, table.WithBatchSize(500), table.WithAllocator(mem))
			if err != nil {
				t.Fatal(err)
			}
			rd, err := sc.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for range after {
				if !rd.Next() {
					t.Fatal(rd.Err())
				}
			}
			kept := rd.RecordBatch()
			if kept != nil {
				kept.Retain()
			}
			rd.Release()
			if kept != nil {
				if kept.NumRows() == 0 {
					t.Fatal("a retained batch lost its rows at Release")
				}
				kept.Release()
			}
			assertNoLeak(t, mem)
		})
	}
}

// TestReaderAsRecordReader: the adapter satisfies array.RecordReader and reads the
// same rows.
func TestReaderAsRecordReader(t *testing.T) {
	ctx := context.Background()
	tb := readerTable(t, 5000)
	sc, err := tb.Scan(ctx, table.WithColumns("k"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rr array.RecordReader = rd.RecordReader()
	defer rr.Release()
	if !rr.Schema().Equal(sc.Schema()) {
		t.Fatalf("schema %v, want %v", rr.Schema(), sc.Schema())
	}
	var n int64
	for rr.Next() {
		//lint:ignore SA1019 array.RecordReader still requires Record: the test checks it is RecordBatch
		if rr.Record() != rr.RecordBatch() {
			t.Fatal("Record and RecordBatch differ")
		}
		n += rr.RecordBatch().NumRows()
	}
	if rr.Err() != nil || n != 5000 {
		t.Fatalf("read %d rows, error %v", n, rr.Err())
	}
}
