package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// inputFile is an open input: a record reader plus what to close afterwards.
type inputFile struct {
	rdr    array.RecordReader
	closer io.Closer
}

func (f *inputFile) Close() {
	f.rdr.Release()
	if f.closer != nil {
		f.closer.Close()
	}
}

// inputFormat picks the reader by file extension.
func inputFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return "parquet", nil
	case ".csv":
		return "csv", nil
	case ".jsonl", ".ndjson", ".json":
		return "jsonl", nil
	}
	return "", fmt.Errorf("%s: unknown input format (want .parquet, .csv or .jsonl)", path)
}

// openInput opens path as Arrow batches. schema, when non-nil (an existing table's),
// types CSV and JSONL columns; otherwise CSV types are inferred and JSONL types are
// inferred from the first lines.
func openInput(ctx context.Context, path string, schema *arrow.Schema) (*inputFile, error) {
	format, err := inputFormat(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	mem := memory.DefaultAllocator
	switch format {
	case "parquet":
		pr, err := file.NewParquetReader(f, file.WithReadProps(parquetInputProps(mem)))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, mem)
		if err != nil {
			pr.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			pr.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &inputFile{rdr: rr, closer: pr}, nil
	case "csv":
		opts := []csv.Option{csv.WithHeader(true), csv.WithChunk(64 << 10), csv.WithAllocator(mem), csv.WithNullReader(true, "", "NULL", "null")}
		var r *csv.Reader
		if schema != nil {
			r = csv.NewReader(f, csvSchema(schema), opts...)
		} else {
			r = csv.NewInferringReader(f, opts...)
			// The inferring reader knows its schema only after the first batch.
			pr, err := newPeekReader(r)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return &inputFile{rdr: pr, closer: f}, nil
		}
		return &inputFile{rdr: r, closer: f}, nil
	default:
		br := bufio.NewReaderSize(f, 1<<20)
		if schema == nil {
			schema, err = inferJSONL(br)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		r := array.NewJSONReader(br, schema, array.WithChunk(64<<10), array.WithAllocator(mem))
		return &inputFile{rdr: r, closer: f}, nil
	}
}

// parquetInputProps reads an input file as a stream: pages are fetched through a
// small buffer instead of each column chunk being loaded whole (a file of one large
// row group otherwise sits in memory compressed and decoded), and large plain pages
// are decoded incrementally. So the memory of an append does not grow with the
// input's row-group size.
func parquetInputProps(mem memory.Allocator) *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	props.PageStreamingEnabled = true
	return props
}

// csvSchema drops metadata the CSV reader does not understand.
func csvSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// inferJSONL peeks at up to 1000 lines and types each key: bool, int64, float64 or
// string (mixed numbers widen to float64; anything else is a string). Key order is the
// order of first appearance.
func inferJSONL(br *bufio.Reader) (*arrow.Schema, error) {
	peek, _ := br.Peek(br.Size())
	var order []string
	kinds := map[string]string{}
	lines := strings.Split(string(peek), "\n")
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last line may be cut by the peek
	}
	if len(lines) > 1000 {
		lines = lines[:1000]
	}
	for n, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		keys, vals, err := objectInOrder(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n+1, err)
		}
		for i, k := range keys {
			if _, ok := kinds[k]; !ok {
				order = append(order, k)
				kinds[k] = ""
			}
			kinds[k] = widen(kinds[k], vals[i])
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no JSON objects to infer a schema from")
	}
	fields := make([]arrow.Field, len(order))
	for i, k := range order {
		var t arrow.DataType = arrow.BinaryTypes.String
		switch kinds[k] {
		case "bool":
			t = arrow.FixedWidthTypes.Boolean
		case "int":
			t = arrow.PrimitiveTypes.Int64
		case "float":
			t = arrow.PrimitiveTypes.Float64
		}
		fields[i] = arrow.Field{Name: k, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

func widen(have string, v any) string {
	var k string
	switch x := v.(type) {
	case nil:
		return have
	case bool:
		k = "bool"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			k = "int"
		} else {
			k = "float"
		}
	default:
		k = "string"
	}
	switch {
	case have == "" || have == k:
		return k
	case (have == "int" && k == "float") || (have == "float" && k == "int"):
		return "float"
	}
	return "string"
}

// objectInOrder decodes one JSON object, keeping its keys in document order.
func objectInOrder(line string) ([]string, []any, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("want a JSON object, found %v", tok)
	}
	var keys []string
	var vals []any
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := kt.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("key %q: %v", k, err)
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// peekReader reads one batch ahead so that Schema is known before the first Next.
type peekReader struct {
	array.RecordReader
	first  arrow.RecordBatch
	schema *arrow.Schema
	cur    arrow.RecordBatch
	ahead  bool
}

func newPeekReader(r array.RecordReader) (*peekReader, error) {
	p := &peekReader{RecordReader: r}
	if r.Next() {
		p.first = r.RecordBatch()
		p.first.Retain()
		p.schema = p.first.Schema()
		p.ahead = true
	} else if err := r.Err(); err != nil {
		return nil, err
	} else {
		return nil, fmt.Errorf("no rows to infer a schema from")
	}
	return p, nil
}

func (p *peekReader) Schema() *arrow.Schema { return p.schema }

func (p *peekReader) Next() bool {
	if p.cur != nil && p.cur == p.first {
		p.first.Release()
		p.first = nil
	}
	if p.ahead {
		p.ahead = false
		p.cur = p.first
		return true
	}
	ok := p.RecordReader.Next()
	if ok {
		p.cur = p.RecordReader.RecordBatch()
	} else {
		p.cur = nil
	}
	return ok
}

func (p *peekReader) RecordBatch() arrow.RecordBatch { return p.cur }
func (p *peekReader) Record() arrow.RecordBatch      { return p.cur }

func (p *peekReader) Release() {
	if p.first != nil {
		p.first.Release()
		p.first = nil
	}
	p.RecordReader.Release()
}
