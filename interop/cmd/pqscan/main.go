// Command pqscan is the plain-pqarrow reference of the scan benchmarks in
// BENCHMARKS.md: it reads Parquet files one after the other in one goroutine, every
// column, streaming 64Ki-row batches, and prints the rows read. With -limit N it stops
// after N rows (the time-to-first-rows reference for `skiplake scan --limit`).
//
//	go run ./cmd/pqscan [-limit N] FILE...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func main() {
	limit := flag.Int64("limit", 0, "stop after N rows (0: read everything)")
	flag.Parse()
	rows, err := scan(flag.Args(), *limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pqscan:", err)
		os.Exit(1)
	}
	fmt.Println(rows)
}

func scan(paths []string, limit int64) (int64, error) {
	var rows int64
	for _, p := range paths {
		n, err := scanFile(p, limit-rows)
		rows += n
		if err != nil {
			return rows, fmt.Errorf("%s: %w", p, err)
		}
		if limit > 0 && rows >= limit {
			break
		}
	}
	return rows, nil
}

func scanFile(path string, limit int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	pr, err := file.NewParquetReader(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
		if limit > 0 && rows >= limit {
			return limit, nil
		}
	}
	return rows, rr.Err()
}
