package pqguard

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// wrapped is a caller's corrupt-file error type.
type wrapped struct{ err error }

func (w *wrapped) Error() string { return "caller: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// decode stands for a call into arrow-go's decoder that panics.
func decode(g Guard, panicWith any) (err error) {
	defer g.Contain(&err, "row group 3")
	if panicWith != nil {
		panic(panicWith)
	}
	return nil
}

// TestContain: a panic inside the guarded call becomes an error naming where and
// wrapping ErrDecoderPanic (and the caller's type when Wrap is set); no panic, no error.
func TestContain(t *testing.T) {
	if err := decode(Guard{}, nil); err != nil {
		t.Fatalf("no panic: %v", err)
	}
	err := decode(Guard{}, "makeslice: len out of range")
	if !errors.Is(err, ErrDecoderPanic) || err.Error() != "row group 3: the Parquet decoder failed: makeslice: len out of range" {
		t.Fatalf("got %v", err)
	}
	err = decode(Guard{Wrap: func(e error) error { return &wrapped{e} }}, errors.New("nil page header"))
	var w *wrapped
	if !errors.As(err, &w) || !errors.Is(err, ErrDecoderPanic) || !strings.HasPrefix(err.Error(), "caller: row group 3:") {
		t.Fatalf("got %v", err)
	}
}

// TestValidateFooter accepts a file pqarrow wrote and refuses the same footer against
// a file too short to hold its column chunks (what a damaged length looks like).
func TestValidateFooter(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	sb := b.Field(0).(*array.StructBuilder)
	for i := range 100 {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	maxC, _, err := ValidateFooter(pr.MetaData(), int64(buf.Len()))
	if err != nil || maxC <= 0 {
		t.Fatalf("intact footer: max chunk %d, %v", maxC, err)
	}
	if _, _, err := ValidateFooter(pr.MetaData(), 10); err == nil || !strings.Contains(err.Error(), "is not inside the file of 10 bytes") {
		t.Fatalf("chunks outside the file: %v", err)
	}
	if err := CheckArrowSchema(pr.MetaData().KeyValueMetadata()); err != nil {
		t.Fatalf("intact ARROW:schema: %v", err)
	}
}
