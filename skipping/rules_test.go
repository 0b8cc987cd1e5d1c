package skipping

import (
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

func ruleSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	}, nil)
}

// col builds column stats: lo/hi (nil = unknown) and a null count (-1 = unknown).
func col(lo, hi any, nc int64) *stats.Column {
	c := &stats.Column{Min: toValue(lo), Max: toValue(hi)}
	if nc >= 0 {
		c.NullCount, c.HasNullCount = nc, true
	}
	return c
}

func toValue(x any) value.Value {
	switch x := x.(type) {
	case nil:
		return value.Null()
	case int:
		return value.Int64(int64(x))
	case float64:
		return value.Float64(x)
	case string:
		return value.String(x)
	case value.Value:
		return x
	}
	panic("toValue")
}

func dec(unscaled int64, scale int32) value.Value {
	return value.Decimal(decimal128.FromI64(unscaled), 10, scale)
}

func fstat(n int64, cols map[string]*stats.Column) *stats.File {
	f := &stats.File{NumRecords: n, TightBounds: true, Columns: map[string]*stats.Column{}}
	for k, c := range cols {
		f.Columns[k] = c
	}
	return f
}

func loose(f *stats.File) *stats.File { f.TightBounds = false; return f }

type ruleCase struct {
	name string
	pred string
	f    *stats.File
	pv   map[string]value.Value
	want Verdict
}

