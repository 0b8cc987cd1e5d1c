package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/table"
)

// input is one input named on the command line: a file, or "-" for standard input.
type input struct {
	path   string
	format string // parquet, csv or jsonl
}

// name is how messages refer to the input.
func (in input) name() string {
	if in.path == "-" {
		return "<stdin>"
	}
	return in.path
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
	return "", fmt.Errorf("%s: unknown input format (want .parquet, .csv or .jsonl, or give --input-format)", path)
}

// parseInputs turns the FILE arguments into inputs: the format is --input-format when
// given, else the file extension. "-" (standard input, at most once) needs
// --input-format and cannot be Parquet (a Parquet file is read from its end).
func parseInputs(args []string, format string) ([]input, error) {
	switch format {
	case "", "parquet", "csv", "jsonl":
	default:
		return nil, usagef("--input-format %q: want parquet, csv or jsonl", format)
	}
	var out []input
	stdin := false
	for _, a := range args {
		if a == "-" {
			if stdin {
				return nil, usagef("standard input (-) can be read only once")
			}
			stdin = true
			if format == "" {
				return nil, usagef("reading standard input (-) needs --input-format csv or jsonl")
			}
			if format == "parquet" {
				return nil, usagef("Parquet cannot be read from standard input; give a file")
			}
			out = append(out, input{path: a, format: format})
			continue
		}
		f := format
		if f == "" {
			var err error
			if f, err = inputFormat(a); err != nil {
				return nil, usagef("%v", err)
			}
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not an input file", a)
		}
		out = append(out, input{path: a, format: f})
	}
	return out, nil
}

// open opens a CSV or JSONL input's bytes.
func (in input) open(e *env) (io.ReadCloser, error) {
	if in.path == "-" {
		return io.NopCloser(e.stdin), nil
	}
	return os.Open(in.path)
}

// reader opens the input as batches of schema (CSV and JSONL are typed by it;
// Parquet batches keep the file's types and are conformed by the table's writer).
func (in input) reader(ctx context.Context, e *env, schema *arrow.Schema) (array.RecordReader, error) {
	mem := memory.DefaultAllocator
	if in.format == "parquet" {
		return openParquet(ctx, in.path, mem)
	}
	rc, err := in.open(e)
	if err != nil {
		return nil, err
	}
	var r array.RecordReader
	if in.format == "csv" {
		r, err = newCSVReader(in.name(), rc, csvSchema(schema), mem)
	} else {
		r, err = newJSONLReader(in.name(), rc, csvSchema(schema), mem)
	}
	if err != nil {
		rc.Close()
		return nil, err
	}
	return r, nil
}

// inferSchema infers a new table's schema from every CSV and JSONL input, reading
// each completely (files are read twice: now and when writing), so a column first
// seen on the last line is not lost. Standard input cannot be read twice: it needs
// --schema.
func inferSchema(e *env, inputs []input) (*arrow.Schema, error) {
	inf := newInference()
	for _, in := range inputs {
		if in.path == "-" {
			return nil, usagef("creating a table from standard input needs --schema (the input cannot be read twice to infer it)")
		}
		rc, err := in.open(e)
		if err != nil {
			return nil, err
		}
		if in.format == "csv" {
			err = inf.inferCSV(in.name(), rc)
		} else {
			err = inf.inferJSONL(in.name(), rc)
		}
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return inf.schema()
}

// parseSchemaFlag reads --schema: a Delta (Spark) JSON schema {"type":"struct",...}
// or SQL column definitions ("id bigint, ts timestamp"); "@FILE" reads either from a
// file.
func parseSchemaFlag(s string) (*arrow.Schema, error) {
	text := s
	if name, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("--schema: %w", err)
		}
		text = string(b)
	}
	schema, err := table.ParseSchema(text)
	if err != nil {
		return nil, usagef("--schema: %v", err)
	}
	return schema, nil
}

// csvSchema drops metadata the text readers do not need.
func csvSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// openParquet opens a Parquet input as a record reader (the file is closed when the
// reader is released). It reads through the library's protected reader: a damaged
// file is an error naming the file, never a panic, and pages are streamed so memory
// does not grow with the input's row-group size.
func openParquet(ctx context.Context, path string, mem memory.Allocator) (array.RecordReader, error) {
	return table.OpenParquetFile(ctx, path, 64<<10, mem)
}

