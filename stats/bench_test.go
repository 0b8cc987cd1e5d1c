package stats

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchSchema has 8 columns: 6 numeric/temporal and 2 strings.
var benchSchema = arrow.NewSchema([]arrow.Field{
	f("id", arrow.PrimitiveTypes.Int64), f("qty", arrow.PrimitiveTypes.Int32),
	f("price", arrow.PrimitiveTypes.Float64), f("amount", &arrow.Decimal128Type{Precision: 18, Scale: 2}),
	f("day", arrow.FixedWidthTypes.Date32), f("ts", tsUTC),
	f("name", arrow.BinaryTypes.String), f("city", arrow.BinaryTypes.String),
}, nil)

func benchRecord(mem memory.Allocator, n int) arrow.RecordBatch {
	r := rand.New(rand.NewSource(1))
	b := array.NewRecordBuilder(mem, benchSchema)
	defer b.Release()
	names := make([]string, 1000)
	for i := range names {
		names[i] = "customer-" + strconv.Itoa(r.Intn(1_000_000)) + "-with-a-somewhat-long-suffix"
	}
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%10 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(r.Intn(1000)))
		}
		b.Field(2).(*array.Float64Builder).Append(r.Float64() * 100)
		b.Field(3).(*array.Decimal128Builder).Append(randDecimal(r, 12))
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32(19000 + r.Intn(365)))
		b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + r.Int63n(1e13)))
		b.Field(6).(*array.StringBuilder).Append(names[r.Intn(len(names))])
		b.Field(7).(*array.StringBuilder).Append(names[r.Intn(50)][:12])
	}
	return b.NewRecordBatch()
}

// BenchmarkCollectorUpdate measures Update over one batch of 8 columns.
func BenchmarkCollectorUpdate(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d/cols=8", n), func(b *testing.B) {
			if testing.Short() && n > 10_000 {
				b.Skip("large size skipped in -short")
			}
			rec := benchRecord(memory.NewGoAllocator(), n)
			defer rec.Release()
			b.ReportAllocs()
			for b.Loop() {
				c, err := NewCollector(benchSchema, nil, Config{})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Update(rec); err != nil {
					b.Fatal(err)
				}
				_ = c.Result()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
		})
	}
}

// BenchmarkParse measures parsing one file's stats JSON with 8 columns (the
// skipping planner's hot path); files/s is the domain metric.
func BenchmarkParse(b *testing.B) {
	rec := benchRecord(memory.NewGoAllocator(), 1000)
	defer rec.Release()
	c, _ := NewCollector(benchSchema, nil, Config{})
	if err := c.Update(rec); err != nil {
		b.Fatal(err)
	}
	js, _ := c.ToJSON()
	b.Run("cols=8", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			if _, err := Parse(js, benchSchema); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
	})
}

// BenchmarkToJSON measures rendering one file's stats with 8 columns.
func BenchmarkToJSON(b *testing.B) {
	rec := benchRecord(memory.NewGoAllocator(), 1000)
	defer rec.Release()
	c, _ := NewCollector(benchSchema, nil, Config{})
	if err := c.Update(rec); err != nil {
		b.Fatal(err)
	}
	res := c.Result()
	b.Run("cols=8", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ToJSON(res, benchSchema); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
	})
}
