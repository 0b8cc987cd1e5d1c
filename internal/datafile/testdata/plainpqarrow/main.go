// Command plainpqarrow writes an Arrow IPC file as Parquet with arrow-go's pqarrow and
// nothing of skiplake in the process: the reference TestOtherWritersKeepArrowGoZstd
// compares a pqarrow writer inside a process that imports skiplake against.
//
//	go run ./internal/datafile/testdata/plainpqarrow -level 3 IN.arrow OUT.parquet
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func main() {
	level := flag.Int("level", compress.DefaultCompressionLevel, "zstd level")
	pageBytes := flag.Int64("page-bytes", 8<<20, "data page size")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: plainpqarrow [-level N] [-page-bytes N] IN.arrow OUT.parquet")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *level, *pageBytes); err != nil {
		fmt.Fprintln(os.Stderr, "plainpqarrow:", err)
		os.Exit(1)
	}
}

func run(in, out string, level int, pageBytes int64) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	rd, err := ipc.NewFileReader(f)
	if err != nil {
		return err
	}
	defer rd.Close()
	var recs []arrow.RecordBatch
	for i := 0; i < rd.NumRecords(); i++ {
		rec, err := rd.RecordBatch(i)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	tbl := array.NewTableFromRecords(rd.Schema(), recs)
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, tbl.NumRows(), writerProperties(level, pageBytes), pqarrow.DefaultWriterProps()); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// writerProperties are the properties both sides of the comparison write with (the
// test has the same function: otherWriterProperties).
func writerProperties(level int, pageBytes int64) *parquet.WriterProperties {
	return parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(level),
		parquet.WithDataPageSize(pageBytes), parquet.WithDictionaryDefault(false), parquet.WithCreatedBy("plainpqarrow"))
}
