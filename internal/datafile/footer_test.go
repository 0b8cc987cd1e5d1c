package datafile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// recordingReaderAt records every read made through it.
type recordingReaderAt struct {
	ra   io.ReaderAt
	mu   sync.Mutex
	offs [][2]int64 // offset, length
}

func (r *recordingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.offs = append(r.offs, [2]int64{off, int64(len(p))})
	r.mu.Unlock()
	return r.ra.ReadAt(p, off)
}

// readsFrom reports whether any read touched [from, to).
func (r *recordingReaderAt) readsFrom(from, to int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.offs {
		if o[0] < to && o[0]+o[1] > from {
			return true
		}
	}
	return false
}

// footerTestFile writes a file of 4 row groups of one int64 column with small pages
// and returns its bytes, schema and where its footer starts.
func footerTestFile(t *testing.T) ([]byte, *arrow.Schema, int64) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var recs []arrow.RecordBatch
	for g := range 4 {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := range 20_000 {
			b.Append(int64(g*20_000+i) * 7919 % 1_000_003)
		}
		col := b.NewArray()
		b.Release()
		recs = append(recs, array.NewRecordBatch(sc, []arrow.Array{col}, 20_000))
		col.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	data, res := writeFile(t, WriterOptions{Codec: CodecUncompressed, DataPageBytes: 8 << 10, TargetRowGroupBytes: 100 << 10}, recs...)
	require.Greater(t, res.RowGroups, 1)
	footerLen := int64(binary.LittleEndian.Uint32(data[len(data)-8:]))
	return data, sc, int64(len(data)) - 8 - footerLen
}

// readRangesRows reads ranges of row group rg and returns the values.
func readRangesRows(t *testing.T, r *Reader, sc *arrow.Schema, rg int, ranges []RowRange) []int64 {
	t.Helper()
	var out []int64
	require.NoError(t, r.ReadRanges(t.Context(), sc, rg, ranges, func(rec arrow.RecordBatch, _ int64) error {
		v := rec.Column(0).(*array.Int64)
		out = append(out, v.Int64Values()...)
		return nil
	}))
	return out
}

// TestOpenWithFooterReadsNoFooterOrPageIndex: a Reader opened with the Footer of an
// earlier Reader of the same file reads nothing at or after the start of the page
// index (no footer, no page index), and returns the same rows; the page index region
// is loaded by one read, once for every Reader sharing the Footer.
func TestOpenWithFooterReadsNoFooterOrPageIndex(t *testing.T) {
	data, sc, footerStart := footerTestFile(t)
	ranges := []RowRange{{100, 110}, {15_000, 15_500}}

	first := &recordingReaderAt{ra: bytes.NewReader(data)}
	r1, err := Open(first, int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	require.True(t, first.readsFrom(footerStart, int64(len(data))), "the first Open reads the footer")
	ft := r1.Footer()
	require.NotNil(t, ft)
	idxOff, idxEnd := ft.IndexRegion()
	require.Less(t, idxOff, idxEnd, "the writer puts a page index after the data")
	require.LessOrEqual(t, idxEnd, footerStart)
	pi, err := r1.ParquetReader().GetPageIndexReader().RowGroup(1)
	require.NoError(t, err)
	require.NotNil(t, pi)
	want := readRangesRows(t, r1, sc, 1, ranges)
	require.Len(t, want, 510)
	require.Equal(t, int64(1), ft.IndexRegionReads(), "the page index is loaded with one read")
	require.NoError(t, r1.Close())

	second := &recordingReaderAt{ra: bytes.NewReader(data)}
	r2, err := Open(second, int64(len(data)), ReadOptions{Footer: ft})
	require.NoError(t, err)
	defer r2.Close()
	require.Equal(t, r1.Metadata().NumRows, r2.NumRows())
	require.Equal(t, r1.NumRowGroups(), r2.NumRowGroups())
	for rg := 0; rg < r2.NumRowGroups(); rg++ {
		_, err := r2.ParquetReader().GetPageIndexReader().RowGroup(rg)
		require.NoError(t, err)
	}
	got := readRangesRows(t, r2, sc, 1, ranges)
	require.Equal(t, want, got)
	require.False(t, second.readsFrom(idxOff, int64(len(data))), "no footer or page-index read: %v", second.offs)
	require.True(t, second.readsFrom(0, idxOff), "the data is read")
	require.Equal(t, int64(1), ft.IndexRegionReads())

	// Every row, whole row groups: the same as a Reader opened the usual way.
	all := func(r *Reader) []string {
		var rows []string
		require.NoError(t, r.Read(t.Context(), sc, nil, func(rec arrow.RecordBatch, _ int64) error {
			rows = append(rows, rowStrings(rec)...)
			return nil
		}))
		return rows
	}
	r3, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r3.Close()
	require.Equal(t, all(r3), all(r2))
}

// TestOpenWithFooterOfAnotherSize: a Footer read from a file of another size is
// refused, and a deletion vector is checked against the Footer's row count.
func TestOpenWithFooterOfAnotherSize(t *testing.T) {
	data, _, _ := footerTestFile(t)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	ft := r.Footer()
	require.NoError(t, r.Close())
	other := append(append([]byte(nil), data...), 0)
	_, err = Open(bytes.NewReader(other), int64(len(other)), ReadOptions{Footer: ft, Name: "x.parquet"})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "x.parquet")
}

