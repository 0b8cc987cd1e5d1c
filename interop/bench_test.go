package interop

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/table"
)

// benchRows is the size of the peer-benchmark table: SKIPLAKE_INTEROP_BENCH_ROWS,
// else 2,000,000 (200,000 under -short).
func benchRows(b *testing.B) int { return envRows(b, "SKIPLAKE_INTEROP_BENCH_ROWS", 2_000_000) }

// envRows reads a benchmark size from the environment variable name (an integer >=
// 100000), else returns def (200,000 under -short).
func envRows(b *testing.B, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100_000 {
			b.Fatalf("interop: %s=%q: want an integer >= 100000", name, s)
		}
		return n
	}
	if testing.Short() {
		return 200_000
	}
	return def
}

const benchFiles = 100

// writeBenchTable writes rows rows clustered (sorted) by k in benchFiles appends of
// one file each, and returns the table and the absolute paths of its data files.
func writeBenchTable(b *testing.B, dir string, rows int) (*table.Table, []string) {
	b.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	tbl, err := table.CreateURL(bg, dir, schema, table.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	per := rows / benchFiles
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for f := range benchFiles {
		bld := array.NewRecordBuilder(mem, schema)
		for i := range per {
			k := int64(f*per + i)
			bld.Field(0).(*array.Int64Builder).Append(k)
			bld.Field(1).(*array.Float64Builder).Append(float64(k%977) * 0.5)
			bld.Field(2).(*array.StringBuilder).Append("customer-" + strconv.FormatInt(k*7919%1000003, 10))
			bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(base + k*1000))
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		_, err := tbl.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			b.Fatalf("append %d: %v", f, err)
		}
	}
	snap, err := tbl.Snapshot(bg, table.Latest())
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	for _, a := range snap.Log().Files() {
		p, err := a.DecodedPath()
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, filepath.FromSlash(p)))
	}
	if len(paths) < benchFiles {
		b.Fatalf("table has %d files, want >= %d", len(paths), benchFiles)
	}
	return tbl, paths
}

// skiplakeCount counts the rows matching filter — with table.Count when cols is empty
// (the filter's columns only, files proven to match entirely answered from the log),
// otherwise by scanning the projection — and returns the fraction of files read.
func skiplakeCount(b *testing.B, tbl *table.Table, filter string, cols []string) (int64, float64) {
	if len(cols) == 0 {
		n, rep, err := tbl.Count(bg, table.WithFilter(filter))
		if err != nil {
			b.Fatal(err)
		}
		r := rep.Files
		read := 0.0
		if r.Total > 0 {
			read = float64(r.Total-r.Skipped) / float64(r.Total)
		}
		return n, read
	}
	opts := []table.ScanOption{table.WithFilter(filter)}
	if len(cols) > 0 {
		opts = append(opts, table.WithColumns(cols...))
	}
	sc, err := tbl.Scan(bg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	rd, err := sc.Read(bg)
	if err != nil {
		b.Fatal(err)
	}
	defer rd.Release()
	var n int64
	for rd.Next() {
		n += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		b.Fatal(err)
	}
	r := rd.Report().Files
	read := 0.0
	if r.Total > 0 {
		read = float64(r.Total-r.Skipped) / float64(r.Total)
	}
	return n, read
}

// duckCount runs q; with star it reads every row and column through database/sql,
// otherwise q returns one count.
func duckCount(b *testing.B, db *sql.DB, q string, star bool) int64 {
	if !star {
		var n int64
		if err := db.QueryRow(q).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	rows, err := db.Query(q)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var k, v, s, ts any
	var n int64
	for rows.Next() {
		if err := rows.Scan(&k, &v, &s, &ts); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkSelectiveFilter compares skiplake's Scan with DuckDB's read_parquet over
// the same files (a table of 2M rows in 100 files clustered by k; see benchRows) for
// a 0.1%-selective range filter on k. query=count projects k and counts rows;
// query=star returns every column of the matching rows. The DuckDB sub-benchmark
// reports duckdb/skiplake, its ns/op over skiplake's (higher: skiplake faster).
func BenchmarkSelectiveFilter(b *testing.B) {
	rows := benchRows(b)
	tbl, files := writeBenchTable(b, b.TempDir(), rows)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	width := int64(rows / 1000)
	lo := int64(rows)/2 + 123
	filter := fmt.Sprintf("k >= %d AND k < %d", lo, lo+width)
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = sqlString(f)
	}
	from := "read_parquet([" + strings.Join(quoted, ", ") + "])"

	for _, query := range []string{"count", "star"} {
		star := query == "star"
		var cols []string
		duckQ := "SELECT count(*) FROM " + from + " WHERE " + filter
		if star {
			duckQ = "SELECT k, v, s, ts FROM " + from + " WHERE " + filter
		}
		// Both engines must agree before their speed means anything.
		if n, _ := skiplakeCount(b, tbl, filter, cols); n != width {
			b.Fatalf("skiplake returned %d rows, want %d", n, width)
		}
		if n := duckCount(b, db, duckQ, star); n != width {
			b.Fatalf("duckdb returned %d rows, want %d", n, width)
		}
		size := fmt.Sprintf("rows=%d/files=%d/query=%s", rows, len(files), query)
		var oursNs float64
		b.Run("engine=skiplake/"+size, func(b *testing.B) {
			b.ReportAllocs()
			var read float64
			for b.Loop() {
				_, read = skiplakeCount(b, tbl, filter, cols)
			}
			oursNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(100*read, "files-read%")
			b.ReportMetric(float64(width), "rows/op")
		})
		b.Run("engine=duckdb/"+size, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				duckCount(b, db, duckQ, star)
			}
			b.ReportMetric(float64(width), "rows/op")
			if oursNs > 0 {
				duckNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(duckNs/oursNs, "duckdb/skiplake")
			}
		})
	}
}