func ruleCases() []ruleCase {
	id := func(lo, hi any, nc int64) *stats.File {
		return fstat(10, map[string]*stats.Column{"id": col(lo, hi, nc)})
	}
	fl := func(lo, hi any, nc int64) *stats.File {
		return fstat(10, map[string]*stats.Column{"f": col(lo, hi, nc)})
	}
	str := func(lo, hi any, nc int64) *stats.File {
		return fstat(10, map[string]*stats.Column{"s": col(lo, hi, nc)})
	}
	nan := math.NaN()
	return []ruleCase{
		// =
		{"skips: = v below min", "id = 5", id(10, 20, 0), nil, CannotMatch},
		{"skips: = v above max", "id = 25", id(10, 20, 0), nil, CannotMatch},
		{"keeps: = v inside", "id = 15", id(10, 20, 0), nil, MightMatch},
		{"keeps: = v at min", "id = 10", id(10, 20, 0), nil, MightMatch},
		{"must: = v with min = max = v and no nulls", "id = 10", id(10, 10, 0), nil, MustMatch},
		{"might: = v with min = max = v but nulls", "id = 10", id(10, 10, 2), nil, MightMatch},
		{"might: = v with min = max = v, null count unknown", "id = 10", id(10, 10, -1), nil, MightMatch},
		// <>
		{"skips: <> v when min = max = v", "id <> 10", id(10, 10, 3), nil, CannotMatch},
		{"keeps: <> v when range wider", "id <> 10", id(10, 11, 0), nil, MightMatch},
		{"must: <> v outside range, no nulls", "id <> 50", id(10, 20, 0), nil, MustMatch},
		// < <= > >=
		{"skips: < v when min >= v", "id < 10", id(10, 20, 0), nil, CannotMatch},
		{"keeps: <= v when min = v", "id <= 10", id(10, 20, 0), nil, MightMatch},
		{"skips: <= v when min > v", "id <= 9", id(10, 20, 0), nil, CannotMatch},
		{"must: < v when max < v and no nulls", "id < 21", id(10, 20, 0), nil, MustMatch},
		{"might: < v when max < v but nulls", "id < 21", id(10, 20, 1), nil, MightMatch},
		{"skips: > v when max <= v", "id > 20", id(10, 20, 0), nil, CannotMatch},
		{"skips: >= v when max < v", "id >= 21", id(10, 20, 0), nil, CannotMatch},
		{"must: > v when min > v and no nulls", "id > 9", id(10, 20, 0), nil, MustMatch},
		{"must: >= v when min >= v and no nulls", "id >= 10", id(10, 20, 0), nil, MustMatch},
		{"keeps: only max known, < v", "id < 5", id(nil, 20, 0), nil, MightMatch},
		{"skips: only max known, > v", "id > 25", id(nil, 20, 0), nil, CannotMatch},
		{"skips: only min known, < v", "id < 5", id(10, nil, 0), nil, CannotMatch},
		// NOT push-down
		{"skips: NOT (id < 30) when max < 30", "NOT id < 30", id(10, 20, 0), nil, CannotMatch},
		{"must: NOT (id > 30) when max <= 30, no nulls", "NOT id > 30", id(10, 20, 0), nil, MustMatch},
		{"skips: NOT (a OR b) by De Morgan", "NOT (id < 30 OR id IS NULL)", id(10, 20, 0), nil, CannotMatch},
		{"skips: NOT BETWEEN inside the range", "id NOT BETWEEN 0 AND 100", id(10, 20, 5), nil, CannotMatch},
		// IN / NOT IN
		{"skips: IN with all values outside (Spark's range would keep 15)", "id IN (5, 25)", id(10, 20, 0), nil, CannotMatch},
		{"keeps: IN with one value inside", "id IN (5, 15)", id(10, 20, 0), nil, MightMatch},
		{"must: IN containing the single value", "id IN (7, 10)", id(10, 10, 0), nil, MustMatch},
		{"skips: NOT IN containing the single value", "id NOT IN (10, 11)", id(10, 10, 4), nil, CannotMatch},
		{"must: NOT IN with all values outside, no nulls", "id NOT IN (1, 99)", id(10, 20, 0), nil, MustMatch},
		{"keeps: NOT IN with a value inside", "id NOT IN (15)", id(10, 20, 0), nil, MightMatch},
		// IS [NOT] NULL
		{"skips: IS NULL with nc = 0", "id IS NULL", id(10, 20, 0), nil, CannotMatch},
		{"keeps: IS NULL with nc > 0", "id IS NULL", id(10, 20, 1), nil, MightMatch},
		{"must: IS NULL with nc = n", "id IS NULL", id(nil, nil, 10), nil, MustMatch},
		{"skips: IS NOT NULL with nc = n", "id IS NOT NULL", id(nil, nil, 10), nil, CannotMatch},
		{"must: IS NOT NULL with nc = 0", "id IS NOT NULL", id(10, 20, 0), nil, MustMatch},
		{"keeps: IS NULL, null count unknown", "id IS NULL", id(10, 20, -1), nil, MightMatch},
		// all-null files
		{"skips: comparison on an all-null file", "id = 1", id(nil, nil, 10), nil, CannotMatch},
		{"skips: <> on an all-null file", "id <> 1", id(nil, nil, 10), nil, CannotMatch},
		{"skips: NOT IN on an all-null file", "id NOT IN (1)", id(nil, nil, 10), nil, CannotMatch},
		// missing stats
		{"keeps: no stats for the column", "id = 1", fstat(10, nil), nil, MightMatch},
		{"keeps: null min/max with nulls but not all", "id = 1", id(nil, nil, 3), nil, MightMatch},
		{"keeps: numRecords unknown, nc = 0 still proves no nulls", "id IS NULL", fstat(-1, map[string]*stats.Column{"id": col(1, 2, 0)}), nil, CannotMatch},
		{"keeps: numRecords unknown, all-null not provable", "id = 1", fstat(-1, map[string]*stats.Column{"id": col(nil, nil, 5)}), nil, MightMatch},
		{"skips: empty file", "id IS NULL", fstat(0, nil), nil, CannotMatch},
		{"keeps: column missing from schema stats (nested)", "st.x = 1", id(1, 1, 0), nil, MightMatch},
		{"skips: nested column by path", "st.x > 5", fstat(10, map[string]*stats.Column{stats.Key("st", "x"): col(1, 5, 0)}), nil, CannotMatch},
		// tightBounds=false
		{"loose: bounds still skip", "id > 20", loose(id(10, 20, 3)), nil, CannotMatch},
		{"loose: nc between 0 and n is meaningless for IS NULL", "id IS NULL", loose(id(10, 20, 3)), nil, MightMatch},
		{"loose: nc = 0 still proves no nulls", "id IS NULL", loose(id(10, 20, 0)), nil, CannotMatch},
		{"loose: nc = n still proves all null", "id > 1", loose(id(nil, nil, 10)), nil, CannotMatch},
		// AND / OR
		{"skips: AND with one side skipping", "id > 100 AND s = 'x'", id(10, 20, 0), nil, CannotMatch},
		{"keeps: AND with an unusable side", "id > 15 AND s = 'x'", id(10, 20, 0), nil, MightMatch},
		{"keeps: OR with an unusable side", "id > 100 OR s = 'x'", id(10, 20, 0), nil, MightMatch},
		{"skips: OR of two skipping sides", "id > 100 OR id < 0", id(10, 20, 0), nil, CannotMatch},
		{"must: OR with one must side", "id > 0 OR s = 'x'", id(10, 20, 0), nil, MustMatch},
		{"must: AND of musts", "id > 0 AND id < 100", id(10, 20, 0), nil, MustMatch},
		{"keeps: column-to-column comparison", "id < part", id(10, 20, 0), nil, MightMatch},
		{"must: TRUE", "TRUE", id(10, 20, 0), nil, MustMatch},
		{"skips: FALSE", "FALSE", id(10, 20, 0), nil, CannotMatch},
		// floats and NaN
		{"keeps: > v when max is NaN (file may hold NaN)", "f > 100", fl(1.0, nan, 0), nil, MightMatch},
		{"skips: > v when max is a number below v", "f > 100", fl(1.0, 50.0, 0), nil, CannotMatch},
		{"keeps: = NaN when max is NaN", "f = DOUBLE 'NaN'", fl(1.0, nan, 0), nil, MightMatch},
		{"skips: = NaN when max is a number", "f = DOUBLE 'NaN'", fl(1.0, 50.0, 0), nil, CannotMatch},
		{"might: < v when max is NaN (not must)", "f < 100", fl(1.0, nan, 0), nil, MightMatch},
		{"must: < v when max is a number below v", "f < 100", fl(1.0, 50.0, 0), nil, MustMatch},
		{"keeps: NaN min is not trusted", "f < 0", fl(nan, nan, 0), nil, MightMatch},
		{"skips: -0 = 0 in bounds", "f < 0", fl(math.Copysign(0, -1), 5.0, 0), nil, CannotMatch},
		// decimals with different scales
		{"skips: decimal stats at another scale", "d > 1.5", fstat(10, map[string]*stats.Column{"d": col(dec(100, 2), dec(1499, 3), 0)}), nil, CannotMatch},
		{"keeps: decimal max at higher scale just above", "d >= 1.50", fstat(10, map[string]*stats.Column{"d": col(dec(100, 2), dec(1501, 3), 0)}), nil, MightMatch},
		{"keeps: decimal max at higher scale is rounded up, not down", "d > 1.50", fstat(10, map[string]*stats.Column{"d": col(dec(100, 2), dec(1501, 3), 0)}), nil, MightMatch},
		{"skips: decimal min at higher scale is rounded down", "d < 1.00", fstat(10, map[string]*stats.Column{"d": col(dec(1001, 3), dec(1501, 3), 0)}), nil, CannotMatch},
		{"skips: decimal literal with more scale than the column", "d = 1.005", fstat(10, map[string]*stats.Column{"d": col(dec(100, 2), dec(101, 2), 0)}), nil, CannotMatch},
		// strings and LIKE
		{"skips: starts_with above max", "s LIKE 'zz%'", str("abc", "mmm", 0), nil, CannotMatch},
		{"skips: starts_with below min", "s LIKE 'aa%'", str("abc", "mmm", 0), nil, CannotMatch},
		{"keeps: starts_with where min has the prefix", "s LIKE 'ab%'", str("abc", "mmm", 0), nil, MightMatch},
		{"keeps: starts_with inside the range", "s LIKE 'd%'", str("abc", "mmm", 0), nil, MightMatch},
		{"must: starts_with when both bounds have the prefix", "s LIKE 'ab%'", str("abc", "abz", 0), nil, MustMatch},
		{"skips: NOT LIKE prefix when both bounds have it", "s NOT LIKE 'ab%'", str("abc", "abz", 2), nil, CannotMatch},
		{"skips: general LIKE uses its literal prefix", "s LIKE 'zz%x_'", str("abc", "mmm", 0), nil, CannotMatch},
		{"keeps: LIKE starting with a wildcard", "s LIKE '%zz'", str("abc", "mmm", 0), nil, MightMatch},
		{"skips: LIKE without wildcard is equality", "s LIKE 'zzz'", str("abc", "mmm", 0), nil, CannotMatch},
		{"keeps: string = v at min", "s = 'abc'", str("abc", "abd", 0), nil, MightMatch},
		{"skips: string = v above a truncated max bound", "s = 'abe'", str("abc", "abd", 0), nil, CannotMatch},
		{"must: LIKE '%' on a file without nulls", "s LIKE '%'", str("abc", "abd", 0), nil, MustMatch},
		{"keeps: LIKE '%' when nulls are unknown", "s LIKE '%'", str("abc", "abd", -1), nil, MightMatch},
		// dates and timestamps
		{"skips: date below min", "dt < DATE '2020-01-01'", fstat(10, map[string]*stats.Column{"dt": col(value.Date(18300), value.Date(18400), 0)}), nil, CannotMatch},
		{"skips: timestamp above max", "ts > TIMESTAMP '2030-01-01 00:00:00'", fstat(10, map[string]*stats.Column{"ts": col(value.Timestamp(0), value.Timestamp(1e15), 0)}), nil, CannotMatch},
		{"keeps: timestamp inside", "ts >= DATE '1970-01-02'", fstat(10, map[string]*stats.Column{"ts": col(value.Timestamp(0), value.Timestamp(1e15), 0)}), nil, MightMatch},
		// stats of the wrong kind are ignored
		{"keeps: stats of another kind are not trusted", "id > 100", fstat(10, map[string]*stats.Column{"id": col("a", "b", 0)}), nil, MightMatch},
		// partitions (exact)
		{"partition: equality holds", "part = 3", nil, map[string]value.Value{"part": value.Int64(3)}, MustMatch},
		{"partition: equality fails", "part = 4", nil, map[string]value.Value{"part": value.Int64(3)}, CannotMatch},
		{"partition: NULL value fails comparisons", "part <> 4", nil, map[string]value.Value{"part": value.Null()}, CannotMatch},
		{"partition: NULL value satisfies IS NULL", "part IS NULL", nil, map[string]value.Value{"part": value.Null()}, MustMatch},
		{"partition: non-partition column is might", "part = 3 AND id = 1", nil, map[string]value.Value{"part": value.Int64(3)}, MightMatch},
		{"partition: OR decided as a whole with stats", "part = 4 OR id > 100", id(10, 20, 0), map[string]value.Value{"part": value.Int64(3)}, CannotMatch},
		{"partition: case-insensitive name", "part = 3", nil, map[string]value.Value{"PART": value.Int64(3)}, MustMatch},
		{"partition: value of the wrong kind is not trusted", "part = 3", nil, map[string]value.Value{"part": value.String("3")}, MightMatch},
	}
}

