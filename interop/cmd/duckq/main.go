// Command duckq is the DuckDB side of the one-shot CLI comparisons in BENCHMARKS.md: it
// opens an in-memory DuckDB (the engine the interop tests link), runs one SQL query and
// prints the result rows tab-separated. Timed as a whole process it is what a user pays
// for a DuckDB command line answering the same question as a `skiplake count` or
// `skiplake scan`: the engine's start-up, the query's planning and its reads.
//
//	go run ./cmd/duckq "SELECT count(*) FROM read_parquet('T/*.parquet') WHERE a BETWEEN 1 AND 9"
package main

import (
	"database/sql"
	"fmt"
	"os"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: duckq SQL")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "duckq:", err)
		os.Exit(1)
	}
}

func run(query string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		fmt.Println(strings.Join(parts, "\t"))
	}
	return rows.Err()
}
