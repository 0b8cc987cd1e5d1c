package interop

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/table"
)

// The peer scan table: 6 columns, about 180 bytes a row on disk (a random 260-letter
// payload keeps it from compressing away), sorted by id, with a Bloom index on the
// unique, randomly ordered name. Knobs:
//
//   - SKIPLAKE_INTEROP_SCAN_ROWS: rows (default 300,000; the figures use 5,000,000);
//   - SKIPLAKE_INTEROP_SCAN_TARGET_MB: target file size (default 250);
//   - SKIPLAKE_INTEROP_SCAN_DIR: keep the table there and reuse it on later runs (the CLI
//     comparisons in BENCHMARKS.md read it); default a temporary directory.
var scanSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "category", Type: arrow.BinaryTypes.String},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

func envInt(b *testing.B, key string, def int) int {
	if s := os.Getenv(key); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("interop: %s=%q: want a positive integer", key, s)
		}
		return n
	}
	return def
}

// scanName is the name of row id: unique, in no order related to id.
func scanName(id int64) string {
	var k [8]byte
	x := uint64(id)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	x ^= x >> 31
	for i := range k {
		k[i] = byte(x >> (8 * i))
	}
	return "cust-" + hex.EncodeToString(k[:])
}

// scanGen generates the rows batch by batch (an array.RecordReader for table.Write).
type scanGen struct {
	rows, next int64
	rng        *rand.Rand
	cur        arrow.RecordBatch
	payload    []byte
}

func (g *scanGen) Retain()                        {}
func (g *scanGen) Release()                       { g.release() }
func (g *scanGen) Schema() *arrow.Schema          { return scanSchema }
func (g *scanGen) RecordBatch() arrow.RecordBatch { return g.cur }
func (g *scanGen) Record() arrow.RecordBatch      { return g.cur }
func (g *scanGen) Err() error                     { return nil }
func (g *scanGen) release() {
	if g.cur != nil {
		g.cur.Release()
		g.cur = nil
	}
}

func (g *scanGen) Next() bool {
	g.release()
	if g.next >= g.rows {
		return false
	}
	n := min(64<<10, g.rows-g.next)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, scanSchema)
	defer bld.Release()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	if g.payload == nil {
		g.payload = make([]byte, 260)
	}
	for i := int64(0); i < n; i++ {
		id := g.next + i
		bld.Field(0).(*array.Int64Builder).Append(id)
		bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id*1000))
		bld.Field(2).(*array.StringBuilder).Append("category-" + strconv.Itoa(int(id*31%20)))
		bld.Field(3).(*array.Float64Builder).Append(float64(g.rng.IntN(1_000_000)) / 100)
		bld.Field(4).(*array.StringBuilder).Append(scanName(id))
		for j := 0; j < len(g.payload); j += 8 {
			x := g.rng.Uint64()
			for k := j; k < min(j+8, len(g.payload)); k++ {
				g.payload[k] = 'a' + byte(x%26)
				x >>= 8
			}
		}
		bld.Field(5).(*array.StringBuilder).Append(string(g.payload))
	}
	g.next += n
	g.cur = bld.NewRecordBatch()
	return true
}

// scanTable opens (or writes) the peer scan table and returns it with its data files.
func scanTable(b *testing.B) (*table.Table, []string, int64) {
	b.Helper()
	rows := int64(envInt(b, "SKIPLAKE_INTEROP_SCAN_ROWS", 300_000))
	target := int64(envInt(b, "SKIPLAKE_INTEROP_SCAN_TARGET_MB", 250)) << 20
	dir := os.Getenv("SKIPLAKE_INTEROP_SCAN_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	tbl, err := table.OpenURL(bg, dir)
	if err != nil {
		tbl, err = table.CreateURL(bg, dir, scanSchema, table.CreateOptions{
			Properties: map[string]string{"skiplake.bloomFilter.columns": "name"}})
		if err != nil {
			b.Fatal(err)
		}
		gen := &scanGen{rows: rows, rng: rand.New(rand.NewPCG(17, 18))}
		if _, err := tbl.Write(bg, gen, table.WriteOptions{TargetFileSize: target}); err != nil {
			b.Fatal(err)
		}
	}
	snap, err := tbl.Snapshot(bg, table.Latest())
	if err != nil {
		b.Fatal(err)
	}
	var paths []string
	var total int64
	for _, a := range snap.Log().Files() {
		p, err := a.DecodedPath()
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, filepath.FromSlash(p)))
		n, _ := a.NumRecords()
		total += n
	}
	if total != rows {
		b.Fatalf("table in %s has %d rows, want %d (remove it or fix SKIPLAKE_INTEROP_SCAN_ROWS)", dir, total, rows)
	}
	return tbl, paths, rows
}