func TestRules(t *testing.T) {
	sc := ruleSchema()
	for _, tc := range ruleCases() {
		t.Run(tc.name, func(t *testing.T) {
			b, err := expr.Bind(expr.MustParse(tc.pred), sc)
			if err != nil {
				t.Fatal(err)
			}
			got := EvaluateFile(b, tc.f, tc.pv, nil)
			if got != tc.want {
				t.Fatalf("EvaluateFile(%s) = %v, want %v", b, got, tc.want)
			}
			var opts []FileIndexOption
			if tc.pv != nil {
				opts = append(opts, WithPartitionValues([]map[string]value.Value{tc.pv}))
			}
			fi := NewFileIndex([]*stats.File{tc.f}, sc, opts...)
			out := make([]Verdict, 1)
			if err := fi.Evaluate(b, out); err != nil {
				t.Fatal(err)
			}
			if out[0] != tc.want {
				t.Fatalf("FileIndex.Evaluate(%s) = %v, want %v", b, out[0], tc.want)
			}
		})
	}
}

func TestEvaluatePartitionOnlyUsesPartitionValues(t *testing.T) {
	b, err := expr.Bind(expr.MustParse("part IN (1, 2) AND id > 100"), ruleSchema())
	if err != nil {
		t.Fatal(err)
	}
	if got := EvaluatePartition(b, map[string]value.Value{"part": value.Int64(5)}); got != CannotMatch {
		t.Fatalf("got %v, want CannotMatch", got)
	}
	if got := EvaluatePartition(b, map[string]value.Value{"part": value.Int64(2)}); got != MightMatch {
		t.Fatalf("got %v, want MightMatch", got)
	}
}

