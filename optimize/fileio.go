package optimize

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// readBatchRows is the batch size used when reading input files.
const readBatchRows = 32 << 10

// compactBatchRows is the batch size compaction reads its input files in: the
// data-file layer's default, twice readBatchRows (which the clustering paths size
// their memory by). Compaction holds no more than a few batches at a time, and
// fewer, larger batches cost less per row to decode and hand to the encoders.
const compactBatchRows = datafile.DefaultBatchSize

// inputFile opens one input file of the log for reading.
type inputFile struct {
	add     *log.Add
	path    string // storage path (decoded)
	f       storage.File
	r       *datafile.Reader
	deleted *dv.Deleted // its deletion vector (with deletions)
	mem     memory.Allocator
}

// With deletions, the file's deletion vector is loaded and its rows are left out of
// every read (only the footer is needed otherwise).
func openInput(ctx context.Context, store storage.Storage, a *log.Add, mem memory.Allocator, deletions bool) (*inputFile, error) {
	return openInputRows(ctx, store, a, mem, deletions, readBatchRows)
}

// openInputRows is openInput reading batches of up to rows rows.
func openInputRows(ctx context.Context, store storage.Storage, a *log.Add, mem memory.Allocator, deletions bool, rows int64) (*inputFile, error) {
	p, err := a.DecodedPath()
	if err != nil {
		return nil, err
	}
	opts := datafile.ReadOptions{BatchSize: rows, Allocator: mem, Name: p}
	if deletions {
		if opts.Deleted, err = datafile.LoadDeletionVector(ctx, store, a.DeletionVector); err != nil {
			return nil, fmt.Errorf("optimize: deletion vector of %s: %w", p, err)
		}
	}
	f, err := store.Open(ctx, p)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is in the log but missing from storage: %w", ErrCorruptData, p, err)
		}
		return nil, fmt.Errorf("optimize: open %s: %w", p, err)
	}
	r, err := datafile.Open(f, f.Size(), opts)
	if err != nil {
		f.Close()
		if errors.Is(err, dv.ErrInvalidRows) {
			return nil, fmt.Errorf("optimize: %w", err) // the log's vector, not the file, is wrong; err names the file
		}
		if errors.Is(err, datafile.ErrCorruptData) {
			return nil, fmt.Errorf("%w: %w", ErrCorruptData, err) // err names the file
		}
		return nil, fmt.Errorf("optimize: open %s: %w", p, err) // a failed read (datafile.ErrReadFailed), not damage
	}
	return &inputFile{add: a, path: p, f: f, r: r, deleted: opts.Deleted, mem: mem}, nil
}

func (in *inputFile) close() {
	in.r.Close()
	in.f.Close()
}

// read emits every live row of the file (opened with deletions) with the columns of
// want. The batch passed to emit is released when emit returns; firstRow is the file
// position of the first row read for the batch, before deletions.
func (in *inputFile) read(ctx context.Context, want *arrow.Schema, emit datafile.EmitFunc) error {
	if fill := stableRowFiller(want, in.add, in.deleted, in.mem); fill != nil {
		inner := emit
		emit = func(rec arrow.RecordBatch, firstRow int64) error {
			filled, err := fill(rec, firstRow)
			if err != nil {
				return err
			}
			defer filled.Release()
			return inner(filled, firstRow)
		}
	}
	if err := in.r.Read(ctx, want, nil, emit); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, datafile.ErrCorruptData) {
			return fmt.Errorf("%w: %w", ErrCorruptData, err) // err names the file
		}
		return fmt.Errorf("optimize: reading %s: %w", in.path, err)
	}
	return nil
}

// readFile opens, reads and closes one input file.
func readFile(ctx context.Context, store storage.Storage, a *log.Add, want *arrow.Schema, mem memory.Allocator, emit datafile.EmitFunc) error {
	return readFileRows(ctx, store, a, want, mem, readBatchRows, emit)
}

// readFileRows is readFile reading batches of up to rows rows.
func readFileRows(ctx context.Context, store storage.Storage, a *log.Add, want *arrow.Schema, mem memory.Allocator, rows int64, emit datafile.EmitFunc) error {
	in, err := openInputRows(ctx, store, a, mem, true, rows)
	if err != nil {
		return err
	}
	defer in.close()
	return in.read(ctx, want, emit)
}

// readInput reads every live row of a file of the plan with the data columns,
// batches in the plan's logical schema (dataSch) whatever the column mapping.
func (p *Plan) readInput(ctx context.Context, a *log.Add, mem memory.Allocator, emit datafile.EmitFunc) error {
	return p.readInputRows(ctx, a, mem, readBatchRows, emit)
}

// readInputRows is readInput reading batches of up to rows rows.
func (p *Plan) readInputRows(ctx context.Context, a *log.Add, mem memory.Allocator, rows int64, emit datafile.EmitFunc) error {
	if p.readSch == p.dataSch {
		return readFileRows(ctx, p.store, a, p.dataSch, mem, rows, emit)
	}
	return readFileRows(ctx, p.store, a, p.readSch, mem, rows, func(rec arrow.RecordBatch, firstRow int64) error {
		// Same columns; the schema without the mapping metadata the read needed.
		out := array.NewRecordBatch(p.dataSch, rec.Columns(), rec.NumRows())
		defer out.Release()
		return emit(out, firstRow)
	})
}

// newOutput returns the data-file output of one commit batch: the plan's file
// settings (the view's FileSpec: data schema, statistics, compression codec, the
// plan's Bloom columns, dataChange=false).
func (p *Plan) newOutput() (*datafile.Output, error) {
	out, err := datafile.NewOutput(p.store, p.spec)
	if err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	return out, nil
}