// concatReader streams several inputs one after the other as one record reader, so
// that one command writes every input in one commit (all or nothing). Inputs are
// opened when reached; an input's error ends the stream and is returned by Err,
// prefixed with the input's name when the message does not carry it already.
type concatReader struct {
	refs   atomic.Int64
	ctx    context.Context
	e      *env
	schema *arrow.Schema // types the CSV and JSONL values
	// declared, when set, is the schema the inputs declare (Schema): with
	// --merge-schema the union of their columns.
	declared *arrow.Schema
	inputs   []input
	next     int
	cur      array.RecordReader
	curIn    input
	err      error
	rows     int64   // rows handed out so far
	starts   []int64 // per input opened: the rows handed out before it
}

func newConcatReader(ctx context.Context, e *env, schema *arrow.Schema, inputs []input) *concatReader {
	r := &concatReader{ctx: ctx, e: e, schema: schema, inputs: inputs}
	r.refs.Store(1)
	return r
}

func (r *concatReader) Schema() *arrow.Schema {
	if r.declared != nil {
		return r.declared
	}
	return r.schema
}

func (r *concatReader) Next() bool {
	for r.err == nil {
		if r.cur == nil {
			if r.next >= len(r.inputs) {
				return false
			}
			r.curIn = r.inputs[r.next]
			r.next++
			cur, err := r.curIn.reader(r.ctx, r.e, r.schema)
			if err != nil {
				r.err = r.annotate(err)
				return false
			}
			r.cur = cur
			r.starts = append(r.starts, r.rows)
		}
		if r.cur.Next() {
			r.rows += r.cur.RecordBatch().NumRows()
			return true
		}
		if err := r.cur.Err(); err != nil {
			r.err = r.annotate(err)
			return false
		}
		r.cur.Release()
		r.cur = nil
	}
	return false
}

// annotate prefixes err with the current input's name unless it names it already.
func (r *concatReader) annotate(err error) error {
	if strings.Contains(err.Error(), r.curIn.name()) {
		return err
	}
	return fmt.Errorf("%s: %w", r.curIn.name(), err)
}

// current names the input being read (for errors raised by the table's writer).
func (r *concatReader) current() string { return r.curIn.name() }

// explain prefixes an error the table's writer returned about the input with the
// input it concerns: an input's own error as it is; a value that does not fit its
// column, or a row outside --replace-where, with the input and the row's line in it
// (its position among the input's rows, counting from 1); other schema errors with
// the input being read.
func (r *concatReader) explain(err error) error {
	if r.err != nil {
		return r.err
	}
	var ce *table.CastError
	var rw *table.ReplaceWhereError
	switch {
	case errors.As(err, &ce):
		name, row := r.locate(ce.Row)
		return fmt.Errorf("%s: row %d: column %q: the value %s (%s) does not fit %s: %s: %w", name, row, ce.Column, ce.Value, ce.From, ce.To, ce.Reason, table.ErrValueDoesNotFit)
	case errors.As(err, &rw):
		name, row := r.locate(rw.Row)
		return fmt.Errorf("%s: row %d (%s) does not satisfy --replace-where %q; nothing was written: %w", name, row, rw.Values, rw.Predicate, table.ErrReplaceWhereMismatch)
	case errors.Is(err, table.ErrSchemaMismatch) || errors.Is(err, table.ErrNullInNonNullable):
		if r.cur != nil || r.next > 0 {
			return fmt.Errorf("%s: %w", r.current(), err)
		}
	}
	return err
}

// locate returns the input holding row (counting from 0 over all inputs) and the
// row's position in it (counting from 1).
func (r *concatReader) locate(row int64) (string, int64) {
	for i := len(r.starts) - 1; i >= 0; i-- {
		if row >= r.starts[i] {
			return r.inputs[i].name(), row - r.starts[i] + 1
		}
	}
	return r.current(), row + 1
}

func (r *concatReader) RecordBatch() arrow.RecordBatch {
	if r.cur == nil {
		return nil
	}
	return r.cur.RecordBatch()
}

func (r *concatReader) Record() arrow.RecordBatch { return r.RecordBatch() }
func (r *concatReader) Err() error                { return r.err }
func (r *concatReader) Retain()                   { r.refs.Add(1) }

func (r *concatReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
