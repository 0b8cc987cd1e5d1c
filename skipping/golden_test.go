package skipping

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/skiplake/skiplake/internal/goldentest"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// goldenDir locates the golden tables or skips (see internal/goldentest).
func goldenDir(t *testing.T) string { return goldentest.Dir(t) }

type goldenAdd struct {
	Path  string `json:"path"`
	Stats string `json:"stats"`
}

func readAdds(t *testing.T, commit string) []goldenAdd {
	f, err := os.Open(commit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var adds []goldenAdd
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var line struct {
			Add *goldenAdd `json:"add"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", commit, err)
		}
		if line.Add != nil {
			adds = append(adds, *line.Add)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return adds
}

// goldenValue converts one cell of a Parquet-read column into the value kind of
// the Delta column (INT96 timestamps come back as nanoseconds).
func goldenValue(arr arrow.Array, i int, c *expr.BoundColumn) value.Value {
	if arr.IsNull(i) {
		return value.Null()
	}
	switch a := arr.(type) {
	case *array.Int8:
		return value.Int64(int64(a.Value(i)))
	case *array.Int16:
		return value.Int64(int64(a.Value(i)))
	case *array.Int32:
		return value.Int64(int64(a.Value(i)))
	case *array.Int64:
		return value.Int64(a.Value(i))
	case *array.Float32:
		return value.Float64(float64(a.Value(i)))
	case *array.Float64:
		return value.Float64(a.Value(i))
	case *array.String:
		return value.String(a.Value(i))
	case *array.Date32:
		return value.Date(int64(a.Value(i)))
	case *array.Decimal128:
		return value.Decimal(a.Value(i), c.Precision, c.Scale)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		us := int64(a.Value(i))
		switch unit {
		case arrow.Nanosecond:
			us /= 1000
		case arrow.Millisecond:
			us *= 1000
		case arrow.Second:
			us *= 1000000
		}
		return value.Timestamp(us)
	}
	panic("goldenValue: unsupported " + arr.DataType().String())
}

// TestGoldenBasicStatsAllTypes checks S1/S2 on a Spark-written table: stats parsed
// from the real log by package stats, truth from the real Parquet file.
func TestGoldenBasicStatsAllTypes(t *testing.T) {
	dir := filepath.Join(goldenDir(t), "delta-golden", "data-skipping-basic-stats-all-types", "delta")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "as_int", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "as_long", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "as_byte", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "as_short", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "as_float", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "as_double", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "as_string", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "as_date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "as_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "as_big_decimal", Type: &arrow.Decimal128Type{Precision: 1, Scale: 0}, Nullable: true},
	}, nil)
	preds := []struct {
		filter string
		want   Verdict // 0: only soundness is checked
	}{
		{"as_int = 0", MustMatch}, {"as_int > 0", CannotMatch}, {"as_int < 1", MustMatch}, {"as_int <> 0", CannotMatch},
		{"as_long IN (1, 2)", CannotMatch}, {"as_long IN (0, 2)", MustMatch}, {"as_byte >= 0", MustMatch},
		{"as_short <= -1", CannotMatch}, {"as_float > 0.5", CannotMatch}, {"as_float = 0", 0},
		{"as_double < -0.5", CannotMatch}, {"as_double >= 0", 0}, {"as_double = DOUBLE 'NaN'", CannotMatch},
		{"as_string = '0'", MustMatch}, {"as_string LIKE '0%'", MustMatch}, {"as_string > '0'", CannotMatch},
		{"as_string LIKE '1%'", CannotMatch}, {"as_string IS NULL", CannotMatch}, {"as_string IS NOT NULL", MustMatch},
		{"as_date = DATE '2000-01-01'", MustMatch}, {"as_date > DATE '2000-01-01'", CannotMatch},
		{"as_timestamp = TIMESTAMP '2000-01-01 08:00:00Z'", 0},
		{"as_timestamp < TIMESTAMP '2000-01-01 08:00:00Z'", CannotMatch},
		{"as_timestamp > TIMESTAMP '2000-01-01 08:00:01Z'", CannotMatch},
		{"as_timestamp >= TIMESTAMP '2000-01-01 07:59:59Z'", MustMatch},
		{"as_big_decimal = 0", MustMatch}, {"as_big_decimal > 0.5", CannotMatch}, {"as_big_decimal < 0.5", MustMatch},
		{"NOT (as_int = 0 AND as_string = '0')", CannotMatch}, {"as_int = 1 OR as_string = '0'", MustMatch},
	}
	adds := readAdds(t, filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	if len(adds) == 0 {
		t.Fatal("no add actions in the golden log")
	}
	for _, add := range adds {
		fst, err := stats.Parse(add.Stats, schema)
		if err != nil {
			t.Fatalf("stats.Parse(%s): %v", add.Stats, err)
		}
		f, err := os.Open(filepath.Join(dir, add.Path))
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.NewGoAllocator())
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range preds {
			b, err := expr.Bind(expr.MustParse(p.filter), schema)
			if err != nil {
				t.Fatalf("Bind(%s): %v", p.filter, err)
			}
			got := EvaluateFile(b, fst, nil, nil)
			matched := 0
			for i := 0; i < int(tbl.NumRows()); i++ {
				row := make([]value.Value, len(b.Columns()))
				for _, c := range b.Columns() {
					colIdx := tbl.Schema().FieldIndices(c.Path[0])[0]
					chunk := tbl.Column(colIdx).Data().Chunk(0)
					row[c.Ordinal] = goldenValue(chunk, i, c)
				}
				if b.EvaluateRow(row) {
					matched++
				}
			}
			switch {
			case got == CannotMatch && matched > 0:
				t.Errorf("S1: %s on %s: CannotMatch but %d rows match", p.filter, add.Path, matched)
			case got == MustMatch && matched != int(tbl.NumRows()):
				t.Errorf("S2: %s on %s: MustMatch but %d of %d rows match", p.filter, add.Path, matched, tbl.NumRows())
			case p.want != 0 && got != p.want:
				t.Errorf("%s on %s: got %v, want %v (stats %s)", p.filter, add.Path, got, p.want, add.Stats)
			}
		}
		tbl.Release()
		_ = rdr.Close()
	}
}
