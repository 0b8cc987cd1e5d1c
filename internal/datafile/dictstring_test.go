package datafile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// stringDictSchema has the columns the dictionary shortcut sees: low-cardinality
// strings whose later batches bring new values, a nullable one with nulls in some
// batches only, binary values, empty strings only, a mid-cardinality column and a
// high-cardinality one forced into dictionary encoding (which falls back to plain
// within its row groups).
var stringDictSchema = arrow.NewSchema([]arrow.Field{
	{Name: "flag", Type: arrow.BinaryTypes.String},
	{Name: "opt", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary},
	{Name: "empty", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "mid", Type: arrow.BinaryTypes.String},
	{Name: "hi", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func stringDictBatch(mem memory.Allocator, rng *rand.Rand, batch, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, stringDictSchema)
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
	}
	return b.NewRecordBatch()
}

// The dictionary shortcut (stringDict) must leave the file exactly as pqarrow
// writes it: pages, dictionaries, statistics, page index, Bloom filters; and it must
// be taken (else this test would prove nothing).
func TestStringDictShortcutWritesWhatPqarrowWrites(t *testing.T) {
	mem := checkedMem(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []arrow.RecordBatch
	for i, n := range []int{700, 3000, 5000, 1, 4096, 2500, 9000, 1023} {
		recs = append(recs, stringDictBatch(mem, rng, i, n))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, codec := range []Codec{CodecZstd, CodecSnappy, CodecUncompressed} {
		for _, page := range []int64{1 << 10, 64 << 10} {
			for _, bloom := range []bool{false, true} {
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
		w, err := NewWriter(&buf, stringDictSchema, WriterOptions{Allocator: mem, Codec: tc.codec, Dictionary: DictionaryAll, TargetRowGroupBytes: 1 << 30})
		require.NoError(t, err)
		for _, r := range recs {
			require.NoError(t, w.Write(r))
		}
		w.settle()
		enc := w.enc.(*parallelEncoder)
		for i, name := range []string{"flag", "opt", "bin", "mid"} {
			sd := enc.cols[i].strDict
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
