// Quickstart is a first program with package table: it creates a partitioned Delta
// table in a temporary directory, appends generated data in several commits, scans it
// with a projection and a filter, and prints the history. Run it with:
//
//	go run ./examples/quickstart        # keeps the table and prints CLI commands to explore it
//	go run ./examples/quickstart -rm    # removes the table at the end (CI)
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/table"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "event_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "country", Type: arrow.BinaryTypes.String},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

func run() error {
	remove := flag.Bool("rm", false, "remove the table at the end instead of keeping it")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "skiplake-quickstart-")
	if err != nil {
		return err
	}
	if *remove {
		defer os.RemoveAll(dir)
	}

	t, err := table.CreateURL(ctx, dir, schema, table.CreateOptions{PartitionColumns: []string{"country"}})
	if err != nil {
		return err
	}
	fmt.Println("created table at", dir)

	rng := rand.New(rand.NewPCG(1, 2))
	countries := []string{"DE", "FR", "JP", "US"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var id int64
	for commit := 0; commit < 3; commit++ {
		rec := generate(rng, countries, start, &id, 10_000)
		res, err := t.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			return err
		}
		fmt.Printf("append %d: version %d, %d rows in %d files\n", commit+1, res.Version, res.RowsWritten, res.FilesAdded)
	}

	// Plan (skipping decides the files), then read the rows the plan selects.
	sc, err := t.Scan(ctx, table.WithColumns("event_id", "amount"), table.WithFilter("country = 'JP' AND amount > 990"))
	if err != nil {
		return err
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		return err
	}
	defer rd.Release()
	var rows int64
	for rd.Next() {
		rows += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		return err
	}
	rep := rd.Report()
	fmt.Printf("scan country = 'JP' AND amount > 990: %d rows; files total %d, skipped %d\n", rows, rep.Files.Total, rep.Files.Skipped)

	hist, err := t.History(ctx, 0)
	if err != nil {
		return err
	}
	fmt.Println("history:")
	for _, h := range hist {
		fmt.Printf("  v%d %s %s\n", h.Version, h.Operation, h.OperationParameters["mode"])
	}
	if *remove {
		fmt.Println("removed", dir)
		return nil
	}
	fmt.Printf(`the table stays at %[1]s; explore it with the CLI:
  go run ./cmd/skiplake describe %[1]s
  go run ./cmd/skiplake explain %[1]s --filter "country = 'JP' AND amount > 990"
  go run ./cmd/skiplake scan %[1]s --filter "country = 'JP' AND amount > 990" --limit 5
remove it with: rm -r %[1]s
`, dir)
	return nil
}

func generate(rng *rand.Rand, countries []string, start time.Time, id *int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		*id++
		b.Field(0).(*array.Int64Builder).Append(*id)
		b.Field(1).(*array.StringBuilder).Append(countries[rng.IntN(len(countries))])
		if rng.IntN(20) == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(rng.IntN(100_000)) / 100)
		}
		at := start.Add(time.Duration(*id) * time.Second)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
	}
	return b.NewRecordBatch()
}
