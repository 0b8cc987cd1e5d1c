package datafile

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2440588

// int96Reader decodes a flat INT96 column straight to microseconds. pqarrow decodes INT96
// to nanoseconds, which overflows int64 outside 1677..2262 (Spark writes 0001-01-01 and
// 9999-12-31 happily), so these columns bypass it.
type int96Reader struct {
	cr     *file.Int96ColumnChunkReader
	maxDef int16
	vals   []parquet.Int96
	defs   []int16
}

func newInt96Reader(pr *file.Reader, rg, leaf int) (*int96Reader, error) {
	cc, err := columnChunk(pr, rg, leaf)
	if err != nil {
		return nil, err
	}
	cr, ok := cc.(*file.Int96ColumnChunkReader)
	if !ok {
		return nil, corruptf("row group %d column %d is not INT96", rg, leaf)
	}
	return &int96Reader{cr: cr, maxDef: cc.Descriptor().MaxDefinitionLevel()}, nil
}

// int96Micros converts one INT96 (nanos of day LE uint64, Julian day LE uint32) to
// microseconds since the epoch.
func int96Micros(v parquet.Int96) (int64, error) {
	nanos := binary.LittleEndian.Uint64(v[:8])
	if nanos >= 86400*1_000_000_000 {
		return 0, fmt.Errorf("INT96 nanoseconds of day %d out of range", nanos)
	}
	days := int64(binary.LittleEndian.Uint32(v[8:])) - julianUnixEpoch
	return days*86400_000_000 + int64(nanos/1000), nil
}

// read decodes the next n rows into a timestamp[us, UTC] array.
func (r *int96Reader) read(mem memory.Allocator, n int64) (arrow.Array, error) {
	if int64(cap(r.vals)) < n {
		r.vals = make([]parquet.Int96, n)
		r.defs = make([]int16, n)
	}
	vals, defs := r.vals[:n], r.defs[:n]
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	defer b.Release()
	b.Reserve(int(n))
	for got := int64(0); got < n; {
		var defOut []int16
		if r.maxDef > 0 {
			defOut = defs[got:]
		}
		levels, nvals, err := readInt96(r.cr, n-got, vals, defOut)
		if err != nil {
			return nil, err
		}
		if levels == 0 {
			return nil, fmt.Errorf("INT96 column ended after %d of %d rows", got, n)
		}
		v := 0
		for i := int64(0); i < levels; i++ {
			if r.maxDef > 0 && defs[got+i] < r.maxDef {
				b.AppendNull()
				continue
			}
			if v >= nvals {
				return nil, fmt.Errorf("INT96 column has fewer values than definition levels")
			}
			us, err := int96Micros(vals[v])
			if err != nil {
				return nil, err
			}
			v++
			b.Append(arrow.Timestamp(us))
		}
		got += levels
	}
	return b.NewArray(), nil
}

// seek moves to row (relative to the row group), the decoder call contained (D10).
func (r *int96Reader) seek(row int64) (err error) {
	defer guard.Contain(&err, "INT96 column")
	return r.cr.SeekToRow(row)
}

func (r *int96Reader) close() {
	defer func() { _ = recover() }() // a decoder that panicked may panic again
	_ = r.cr.Close()
}