func TestPathMapperTranslatesColumns(t *testing.T) {
	b, err := expr.Bind(expr.MustParse("id > 100"), ruleSchema())
	if err != nil {
		t.Fatal(err)
	}
	f := fstat(10, map[string]*stats.Column{"col-5f1a": col(1, 5, 0)})
	m := PathMapper(func(p []string) ([]string, bool) {
		if p[0] == "id" {
			return []string{"col-5f1a"}, true
		}
		return nil, false
	})
	if got := EvaluateFile(b, f, nil, m); got != CannotMatch {
		t.Fatalf("EvaluateFile with mapper = %v", got)
	}
	phys := arrow.NewSchema([]arrow.Field{{Name: "col-5f1a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	fi := NewFileIndex([]*stats.File{f}, phys)
	out := make([]Verdict, 1)
	if err := fi.EvaluateMapped(b, m, out); err != nil || out[0] != CannotMatch {
		t.Fatalf("EvaluateMapped = %v, %v", out[0], err)
	}
	if err := fi.Evaluate(b, out); err != nil || out[0] != MightMatch {
		t.Fatalf("unmapped Evaluate = %v, %v (want MightMatch: no column id)", out[0], err)
	}
	if err := fi.Evaluate(b, make([]Verdict, 2)); err == nil {
		t.Fatal("wrong output length accepted")
	}
}

func TestFileIndexIsSafeForConcurrentEvaluate(t *testing.T) {
	sc := ruleSchema()
	files := make([]*stats.File, 64)
	for i := range files {
		files[i] = fstat(10, map[string]*stats.Column{"id": col(i*10, i*10+9, int64(i%3))})
	}
	idx := NewFileIndex(files, sc)
	b, err := expr.Bind(expr.MustParse("id >= 300 AND id < 320 OR id IS NULL"), sc)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]Verdict, len(files))
	if err := idx.Evaluate(b, want); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			out := make([]Verdict, len(files))
			for k := 0; k < 50; k++ {
				if err := idx.Evaluate(b, out); err != nil {
					errs <- err
					return
				}
				for i := range out {
					if out[i] != want[i] {
						errs <- fmt.Errorf("file %d: %v, want %v", i, out[i], want[i])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
