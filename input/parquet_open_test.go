package input_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/input"
	"github.com/skiplake/skiplake/internal/datafile"
)

// TestOpenParquet reads a Parquet input file that is not part of a table: rows in
// batches of the size asked, damage reported as datafile.datafile.ErrCorruptData naming the
// file (never a panic), a directory or a missing file refused.
func TestOpenParquet(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 1000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()

	t.Run("reads every row in batches of the size asked", func(t *testing.T) {
		r, err := input.OpenParquet(ctx, write("good.parquet", good), input.Options{ParquetBatchRows: 300})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		var rows, batches, sum int64
		for r.Next() {
			rb := r.RecordBatch()
			if rb.NumRows() > 300 {
				t.Fatalf("batch of %d rows, asked for at most 300", rb.NumRows())
			}
			for _, v := range rb.Column(0).(*array.Int64).Int64Values() {
				sum += v
			}
			rows += rb.NumRows()
			batches++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if rows != 1000 || sum != 999*1000/2 || batches < 4 {
			t.Fatalf("read %d rows in %d batches (sum %d), want 1000 rows in ≥ 4 batches (sum %d)", rows, batches, sum, 999*1000/2)
		}
	})

	t.Run("a damaged footer is datafile.ErrCorruptData naming the file", func(t *testing.T) {
		bad := append(append([]byte{}, good[:len(good)/2]...), good[len(good)-8:]...)
		p := write("bad.parquet", bad)
		_, err := input.OpenParquet(ctx, p, input.Options{})
		if !errors.Is(err, datafile.ErrCorruptData) || !strings.Contains(err.Error(), p) {
			t.Fatalf("err = %v, want datafile.ErrCorruptData naming %s", err, p)
		}
	})

	t.Run("damaged pages fail the read, never panic", func(t *testing.T) {
		for at := 4; at < len(good)-8; at += 7 {
			bad := append([]byte{}, good...)
			bad[at] ^= 0xff
			r, err := input.OpenParquet(ctx, write("flip.parquet", bad), input.Options{})
			if err != nil {
				if !errors.Is(err, datafile.ErrCorruptData) {
					t.Fatalf("byte %d flipped: open error %v is not datafile.ErrCorruptData", at, err)
				}
				continue
			}
			for r.Next() {
			}
			if err := r.Err(); err != nil && !errors.Is(err, datafile.ErrCorruptData) {
				t.Fatalf("byte %d flipped: read error %v is not datafile.ErrCorruptData", at, err)
			}
			r.Release()
		}
	})

	t.Run("a directory or a missing file is refused", func(t *testing.T) {
		if _, err := input.OpenParquet(ctx, dir, input.Options{}); !errors.Is(err, input.ErrNotAFile) {
			t.Fatalf("directory: err = %v, want input.ErrNotAFile", err)
		}
		if _, err := input.OpenParquet(ctx, filepath.Join(dir, "nope.parquet"), input.Options{}); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing: err = %v, want os.ErrNotExist", err)
		}
	})
}
