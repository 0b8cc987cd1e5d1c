package gather

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

var allTypes = arrow.NewSchema([]arrow.Field{
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	{Name: "ls", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "allnull", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func batch(mem memory.Allocator, n int, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := array.NewRecordBuilder(mem, allTypes)
	defer b.Release()
	for i := range n {
		null := rng.IntN(6) == 0
		for c, f := range allTypes.Fields() {
			fb := b.Field(c)
			if f.Name == "allnull" || (null && f.Nullable && c%2 == i%2) {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.BooleanBuilder:
				x.Append(rng.IntN(2) == 0)
			case *array.Int8Builder:
				x.Append(int8(rng.Int()))
			case *array.Int16Builder:
				x.Append(int16(rng.Int()))
			case *array.Int32Builder:
				x.Append(rng.Int32())
			case *array.Int64Builder:
				x.Append(rng.Int64())
			case *array.Float32Builder:
				x.Append(rng.Float32())
			case *array.Float64Builder:
				x.Append(rng.NormFloat64())
			case *array.Decimal128Builder:
				x.Append(decimal128.New(rng.Int64(), rng.Uint64()))
			case *array.StringBuilder:
				x.Append(fmt.Sprintf("s%d-%s", rng.IntN(1000), string(make([]byte, rng.IntN(20)))))
			case *array.BinaryBuilder:
				x.Append([]byte{byte(i), byte(rng.Int())})
			case *array.Date32Builder:
				x.Append(arrow.Date32(rng.Int32N(100000)))
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp(rng.Int64()))
			case *array.StructBuilder:
				x.Append(true)
				x.FieldBuilder(0).(*array.Int32Builder).Append(rng.Int32())
			case *array.ListBuilder:
				x.Append(true)
				for range rng.IntN(3) {
					x.ValueBuilder().(*array.Int64Builder).Append(rng.Int64())
				}
			}
		}
	}
	return b.NewRecordBatch()
}

// G1: Take agrees with compute.TakeArray on every type, on sliced input (non-zero
// offsets), with repeated and reversed indices, and with no indices at all.
func TestTakeMatchesCompute(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	full := batch(mem, 3000, 1)
	defer full.Release()
	rng := rand.New(rand.NewPCG(2, 2))
	for _, tc := range []struct {
		name   string
		lo, hi int64
		n      int
	}{{"whole", 0, 3000, 5000}, {"slice", 777, 2500, 1000}, {"empty", 0, 3000, 0}, {"one", 5, 6, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := full.NewSlice(tc.lo, tc.hi)
			defer rec.Release()
			idx := make([]uint32, tc.n)
			for i := range idx {
				idx[i] = uint32(rng.Int64N(tc.hi - tc.lo))
			}
			got, err := Record(ctx, rec, idx, mem)
			require.NoError(t, err)
			defer got.Release()
			ib := array.NewUint32Builder(mem)
			ib.AppendValues(idx, nil)
			ia := ib.NewArray()
			ib.Release()
			defer ia.Release()
			for c := 0; c < int(rec.NumCols()); c++ {
				want, err := compute.TakeArray(compute.WithAllocator(ctx, mem), rec.Column(c), ia)
				require.NoError(t, err)
				require.True(t, array.Equal(want, got.Column(c)), "column %s", rec.ColumnName(c))
				require.Equal(t, want.NullN(), got.Column(c).NullN(), "column %s", rec.ColumnName(c))
				want.Release()
			}
		})
	}
}

func TestTakeRejectsIndicesOutOfRange(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := batch(mem, 10, 3)
	defer rec.Release()
	_, err := Record(context.Background(), rec, []uint32{0, 10}, mem)
	require.ErrorIs(t, err, ErrIndex)
}

func BenchmarkTake(b *testing.B) {
	mem := memory.DefaultAllocator
	rec := batch(mem, 1<<16, 4)
	defer rec.Release()
	rng := rand.New(rand.NewPCG(5, 5))
	idx := make([]uint32, 1<<16)
	for i := range idx {
		idx[i] = uint32(rng.IntN(1 << 16))
	}
	ctx := context.Background()
	for _, col := range []string{"i64", "s", "dec", "b"} {
		arr := rec.Column(rec.Schema().FieldIndices(col)[0])
		b.Run("impl=gather/col="+col, func(b *testing.B) {
			for b.Loop() {
				a, err := Take(ctx, arr, idx, mem)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
			b.ReportMetric(float64(len(idx))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
		})
		b.Run("impl=compute/col="+col, func(b *testing.B) {
			ib := array.NewUint32Builder(mem)
			ib.AppendValues(idx, nil)
			ia := ib.NewArray()
			ib.Release()
			defer ia.Release()
			for b.Loop() {
				a, err := compute.TakeArray(compute.WithAllocator(ctx, mem), arr, ia)
				if err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
			b.ReportMetric(float64(len(idx))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
		})
	}
}

// G1 over chunks: TakeChunks equals Take on the chunks' concatenation, for every
// supported type, with chunks of different lengths (one empty, some sliced, so with
// non-zero offsets; some without nulls) and shifts from the tightest to 32, with
// fewer IDs than groupMinRows (gathered in output order) and more (grouped by chunk).
func TestTakeChunksMatchesConcatenation(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	full := batch(mem, 2000, 7)
	defer full.Release()
	noNulls := batch(mem, 300, 8)
	defer noNulls.Release()
	// Chunks: slices of full (offsets), an empty one, and rows of noNulls whose
	// nullable columns are sliced where this seed drew no NULL in them.
	bounds := [][2]int64{{0, 700}, {700, 700}, {701, 1500}, {1500, 1501}, {1600, 2000}}
	var recs []arrow.RecordBatch
	for _, b := range bounds {
		recs = append(recs, full.NewSlice(b[0], b[1]))
	}
	recs = append(recs, noNulls.NewSlice(0, 1))
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	maxLen := 0
	for _, r := range recs {
		maxLen = max(maxLen, int(r.NumRows()))
	}
	tight := uint(0)
	for 1<<tight < maxLen {
		tight++
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct {
		shift uint
		ids   int
	}{{tight, 1000}, {16, 1000}, {27, 1000}, {tight, 3 * groupMinRows}, {27, 3 * groupMinRows}} {
		shift := tc.shift
		t.Run(fmt.Sprintf("shift=%d/ids=%d", shift, tc.ids), func(t *testing.T) {
			var ids, global []uint32
			var offs []int
			off := 0
			for _, r := range recs {
				offs = append(offs, off)
				off += int(r.NumRows())
			}
			for len(ids) < tc.ids {
				k := rng.IntN(len(recs))
				n := int(recs[k].NumRows())
				if n == 0 {
					continue
				}
				r := rng.IntN(n)
				ids = append(ids, uint32(k)<<shift|uint32(r))
				global = append(global, uint32(offs[k]+r))
			}
			for c, f := range allTypes.Fields() {
				if !ChunkedType(f.Type) {
					continue
				}
				arrs := make([]arrow.Array, len(recs))
				for i, r := range recs {
					arrs[i] = r.Column(c)
				}
				cat, err := array.Concatenate(arrs, mem)
				require.NoError(t, err)
				want, err := Take(ctx, cat, global, mem)
				require.NoError(t, err)
				got, err := TakeChunks(ctx, Chunks{Arrays: arrs, Shift: shift}, ids, mem)
				require.NoError(t, err)
				require.True(t, array.Equal(want, got), "column %s", f.Name)
				require.Equal(t, want.NullN(), got.NullN(), "column %s", f.Name)
				// The same IDs grouped once for every column (GroupIDs, TakeGrouped).
				grp, err := GroupIDs(ids, shift, len(arrs))
				require.NoError(t, err)
				again, err := TakeGrouped(ctx, Chunks{Arrays: arrs, Shift: shift}, grp, mem)
				require.NoError(t, err)
				require.True(t, array.Equal(want, again), "column %s, grouped once", f.Name)
				_, err = TakeGrouped(ctx, Chunks{Arrays: arrs[1:], Shift: shift}, grp, mem)
				require.Error(t, err, "other chunks than grouped for")
				want.Release()
				got.Release()
				again.Release()
				cat.Release()
			}
		})
	}
	t.Run("shift=32/one chunk", func(t *testing.T) {
		idx := []uint32{5, 0, 1999, 5}
		for c := range allTypes.Fields() {
			if !ChunkedType(allTypes.Field(c).Type) {
				continue
			}
			want, err := Take(ctx, full.Column(c), idx, mem)
			require.NoError(t, err)
			got, err := TakeChunks(ctx, Chunks{Arrays: []arrow.Array{full.Column(c)}, Shift: 32}, idx, mem)
			require.NoError(t, err)
			require.True(t, array.Equal(want, got))
			want.Release()
			got.Release()
		}
	})
}

// TakeChunks refuses IDs outside the chunks (a row past a chunk's end, a chunk
// past the last), chunks longer than the shift allows, and unsupported types.
func TestTakeChunksRejectsBadInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	rec := batch(mem, 10, 3)
	defer rec.Release()
	s := rec.Column(allTypes.FieldIndices("s")[0])
	two := Chunks{Arrays: []arrow.Array{s, s}, Shift: 4}
	for _, id := range []uint32{10, 1<<4 | 10, 2 << 4, 15} {
		_, err := TakeChunks(ctx, two, []uint32{0, id}, mem)
		require.ErrorIs(t, err, ErrIndex, "id %d", id)
	}
	_, err := GroupIDs([]uint32{0, 2 << 4}, 4, 2)
	require.ErrorIs(t, err, ErrIndex)
	grp, err := GroupIDs([]uint32{0, 1<<4 | 10}, 4, 2) // row 10 of a 10-row chunk
	require.NoError(t, err)
	_, err = TakeGrouped(ctx, two, grp, mem)
	require.ErrorIs(t, err, ErrIndex)
	_, err = TakeChunks(ctx, Chunks{Arrays: []arrow.Array{s, s}, Shift: 3}, []uint32{0}, mem)
	require.ErrorContains(t, err, "more than 1<<3")
	ls := rec.Column(allTypes.FieldIndices("ls")[0])
	_, err = TakeChunks(ctx, Chunks{Arrays: []arrow.Array{ls, ls}, Shift: 4}, []uint32{0}, mem)
	require.ErrorContains(t, err, "not supported")
	i64 := rec.Column(allTypes.FieldIndices("i64")[0])
	_, err = TakeChunks(ctx, Chunks{Arrays: []arrow.Array{s, i64}, Shift: 4}, []uint32{0}, mem)
	require.ErrorContains(t, err, "chunks of types")
}

// TakeChunks copies values of every length, short ones (copied as one block) and
// long ones, including values that end their chunk's data (no block fits after them).
func TestTakeChunksValuesOfEveryLength(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var arrs []arrow.Array
	var want []string
	for c := range 3 {
		b := array.NewStringBuilder(mem)
		for n := range 100 {
			v := strings.Repeat(string(rune('a'+c)), (n*7+c)%90)
			b.Append(v)
			want = append(want, v)
		}
		arrs = append(arrs, b.NewArray())
		b.Release()
	}
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	// In reverse (gathered in output order), and shuffled many times over (more IDs
	// than groupMinRows: grouped by chunk, values written out of output order).
	rng := rand.New(rand.NewPCG(3, 4))
	for _, rounds := range []int{1, 2*groupMinRows/len(want) + 1} {
		var ids []uint32
		var exp []string
		for r := range rounds {
			order := make([]int, len(want))
			for i := range order {
				order[i] = len(want) - 1 - i
			}
			if r > 0 {
				rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			}
			for _, i := range order {
				ids = append(ids, uint32(i/100)<<7|uint32(i%100))
				exp = append(exp, want[i])
			}
		}
		got, err := TakeChunks(context.Background(), Chunks{Arrays: arrs, Shift: 7}, ids, mem)
		require.NoError(t, err)
		s := got.(*array.String)
		for i := range exp {
			require.Equal(t, exp[i], s.Value(i), "%d IDs: row %d", len(ids), i)
		}
		require.Len(t, s.ValueBytes(), len(strings.Join(exp, "")))
		got.Release()
	}
}
