package input

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
)

// Format is the encoding of an input.
type Format string

// The formats an input can have.
const (
	Parquet Format = "parquet" // a Parquet file, read with its own Arrow types
	CSV     Format = "csv"     // RFC 4180 with a header row, typed by the schema
	JSONL   Format = "jsonl"   // JSON Lines: one object per line, typed by the schema
)

// FormatOf picks the format by the file extension (case-insensitive): .parquet and
// .pq are Parquet, .csv is CSV, .jsonl, .ndjson and .json are JSONL. Any other
// extension is an error matching ErrUnknownFormat.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return Parquet, nil
	case ".csv":
		return CSV, nil
	case ".jsonl", ".ndjson", ".json":
		return JSONL, nil
	}
	return "", fmt.Errorf("%w: %s (want .parquet, .csv or .jsonl)", ErrUnknownFormat, path)
}

// Options tunes the readers. The zero value reads with memory.DefaultAllocator and
// requires every column of the schema to be present or nullable.
type Options struct {
	// Allocator allocates the batches; nil means Go's allocator (memory.DefaultAllocator;
	// a Parquet input then recycles the buffers of the batches the consumer released).
	Allocator memory.Allocator
	// Computed names columns (matched ignoring case) whose values the consumer
	// computes when an input lacks them, as a Delta table does for its generated and
	// identity columns. A CSV input whose header lacks one is read without it; a
	// JSONL input is always read without them (its lines cannot give them: a key
	// naming one is an error); a Parquet input keeps its own columns. Default none.
	Computed []string
	// Declared, used by NewConcat only, is the schema the concatenated reader
	// reports (Schema), when it differs from the schema that types the CSV and
	// JSONL values: for a write that evolves a table, the union of the inputs'
	// columns. Default: the typing schema.
	Declared *arrow.Schema
	// ParquetBatchRows is the rows per batch of a Parquet input (0: 65,536).
	ParquetBatchRows int64
}

func (o Options) allocator() memory.Allocator {
	if o.Allocator == nil {
		return memory.DefaultAllocator
	}
	return o.Allocator
}

// computed returns Computed as a set of lower-case names.
func (o Options) computed() map[string]bool {
	if len(o.Computed) == 0 {
		return nil
	}
	m := make(map[string]bool, len(o.Computed))
	for _, c := range o.Computed {
		m[strings.ToLower(c)] = true
	}
	return m
}

// Source is one input: a file, or a stream read once (standard input).
type Source struct {
	// Name is how errors refer to the input ("orders.csv", "<stdin>").
	Name string
	// Format is how the input is encoded.
	Format Format
	// Path is the file to read. A Parquet source needs it (a Parquet file is read
	// from its end); a CSV or JSONL source reads it unless Body is set.
	Path string
	// Body, when set, opens a CSV or JSONL source's bytes instead of Path.
	Body func() (io.ReadCloser, error)
	// Once says Body can be opened only once (a stream such as standard input), so
	// InferSchema, which reads every source before it is read again for its rows,
	// refuses the source with ErrReadOnce.
	Once bool
}

// File is the source of the file at path, named by its path.
func File(path string, f Format) Source { return Source{Name: path, Format: f, Path: path} }

// Stream is a CSV or JSONL source read once from r (which the readers never close),
// named name in errors.
func Stream(name string, f Format, r io.Reader) Source {
	return Source{Name: name, Format: f, Once: true, Body: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}
}

// open opens a CSV or JSONL source's bytes.
func (s Source) open() (io.ReadCloser, error) {
	if s.Body != nil {
		return s.Body()
	}
	return os.Open(s.Path)
}

// Reader opens the source as batches: CSV and JSONL values are typed by schema (the
// columns of Options.Computed aside, see there); Parquet batches keep the file's own
// types, for the consumer to conform. The caller releases the reader, which closes
// the source.
func (s Source) Reader(ctx context.Context, schema *arrow.Schema, opts Options) (array.RecordReader, error) {
	switch s.Format {
	case Parquet:
		if s.Path == "" {
			return nil, fmt.Errorf("%w: %s", ErrParquetNeedsFile, s.Name)
		}
		return OpenParquet(ctx, s.Path, opts)
	case CSV, JSONL:
	default:
		return nil, fmt.Errorf("%w: %s: %q", ErrUnknownFormat, s.Name, s.Format)
	}
	rc, err := s.open()
	if err != nil {
		return nil, err
	}
	var r array.RecordReader
	if s.Format == CSV {
		r, err = newCSVReader(s.Name, rc, plainSchema(schema), opts.computed(), opts.allocator())
	} else {
		r, err = newJSONLReader(s.Name, rc, plainSchema(withoutColumns(schema, opts.computed())), opts.allocator())
	}
	if err != nil {
		rc.Close()
		return nil, err
	}
	return r, nil
}

