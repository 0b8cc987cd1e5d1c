package stats_test

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// Collect statistics while writing a file, then render the add action's stats.
func ExampleNewCollector() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(
		`[{"id":1,"name":"alpha","ts":"2024-05-01T10:00:00.123456Z"},{"id":7,"name":"bob","ts":"2024-05-02T00:00:00Z"},{"id":3,"name":null,"ts":null}]`))
	if err != nil {
		panic(err)
	}
	defer rec.Release()

	c, err := stats.NewCollector(schema, nil, stats.Config{StringPrefixLength: 3})
	if err != nil {
		panic(err)
	}
	if err := c.Update(rec); err != nil {
		panic(err)
	}
	js, err := stats.ToJSON(c.Result(), schema)
	if err != nil {
		panic(err)
	}
	fmt.Println(js)
	// Output:
	// {"numRecords":3,"minValues":{"id":1,"name":"alp","ts":"2024-05-01T10:00:00.123Z"},"maxValues":{"id":7,"name":"bob","ts":"2024-05-02T00:00:00.000Z"},"nullCount":{"id":0,"name":1,"ts":1}}
}

// Read a Spark-written stats string back into typed, trustworthy bounds.
func ExampleParse() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	f, err := stats.Parse(`{"numRecords":10,"minValues":{"ts":"2000-01-01T00:00:00.000-08:00","price":1.5},`+
		`"maxValues":{"ts":"2000-01-02T00:00:00.000-08:00","price":99.99},"nullCount":{"ts":0,"price":3}}`, schema)
	if err != nil {
		panic(err)
	}
	ts, price := f.Column("ts"), f.Column("price")
	fmt.Println(f.NumRecords, ts.Min, ts.Max)
	fmt.Println(price.Min, price.Max, price.NullCount)
	// Output:
	// 10 TIMESTAMP '2000-01-01 08:00:00+00:00' TIMESTAMP '2000-01-02 08:00:00.001+00:00'
	// 1.50 99.99 3
}

// Parse only the row count, cheaply.
func ExampleParseNumRecords() {
	n, ok := stats.ParseNumRecords(`{"numRecords":1234,"minValues":{"a":1}}`)
	fmt.Println(n, ok)
	// Output: 1234 true
}

// Render typed statistics (for example kept from a Collector, or built by hand) as
// the stats JSON of an add action. NaN and infinite float bounds are left out.
func ExampleToJSON() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
	}, nil)
	f := &stats.File{NumRecords: 4, TightBounds: true, Columns: map[string]*stats.Column{
		stats.Key("s", "x"): {Min: value.Float64(-0.5), Max: value.Float64(math.NaN()), NullCount: 1, HasNullCount: true},
	}}
	js, err := stats.ToJSON(f, schema)
	if err != nil {
		panic(err)
	}
	fmt.Println(js)
	// Output: {"numRecords":4,"minValues":{"s":{"x":-0.5}},"nullCount":{"s":{"x":1}}}
}
