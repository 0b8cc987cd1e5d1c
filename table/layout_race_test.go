package table_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// createBarrier holds every put of commit version 0 until n writers have reached it
// (or a timeout passed), so that n writers creating the same table are sure to have
// written their files for their own new table before any of them commits: a real
// race to create, every time.
type createBarrier struct {
	storage.Storage
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newCreateBarrier(st storage.Storage, n int) *createBarrier {
	return &createBarrier{Storage: st, n: n, all: make(chan struct{})}
}

func (b *createBarrier) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if path == log.CommitPath(0) {
		b.mu.Lock()
		b.arrived++
		if b.arrived == b.n {
			close(b.all)
		}
		b.mu.Unlock()
		select {
		case <-b.all:
		case <-time.After(20 * time.Second):
		}
	}
	return b.Storage.PutIfAbsent(ctx, path, data)
}

func raceSchema(partitioned bool) *arrow.Schema {
	fs := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	}
	if partitioned {
		fs = append(fs, arrow.Field{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.NewSchema(fs, nil)
}

func raceRows(sch *arrow.Schema, from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("n", i))
		sb := b.Field(2).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i % 1000))
		if sch.NumFields() > 3 {
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("p", i%3))
		}
	}
	return b.NewRecordBatch()
}

// checkRaceRows reads the table and requires exactly the ids [0, n), each once, with
// every column non-null and equal to what was written.
func checkRaceRows(t *testing.T, tb *table.Table, n int, partitioned bool) {
	t.Helper()
	all, err := tb.ReadAll(context.Background())
	require.NoError(t, err)
	defer all.Release()
	require.EqualValues(t, n, all.NumRows())
	tr := array.NewTableReader(all, 0)
	defer tr.Release()
	seen := make([]bool, n)
	nulls := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		names := rec.Column(1).(*array.String)
		st := rec.Column(2).(*array.Struct)
		for i := 0; i < int(rec.NumRows()); i++ {
			if ids.IsNull(i) || names.IsNull(i) || st.IsNull(i) || st.Field(0).IsNull(i) {
				nulls++
				continue
			}
			id := ids.Value(i)
			require.False(t, seen[id], "id %d read twice", id)
			seen[id] = true
			require.Equal(t, fmt.Sprint("n", id), names.Value(i))
			require.EqualValues(t, id%1000, st.Field(0).(*array.Int32).Value(i))
			if partitioned {
				require.Equal(t, fmt.Sprint("p", id%3), rec.Column(3).(*array.String).Value(i))
			}
		}
	}
	require.Zero(t, nulls, "rows read back with NULLs (files committed for another table's physical names)")
	for id, ok := range seen {
		require.True(t, ok, "id %d missing", id)
	}
}

// Issue 24, bug 1: writers racing to create a column-mapped table each pick their
// own physical names; the losers' files are rewritten for the winner's names (not
// committed as they are, which read back as NULL). Every row reads back exactly once
// and nothing is left outside the log.
func TestCreateRaceColumnMappingRewritesLosers(t *testing.T) {
	const writers, rows = 4, 5000
	for _, partitioned := range []bool{false, true} {
		for _, mode := range []string{"name", "id"} {
			t.Run(fmt.Sprintf("mode=%s/partitioned=%v", mode, partitioned), func(t *testing.T) {
				ctx := context.Background()
				mem := storage.NewMemory()
				st := newCreateBarrier(mem, writers)
				sch := raceSchema(partitioned)
				copts := table.CreateOptions{Properties: map[string]string{log.PropColumnMappingMode: mode}}
				if partitioned {
					copts.PartitionColumns = []string{"p"}
				}
				var wg sync.WaitGroup
				errs := make([]error, writers)
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rec := raceRows(sch, w*rows, rows)
						defer rec.Release()
						rr, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
						if err != nil {
							errs[w] = err
							return
						}
						defer rr.Release()
						_, _, errs[w] = table.CreateWrite(ctx, st, sch, copts, rr, table.WriteOptions{})
					}()
				}
				wg.Wait()
				for w, err := range errs {
					require.NoError(t, err, "writer %d", w)
				}
				tb, err := table.Open(ctx, mem)
				require.NoError(t, err)
				checkRaceRows(t, tb, writers*rows, partitioned)
				noOrphans(t, tb, mem)
				h, err := tb.History(ctx, 0)
				require.NoError(t, err)
				require.Len(t, h, writers, "one commit per writer")
			})
		}
	}
}

// columnMappedPartitioned creates a partitioned table with column mapping (name
// mode), whose partition values are keyed by physical names in the log.
func columnMappedPartitioned(t *testing.T, st storage.Storage, props map[string]string) *table.Table {
	t.Helper()
	conf := map[string]string{log.PropColumnMappingMode: "name"}
	for k, v := range props {
		conf[k] = v
	}
	tb, err := table.Create(context.Background(), st, partSchema(), table.CreateOptions{PartitionColumns: []string{"p"}, Properties: conf})
	require.NoError(t, err)
	return tb
}

// filesPerPartition counts the live files of each partition (logical value of p).
func filesPerPartition(t *testing.T, tb *table.Table) map[string]int {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	out := map[string]int{}
	for _, a := range snap.Log().Files() {
		require.Len(t, a.PartitionValues, 1)
		for k, v := range a.PartitionValues {
			require.True(t, strings.HasPrefix(k, "col-"), "partition values keyed by physical name, got %q", k)
			out[*v]++
		}
	}
	return out
}