// NewCSVReader reads CSV from r as batches of schema; name names the input in
// errors. Columns are matched to the header by name (exactly, else ignoring case); a
// header column the schema lacks is an error before any row is read; a schema column
// the header lacks is NULL in every row (an error for a NOT NULL column), unless
// Options.Computed names it, when it is left out of the batches. Releasing the
// reader closes r when r is an io.Closer.
func NewCSVReader(name string, r io.Reader, schema *arrow.Schema, opts Options) (array.RecordReader, error) {
	return newCSVReader(name, asReadCloser(r), plainSchema(schema), opts.computed(), opts.allocator())
}

// NewJSONLReader reads JSON Lines from r (one object per line, blank lines skipped)
// as batches of schema without the columns of Options.Computed; name names the input
// in errors. Keys are matched to columns by name (exactly, else ignoring case); a key
// the schema lacks is an error naming the line, a missing key is NULL (an error for a
// NOT NULL column). Releasing the reader closes r when r is an io.Closer.
func NewJSONLReader(name string, r io.Reader, schema *arrow.Schema, opts Options) (array.RecordReader, error) {
	return newJSONLReader(name, asReadCloser(r), plainSchema(withoutColumns(schema, opts.computed())), opts.allocator())
}

func asReadCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// OpenParquet opens the local Parquet file at path as a record reader over all its
// columns and row groups in file order, with the file's own Arrow schema (batches of
// 64Ki rows). It reads with the defences of a table scan: a damaged file is an error
// matching datafile's corrupt-data sentinel (table.ErrCorruptData) that names the
// file, never a panic, and column chunks are streamed, so memory does not grow with
// the file's row-group size. Releasing the reader closes the file.
func OpenParquet(ctx context.Context, path string, opts Options) (array.RecordReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %s", ErrNotAFile, path)
	}
	batch := opts.ParquetBatchRows
	if batch <= 0 {
		batch = parquetBatchRows
	}
	mem := opts.Allocator
	var closer io.Closer = f
	if mem == nil {
		// Without an allocator of the caller's, the batches' buffers are recycled:
		// a buffer the consumer releases serves a later batch instead of a fresh
		// allocation each time. Recycled buffers are cleared (pqarrow's list reader
		// assumes zeroed memory: TestParquetInputRecycledBuffers). The pool keeps at
		// most parquetPoolIdle bytes idle and hands them to the process-wide cache
		// when the reader is released.
		pool := datafile.NewBufferPool(datafile.PoolOptions{MaxIdleBytes: parquetPoolIdle, Zero: true})
		mem, closer = pool, closeBoth{f, pool}
	}
	r, err := datafile.OpenStream(ctx, f, st.Size(), datafile.ReadOptions{Name: path, BatchSize: batch, Allocator: mem}, closer)
	if err != nil {
		closer.Close()
		return nil, err
	}
	return r, nil
}

// parquetPoolIdle bounds the free buffers a Parquet input's pool keeps: about two
// batches of a few wide columns.
const parquetPoolIdle = 16 << 20

// closeBoth closes a Parquet input's file and then its buffer pool.
type closeBoth struct {
	f    io.Closer
	pool *datafile.BufferPool
}

func (c closeBoth) Close() error {
	err := c.f.Close()
	c.pool.Close()
	return err
}

// parquetBatchRows is how many rows a Parquet input puts in one batch.
const parquetBatchRows = 64 << 10

