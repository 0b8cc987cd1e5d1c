package dml

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/internal/writeset"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

const sinkSchema = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":false,"metadata":{}},
 {"name":"p","type":"string","nullable":true,"metadata":{}}]}`

// sinkView resolves a table about to be created (partitioned by p when parts).
func sinkView(t *testing.T, store storage.Storage, parts []string) *tableview.View {
	t.Helper()
	md := log.Metadata{ID: "00000000-0000-4000-8000-000000000001", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: strings.Join(strings.Fields(sinkSchema), ""), PartitionColumns: parts, Configuration: map[string]string{}}
	v, err := tableview.New(log.New(store).NewTableSnapshot(md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}))
	require.NoError(t, err)
	return v
}

// sinkRows is a batch of ids lo..hi-1, p = "p<id%parts>" (NULL for id%parts == 0
// when nulls).
func sinkRows(mem memory.Allocator, v *tableview.View, lo, hi, parts int, nulls bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, v.Logical())
	defer b.Release()
	for i := lo; i < hi; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if nulls && i%parts == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", i%parts))
		}
	}
	return b.NewRecordBatch()
}

// Rows written to a FileSink from several goroutines at once all land in files, one
// set per partition, and the writer's files are what Finish returns; Discard deletes
// them. Run under -race, this also checks that batches handed to the writer's
// goroutine are settled (R1).
func TestFileSinkConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	store := storage.NewMemory()
	v := sinkView(t, store, []string{"p"})
	s := NewFileSink(store, v, writeset.Settings{Allocator: mem})
	require.NoError(t, s.Start(ctx))
	const writers, perWriter, batch = 4, 2000, 250
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := g * perWriter; lo < (g+1)*perWriter; lo += batch {
				rec := sinkRows(mem, v, lo, lo+batch, 3, false)
				errs[g] = s.Write(ctx, rec)
				// The caller keeps its reference and may read rec meanwhile.
				_ = rec.Column(0).NullN()
				rec.Release()
				if errs[g] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	adds, err := s.Finish(ctx)
	require.NoError(t, err)
	require.EqualValues(t, writers*perWriter, s.Rows())
	require.Zero(t, s.FilesEstimate())
	var total int64
	dirs := map[string]bool{}
	for _, a := range adds {
		n, ok := a.NumRecords()
		require.True(t, ok, "%s has no record count", a.Path)
		total += n
		dirs[*a.PartitionValues["p"]] = true
		require.True(t, strings.HasPrefix(a.Path, "p="+*a.PartitionValues["p"]+"/"), a.Path)
	}
	require.EqualValues(t, writers*perWriter, total)
	require.Equal(t, map[string]bool{"p0": true, "p1": true, "p2": true}, dirs)
	objs, err := store.List(ctx, "", "")
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	s.Discard()
	objs, err = store.List(ctx, "", "")
	require.NoError(t, err)
	require.Empty(t, objs, "Discard deletes the files")
}

// A write the writer refuses (a NULL in the NOT NULL id) stops the sink: the writing
// goroutine sees the writer's error, Finish reports it, and Discard leaves nothing:
// no file, and no batch the pipe held (the one the writer failed on included).
func TestFileSinkStopsOnWriterError(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	store := storage.NewMemory()
	v := sinkView(t, store, nil)
	s := NewFileSink(store, v, writeset.Settings{Allocator: mem})
	require.NoError(t, s.Start(ctx))
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	b.Field(0).AppendNull()
	b.Field(1).AppendNull()
	bad := b.NewRecordBatch()
	b.Release()
	defer bad.Release()
	var werr error
	for range 10 { // the writer fails asynchronously: later writes see it
		if werr = s.Write(ctx, bad); werr != nil {
			break
		}
	}
	_, ferr := s.Finish(ctx)
	require.Error(t, ferr)
	require.ErrorContains(t, ferr, `"id"`)
	if werr != nil {
		require.Equal(t, ferr, werr)
	}
	s.Discard()
	objs, err := store.List(ctx, "", "")
	require.NoError(t, err)
	require.Empty(t, objs)
}

// A dry run's estimate: one file per distinct partition the rows go to (NULL is a
// partition of its own), one per copied file's partition, plus one per clustered
// file rewritten on its own; one file for an unpartitioned table.
func TestCountSinkEstimate(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	store := storage.NewMemory()
	v := sinkView(t, store, []string{"p"})
	s := NewCountSink(v)
	require.NoError(t, s.Start(ctx))
	require.Zero(t, s.FilesEstimate())
	rec := sinkRows(mem, v, 0, 100, 4, true)
	defer rec.Release()
	require.NoError(t, s.Write(ctx, rec))
	require.EqualValues(t, 100, s.Rows())
	require.Equal(t, 4, s.FilesEstimate(), "p1, p2, p3 and NULL")
	p9 := "p9"
	require.NoError(t, s.Copies(&log.Add{Path: "p=p9/x.parquet", PartitionValues: map[string]*string{"p": &p9}}, 10, false))
	require.NoError(t, s.Copies(&log.Add{Path: "p=p9/y.parquet", PartitionValues: map[string]*string{"p": &p9}}, 0, false))
	require.NoError(t, s.Copies(&log.Add{Path: "p=p1/z.parquet"}, 5, true))
	require.EqualValues(t, 110, s.Rows())
	require.Equal(t, 6, s.FilesEstimate(), "p9 added, and one file of its own")
	adds, err := s.Finish(ctx)
	require.NoError(t, err)
	require.Empty(t, adds)

	flat := NewCountSink(sinkView(t, store, nil))
	require.NoError(t, flat.Write(ctx, rec))
	require.Equal(t, 1, flat.FilesEstimate())
}

func TestFilterRows(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	v := sinkView(t, storage.NewMemory(), nil)
	rec := sinkRows(mem, v, 0, 6, 2, false)
	defer rec.Release()
	all, err := FilterRows(ctx, rec, []bool{true, true, true, true, true, true}, mem)
	require.NoError(t, err)
	require.Same(t, rec, all, "keeping every row returns the batch itself")
	all.Release()
	some, err := FilterRows(ctx, rec, []bool{false, true, false, false, true, true}, mem)
	require.NoError(t, err)
	defer some.Release()
	require.Equal(t, []int64{1, 4, 5}, some.Column(0).(*array.Int64).Int64Values())
}
