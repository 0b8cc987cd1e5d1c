package datafile

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// dictShortcutSchema has the columns the dictionary shortcut sees: low-cardinality
// strings whose later batches bring new values, a nullable one with nulls in some
// batches only, binary values, empty strings only, a mid-cardinality column and a
// high-cardinality one forced into dictionary encoding (which falls back to plain
// within its row groups).
var dictShortcutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "flag", Type: arrow.BinaryTypes.String},
	{Name: "opt", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary},
	{Name: "empty", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "mid", Type: arrow.BinaryTypes.String},
	{Name: "hi", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "code", Type: arrow.PrimitiveTypes.Int64},
	{Name: "wide", Type: arrow.PrimitiveTypes.Int32},
}, nil)

func dictShortcutBatch(mem memory.Allocator, rng *rand.Rand, batch, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, dictShortcutSchema)
	defer b.Release()
	flags := []string{"A", "N", "R", ""}
	if batch >= 3 {
		flags = append(flags, "Z") // a value new to the dictionary in later batches
	}
	withNulls := batch%2 == 1
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.StringBuilder).Append(flags[rng.IntN(len(flags))])
		if withNulls && rng.IntN(5) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("o%d", rng.IntN(7)))
		}
		b.Field(2).(*array.BinaryBuilder).Append(bytes.Repeat([]byte{byte(rng.IntN(9))}, rng.IntN(40)))
		if withNulls && i%3 == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append("")
		}
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("mid-%d", rng.IntN(3000)))
		b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("hi-%d-%d", batch, rng.Int64()))
		b.Field(6).(*array.Int64Builder).Append(int64(i))
		b.Field(7).(*array.Int32Builder).Append(int32(rng.IntN(5) - 2 + 40*batch%3))
		if withNulls && rng.IntN(9) == 0 {
			b.Field(8).AppendNull()
		} else {
			b.Field(8).(*array.Date32Builder).Append(arrow.Date32(8000 + rng.IntN(300)))
		}
		b.Field(9).(*array.Int64Builder).Append([]int64{math.MinInt64, -1, 0, 7, math.MaxInt64}[rng.IntN(5)])
		b.Field(10).(*array.Int32Builder).Append(rng.Int32())
	}
	return b.NewRecordBatch()
}

// The dictionary shortcut (dictShortcut) must leave the file exactly as pqarrow
// writes it: pages, dictionaries, statistics, page index, Bloom filters; and it must
// be taken (else this test would prove nothing).
func TestDictShortcutWritesWhatPqarrowWrites(t *testing.T) {
	mem := checkedMem(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []arrow.RecordBatch
	for i, n := range []int{700, 3000, 5000, 1, 4096, 2500, 9000, 1023} {
		recs = append(recs, dictShortcutBatch(mem, rng, i, n))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, codec := range []Codec{CodecZstd, CodecSnappy, CodecUncompressed} {
		for _, page := range []int64{1 << 10, 64 << 10} {
			for _, bloom := range []bool{false, true} {
				if raceEnabled && (codec == CodecSnappy || page != 1<<10 || bloom != (codec == CodecZstd)) {
					continue // under -race: small pages, zstd with Bloom filters, uncompressed without
				}
				t.Run(fmt.Sprintf("codec=%s/page=%d/bloom=%v", codec, page, bloom), func(t *testing.T) {
					opts := WriterOptions{Allocator: mem, Codec: codec, TargetRowGroupBytes: 1 << 30, DataPageBytes: page,
						Dictionary: DictionaryAll, Parallelism: 2}
					if bloom {
						opts.Allocator = memory.DefaultAllocator // see TestParallelEncoderWritesWhatPqarrowWrites
						opts.BloomColumns = map[string]int64{"flag": 100, "bin": 0}
					}
					got, res := writeCut(t, opts, recs)
					opts.serial = true
					want, wres := writeCut(t, opts, recs)
					sameFile(t, want, wres, got, res)
				})
			}
		}
	}
	// The shortcut runs on the low-cardinality columns of compressed files, and not
	// on uncompressed ones (arrow-go's cost-based fallback applies there).
	for _, tc := range []struct {
		codec Codec
		taken bool
	}{{CodecZstd, true}, {CodecUncompressed, false}} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, dictShortcutSchema, WriterOptions{Allocator: mem, Codec: tc.codec, Dictionary: DictionaryAll, TargetRowGroupBytes: 1 << 30})
		require.NoError(t, err)
		for _, r := range recs {
			require.NoError(t, w.Write(r))
		}
		w.settle()
		enc := w.enc.(*parallelEncoder)
		for i, name := range []string{"flag", "opt", "bin", "mid", "", "", "", "qty", "day", "code"} {
			if name == "" {
				continue
			}
			sd := enc.cols[i].dict
			if !tc.taken {
				require.Nil(t, sd, name)
				continue
			}
			require.NotNil(t, sd, name)
			require.Positive(t, sd.nFast, "column %s: no run took the shortcut", name)
		}
		_, err = w.Close()
		require.NoError(t, err)
	}
}