// InferSchema infers a new table's schema from CSV and JSONL sources (Parquet sources
// carry their schema and are skipped), reading each completely, so a column first
// seen on the last line is not lost. The rules are in the package documentation. A
// source that can be read only once (Source.Once) is refused with ErrReadOnce when it
// is reached: its rows would be gone when it is read for them.
func InferSchema(sources []Source) (*arrow.Schema, error) {
	inf := newInference()
	for _, s := range sources {
		if s.Format == Parquet {
			continue
		}
		if s.Once {
			return nil, fmt.Errorf("%w: %s", ErrReadOnce, s.Name)
		}
		rc, err := s.open()
		if err != nil {
			return nil, err
		}
		if s.Format == CSV {
			err = inf.inferCSV(s.Name, rc)
		} else {
			err = inf.inferJSONL(s.Name, rc)
		}
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return inf.schema()
}

// withoutColumns returns s without the top-level columns named in drop (lower case).
func withoutColumns(s *arrow.Schema, drop map[string]bool) *arrow.Schema {
	if len(drop) == 0 {
		return s
	}
	var fields []arrow.Field
	for _, f := range s.Fields() {
		if !drop[strings.ToLower(f.Name)] {
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil)
}

// plainSchema drops metadata the text readers do not need (field ids, comments).
func plainSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// Concat streams several sources one after the other as one record reader, so that
// a consumer can write them all in one commit (all or nothing). Sources are opened
// when reached; a source's error ends the stream and is returned by Err, prefixed
// with the source's name ("orders.csv: ...") unless its message names it already
// (CSV and JSONL errors start with name:line or name:line:column). A Concat is not
// safe for concurrent use; Release releases the open source.
type Concat struct {
	refs    atomic.Int64
	ctx     context.Context
	schema  *arrow.Schema
	opts    Options
	sources []Source
	next    int
	cur     array.RecordReader
	curSrc  Source
	err     error
	rows    int64   // rows handed out so far
	starts  []int64 // per source opened: the rows handed out before it
}

// NewConcat reads sources in order: CSV and JSONL values typed by schema, Parquet
// batches in their own types (see Source.Reader). Schema reports opts.Declared when
// set, else schema. ctx bounds the reads of Parquet sources opened later.
func NewConcat(ctx context.Context, sources []Source, schema *arrow.Schema, opts Options) *Concat {
	r := &Concat{ctx: ctx, schema: schema, opts: opts, sources: sources}
	r.refs.Store(1)
	return r
}

// Schema is Options.Declared when set, else the typing schema.
func (r *Concat) Schema() *arrow.Schema {
	if r.opts.Declared != nil {
		return r.opts.Declared
	}
	return r.schema
}

// Next advances to the next batch, opening the next source when one ends.
func (r *Concat) Next() bool {
	for r.err == nil {
		if r.cur == nil {
			if r.next >= len(r.sources) {
				return false
			}
			r.curSrc = r.sources[r.next]
			r.next++
			cur, err := r.curSrc.Reader(r.ctx, r.schema, r.opts)
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

// annotate prefixes err with the current source's name unless it names it already.
func (r *Concat) annotate(err error) error {
	if strings.Contains(err.Error(), r.curSrc.Name) {
		return err
	}
	return fmt.Errorf("%s: %w", r.curSrc.Name, err)
}

// Current names the source being read: "" before the first is opened.
func (r *Concat) Current() string { return r.curSrc.Name }

// Locate returns the source holding row (counting from 0 over every batch handed
// out) and the row's position in it, counting from 1: for an error the consumer
// finds in a row ("row 12 of orders.csv does not fit").
func (r *Concat) Locate(row int64) (name string, pos int64) {
	for i := len(r.starts) - 1; i >= 0; i-- {
		if row >= r.starts[i] {
			return r.sources[i].Name, row - r.starts[i] + 1
		}
	}
	return r.Current(), row + 1
}

// RecordBatch is the current batch, valid until the next call of Next.
func (r *Concat) RecordBatch() arrow.RecordBatch {
	if r.cur == nil {
		return nil
	}
	return r.cur.RecordBatch()
}

// Record is RecordBatch (the older name in array.RecordReader).
func (r *Concat) Record() arrow.RecordBatch { return r.RecordBatch() }

// Err is the error that ended the stream, nil at its normal end.
func (r *Concat) Err() error { return r.err }

// Retain adds a reference.
func (r *Concat) Retain() { r.refs.Add(1) }

// Release drops a reference; the last releases the open source.
func (r *Concat) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