// Issue 24, bug 2: auto-compaction on a column-mapped partitioned table compacts every
// partition the write touched (it keyed partitions by logical names, which the log's
// physically keyed partition values never match, and so compacted only one).
func TestAutoCompactionColumnMappedPartitions(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb := columnMappedPartitioned(t, st, map[string]string{
		"delta.autoOptimize.autoCompact": "true", "skiplake.autoCompact.minNumFiles": "2"})
	write := func(parts ...string) *table.WriteResult {
		var recs []arrow.RecordBatch
		for i, p := range parts {
			recs = append(recs, raceRowsPart(p, 100*i, 50))
		}
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{})
		require.NoError(t, err)
		return res
	}
	require.Nil(t, write("A", "B").AutoCompact, "one file per partition: below the threshold")
	res := write("A", "B")
	require.NotNil(t, res.AutoCompact)
	require.NoError(t, res.AutoCompact.Err)
	require.Equal(t, 4, res.AutoCompact.FilesRemoved, "both touched partitions compacted")
	require.Equal(t, map[string]int{"A": 1, "B": 1}, filesPerPartition(t, tb))
	n, _, err := tb.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 200, n)
}

func raceRowsPart(part string, from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, partSchema())
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(part)
	}
	return b.NewRecordBatch()
}

// Issue 24, bug 2: the layout report keys partitions by the log's (physical) partition
// values on a column-mapped table, so it counts each partition apart.
func TestLayoutReportColumnMappedPartitions(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemory()
	tb := columnMappedPartitioned(t, st, nil)
	for i, p := range []string{"A", "B", "C", "A"} {
		rec := raceRowsPart(p, 100*i, 10)
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	rep, err := tb.Layout(ctx, table.LayoutOptions{SkipHistory: true})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Files)
	require.Equal(t, 3, rep.Partitions, "three partitions (A, B, C)")
	require.Equal(t, 4, rep.SmallFiles)
	parts := slices.Sorted(func(yield func(string) bool) {
		for k := range filesPerPartition(t, tb) {
			if !yield(k) {
				return
			}
		}
	})
	require.Equal(t, []string{"A", "B", "C"}, parts)
}

// T1 with the layout changing under a writer: a write (or a DML command) that
// planned and wrote its files on one version, while another writer's ALTER
// changes the schema or turns column mapping on, commits nothing, deletes its
// files, and says what changed.
func TestLayoutChangeUnderWriterFailsCleanly(t *testing.T) {
	ctx := context.Background()
	alters := []struct {
		name  string
		props map[string]string // of the table
		alter table.AlterOptions
		want  string // in the error
	}{
		{"add column", nil, table.AlterOptions{AddColumns: []table.NewColumn{mustColumn(t, "extra bigint")}}, `column "extra": added`},
		{"add column, mapped", map[string]string{log.PropColumnMappingMode: "name"},
			table.AlterOptions{AddColumns: []table.NewColumn{mustColumn(t, "extra string")}}, `column "extra": added`},
		{"enable column mapping", nil, table.AlterOptions{SetProperties: map[string]string{log.PropColumnMappingMode: "name"}}, "column mapping mode none, now name"},
	}
	for _, op := range []string{"append", "delete"} {
		for _, tc := range alters {
			t.Run(op+"/"+tc.name, func(t *testing.T) {
				mem := storage.NewMemory()
				ip := &interposer{Storage: mem}
				tb, err := table.Create(ctx, ip, partSchema(), table.CreateOptions{PartitionColumns: []string{"p"}, Properties: tc.props})
				require.NoError(t, err)
				rec := raceRowsPart("A", 0, 100)
				defer rec.Release()
				_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				require.NoError(t, err)
				other, err := table.Open(ctx, mem)
				require.NoError(t, err)
				ip.hook = func() {
					_, err := other.Alter(ctx, tc.alter)
					require.NoError(t, err)
				}
				ip.armed = true
				switch op {
				case "append":
					more := raceRowsPart("B", 100, 50)
					defer more.Release()
					_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{more}, table.WriteOptions{})
				case "delete":
					// Copy-on-write: the command writes the surviving rows anew.
					_, err = tb.Delete(ctx, "id < 10", table.DMLOptions{RewriteFiles: true, ConflictRetries: -1})
				}
				require.ErrorIs(t, err, table.ErrLayoutChanged)
				require.True(t, errors.Is(err, log.ErrMetadataChanged) || errors.Is(err, log.ErrProtocolChanged), "the log's conflict: %v", err)
				require.Contains(t, err.Error(), tc.want)
				snap, err := tb.Snapshot(ctx, table.Latest())
				require.NoError(t, err)
				require.EqualValues(t, 2, snap.Version(), "the ALTER committed, the %s did not", op)
				n, _, err := tb.Count(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 100, n)
				noOrphans(t, tb, mem)
			})
		}
	}
}

func mustColumn(t *testing.T, def string) table.NewColumn {
	t.Helper()
	c, err := table.ParseColumn(def)
	require.NoError(t, err)
	return c
}
