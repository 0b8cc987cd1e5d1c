package table_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/render"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// parquetFile reads a whole Parquet file with plain pqarrow: its Arrow schema and its
// rows in file order (render's JSON form of every cell).
func parquetFile(t *testing.T, data []byte) (*arrow.Schema, []string) {
	t.Helper()
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 999}, memory.DefaultAllocator)
	require.NoError(t, err)
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	require.NoError(t, err)
	defer rr.Release()
	var rows []string
	for rr.Next() {
		rows = append(rows, orderedRows(rr.RecordBatch())...)
	}
	require.NoError(t, rr.Err())
	return rr.Schema(), rows
}

// orderedRows renders rec's rows in order.
func orderedRows(rec arrow.RecordBatch) []string {
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		var cells []string
		for c := 0; c < int(rec.NumCols()); c++ {
			cells = append(cells, fmt.Sprint(render.JSONValue(rec.Column(c), i)))
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out
}

// reencode writes the scan's rows as the CLI's re-encoding export does (render's
// parquet format: datafile's Writer with default options) and returns the file.
func reencode(t *testing.T, sc *table.Scan) []byte {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	w, err := datafile.NewWriter(&buf, sc.Schema(), datafile.WriterOptions{})
	require.NoError(t, err)
	rd, err := sc.Read(ctx)
	require.NoError(t, err)
	defer rd.Release()
	for rd.Next() {
		require.NoError(t, w.Write(rd.RecordBatch()))
	}
	require.NoError(t, rd.Err())
	_, err = w.Close()
	require.NoError(t, err)
	return buf.Bytes()
}

// copyExport runs CopyParquet on a scan of tb with opts.
func copyExport(t *testing.T, tb *table.Table, opts ...table.ScanOption) (*table.Scan, string, []byte) {
	t.Helper()
	ctx := context.Background()
	sc, err := tb.Scan(ctx, opts...)
	require.NoError(t, err)
	var buf bytes.Buffer
	reason, err := sc.CopyParquet(ctx, &buf)
	require.NoError(t, err)
	if reason != "" {
		require.Zero(t, buf.Len(), "wrote %d bytes, then gave up (%s)", buf.Len(), reason)
	}
	return sc, reason, buf.Bytes()
}

// tableRowGroups counts the row groups of the scan's files.
func tableRowGroups(t *testing.T, store storage.Storage, sc *table.Scan) int {
	t.Helper()
	n := 0
	for _, f := range sc.Files() {
		data, err := store.Get(context.Background(), f.Path)
		require.NoError(t, err)
		r, err := datafile.Open(bytes.NewReader(data), int64(len(data)), datafile.ReadOptions{})
		require.NoError(t, err)
		n += r.NumRowGroups()
		r.Close()
	}
	return n
}

// Differential: on random tables (every Delta type, nested ones, nulls, several
// files, Bloom columns, column mapping, a codec of the table's), the copied export
// and the re-encoded one read back (plain pqarrow) with the same schema and the same
// rows in the same order, which are the table's; the copy has the table's row
// groups, its Bloom filters and codec, and a footer whose every chunk reads back.
func TestScanCopyParquetMatchesReencode(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(6) {
		props := map[string]string{}
		if seed%2 == 1 {
			props[log.PropBloomFilterColumns] = "id,s"
		}
		if seed%3 == 2 {
			props["delta.columnMapping.mode"] = "name"
		}
		if seed == 4 {
			props["delta.parquet.compression.codec"] = "snappy"
		}
		t.Run(fmt.Sprintf("seed %d %v", seed, props), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 27))
			store := storage.NewMemory()
			tb, err := table.Create(ctx, store, allTypes, table.CreateOptions{Properties: props})
			require.NoError(t, err)
			var want []string
			next := int64(0)
			for range 2 + rng.IntN(3) {
				n := 300 + rng.IntN(2500)
				rec := randomBatch(rng, next, n)
				next += int64(n)
				want = append(want, orderedRows(rec)...)
				_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				rec.Release()
				require.NoError(t, err)
			}
			sc, reason, data := copyExport(t, tb, table.WithCopyRowGroupMin(1, 1))
			require.Empty(t, reason)
			gotSchema, got := parquetFile(t, data)
			wantSchema, reRows := parquetFile(t, reencode(t, sc))
			require.True(t, wantSchema.Equal(gotSchema), "schema\n%s\nre-encoded\n%s", gotSchema, wantSchema)
			require.Equal(t, wantSchema.Metadata(), gotSchema.Metadata())
			require.Equal(t, reRows, got)
			sort.Strings(want)
			require.Equal(t, want, sorted(got), "the table's rows")

			r, err := datafile.Open(bytes.NewReader(data), int64(len(data)), datafile.ReadOptions{Name: "export"})
			require.NoError(t, err, "footer validation")
			defer r.Close()
			require.Equal(t, tableRowGroups(t, store, sc), r.NumRowGroups())
			md := r.Metadata()
			for rg := range md.NumRowGroups() {
				for c := range md.Schema.NumColumns() {
					cc, err := md.RowGroup(rg).ColumnChunk(c)
					require.NoError(t, err)
					if seed == 4 {
						require.Equal(t, "SNAPPY", cc.Compression().String())
					} else {
						require.Equal(t, "ZSTD", cc.Compression().String())
					}
					name := md.Schema.Column(c).ColumnPath().String()
					if seed%2 == 1 && (name == "id" || name == "s") {
						require.Positive(t, cc.BloomFilterOffset(), "row group %d %s: no Bloom filter", rg, name)
					}
				}
			}
			// Row ranges through the shifted offset indexes read what a full read does.
			flat := arrow.NewSchema([]arrow.Field{sc.Schema().Field(0), sc.Schema().Field(8)}, nil) // id, s
			for rg := range r.NumRowGroups() {
				var full, part []string
				require.NoError(t, r.Read(ctx, flat, []int{rg}, func(rec arrow.RecordBatch, _ int64) error {
					full = append(full, orderedRows(rec)...)
					return nil
				}))
				lo, hi := int64(len(full)/3), int64(len(full)*2/3+1)
				require.NoError(t, r.ReadRanges(ctx, flat, rg, []datafile.RowRange{{Start: lo, End: hi}}, func(rec arrow.RecordBatch, _ int64) error {
					part = append(part, orderedRows(rec)...)
					return nil
				}))
				require.Equal(t, full[lo:hi], part, "row group %d", rg)
			}
		})
	}
}

