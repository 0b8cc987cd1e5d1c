package datafile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// errStore stands for a storage error (a response cut short, a 503 after retries).
var errStore = errors.New("injected storage failure")

// failingReaderAt serves data, failing every read that touches [from, to) with
// errStore, or (short) returning fewer bytes than asked with io.ErrUnexpectedEOF.
type failingReaderAt struct {
	data     []byte
	from, to int64
	short    bool
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if off < f.to && end > f.from {
		if f.short {
			n := copy(p[:max(0, f.from-off)], f.data[off:])
			return n, io.ErrUnexpectedEOF
		}
		return 0, errStore
	}
	return bytes.NewReader(f.data).ReadAt(p, off)
}

// D10: a storage read that fails while a data file is opened or read is reported as a
// ReadError (errors.Is ErrReadFailed and the storage's error), never as corrupt data,
// wherever in the file it fails: the footer, the page index, the pages.
func TestStorageReadFailureIsNotCorruption(t *testing.T) {
	rec := allTypesBatch(t, memory.DefaultAllocator, 3000, 0)
	defer rec.Release()
	data, _ := writeFile(t, WriterOptions{TargetRowGroupBytes: 8 << 10}, rec)
	size := int64(len(data))
	for _, tc := range []struct {
		name     string
		from, to int64
		short    bool
	}{
		{"footer", size - 8, size, false},
		{"whole tail", size - 4096, size, false},
		{"first pages", 4, 64, false},
		{"middle pages", size / 3, size/3 + 16, false},
		{"middle pages, short read", size / 3, size/3 + 16, true},
		{"last pages, short read", size / 2, size - 4096, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ra := &failingReaderAt{data: data, from: max(0, tc.from), to: tc.to, short: tc.short}
			r, err := Open(ra, size, ReadOptions{Name: "p=1/f.parquet"})
			if err == nil {
				err = r.Read(context.Background(), rec.Schema(), nil, func(arrow.RecordBatch, int64) error { return nil })
				r.Close()
			}
			require.Error(t, err, "the failing range was never read")
			require.False(t, errors.Is(err, ErrCorruptData), "a storage failure reported as corrupt data: %v", err)
			require.ErrorIs(t, err, ErrReadFailed)
			if !tc.short {
				require.ErrorIs(t, err, errStore)
			}
			var re *ReadError
			require.ErrorAs(t, err, &re)
			require.Equal(t, "p=1/f.parquet", re.File)
			require.Contains(t, err.Error(), "p=1/f.parquet")
		})
	}
	// Damage is still damage: the same bytes with a page scrambled, read without error.
	bad := append([]byte(nil), data...)
	for i := size / 3; i < size/3+64; i++ {
		bad[i] ^= 0x5a
	}
	r, err := Open(bytes.NewReader(bad), size, ReadOptions{Name: "f.parquet"})
	if err == nil {
		err = r.Read(context.Background(), rec.Schema(), nil, func(arrow.RecordBatch, int64) error { return nil })
		r.Close()
	}
	if err != nil {
		require.ErrorIs(t, err, ErrCorruptData)
		require.False(t, errors.Is(err, ErrReadFailed))
	}
}
