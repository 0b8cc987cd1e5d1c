package input_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/input"
)

// Reading CSV typed by a schema: NULL spellings become nulls, and a value that does
// not fit its column is an error at file:line:column.
func ExampleNewCSVReader() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	data := "id,city,amount\n1,Oslo,2.5\n2,,NULL\n3,\"\",7\n"
	r, err := input.NewCSVReader("orders.csv", strings.NewReader(data), schema, input.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Release()
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			fmt.Println(rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i), rec.Column(2).ValueStr(i))
		}
	}

	bad, _ := input.NewCSVReader("bad.csv", strings.NewReader("id,city,amount\n1,Oslo,2.5\n31.5,Rome,1\n"), schema, input.Options{})
	defer bad.Release()
	for bad.Next() {
	}
	fmt.Println(bad.Err())
	// Output:
	// 1 Oslo 2.5
	// 2 (null) (null)
	// 3  7
	// bad.csv:3:1: column "id": cannot read "31.5" as bigint
}

// Inferring a schema from a CSV and a JSONL file, then reading both as one stream.
// zip keeps its leading zero (a string); day is a date in the CSV file but a JSON
// string in the JSONL file, so it widens to string; amount, seen only in the JSONL
// file, is a nullable double.
func ExampleInferSchema() {
	dir, _ := os.MkdirTemp("", "input-example")
	defer os.RemoveAll(dir)
	day1 := filepath.Join(dir, "day1.csv")
	day2 := filepath.Join(dir, "day2.jsonl")
	os.WriteFile(day1, []byte("id,zip,day\n1,02134,2026-03-01\n2,10115,2026-03-01\n"), 0o644)
	os.WriteFile(day2, []byte(`{"id":3,"zip":"75001","day":"2026-03-02","amount":9.5}`+"\n"), 0o644)

	sources := []input.Source{input.File(day1, input.CSV), input.File(day2, input.JSONL)}
	schema, err := input.InferSchema(sources)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range schema.Fields() {
		fmt.Println(f.Name, f.Type)
	}
	r := input.NewConcat(context.Background(), sources, schema, input.Options{})
	defer r.Release()
	for r.Next() {
		fmt.Println(filepath.Base(r.Current()), "gave", r.RecordBatch().NumRows(), "rows")
	}
	fmt.Println("err:", r.Err())
	// Output:
	// id int64
	// zip utf8
	// day utf8
	// amount float64
	// day1.csv gave 2 rows
	// day2.jsonl gave 1 rows
	// err: <nil>
}
