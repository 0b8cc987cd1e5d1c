package dml

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/tableview"
)

// sourceRow is one row of the test source: an id (kept as the row's identity), a
// key that may be NULL, and a payload.
type sourceRow struct {
	id   int64
	key  *int32
	name string
}

var srcSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "K", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String},
}, nil)

// tableSchema is the table merged into: its key column is a bigint named k.
var tableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func keysOnly(*arrow.Schema) (*arrow.Schema, bool, error) { return tableSchema, false, nil }

func sourceReader(t *testing.T, mem memory.Allocator, rows []sourceRow, batch int) array.RecordReader {
	t.Helper()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(rows) || lo == 0; lo += batch {
		hi := min(lo+batch, len(rows))
		b := array.NewRecordBuilder(mem, srcSchema)
		for _, r := range rows[lo:hi] {
			b.Field(0).(*array.Int64Builder).Append(r.id)
			if r.key == nil {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Int32Builder).Append(*r.key)
			}
			b.Field(2).(*array.StringBuilder).Append(r.name)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
		if hi == len(rows) {
			break
		}
	}
	rdr, err := array.NewRecordReader(srcSchema, recs)
	require.NoError(t, err)
	for _, r := range recs {
		r.Release()
	}
	return rdr
}

// TestSourcePassesPartitionKeys checks ReadSource and Passes against the input as an
// oracle, in memory and spilled (budgets from everything-fits to a few rows per
// unit): every row comes back exactly once with its key converted to the table's
// type, and every key — NULL-free keys of the source and keys it lacks alike —
// belongs to exactly one unit of all the passes, the unit holding its rows.
func TestSourcePassesPartitionKeys(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []int64{DefaultSourceMemory, 64 << 10, 8 << 10, 2 << 10} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewPCG(uint64(budget), 7))
			var rows []sourceRow
			for i := range 3000 {
				r := sourceRow{id: int64(i), name: fmt.Sprintf("n%d", rng.IntN(50))}
				if rng.IntN(20) > 0 {
					k := int32(rng.IntN(400) - 200)
					r.key = &k
				}
				rows = append(rows, r)
			}
			spill := t.TempDir()
			rdr := sourceReader(t, mem, rows, 97)
			defer rdr.Release()
			src, err := ReadSource(ctx, rdr, []string{"k"}, keysOnly, budget, spill, mem)
			require.NoError(t, err)
			defer src.Release()
			require.EqualValues(t, len(rows), src.Rows())
			require.Equal(t, []int{1}, src.KeyIndices())
			require.True(t, arrow.TypeEqual(arrow.PrimitiveTypes.Int64, src.Schema().Field(1).Type), "the key is converted to the table's type")
			require.True(t, arrow.TypeEqual(arrow.PrimitiveTypes.Int32, srcSchema.Field(1).Type))

			passes, err := src.Passes(ctx)
			require.NoError(t, err)
			if budget == DefaultSourceMemory {
				require.Len(t, passes, 1, "a source within the budget is merged in one pass")
			} else if budget <= 8<<10 {
				require.Greater(t, len(passes), 1, "a source over the budget is merged in several passes")
			}
			var units []*Unit
			for _, p := range passes {
				units = append(units, p...)
			}
			seen := map[int64]bool{}
			var buf []byte
			for ui, u := range units {
				require.NoError(t, src.Load(ctx, u, func(rec arrow.RecordBatch) error {
					ids := rec.Column(0).(*array.Int64)
					keys := rec.Column(1).(*array.Int64)
					enc := src.KeysOf(rec)
					for i := 0; i < int(rec.NumRows()); i++ {
						id := ids.Value(i)
						require.False(t, seen[id], "row %d loaded twice", id)
						seen[id] = true
						want := rows[id]
						if want.key == nil {
							require.True(t, keys.IsNull(i))
						} else {
							require.EqualValues(t, *want.key, keys.Value(i))
						}
						var ok bool
						buf, ok = enc.Encode(buf[:0], i)
						require.Equal(t, want.key != nil, ok, "a NULL key encodes to nothing")
						if ok {
							require.True(t, u.Member(buf), "row %d is in unit %d, which does not own its key", id, ui)
						}
					}
					return nil
				}))
			}
			require.Len(t, seen, len(rows))
			if budget == 2<<10 {
				split := false
				for _, u := range units {
					split = split || len(u.cons) > 1
				}
				require.True(t, split, "a spilled unit over the budget is split again")
			}
			for k := int64(-300); k < 300; k++ {
				arr := int64Array(mem, k)
				key, ok := NewKeyEncoder([]arrow.Array{arr}).Encode(nil, 0)
				arr.Release()
				require.True(t, ok)
				owners := 0
				for _, u := range units {
					if u.Member(key) {
						owners++
					}
				}
				require.Equal(t, 1, owners, "key %d", k)
			}
			src.Release()
			left, err := os.ReadDir(spill)
			require.NoError(t, err)
			require.Empty(t, left, "Release deletes the spill files")
		})
	}
}