// intDict's window and map must find exactly the values added, at their indices,
// whatever the values (extremes, which wrap the window arithmetic, included):
// checked against a plain map.
func TestIntDictFindsWhatWasAdded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 50; round++ {
		d := &intDict[int64]{ids: map[int64]int32{}}
		d.reset()
		want := map[int64]int32{}
		pick := func() int64 {
			switch rng.IntN(4) {
			case 0:
				return []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1, 0, -1}[rng.IntN(6)]
			case 1:
				return rng.Int64()
			default:
				return int64(rng.IntN(2*intWindow)) - intWindow + []int64{0, math.MaxInt64 - intWindow, math.MinInt64 + intWindow}[round%3]
			}
		}
		for i := 0; i < 2000; i++ {
			v := pick()
			if _, ok := want[v]; !ok && rng.IntN(2) == 0 {
				want[v] = int32(len(want))
				d.add(v)
			}
			q := pick()
			id, ok := d.find(q)
			wid, wok := want[q]
			require.Equal(t, wok, ok, "value %d", q)
			if ok {
				require.Equal(t, wid, id, "value %d", q)
			}
		}
		d32 := &intDict[int32]{ids: map[int32]int32{}}
		d32.reset()
		want32 := map[int32]int32{}
		for i := 0; i < 2000; i++ {
			v := int32(pick())
			if _, ok := want32[v]; !ok {
				want32[v] = int32(len(want32))
				d32.add(v)
			}
			q := int32(pick())
			id, ok := d32.find(q)
			wid, wok := want32[q]
			require.Equal(t, wok, ok, "value %d", q)
			if ok {
				require.Equal(t, wid, id)
			}
		}
	}
}

// TestByteDictFindsWhatWasLearned: byteDict (packed short values in shortTable,
// longer ones in a map) finds exactly the values learned, with their indices in
// order of first appearance, against a map as the oracle: values of 0 to 12 bytes
// over an alphabet with zero bytes (so "a" and "a\x00" differ only in length),
// values ending at the end of the value buffer (packed without an 8-byte load), and
// enough of them that the table grows several times.
func TestByteDictFindsWhatWasLearned(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for round := 0; round < 20; round++ {
		d := &byteDict{ids: map[string]int32{}}
		d.reset()
		want := map[string]int32{}
		value := func() []byte {
			v := make([]byte, rng.IntN(13))
			for i := range v {
				v[i] = []byte{0, 1, 'a', 0xff}[rng.IntN(4)]
			}
			return v
		}
		for batch := 0; batch < 10; batch++ {
			b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
			for i := 0; i < 300; i++ {
				b.Append(value())
			}
			arr := b.NewArray()
			b.Release()
			lo, hi := rng.IntN(150), 150+rng.IntN(151)
			// Queries first: every row against the oracle.
			require.True(t, d.load(arr))
			for i := 0; i < arr.Len(); i++ {
				v := arr.(*array.Binary).Value(i)
				id, ok := d.find(i)
				wid, wok := want[string(v)]
				require.Equal(t, wok, ok, "round %d batch %d value %q", round, batch, v)
				if ok {
					require.Equal(t, wid, id, "value %q", v)
				}
			}
			d.learn(arr, lo, hi)
			for i := lo; i < hi; i++ {
				v := string(arr.(*array.Binary).Value(i))
				if _, ok := want[v]; !ok {
					want[v] = int32(len(want))
				}
			}
			require.Equal(t, len(want), d.entries())
			for v, id := range want {
				require.Equal(t, v, string(d.vals[id]))
			}
			arr.Release()
		}
		require.Greater(t, len(d.short.slots), 256, "the table never grew")
	}
	// The last value of a buffer shorter than 8 bytes past its start.
	data := []byte("xyabc")
	require.Equal(t, uint64('a')|uint64('b')<<8|uint64('c')<<16|3<<56, packShort(data, 2, 5))
	require.Equal(t, packShort([]byte("abcdefgh"), 0, 3), packShort(data, 2, 5))
}
