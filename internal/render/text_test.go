package render

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func stringBatch(t *testing.T, mem memory.Allocator, vals []string, valid []bool) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(vals, valid)
	for i := range vals {
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	return b.NewRecordBatch()
}

func render(t *testing.T, format string, opts Options, recs ...arrow.RecordBatch) string {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWithOptions(format, &out, recs[0].Schema(), opts)
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
	return out.String()
}

func TestCSVTellsNullFromEmpty(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := stringBatch(t, mem, []string{"", "", "a,b", `q"t`, " lead", "two\nlines", "NULL", `\.`}, []bool{false, true, true, true, true, true, true, true})
	defer rec.Release()
	got := render(t, "csv", Options{}, rec)
	require.Equal(t, "s,n\n,0\n\"\",1\n\"a,b\",2\n\"q\"\"t\",3\n\" lead\",4\n\"two\nlines\",5\n\"NULL\",6\n\"\\.\",7\n", got)
	// Every field reads back (as RFC 4180) to what was written; only NULL is empty
	// and unquoted.
	recs, err := csv.NewReader(strings.NewReader(got)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"", "", "a,b", `q"t`, " lead", "two\nlines", "NULL", `\.`}, []string{recs[1][0], recs[2][0], recs[3][0], recs[4][0], recs[5][0], recs[6][0], recs[7][0], recs[8][0]})

	null := "NULL"
	got = render(t, "csv", Options{Null: &null}, rec)
	require.Equal(t, "s,n\nNULL,0\n\"\",1\n\"a,b\",2\n\"q\"\"t\",3\n\" lead\",4\n\"two\nlines\",5\n\"NULL\",6\n\"\\.\",7\n", got,
		"with --null NULL the string NULL is quoted")
}

func TestTableEscapesControlCharacters(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := stringBatch(t, mem, []string{"a\nb", "tab\there", "esc\x1b", "", "ok"}, []bool{true, true, true, false, true})
	defer rec.Release()
	got := render(t, "table", Options{}, rec)
	require.Equal(t, strings.Join([]string{
		"s         | n",
		"----------+--",
		`a\nb      | 0`,
		`tab\there | 1`,
		`esc\x1b   | 2`,
		"NULL      | 3",
		"ok        | 4",
		"(5 rows)",
		""}, "\n"), got)
	require.Equal(t, 8, strings.Count(got, "\n"), "one line per row")
}

func TestTableStreamsAfterItsWindow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	first := stringBatch(t, mem, []string{"a", "bb"}, nil)
	defer first.Release()
	later := stringBatch(t, mem, []string{"a much longer cell"}, nil)
	defer later.Release()

	var out bytes.Buffer
	w, err := NewWithOptions("table", &out, first.Schema(), Options{Window: 2})
	require.NoError(t, err)
	require.NoError(t, w.Write(first))
	// The window is full: the header and the held rows are printed before Close.
	tw := w.(*tableWriter)
	require.Nil(t, tw.held)
	require.NoError(t, tw.w.Flush())
	require.Equal(t, "s  | n\n---+--\na  | 0\nbb | 1\n", out.String())
	require.NoError(t, w.Write(later))
	require.NoError(t, w.Close())
	require.Equal(t, "s  | n\n---+--\na  | 0\nbb | 1\na much longer cell | 0\n(3 rows)\n", out.String())
}

func TestTableEmptyResultHasHeader(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var out bytes.Buffer
	w, err := New("table", &out, schema)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.Equal(t, "id\n--\n(0 rows)\n", out.String())
}

// A writer given up on after a failure (Abort) holds nothing: the parquet format
// releases the batches it kept for its dictionary sample and stops its encoders;
// Abort after Close, and twice, are no-ops.
func TestAbortReleasesWhatTheWriterHolds(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			rec := stringBatch(t, mem, []string{"a", "b", ""}, []bool{true, true, false})
			var out bytes.Buffer
			w, err := New(format, &out, rec.Schema())
			require.NoError(t, err)
			require.NoError(t, w.Write(rec))
			rec.Release()
			w.Abort()
			w.Abort()
			mem.AssertSize(t, 0)

			rec = stringBatch(t, mem, []string{"c"}, nil)
			w, err = New(format, &out, rec.Schema())
			require.NoError(t, err)
			require.NoError(t, w.Write(rec))
			rec.Release()
			require.NoError(t, w.Close())
			w.Abort()
			mem.AssertSize(t, 0)
		})
	}
}
