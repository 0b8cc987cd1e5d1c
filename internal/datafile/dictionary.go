package datafile

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// dictionarySampleRows is how many rows of the first batch chooseDictionary looks at.
const dictionarySampleRows = 8192

// chooseDictionary decides, for each flat top-level column of rec, whether its row
// groups start dictionary-encoded. arrow-go dictionary-encodes every column and falls
// back to plain only once the dictionary outgrows limit bytes, so a column of mostly
// distinct values (keys, prices, timestamps) pays for hashing every value of a row
// group into a dictionary that is then thrown away — 20% of the CPU of OPTIMIZE on
// lineitem-like data before this choice was made.
//
// From a sample of up to dictionarySampleRows rows spread evenly over rec (every
// k-th row, not the first ones: in a batch sorted on a column, as OPTIMIZE and a
// clustered table's scans produce, the first rows repeat each value a few times and
// would make a column of mostly distinct values look like a dictionary's), the number of distinct values of
// a row group is estimated with Chao1 (d + f1²/(2·f2), where f1 and f2 count the
// values seen once and twice), capped at the row group's expected rows. A column
// starts plain when that estimate is at least half the row group's rows (a dictionary
// then saves little) or its dictionary would exceed limit (arrow-go would give up on
// it anyway). Booleans and columns not in the sample keep arrow-go's default.
//
// rgBytes is the row-group target in compressed bytes; the row group's row count is
// guessed from the sample's Arrow size at a 2:1 compression ratio.
func chooseDictionary(rec arrow.RecordBatch, rgBytes, limit int64, skip map[string]bool) map[string]bool {
	total := int(rec.NumRows())
	n := min(total, dictionarySampleRows)
	if n < 1024 {
		return nil // too few rows to tell
	}
	perRow := float64(RecordBytes(rec)) / float64(rec.NumRows())
	rgRows := float64(rgBytes) / math.Max(perRow/2, 1)
	out := map[string]bool{}
	for i, f := range rec.Schema().Fields() {
		if _, ok := skip[f.Name]; ok {
			continue
		}
		arr := rec.Column(i)
		width, ok := sampleWidth(arr)
		if !ok {
			continue
		}
		counts := make(map[uint64]int32, n)
		nonNull := 0
		var bytes int64
		for i := 0; i < n; i++ {
			r := sampleRow(i, n, total)
			if arr.IsNull(r) {
				continue
			}
			h, size := sampleHash(arr, r)
			counts[h]++
			nonNull++
			bytes += int64(size)
		}
		if nonNull == 0 {
			continue
		}
		var f1, f2 float64
		for _, c := range counts {
			switch c {
			case 1:
				f1++
			case 2:
				f2++
			}
		}
		d := float64(len(counts))
		est := d + f1*f1/(2*math.Max(f2, 1))
		// Scale the estimate to a row group's non-null rows.
		rows := rgRows * float64(nonNull) / float64(n)
		if est > rows {
			est = rows
		}
		if est < d {
			est = d
		}
		avg := float64(width)
		if width == 0 {
			avg = float64(bytes)/float64(nonNull) + 4
		}
		plain := est >= rows/2 || est*avg > float64(limit)
		out[f.Name] = !plain
	}
	return out
}

// sampleRow is the row of a batch of total rows that the i-th of n evenly spread
// samples reads (n <= total).
func sampleRow(i, n, total int) int { return int(int64(i) * int64(total) / int64(n)) }

// sampleWidth reports whether chooseDictionary decides for arr's type and its value
// width in bytes (0: variable).
func sampleWidth(arr arrow.Array) (int, bool) {
	switch arr.DataType().ID() {
	case arrow.INT8, arrow.UINT8:
		return 1, true
	case arrow.INT16, arrow.UINT16:
		return 2, true
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.FLOAT32, arrow.TIME32:
		return 4, true
	case arrow.INT64, arrow.UINT64, arrow.DATE64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.TIME64, arrow.DURATION:
		return 8, true
	case arrow.DECIMAL128:
		return 16, true
	case arrow.FIXED_SIZE_BINARY:
		return arr.DataType().(*arrow.FixedSizeBinaryType).ByteWidth, true
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return 0, true
	}
	return 0, false
}

// sampleHash returns a 64-bit hash of the value at row r and its size in bytes. The
// hash is fixed (FNV-1a), so the choice, and the files, are the same in every run.
func sampleHash(arr arrow.Array, r int) (uint64, int) {
	var buf [16]byte
	switch a := arr.(type) {
	case *array.String:
		s := a.Value(r)
		return fnv1a(s), len(s)
	case *array.LargeString:
		s := a.Value(r)
		return fnv1a(s), len(s)
	case *array.Binary:
		b := a.Value(r)
		return fnv1a(b), len(b)
	case *array.LargeBinary:
		b := a.Value(r)
		return fnv1a(b), len(b)
	case *array.FixedSizeBinary:
		b := a.Value(r)
		return fnv1a(b), len(b)
	case *array.Decimal128:
		v := a.Value(r)
		binary.LittleEndian.PutUint64(buf[:8], v.LowBits())
		binary.LittleEndian.PutUint64(buf[8:], uint64(v.HighBits()))
		return fnv1a(buf[:]), 16
	}
	// Fixed-width primitives: the raw bytes of the value.
	d := arr.Data()
	w := d.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
	raw := d.Buffers()[1].Bytes()[(d.Offset()+r)*w : (d.Offset()+r+1)*w]
	copy(buf[:], raw)
	return binary.LittleEndian.Uint64(buf[:8]), w
}

func fnv1a[T string | []byte](b T) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(b); i++ {
		h ^= uint64(b[i])
		h *= 1099511628211
	}
	return h
}
