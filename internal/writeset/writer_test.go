package writeset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/storage"
)

const schemaJSON = `{"type":"struct","fields":[
 {"name":"k","type":"long","nullable":true,"metadata":{}},
 {"name":"pad","type":"string","nullable":true,"metadata":{}},
 {"name":"p","type":"string","nullable":true,"metadata":{}}]}`

// mappedSchema is schemaJSON under column mapping, with physical names tagged by
// suffix.
func mappedSchema(suffix string) string {
	field := func(name, typ string, id int) string {
		return fmt.Sprintf(`{"name":%q,"type":%q,"nullable":true,"metadata":{"delta.columnMapping.id":%d,"delta.columnMapping.physicalName":"col-%s-%s"}}`,
			name, typ, id, name, suffix)
	}
	return `{"type":"struct","fields":[` + field("k", "long", 1) + "," + field("pad", "string", 2) + "," + field("p", "string", 3) + `]}`
}

func testView(t *testing.T, store storage.Storage, parts []string, conf map[string]string, proto log.Protocol) *tableview.View {
	t.Helper()
	return testViewOf(t, store, schemaJSON, parts, conf, proto)
}

func testViewOf(t *testing.T, store storage.Storage, schema string, parts []string, conf map[string]string, proto log.Protocol) *tableview.View {
	t.Helper()
	md := log.Metadata{ID: "00000000-0000-4000-8000-000000000002", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: strings.Join(strings.Fields(schema), ""), PartitionColumns: parts, Configuration: conf}
	v, err := tableview.New(log.New(store).NewTableSnapshot(md, proto))
	require.NoError(t, err)
	return v
}

// rows returns a reader of batches of (k, pad, p) for the given keys, p = "a" or "b"
// by the key's parity.
func rows(t *testing.T, mem memory.Allocator, v *tableview.View, keys []int64, batch int) array.RecordReader {
	t.Helper()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(keys); lo += batch {
		b := array.NewRecordBuilder(mem, v.Logical())
		for _, k := range keys[lo:min(lo+batch, len(keys))] {
			b.Field(0).(*array.Int64Builder).Append(k)
			// 64 hex digits that do not compress, so files fill up.
			h := uint64(k)*0x9E3779B97F4A7C15 + 1
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%016x%016x%016x%016x", h, h*31, h*131, h*1031))
			b.Field(2).(*array.StringBuilder).Append([]string{"a", "b"}[k&1])
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	rdr, err := array.NewRecordReader(v.Logical(), recs)
	require.NoError(t, err)
	for _, r := range recs {
		r.Release()
	}
	return rdr
}

// readKeys reads the k column of a written file, in file order.
func readKeys(t *testing.T, store storage.Storage, v *tableview.View, a *log.Add) []int64 {
	t.Helper()
	ctx := context.Background()
	p, err := a.DecodedPath()
	require.NoError(t, err)
	f, err := store.Open(ctx, p)
	require.NoError(t, err)
	defer f.Close()
	r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{Name: p})
	require.NoError(t, err)
	defer r.Close()
	var out []int64
	require.NoError(t, r.Read(ctx, v.ReadDataSchema(), nil, func(rec arrow.RecordBatch, _ int64) error {
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		return nil
	}))
	return out
}

// A sorting writer (WS3) writes each partition's rows in sorted runs: every file's
// keys are in order, the files of a partition have disjoint key ranges, and the
// files hold exactly the input's rows, each in its partition's directory (WS2).
func TestWriterSortsPartitionsIntoDisjointRuns(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	store := storage.NewMemory()
	v := testView(t, store, []string{"p"}, map[string]string{}, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2})
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]int64, 6000)
	for i := range keys {
		keys[i] = int64(rng.IntN(1 << 20))
	}
	rdr := rows(t, mem, v, keys, 500)
	defer rdr.Release()
	w, err := New(store, v, Settings{Allocator: mem, TargetFileSize: 64 << 10, SortBy: [][]string{{"k"}}, SortCurve: optimize.CurveLinear})
	require.NoError(t, err)
	adds, n, err := w.Run(ctx, rdr)
	require.NoError(t, err)
	require.EqualValues(t, len(keys), n)
	byPart := map[string][][]int64{}
	var all []int64
	for _, a := range adds {
		part := *a.PartitionValues["p"]
		require.True(t, strings.HasPrefix(a.Path, "p="+part+"/"), a.Path)
		got := readKeys(t, store, v, a)
		require.True(t, sort.SliceIsSorted(got, func(i, j int) bool { return got[i] < got[j] }), "%s is not sorted", a.Path)
		for _, k := range got {
			require.Equal(t, []string{"a", "b"}[k&1], part, "key %d in partition %s", k, part)
		}
		byPart[part] = append(byPart[part], got)
		all = append(all, got...)
	}
	for part, files := range byPart {
		require.Greater(t, len(files), 1, "partition %s fills several files", part)
		sort.Slice(files, func(i, j int) bool { return files[i][0] < files[j][0] })
		for i := 1; i < len(files); i++ {
			require.Less(t, files[i-1][len(files[i-1])-1], files[i][0], "partition %s: files %d and %d overlap", part, i-1, i)
		}
	}
	want := append([]int64(nil), keys...)
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	require.Equal(t, want, all)
	w.Cleanup()
}