func int64Array(mem memory.Allocator, v int64) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Append(v)
	return b.NewArray()
}

func TestKeyEncoderEqualityIsSQLs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	fb := array.NewFloat64Builder(mem)
	fb.AppendValues([]float64{0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7ff8000000000abc), 1.5, 2.5}, nil)
	fb.AppendNull()
	floats := fb.NewArray()
	fb.Release()
	defer floats.Release()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "a", "x", "x", "ab", "a"}, nil)
	sb.Append("z")
	strs := sb.NewArray()
	sb.Release()
	defer strs.Release()

	enc := NewKeyEncoder([]arrow.Array{floats, strs})
	keys := make([]string, 7)
	for i := range keys {
		b, ok := enc.Encode(nil, i)
		require.Equal(t, i != 6, ok, "row %d", i)
		keys[i] = string(b)
	}
	require.Equal(t, keys[0], keys[1], "-0.0 = 0.0")
	require.Equal(t, keys[2], keys[3], "every NaN is one value")
	require.NotEqual(t, keys[0], keys[2])
	require.NotEqual(t, keys[4], keys[5], "(1.5, ab) and (2.5, a)")
	// A length prefix keeps ("ab", "") apart from ("a", "b").
	twoStr := func(a, b string) string {
		x := array.NewStringBuilder(mem)
		x.Append(a)
		y := array.NewStringBuilder(mem)
		y.Append(b)
		xa, ya := x.NewArray(), y.NewArray()
		x.Release()
		y.Release()
		defer xa.Release()
		defer ya.Release()
		k, _ := NewKeyEncoder([]arrow.Array{xa, ya}).Encode(nil, 0)
		return string(k)
	}
	require.NotEqual(t, twoStr("ab", ""), twoStr("a", "b"))
}

func TestCheckKeyType(t *testing.T) {
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, &arrow.Decimal128Type{Precision: 10, Scale: 2}} {
		require.NoError(t, CheckKeyType("k", typ), "%s", typ)
	}
	err := CheckKeyType("tags", arrow.ListOf(arrow.BinaryTypes.String))
	require.ErrorIs(t, err, tableview.ErrInvalidArgument)
	require.ErrorContains(t, err, `MERGE key column "tags"`)
}

// A source value that does not fit the table's key type is an error naming the
// column and the value's row in the whole source, and nothing is kept.
func TestReadSourceRefusesValuesThatDoNotFit(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	narrow := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int8, Nullable: true}}, nil)
	plan := func(*arrow.Schema) (*arrow.Schema, bool, error) { return narrow, false, nil }
	var rows []sourceRow
	for i := range 300 {
		k := int32(i)
		rows = append(rows, sourceRow{id: int64(i), key: &k})
	}
	rdr := sourceReader(t, mem, rows, 50)
	defer rdr.Release()
	_, err := ReadSource(ctx, rdr, []string{"K"}, plan, DefaultSourceMemory, t.TempDir(), mem)
	var ce *conform.CastError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.ErrorIs(t, err, conform.ErrValueDoesNotFit)
	require.EqualValues(t, 128, ce.Row, "the first value over 127, counted over every batch")

	rdr2 := sourceReader(t, mem, rows[:3], 50)
	defer rdr2.Release()
	_, err = ReadSource(ctx, rdr2, []string{"nope"}, plan, DefaultSourceMemory, t.TempDir(), mem)
	require.ErrorIs(t, err, conform.ErrSchemaMismatch)
	require.ErrorContains(t, err, "source columns: id, K, name")
}

func TestTakeRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	var rows []sourceRow
	for i := range 10 {
		rows = append(rows, sourceRow{id: int64(i), name: fmt.Sprint(i)})
	}
	rdr := sourceReader(t, mem, rows, 10)
	defer rdr.Release()
	require.True(t, rdr.Next())
	idx := []int32{7, 2, 2, 9}
	got, err := TakeRows(context.Background(), rdr.RecordBatch(), idx, mem)
	require.NoError(t, err)
	defer got.Release()
	ids := got.Column(0).(*array.Int64).Int64Values()
	want := []int64{7, 2, 2, 9}
	require.Equal(t, want, ids)
	require.Equal(t, []string{"7", "2", "2", "9"}, []string{got.Column(2).ValueStr(0), got.Column(2).ValueStr(1), got.Column(2).ValueStr(2), got.Column(2).ValueStr(3)})
}