// pqarrowLoop reads every column of files one after the other in one goroutine with
// pqarrow, streaming (64Ki-row batches); limit > 0 stops after that many rows.
func pqarrowLoop(b *testing.B, files []string, limit int64) int64 {
	var rows int64
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := f.Stat()
		pr, err := file.NewParquetReader(io.NewSectionReader(f, 0, st.Size()))
		if err != nil {
			b.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		rr, err := fr.GetRecordReader(bg, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for rr.Next() {
			rows += rr.RecordBatch().NumRows()
			if limit > 0 && rows >= limit {
				break
			}
		}
		rr.Release()
		pr.Close()
		f.Close()
		if limit > 0 && rows >= limit {
			return limit
		}
	}
	return rows
}

// skiplakeRead scans with opts and returns the rows and the sum of column sumCol
// (a float64 column of the output; -1: none).
func skiplakeRead(b *testing.B, tbl *table.Table, sumCol int, opts ...table.ScanOption) (int64, float64) {
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
	var sum float64
	for rd.Next() {
		rec := rd.RecordBatch()
		n += rec.NumRows()
		if sumCol >= 0 {
			for _, v := range rec.Column(sumCol).(*array.Float64).Float64Values() {
				sum += v
			}
		}
	}
	if err := rd.Err(); err != nil {
		b.Fatal(err)
	}
	return n, sum
}

// BenchmarkPeerScan compares skiplake's reader with DuckDB (and, where it applies, a
// one-thread streaming pqarrow loop) on the same Parquet files: a full scan, a
// one-column aggregate, a selective range count, a Bloom point lookup, and LIMIT 10.
// skiplake's full scan hands every row to Go as Arrow batches; DuckDB's aggregates
// every column (min/max/sum), which makes it decode each one but returns one row.
// The DuckDB sub-benchmark of each query reports duckdb/skiplake (above 1: skiplake
// faster).
func BenchmarkPeerScan(b *testing.B) {
	tbl, files, rows := scanTable(b)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = sqlString(f)
	}
	from := "read_parquet([" + strings.Join(quoted, ", ") + "])"
	lo := rows/2 + 17
	sel := fmt.Sprintf("id >= %d AND id < %d", lo, lo+rows/1000)
	key := scanName(rows / 3)
	type query struct {
		name   string
		ours   func(b *testing.B) int64
		pq     func(b *testing.B) int64 // nil: no pqarrow counterpart
		duck   string
		expect int64 // rows returned or counted
	}
	count := func(filter string) func(b *testing.B) int64 {
		return func(b *testing.B) int64 {
			n, _, err := tbl.Count(bg, table.WithFilter(filter))
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	queries := []query{
		{"full", func(b *testing.B) int64 { n, _ := skiplakeRead(b, tbl, -1); return n },
			func(b *testing.B) int64 { return pqarrowLoop(b, files, 0) },
			"SELECT count(*), max(id), max(ts), max(category), sum(amount), max(name), max(payload) FROM " + from, rows},
		{"sum-amount", func(b *testing.B) int64 {
			n, _ := skiplakeRead(b, tbl, 0, table.WithColumns("amount"))
			return n
		}, nil, "SELECT count(*), sum(amount) FROM " + from, rows},
		{"selective-count", count(sel), nil, "SELECT count(*) FROM " + from + " WHERE " + sel, rows / 1000},
		{"bloom-point-count", count("name = " + sqlString(key)), nil,
			"SELECT count(*) FROM " + from + " WHERE name = " + sqlString(key), 1},
		{"limit-10", func(b *testing.B) int64 { n, _ := skiplakeRead(b, tbl, -1, table.WithLimit(10)); return n },
			func(b *testing.B) int64 { return pqarrowLoop(b, files, 10) },
			"SELECT * FROM " + from + " LIMIT 10", 10},
	}
	duck := func(b *testing.B, q query) int64 {
		rs, err := db.Query(q.duck)
		if err != nil {
			b.Fatal(err)
		}
		defer rs.Close()
		cols, _ := rs.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var n int64
		for rs.Next() {
			if err := rs.Scan(ptrs...); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := rs.Err(); err != nil {
			b.Fatal(err)
		}
		if q.name == "limit-10" {
			return n
		}
		return vals[0].(int64)
	}
	// Each sub-benchmark checks its engine's answer against the known one, so the
	// engines agree before their speed means anything, and running one
	// sub-benchmark alone (as the memory figures do) runs only that engine.
	size := fmt.Sprintf("rows=%d/files=%d", rows, len(files))
	for _, q := range queries {
		var oursNs float64
		b.Run("query="+q.name+"/engine=skiplake/"+size, func(b *testing.B) {
			for b.Loop() {
				if n := q.ours(b); n != q.expect {
					b.Fatalf("skiplake returned %d rows, want %d", n, q.expect)
				}
			}
			oursNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		if q.pq != nil {
			b.Run("query="+q.name+"/engine=pqarrow-1thread/"+size, func(b *testing.B) {
				for b.Loop() {
					if n := q.pq(b); n != q.expect {
						b.Fatalf("pqarrow read %d rows, want %d", n, q.expect)
					}
				}
				if oursNs > 0 {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/oursNs, "pqarrow/skiplake")
				}
			})
		}
		b.Run("query="+q.name+"/engine=duckdb/"+size, func(b *testing.B) {
			for b.Loop() {
				if n := duck(b, q); n != q.expect {
					b.Fatalf("duckdb returned %d rows, want %d", n, q.expect)
				}
			}
			if oursNs > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/oursNs, "duckdb/skiplake")
			}
		})
	}
}