// Every condition that rules the copy out gives a reason and writes nothing, and
// the re-encoding path still exports the right rows.
func TestScanCopyParquetFallsBack(t *testing.T) {
	ctx := context.Background()
	write := func(t *testing.T, opts table.CreateOptions, batches int) *table.Table {
		t.Helper()
		tb, err := table.Create(ctx, storage.NewMemory(), allTypes, opts)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range batches {
			rec := randomBatch(rng, int64(i*1000), 1000)
			_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
			rec.Release()
			require.NoError(t, err)
		}
		return tb
	}
	plain := write(t, table.CreateOptions{}, 2)
	names := make([]string, len(allTypes.Fields()))
	for i, f := range allTypes.Fields() {
		names[i] = f.Name
	}
	reordered := append(append([]string(nil), names[1:]...), names[0])
	dv := write(t, table.CreateOptions{Properties: map[string]string{"delta.enableDeletionVectors": "true"}}, 2)
	_, err := dv.Delete(ctx, "id < 500 OR id > 1700", table.DMLOptions{})
	require.NoError(t, err)
	empty, err := table.Create(ctx, storage.NewMemory(), allTypes, table.CreateOptions{})
	require.NoError(t, err)
	partSchema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	parted, err := table.Create(ctx, storage.NewMemory(), partSchema, table.CreateOptions{PartitionColumns: []string{"p"}})
	require.NoError(t, err)
	pb := array.NewRecordBuilder(memory.DefaultAllocator, partSchema)
	for i := range 3000 {
		pb.Field(0).(*array.Int64Builder).Append(int64(i))
		pb.Field(1).(*array.StringBuilder).Append(fmt.Sprint("p", i%3))
	}
	prec := pb.NewRecordBatch()
	pb.Release()
	_, err = parted.WriteBatches(ctx, []arrow.RecordBatch{prec}, table.WriteOptions{})
	prec.Release()
	require.NoError(t, err)
	golden := openGolden(t, filepath.Join(goldenDir(t), "dat", "basic_append"))

	min := table.WithCopyRowGroupMin(1, 1)
	cases := []struct {
		name   string
		tb     *table.Table
		opts   []table.ScanOption
		reason string // a prefix
	}{
		{"filter", plain, []table.ScanOption{min, table.WithFilter("id >= 0")}, "filter"},
		{"limit", plain, []table.ScanOption{min, table.WithLimit(10)}, "limit"},
		{"columns subset", plain, []table.ScanOption{min, table.WithColumns("id", "s")}, "columns"},
		{"columns reordered", plain, []table.ScanOption{min, table.WithColumns(reordered...)}, "columns"},
		{"deletion vector", dv, []table.ScanOption{min}, "deletion vector"},
		{"no files", empty, []table.ScanOption{min}, "no files"},
		{"partition columns", parted, []table.ScanOption{min}, "partition columns"},
		{"small row groups (default rule)", plain, nil, "row-group-size"},
		{"files another writer wrote", golden, []table.ScanOption{min}, "writer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, reason, _ := copyExport(t, tc.tb, tc.opts...)
			require.True(t, strings.HasPrefix(reason, tc.reason), "reason %q", reason)
			// The re-encoded export holds the scan's rows.
			schema, got := parquetFile(t, reencode(t, sc))
			require.Equal(t, len(sc.Schema().Fields()), len(schema.Fields()))
			all, err := sc.ReadAll(ctx)
			require.NoError(t, err)
			defer all.Release()
			tr := arrowTableRows(all)
			require.Equal(t, tr, got)
		})
	}
	// Every column named, in table order, is the whole table: copied.
	_, reason, _ := copyExport(t, plain, min, table.WithColumns(names...))
	require.Empty(t, reason)
}

// arrowTableRows renders an arrow.Table's rows in order.
func arrowTableRows(tb arrow.Table) []string {
	tr := array.NewTableReader(tb, 0)
	defer tr.Release()
	var rows []string
	for tr.Next() {
		rows = append(rows, orderedRows(tr.RecordBatch())...)
	}
	return rows
}

// A cancelled context stops the copy with its error.
func TestScanCopyParquetCancelled(t *testing.T) {
	store := storage.NewMemory()
	tb, err := table.Create(context.Background(), store, allTypes, table.CreateOptions{})
	require.NoError(t, err)
	rec := randomBatch(rand.New(rand.NewPCG(1, 1)), 0, 2000)
	_, err = tb.WriteBatches(context.Background(), []arrow.RecordBatch{rec}, table.WriteOptions{})
	rec.Release()
	require.NoError(t, err)
	sc, err := tb.Scan(context.Background(), table.WithCopyRowGroupMin(1, 1))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = sc.CopyParquet(ctx, &bytes.Buffer{})
	require.ErrorIs(t, err, context.Canceled)
}

func sorted(rows []string) []string {
	out := slices.Clone(rows)
	sort.Strings(out)
	return out
}
