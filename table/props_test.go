package table_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

var propsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// incompressibleBatch holds n rows of random values, so that file sizes follow the
// row count.
func incompressibleBatch(mem memory.Allocator, seed uint64, n int) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := array.NewRecordBuilder(mem, propsSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(rng.Uint64()))
		b.Field(1).(*array.Float64Builder).Append(rng.Float64())
		b.Field(2).(*array.StringBuilder).Append(uuid.NewString())
	}
	return b.NewRecordBatch()
}

// TestTargetFileSizeAnySpellingWritesTheSameFiles is the confirmed bug of issue
// #11: delta.TargetFileSize=1mb passed Create and was then ignored by Write (one
// file instead of four). Any spelling is now stored canonically and honoured.
func TestTargetFileSizeAnySpellingWritesTheSameFiles(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := incompressibleBatch(mem, 1, 120_000) // about 6 MiB of Parquet
	defer rec.Release()
	files := func(props map[string]string) []int64 {
		st := storage.NewMemory()
		tb, err := table.Create(ctx, st, propsSchema, table.CreateOptions{Properties: props})
		require.NoError(t, err)
		_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{Parallelism: 1, Allocator: mem})
		require.NoError(t, err)
		snap, err := tb.Snapshot(ctx, table.Latest())
		require.NoError(t, err)
		if props != nil {
			require.Equal(t, map[string]string{"delta.targetFileSize": "1048576"}, snap.Configuration(), "stored under the canonical key, in bytes")
		}
		var sizes []int64
		for _, a := range snap.Log().Files() {
			sizes = append(sizes, a.Size)
		}
		slices.Sort(sizes)
		return sizes
	}
	canonical := files(map[string]string{"delta.targetFileSize": "1mb"})
	require.GreaterOrEqual(t, len(canonical), 4, "1 MiB target on about 6 MiB of data")
	for _, key := range []string{"delta.TargetFileSize", "DELTA.TARGETFILESIZE"} {
		require.Equal(t, len(canonical), len(files(map[string]string{key: "1mb"})), "spelling %s", key)
	}
	require.Len(t, files(nil), 1, "without the property one 128 MiB file takes everything")
}

// TestAppendOnlyHonouredByTableAndLog checks that the table (overwrite) and the log
// (removes with dataChange) agree on whether a table is append-only, whatever
// spelling created it.
func TestAppendOnlyHonouredByTableAndLog(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := incompressibleBatch(mem, 2, 100)
	defer rec.Release()
	check := func(t *testing.T, tb *table.Table, appendOnly bool) {
		t.Helper()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{Allocator: mem})
		require.NoError(t, err)
		_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{Overwrite: true, Allocator: mem})
		require.Equal(t, appendOnly, errors.Is(err, table.ErrInvalidArgument), "table overwrite: %v", err)
		snap, err := tb.Log().Snapshot(ctx, -1)
		require.NoError(t, err)
		txn := snap.NewTransaction(log.TxnOptions{})
		txn.Remove(&log.Remove{Path: snap.Files()[0].Path, DataChange: true})
		_, err = txn.Commit(ctx, log.CommitInfo{Operation: "DELETE"})
		require.Equal(t, appendOnly, errors.Is(err, log.ErrInvalidTransaction), "log remove: %v", err)
	}
	for _, key := range []string{"delta.appendOnly", "DELTA.APPENDONLY", "delta.appendonly"} {
		t.Run("created with "+key, func(t *testing.T) {
			tb, err := table.Create(ctx, storage.NewMemory(), propsSchema, table.CreateOptions{Properties: map[string]string{key: "True"}})
			require.NoError(t, err)
			check(t, tb, true)
		})
	}
	t.Run("a non-canonical key written by another tool means neither", func(t *testing.T) {
		st := storage.NewMemory()
		ds, err := log.FromArrow(propsSchema)
		require.NoError(t, err)
		md := log.Metadata{ID: uuid.NewString(), SchemaString: ds.JSON(), Configuration: map[string]string{"delta.appendonly": "true"}}
		_, err = log.New(st).Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, log.CommitInfo{})
		require.NoError(t, err)
		tb, err := table.Open(ctx, st)
		require.NoError(t, err)
		check(t, tb, false)
		d, err := tb.Describe(ctx, table.Latest())
		require.NoError(t, err)
		require.Len(t, d.PropertyNotes, 1)
		require.Contains(t, d.PropertyNotes[0], "canonical spelling is delta.appendOnly")
	})
}

// TestCreateValidatesPropertiesBeforeWriting is issue #10 item 6: invalid
// properties are refused before anything is committed, and CreateURL leaves no
// directory behind.
func TestCreateValidatesPropertiesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		props map[string]string
		want  error
		msg   string
	}{
		{map[string]string{"delta.dataSkippingStatsColumns": "nosuch"}, log.ErrInvalidProperty, `"nosuch" does not exist`},
		{map[string]string{"delta.deletedFileRetentionDuration": "garbage"}, log.ErrInvalidProperty, "calendar interval"},
		{map[string]string{"delta.targetFileSizes": "1mb"}, log.ErrUnknownProperty, "delta.targetFileSizes"},
		{map[string]string{"skiplake.bloomFilter.columns": "nope"}, log.ErrInvalidProperty, `"nope"`},
	}
	for _, c := range cases {
		st := storage.NewMemory()
		_, err := table.Create(ctx, st, propsSchema, table.CreateOptions{Properties: c.props})
		require.ErrorIs(t, err, table.ErrInvalidArgument)
		require.ErrorIs(t, err, c.want)
		require.Contains(t, err.Error(), c.msg)
		objs, err := st.List(ctx, "", "")
		require.NoError(t, err)
		require.Empty(t, objs, "%v wrote %v", c.props, objs)

		dir := filepath.Join(t.TempDir(), "t")
		_, err = table.CreateURL(ctx, dir, propsSchema, table.CreateOptions{Properties: c.props})
		require.ErrorIs(t, err, c.want)
		_, statErr := os.Stat(dir)
		require.True(t, os.IsNotExist(statErr), "CreateURL left %s behind", dir)
	}
}

func TestCreateWithFeatureProperties(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), propsSchema, table.CreateOptions{Properties: map[string]string{
		"delta.enableDeletionVectors": "TRUE", "delta.feature.vacuumProtocolCheck": "supported", "owner": "team"}})
	require.NoError(t, err)
	d, err := tb.Describe(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, 3, d.MinReaderVersion)
	require.Equal(t, 7, d.MinWriterVersion)
	require.ElementsMatch(t, []string{"deletionVectors", "vacuumProtocolCheck"}, d.ReaderFeatures)
	require.ElementsMatch(t, []string{"deletionVectors", "vacuumProtocolCheck"}, d.WriterFeatures)
	require.Equal(t, map[string]string{"delta.enableDeletionVectors": "true", "owner": "team"}, d.Properties)
	var dv log.Setting
	for _, s := range d.Settings {
		if s.Key == "delta.enableDeletionVectors" {
			dv = s
		}
	}
	require.Equal(t, log.Setting{Key: "delta.enableDeletionVectors", Value: "true"}, dv)
	require.True(t, strings.HasPrefix(d.Settings[0].Key, "delta."), "settings are sorted by key")
}
