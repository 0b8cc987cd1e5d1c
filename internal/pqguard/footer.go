package pqguard

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// ValidateFooter checks what the footer md says against the file of size bytes before
// any page is decoded: row counts add up, every column chunk, page index and Bloom
// filter lies inside the file, and the row groups have the schema's columns. It
// returns the largest column chunk (compressed and uncompressed bytes), which bounds
// every page in the file (see BoundPages). Errors name the row group and column.
func ValidateFooter(md *metadata.FileMetaData, size int64) (maxCompressed, maxUncompressed int64, err error) {
	defer Guard{}.Contain(&err, "footer")
	ncols := md.Schema.NumColumns()
	var rows int64
	inFile := func(off, n int64) bool { return off >= 0 && n >= 0 && off <= size && n <= size-off }
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		rgm := md.RowGroup(rg)
		n := rgm.NumRows()
		if n < 0 {
			return 0, 0, fmt.Errorf("row group %d has %d rows", rg, n)
		}
		rows += n
		if rgm.NumColumns() != ncols {
			return 0, 0, fmt.Errorf("row group %d has %d column chunks, the schema %d columns", rg, rgm.NumColumns(), ncols)
		}
		for c := 0; c < ncols; c++ {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				return 0, 0, fmt.Errorf("row group %d column %d: %w", rg, c, err)
			}
			if cc.FilePath() != "" {
				return 0, 0, fmt.Errorf("row group %d column %d is in another file (%q)", rg, c, cc.FilePath())
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			clen, ulen := cc.TotalCompressedSize(), cc.TotalUncompressedSize()
			if !inFile(start, clen) || ulen < 0 {
				return 0, 0, fmt.Errorf("row group %d column %d: chunk at %d of %d bytes (%d uncompressed) is not inside the file of %d bytes",
					rg, c, start, clen, ulen, size)
			}
			if cc.NumValues() < 0 {
				return 0, 0, fmt.Errorf("row group %d column %d has %d values", rg, c, cc.NumValues())
			}
			for _, loc := range []*metadata.IndexLocation{cc.GetColumnIndexLocation(), cc.GetOffsetIndexLocation()} {
				if loc != nil && !inFile(loc.Offset, int64(loc.Length)) {
					return 0, 0, fmt.Errorf("row group %d column %d: page index at %d of %d bytes is not inside the file", rg, c, loc.Offset, loc.Length)
				}
			}
			if off := cc.BloomFilterOffset(); off > 0 && !inFile(off, max(0, int64(cc.BloomFilterLength()))) {
				return 0, 0, fmt.Errorf("row group %d column %d: Bloom filter at %d is not inside the file", rg, c, off)
			}
			maxCompressed, maxUncompressed = max(maxCompressed, clen), max(maxUncompressed, ulen)
		}
	}
	if rows != md.NumRows {
		return 0, 0, fmt.Errorf("row groups hold %d rows, the footer says %d", rows, md.NumRows)
	}
	return maxCompressed, maxUncompressed, nil
}

// BoundPages makes props refuse a page larger than maxCompressed bytes (the largest
// column chunk ValidateFooter found: no page is larger than the chunk holding it), so
// a page header claiming more is refused before anything is allocated for it.
func BoundPages(props *parquet.ReaderProperties, maxCompressed int64) {
	props.MaxCompressedPageSize = min(parquet.DefaultMaxCompressedPageSize, maxCompressed+1)
}
