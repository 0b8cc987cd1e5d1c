package table_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// damagedSchema covers the decoders a table file exercises: plain and dictionary
// integers, strings (with a Bloom filter), nullable doubles, a list, a timestamp and a
// decimal.
var damagedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "grp", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

// damagedTable writes a one-file table of rows rows into a memory store and returns the
// store, the data file's path and its bytes.
func damagedTable(t testing.TB, rows int) (*storage.Memory, string, []byte) {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, damagedSchema, table.CreateOptions{
		Properties: map[string]string{"skiplake.bloomFilter.columns": "name"}})
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, damagedSchema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n-%d", i))
		if i%7 == 3 {
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			b.Field(4).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append([]string{"a", "b", "c"}[i%3])
			b.Field(3).(*array.Float64Builder).Append(float64(i) / 4)
			lb := b.Field(4).(*array.ListBuilder)
			lb.Append(true)
			for j := range i % 4 {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + j))
			}
		}
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
		b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i * 13)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)
	objs, err := st.List(ctx, "", "")
	require.NoError(t, err)
	for _, o := range objs {
		if strings.HasSuffix(o.Path, ".parquet") && !strings.HasPrefix(o.Path, "_") {
			data, err := st.Get(ctx, o.Path)
			require.NoError(t, err)
			return st, o.Path, data
		}
	}
	t.Fatal("no data file written")
	return nil, "", nil
}

