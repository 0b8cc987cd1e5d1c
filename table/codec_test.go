package table_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// openParquet opens the Parquet file at path in st; the caller closes it.
func openParquet(t *testing.T, st storage.Storage, path string) *file.Reader {
	t.Helper()
	f, err := st.Open(context.Background(), path)
	require.NoError(t, err)
	raw, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	f.Close()
	require.NoError(t, err)
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	require.NoError(t, err)
	return pr
}

// fileCodecs returns the compression codec of every column chunk of every live data
// file of tb.
func fileCodecs(t *testing.T, tb *table.Table) map[compress.Compression]int {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	out := map[compress.Compression]int{}
	for _, a := range snap.Log().Files() {
		p, err := a.DecodedPath()
		require.NoError(t, err)
		pr := openParquet(t, tb.Storage(), p)
		md := pr.MetaData()
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			for c := 0; c < md.RowGroup(rg).NumColumns(); c++ {
				cc, err := md.RowGroup(rg).ColumnChunk(c)
				require.NoError(t, err)
				out[cc.Compression()]++
			}
		}
		pr.Close()
	}
	return out
}

// delta.parquet.compression.codec chooses the codec of the data files that writes
// and OPTIMIZE produce; unset, skiplake's default (zstd) applies.
func TestParquetCompressionCodecProperty(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		prop string
		want compress.Compression
	}{
		{"", compress.Codecs.Zstd},
		{"snappy", compress.Codecs.Snappy},
		{"GZIP", compress.Codecs.Gzip},
		{"none", compress.Codecs.Uncompressed},
		{"lz4", compress.Codecs.Lz4Raw},
		{"brotli", compress.Codecs.Brotli},
	}
	for _, c := range cases {
		t.Run("codec="+c.prop, func(t *testing.T) {
			var props map[string]string
			if c.prop != "" {
				props = map[string]string{"delta.parquet.compression.codec": c.prop}
			}
			tb, err := table.Create(ctx, storage.NewMemory(), simpleSchema(), table.CreateOptions{Properties: props})
			require.NoError(t, err)
			for i := range 3 {
				rec := simpleBatch(simpleSchema(), []int64{int64(i), int64(i + 10)}, []string{"a", "<null>"})
				_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				rec.Release()
				require.NoError(t, err)
			}
			got := fileCodecs(t, tb)
			require.Len(t, got, 1, "every column chunk of a write uses the table's codec: %v", got)
			require.Contains(t, got, c.want)

			_, err = tb.Optimize(ctx, table.OptimizeOptions{})
			require.NoError(t, err)
			got = fileCodecs(t, tb)
			require.Equal(t, map[compress.Compression]int{c.want: 2}, got, "OPTIMIZE's one output file uses the table's codec")
			require.EqualValues(t, 6, countRows(t, tb))
		})
	}
}
