package datafile

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Bloom filter sizing bounds (see "Bloom filter sizing" on Writer).
const (
	// bloomMinFilterBytes is the smallest split-block filter arrow-go writes.
	bloomMinFilterBytes = 32
	// bloomMaxFilterBytes is the largest filter a data-sized Bloom column gets in one
	// row group; it holds about 866,000 distinct values at fpp 0.01.
	bloomMaxFilterBytes = 1 << 20
	// bloomCandidates is how many filter sizes arrow-go's adaptive filter keeps while
	// a column chunk is written: every power of two from bloomMaxFilterBytes down to
	// bloomMinFilterBytes (arrow-go stops earlier, at the smallest size it credits
	// with 500 values at the fpp).
	bloomCandidates = 16
)

// bloomCapacity is the most distinct values a split-block filter of nbytes holds
// at false-positive probability fpp: the inverse of the Parquet specification's
// sizing formula m = -8·ndv / ln(1 - fpp^(1/8)) bits, which arrow-go applies.
func bloomCapacity(nbytes int64, fpp float64) int64 {
	bits := float64(nbytes) * 8
	return int64(math.Floor(bits * -math.Log(1-math.Pow(fpp, 1.0/8.0)) / 8))
}

// bloomFilterBytes is the size arrow-go gives a split-block Bloom filter for ndv
// (> 0) distinct values at false-positive rate fpp: the optimal bit count, rounded
// up to a power of two, within [bloomMinFilterBytes, bloomMaxFilterBytes], plus a
// header.
func bloomFilterBytes(ndv int64, fpp float64) int64 {
	if fpp <= 0 || fpp >= 1 {
		fpp = DefaultBloomFPP
	}
	bits := -8 * float64(max(ndv, 1)) / math.Log(1-math.Pow(fpp, 1.0/8.0))
	b := int64(math.Ceil(bits / 8))
	p := int64(bloomMinFilterBytes)
	for p < b && p < bloomMaxFilterBytes {
		p <<= 1
	}
	return p + 16
}

// bloomBytes estimates the Bloom filter bytes of a row group of rows rows: per
// Bloom column, the filter for its configured or exact distinct values, or, for an
// adaptive filter, the one for rows distinct values (an upper bound: the filter
// arrow-go keeps is the smallest that holds the values actually seen).
func (w *Writer) bloomBytes(rows int64) int64 {
	var n int64
	for col, ndv := range w.opts.BloomColumns {
		if ndv <= 0 {
			if e, ok := w.exactNDV[col]; ok {
				ndv = max(e, 1)
			} else {
				ndv = max(rows, 1)
			}
		}
		n += bloomFilterBytes(ndv, w.opts.BloomFPP)
	}
	return n
}

// distinctValues counts the distinct non-null values of rec's top-level columns
// named in cols (64-bit hashes of the values' bytes; a collision, about one in
// 2^64/n² for n values, can only undercount by one). Columns that are not top-level
// (dotted leaf paths) or of a type sampleHash does not cover are left out.
func distinctValues(rec arrow.RecordBatch, cols map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for col := range cols {
		idx := rec.Schema().FieldIndices(col)
		if len(idx) != 1 {
			continue
		}
		arr := rec.Column(idx[0])
		if _, ok := sampleWidth(arr); !ok {
			continue
		}
		seen := make(map[uint64]struct{}, min(arr.Len(), dictionarySampleRows))
		for r := 0; r < arr.Len(); r++ {
			if arr.IsNull(r) {
				continue
			}
			h, _ := sampleHash(arr, r)
			seen[h] = struct{}{}
		}
		out[col] = int64(len(seen))
	}
	return out
}
