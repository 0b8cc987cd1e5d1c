package log

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkDecoded verifies that an array arrow-go decoded from checkpoint Parquet is
// internally consistent before any of its values is read (invariant CK1). arrow-go
// does not validate what its Parquet decoder builds, and from damaged bytes it can
// build a map whose offsets point past its entries or a struct whose children are
// shorter than itself; reading those panics in skiplake's own code. Checked, at every
// nesting level: buffers long enough for offset+length values, offsets that start at
// or above 0, never decrease and end inside the data or child they index, and struct
// children at least as long as the struct. Types checkpoints do not use are refused.
func checkDecoded(a arrow.Array) error {
	return checkData(a.Data(), 0)
}

// maxDecodedDepth bounds the nesting checkData follows (checkpoint types nest a few
// levels: add.stats_parsed.minValues.<struct column>...).
const maxDecodedDepth = 64

func checkData(d arrow.ArrayData, depth int) error {
	if depth > maxDecodedDepth {
		return fmt.Errorf("arrays nested more than %d deep", maxDecodedDepth)
	}
	dt := d.DataType()
	off, n := int64(d.Offset()), int64(d.Len())
	if off < 0 || n < 0 {
		return fmt.Errorf("%s array at offset %d of length %d", dt, off, n)
	}
	end := off + n
	bufs := d.Buffers()
	buf := func(i int) []byte {
		if i < len(bufs) && bufs[i] != nil {
			return bufs[i].Bytes()
		}
		return nil
	}
	bits := func(i int, what string) error {
		if b := buf(i); (b != nil || what == "values") && int64(len(b)) < (end+7)/8 {
			return fmt.Errorf("%s array of %d values: %s bitmap of %d bytes", dt, end, what, len(b))
		}
		return nil
	}
	if dt.ID() == arrow.NULL {
		return nil
	}
	if err := bits(0, "validity"); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	children := d.Children()
	switch dt.ID() {
	case arrow.BOOL:
		return bits(1, "values")
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64,
		arrow.DURATION, arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY:
		width := int64(dt.(arrow.FixedWidthDataType).BitWidth() / 8)
		if got := int64(len(buf(1))); got/width < end {
			return fmt.Errorf("%s array of %d values: %d bytes of values", dt, end, got)
		}
		return nil
	case arrow.STRING, arrow.BINARY:
		return checkOffsets(dt, buf(1), 4, off, n, int64(len(buf(2))))
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return checkOffsets(dt, buf(1), 8, off, n, int64(len(buf(2))))
	case arrow.STRING_VIEW, arrow.BINARY_VIEW:
		return checkViews(dt, buf(1), bufs[min(2, len(bufs)):], off, n)
	case arrow.LIST, arrow.MAP, arrow.LARGE_LIST:
		if len(children) != 1 {
			return fmt.Errorf("%s array with %d children", dt, len(children))
		}
		width := int64(4)
		if dt.ID() == arrow.LARGE_LIST {
			width = 8
		}
		if err := checkOffsets(dt, buf(1), width, off, n, int64(children[0].Len())); err != nil {
			return err
		}
		return checkData(children[0], depth+1)
	case arrow.STRUCT:
		if st := dt.(*arrow.StructType); len(children) != st.NumFields() {
			return fmt.Errorf("%s array with %d children", dt, len(children))
		}
		for _, c := range children {
			if int64(c.Len()) < end {
				return fmt.Errorf("%s array of %d values: a child of %d", dt, end, c.Len())
			}
			if err := checkData(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected %s array", dt)
}

// checkOffsets checks the offsets (width bytes each) of n values from off: present,
// starting at or above 0, never decreasing, ending at most limit.
func checkOffsets(dt arrow.DataType, b []byte, width, off, n, limit int64) error {
	if int64(len(b))/width < off+n+1 {
		return fmt.Errorf("%s array of %d values: offsets of %d bytes", dt, off+n, len(b))
	}
	at := func(i int64) int64 {
		if width == 4 {
			return int64(int32(binary.LittleEndian.Uint32(b[i*4:])))
		}
		return int64(binary.LittleEndian.Uint64(b[i*8:]))
	}
	prev := at(off)
	if prev < 0 {
		return fmt.Errorf("%s array: offset %d at value %d", dt, prev, off)
	}
	for i := off + 1; i <= off+n; i++ {
		v := at(i)
		if v < prev || v > limit {
			return fmt.Errorf("%s array: offset %d at value %d (previous %d, limit %d)", dt, v, i, prev, limit)
		}
		prev = v
	}
	return nil
}

// checkViews checks n string or binary views from off: 16 bytes each, a length of at
// least 0, and, for values longer than the 12 bytes a view holds inline, a data
// buffer and range that exist.
func checkViews(dt arrow.DataType, b []byte, data []*memory.Buffer, off, n int64) error {
	if int64(len(b))/16 < off+n {
		return fmt.Errorf("%s array of %d values: views of %d bytes", dt, off+n, len(b))
	}
	for i := off; i < off+n; i++ {
		v := b[i*16:]
		size := int64(int32(binary.LittleEndian.Uint32(v)))
		if size < 0 {
			return fmt.Errorf("%s array: value %d of %d bytes", dt, i, size)
		}
		if size <= 12 {
			continue
		}
		idx := int64(int32(binary.LittleEndian.Uint32(v[8:])))
		at := int64(int32(binary.LittleEndian.Uint32(v[12:])))
		if idx < 0 || idx >= int64(len(data)) || data[idx] == nil || at < 0 || at > int64(data[idx].Len())-size {
			return fmt.Errorf("%s array: value %d of %d bytes at %d of buffer %d is not in the data", dt, i, size, at, idx)
		}
	}
	return nil
}
