package stats

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/value"
)

var mergeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
}, nil)

// mergeBatch draws n rows; allNull makes column s all null; ms puts timestamps on
// whole milliseconds.
func mergeBatch(rnd *rand.Rand, mem memory.Allocator, n int, allNull, ms bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, mergeSchema)
	defer b.Release()
	for range n {
		null := rnd.IntN(10) == 0
		if null {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(rnd.Int64N(1000) - 500)
		}
		if allNull || null {
			b.Field(1).AppendNull()
		} else {
			// Long strings with shared prefixes: the 32-character cut matters.
			b.Field(1).(*array.StringBuilder).Append(strings.Repeat("p", rnd.IntN(40)) + fmt.Sprint(rnd.IntN(100)))
		}
		ts := rnd.Int64N(1 << 40)
		if ms {
			ts -= ts % 1000
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ts / 3))
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32(rnd.IntN(20000)))
		b.Field(5).(*array.Float64Builder).Append(rnd.NormFloat64())
		sb := b.Field(6).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(rnd.IntN(100)))
	}
	return b.NewRecordBatch()
}

// The merge of files' parsed statistics bounds every row, equals the statistics
// of all rows where nothing is cut (numbers, dates, null counts, timestamps), and
// does not drift when merged again.
func TestMergeJSONBoundsEveryRowAndDoesNotDrift(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	parser := NewParser(mergeSchema, ParseOptions{})
	for seed := range uint64(40) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		all, err := NewCollector(mergeSchema, nil, Config{})
		if err != nil {
			t.Fatal(err)
		}
		var files []*File
		ms := seed%2 == 0
		for k := range 1 + rnd.IntN(5) {
			rec := mergeBatch(rnd, mem, 1+rnd.IntN(200), k == 1, ms)
			c, _ := NewCollector(mergeSchema, nil, Config{})
			if err := c.Update(rec); err != nil {
				t.Fatal(err)
			}
			if err := all.Update(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			js, _ := c.ToJSON()
			f, err := parser.Parse(js)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		merged, err := MergeJSON(files, mergeSchema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parser.Parse(merged)
		if err != nil {
			t.Fatal(err)
		}
		bruteJSON, _ := all.ToJSON()
		brute, _ := parser.Parse(bruteJSON)
		if got.NumRecords != brute.NumRecords {
			t.Fatalf("seed %d: numRecords %d, want %d", seed, got.NumRecords, brute.NumRecords)
		}
		for key, b := range brute.Columns {
			g := got.Columns[key]
			if g == nil || g.NullCount != b.NullCount || !g.HasNullCount {
				t.Fatalf("seed %d %q: %+v, want null count of %+v", seed, key, g, b)
			}
			if key == Key("s") {
				// Cut strings: sound bounds, maybe wider than a single cut.
				if c, ok := value.Compare(g.Min, b.Min); !ok || c > 0 {
					t.Fatalf("seed %d: string min %v above %v", seed, g.Min, b.Min)
				}
				if c, ok := value.Compare(g.Max, b.Max); !ok || c < 0 {
					t.Fatalf("seed %d: string max %v below %v", seed, g.Max, b.Max)
				}
				continue
			}
			if !value.Equal(g.Min, b.Min) || !value.Equal(g.Max, b.Max) {
				t.Fatalf("seed %d %q: [%v, %v], brute force [%v, %v]", seed, key, g.Min, g.Max, b.Min, b.Max)
			}
		}
		again, err := MergeJSON([]*File{got}, mergeSchema)
		if err != nil {
			t.Fatal(err)
		}
		if again != merged {
			t.Fatalf("seed %d: merging again drifts:\n%s\n%s", seed, merged, again)
		}
	}
}

func TestMergeRules(t *testing.T) {
	col := func(lo, hi value.Value, nc int64) *Column {
		return &Column{Min: lo, Max: hi, NullCount: nc, HasNullCount: true}
	}
	i := value.Int64
	cases := []struct {
		name  string
		files []*File
		want  *File
	}{
		{"min of mins, max of maxes, counts summed", []*File{
			{NumRecords: 3, TightBounds: true, Columns: map[string]*Column{"a": col(i(1), i(5), 1)}},
			{NumRecords: 4, TightBounds: true, Columns: map[string]*Column{"a": col(i(-2), i(3), 0)}},
		}, &File{NumRecords: 7, TightBounds: true, Columns: map[string]*Column{"a": col(i(-2), i(5), 1)}}},
		{"an all-null file gives no bound", []*File{
			{NumRecords: 3, TightBounds: true, Columns: map[string]*Column{"a": col(value.Null(), value.Null(), 3)}},
			{NumRecords: 4, TightBounds: true, Columns: map[string]*Column{"a": col(i(0), i(3), 0)}},
		}, &File{NumRecords: 7, TightBounds: true, Columns: map[string]*Column{"a": col(i(0), i(3), 3)}}},
		{"a missing bound makes it unknown", []*File{
			{NumRecords: 3, TightBounds: true, Columns: map[string]*Column{"a": col(i(1), value.Null(), 0)}},
			{NumRecords: 4, TightBounds: true, Columns: map[string]*Column{"a": col(i(0), i(3), 0)}},
		}, &File{NumRecords: 7, TightBounds: true, Columns: map[string]*Column{"a": col(value.Null(), value.Null(), 0)}}},
		{"a missing column makes everything unknown", []*File{
			{NumRecords: 3, TightBounds: true, Columns: map[string]*Column{}},
			{NumRecords: 4, TightBounds: false, Columns: map[string]*Column{"a": col(i(0), i(3), 0)}},
		}, &File{NumRecords: 7, TightBounds: false, Columns: map[string]*Column{"a": {}}}},
		{"unknown rows", []*File{{NumRecords: -1, TightBounds: true, Columns: map[string]*Column{}}, {NumRecords: 2, TightBounds: true}},
			&File{NumRecords: -1, TightBounds: true, Columns: map[string]*Column{}}},
		{"kinds that do not compare", []*File{
			{NumRecords: 1, TightBounds: true, Columns: map[string]*Column{"a": col(i(1), i(1), 0)}},
			{NumRecords: 1, TightBounds: true, Columns: map[string]*Column{"a": col(value.String("x"), value.String("x"), 0)}},
		}, &File{NumRecords: 2, TightBounds: true, Columns: map[string]*Column{"a": col(value.Null(), value.Null(), 0)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.files)
			if got.NumRecords != tc.want.NumRecords || got.TightBounds != tc.want.TightBounds || len(got.Columns) != len(tc.want.Columns) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for k, w := range tc.want.Columns {
				g := got.Columns[k]
				if g == nil || g.HasNullCount != w.HasNullCount || g.NullCount != w.NullCount || !value.Equal(g.Min, w.Min) || !value.Equal(g.Max, w.Max) {
					t.Fatalf("%q: got %+v, want %+v", k, g, w)
				}
			}
		})
	}
}