// TestOpenWithFooterConcurrently: many Readers sharing one Footer (the first of them
// loading its page index) read the same rows at once (-race).
func TestOpenWithFooterConcurrently(t *testing.T) {
	data, sc, _ := footerTestFile(t)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	ft := r.Footer()
	want := readRangesRows(t, r, sc, 2, []RowRange{{5, 900}})
	require.NoError(t, r.Close())
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			rd, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{Footer: ft})
			if err != nil {
				errs[i] = err
				return
			}
			defer rd.Close()
			if _, err := rd.ParquetReader().GetPageIndexReader().RowGroup(i % rd.NumRowGroups()); err != nil {
				errs[i] = err
				return
			}
			var got []int64
			err = rd.ReadRanges(t.Context(), sc, 2, []RowRange{{5, 900}}, func(rec arrow.RecordBatch, _ int64) error {
				got = append(got, rec.Column(0).(*array.Int64).Int64Values()...)
				return nil
			})
			if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
				err = errors.New("rows differ")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, int64(1), ft.IndexRegionReads())
}

// TestFooterCacheBoundAndOrder: the cache never holds more than its bound, drops the
// least recently used first, replaces a key's footer, and does not cache a footer
// larger than the bound; a nil cache caches nothing.
func TestFooterCacheBoundAndOrder(t *testing.T) {
	data, _, _ := footerTestFile(t)
	footer := func() *Footer {
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
		require.NoError(t, err)
		defer r.Close()
		return r.Footer()
	}
	one := footer().Bytes()
	c := NewFooterCache(3 * one)
	fs := []*Footer{footer(), footer(), footer(), footer()}
	c.Put("a", fs[0])
	c.Put("b", fs[1])
	c.Put("c", fs[2])
	require.Same(t, fs[0], c.Get("a")) // a is now the most recently used
	c.Put("d", fs[3])                  // evicts b
	require.Nil(t, c.Get("b"))
	require.Same(t, fs[0], c.Get("a"))
	require.Same(t, fs[2], c.Get("c"))
	require.Same(t, fs[3], c.Get("d"))
	st := c.Stats()
	require.Equal(t, 3, st.Entries)
	require.LessOrEqual(t, st.Bytes, st.MaxBytes)
	require.Equal(t, int64(1), st.Evictions)
	require.Equal(t, int64(1), st.Misses)

	c.Put("a", fs[1]) // replaced, not added
	require.Same(t, fs[1], c.Get("a"))
	require.Equal(t, 3, c.Stats().Entries)
	c.Remove("a")
	require.Nil(t, c.Get("a"))
	require.Equal(t, 2*one, c.Stats().Bytes)

	small := NewFooterCache(one - 1)
	small.Put("a", fs[0])
	require.Nil(t, small.Get("a"), "a footer larger than the bound is not cached")

	var none *FooterCache
	require.Nil(t, NewFooterCache(0))
	none.Put("a", fs[0])
	require.Nil(t, none.Get("a"))
	none.Remove("a")
	require.Equal(t, FooterCacheStats{}, none.Stats())
}

// TestFooterCacheConcurrentUse: Gets, Puts and Removes from many goroutines keep the
// cache within its bound (-race).
func TestFooterCacheConcurrentUse(t *testing.T) {
	data, _, _ := footerTestFile(t)
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	ft := r.Footer()
	require.NoError(t, r.Close())
	c := NewFooterCache(5 * ft.Bytes())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := fmt.Sprint((g*7 + i) % 13)
				switch i % 3 {
				case 0:
					c.Put(k, ft)
				case 1:
					if f := c.Get(k); f != nil && f != ft {
						t.Error("wrong footer")
					}
				default:
					c.Remove(k)
				}
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	require.LessOrEqual(t, st.Bytes, st.MaxBytes)
	require.Equal(t, int64(st.Entries)*ft.Bytes(), st.Bytes)
}