// scanDamaged runs every read path over the table: a full scan, a page-skipping range
// scan, a Bloom-probing count, a projected scan and Explain. It returns the errors.
func scanDamaged(ctx context.Context, st storage.Storage) []error {
	tb, err := table.Open(ctx, st)
	if err != nil {
		return []error{err}
	}
	var errs []error
	read := func(opts ...table.ScanOption) {
		tbl, err := tb.ReadAll(ctx, opts...)
		if err != nil {
			errs = append(errs, err)
			return
		}
		tbl.Release()
	}
	read()
	read(table.WithFilter("id >= 100 AND id < 150"))
	read(table.WithColumns("amount", "tags"), table.WithFilter("grp = 'b'"))
	if _, _, err := tb.Count(ctx, table.WithFilter("name = 'n-17'")); err != nil {
		errs = append(errs, err)
	}
	sc, err := tb.Scan(ctx, table.WithFilter("id > 10 AND amount < 100"))
	if err == nil {
		_, err = sc.Explain(ctx)
	}
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

// mutate returns a copy of data with a few bytes changed: half of the mutations hit the
// last 1,024 bytes (footer, page index, Bloom filters), the rest anywhere.
func mutate(rng *rand.Rand, data []byte) []byte {
	out := append([]byte(nil), data...)
	for range 1 + rng.IntN(4) {
		var off int
		if rng.IntN(2) == 0 && len(out) > 1024 {
			off = len(out) - 1 - rng.IntN(1024)
		} else {
			off = rng.IntN(len(out))
		}
		switch rng.IntN(3) {
		case 0:
			out[off] = byte(rng.IntN(256))
		case 1:
			out[off] ^= 1 << rng.IntN(8)
		default:
			out[off] = []byte{0, 0x7f, 0x80, 0xff}[rng.IntN(4)]
		}
	}
	return out
}

// TestDamagedDataFileIsAnErrorNotAPanic damages the data file of a table in thousands of
// seeded ways (SKIPLAKE_DAMAGE_ROUNDS, default 2,000; 300 with -short) and runs every read
// path over it: each must return rows or an error that names the file, never panic.
func TestDamagedDataFileIsAnErrorNotAPanic(t *testing.T) {
	rounds := proofEnvInt(t, "SKIPLAKE_DAMAGE_ROUNDS", 2000)
	if testing.Short() {
		rounds = 300
	}
	ctx := context.Background()
	st, path, good := damagedTable(t, 3000)
	rng := rand.New(rand.NewPCG(5, 6))
	panics := map[string]int{}
	for i := range rounds {
		bad := mutate(rng, good)
		require.NoError(t, st.Put(ctx, path, bad))
		func() {
			defer func() {
				if v := recover(); v != nil {
					panics[fmt.Sprint(v)]++
				}
			}()
			for _, err := range scanDamaged(ctx, st) {
				if !strings.Contains(err.Error(), path) {
					t.Errorf("round %d: error does not name %s: %v", i, path, err)
				}
			}
		}()
	}
	for k, v := range panics {
		t.Errorf("%d× panic: %s", v, k)
	}
}

// storeContents returns every object of st: path → bytes.
func storeContents(t *testing.T, st storage.Storage) map[string]string {
	t.Helper()
	ctx := context.Background()
	objs, err := st.List(ctx, "", "")
	require.NoError(t, err)
	out := map[string]string{}
	for _, o := range objs {
		data, err := st.Get(ctx, o.Path)
		require.NoError(t, err)
		out[o.Path] = string(data)
	}
	return out
}

// TestDamagedDataFileCases damages the first of a table's two data files in the ways
// storage and copying damage files (a truncated footer, the wrong magic, a damaged
// page header, damaged compressed page bytes, a damaged footer length) and checks
// that every read path and OPTIMIZE return an error that wraps ErrCorruptData and
// names the file (and, for a damaged page, the row group and column), and that
// nothing on disk changed.
func TestDamagedDataFileCases(t *testing.T) {
	ctx := context.Background()
	st, path, good := damagedTable(t, 3000)
	tb, err := table.Open(ctx, st)
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, damagedSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(7)
	b.Field(1).(*array.StringBuilder).Append("second")
	for i := 2; i < damagedSchema.NumFields(); i++ {
		b.Field(i).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	require.NoError(t, err)

	r, err := datafile.Open(bytes.NewReader(good), int64(len(good)), datafile.ReadOptions{})
	require.NoError(t, err)
	md := r.Metadata()
	require.NoError(t, r.Close())
	nameCol := md.Schema.ColumnIndexByName("name")
	require.GreaterOrEqual(t, nameCol, 0)
	cc, err := md.RowGroup(0).ColumnChunk(nameCol)
	require.NoError(t, err)
	pageAt := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
		pageAt = cc.DictionaryPageOffset()
	}
	chunkLen := cc.TotalCompressedSize()
	require.Greater(t, chunkLen, int64(64))

	set := func(data []byte, at int64, b ...byte) []byte {
		out := append([]byte(nil), data...)
		copy(out[at:], b)
		return out
	}
	footerLen := int64(len(good)) - 8
	cases := []struct {
		name  string
		data  []byte
		where []string // more the error must name
	}{
		{"truncated footer", good[:len(good)-100], nil},
		{"truncated to the header", good[:4], nil},
		{"wrong trailing magic", set(good, int64(len(good))-4, 'P', 'A', 'R', '2'), nil},
		{"footer length past the start", set(good, footerLen, 0xff, 0xff, 0xff, 0x7f), nil},
		{"damaged page header", set(good, pageAt, bytes.Repeat([]byte{0xff}, 16)...), []string{"row group 0", "name"}},
		{"damaged page bytes", set(good, pageAt+chunkLen/2, bytes.Repeat([]byte{0xa5}, 32)...), []string{"row group 0", "name"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, st.Put(ctx, path, c.data))
			before := storeContents(t, st)
			tb, err := table.Open(ctx, st)
			require.NoError(t, err)
			errs := scanDamaged(ctx, st)
			_, oerr := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"id"}, Full: true})
			errs = append(errs, oerr)
			require.NotEmpty(t, errs)
			for i, err := range errs {
				require.Error(t, err, "read path %d", i)
				require.ErrorIs(t, err, table.ErrCorruptData)
				require.Contains(t, err.Error(), path)
			}
			for _, w := range c.where {
				require.Contains(t, errs[0].Error(), w, "full scan error")
			}
			require.Equal(t, before, storeContents(t, st), "the failed reads and OPTIMIZE changed storage (log included)")
		})
	}
}