// The write rules apply to rows a writer adds and not to rows the table already
// holds (WS1): a row breaking a CHECK constraint fails the write and nothing stays
// after Cleanup; with Unchanged it is written.
func TestWriterChecksRulesUnlessUnchanged(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	store := storage.NewMemory()
	v := testView(t, store, nil, map[string]string{"delta.constraints.positive": "k > 0"},
		log.Protocol{MinReaderVersion: 1, MinWriterVersion: 3})
	for _, unchanged := range []bool{false, true} {
		rdr := rows(t, mem, v, []int64{5, 3, -1, 7}, 2)
		w, err := New(store, v, Settings{Allocator: mem, Unchanged: unchanged})
		require.NoError(t, err)
		adds, n, err := w.Run(ctx, rdr)
		rdr.Release()
		if unchanged {
			require.NoError(t, err)
			require.EqualValues(t, 4, n)
			require.Len(t, adds, 1)
		} else {
			require.Error(t, err)
			require.True(t, errors.Is(err, tableview.ErrConstraintViolation), "%v", err)
			require.ErrorContains(t, err, "positive")
		}
		w.Cleanup()
		objs, err := store.List(ctx, "", "")
		require.NoError(t, err)
		require.Empty(t, objs)
	}
}

// Copy rewrites a file written for one column-mapped layout for another's physical
// names: the rows, partition values included, read back through the new layout are
// the rows written (invariant T1's rewrite for a create-race loser).
func TestWriterCopyAcrossLayouts(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	store := storage.NewMemory()
	conf := map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "3"}
	proto := log.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
	// Column mapping gives each new table physical names of its own.
	from := testViewOf(t, store, mappedSchema("from"), []string{"p"}, conf, proto)
	to := testViewOf(t, store, mappedSchema("to"), []string{"p"}, conf, proto)
	require.NotEqual(t, from.PartitionPhysicalNames(), to.PartitionPhysicalNames())
	rdr := rows(t, mem, from, []int64{1, 2, 3, 4, 5}, 5)
	defer rdr.Release()
	w, err := New(store, from, Settings{Allocator: mem})
	require.NoError(t, err)
	adds, _, err := w.Run(ctx, rdr)
	require.NoError(t, err)
	defer w.Cleanup()
	cw, err := New(store, to, Settings{Allocator: mem})
	require.NoError(t, err)
	defer cw.Cleanup()
	var ferr error
	for _, a := range adds {
		if ferr = cw.Copy(ctx, from, a); ferr != nil {
			break
		}
	}
	copied, n, err := cw.Finish(ctx, ferr)
	require.NoError(t, err)
	require.Zero(t, n, "copied rows were counted when they were first written")
	require.NoError(t, tableview.VerifyFiles(ctx, store, to, copied))
	var got []string
	for _, a := range copied {
		part := a.PartitionValues[to.PartitionPhysicalNames()[0]]
		require.NotNil(t, part)
		for _, k := range readKeys(t, store, to, a) {
			got = append(got, fmt.Sprintf("%d/%s", k, *part))
		}
	}
	sort.Strings(got)
	require.Equal(t, []string{"1/b", "2/a", "3/b", "4/a", "5/b"}, got)
}
