package optimize

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
)

// readBatchRows is the batch size used when reading input files.
const readBatchRows = 32 << 10

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
	p, err := a.DecodedPath()
	if err != nil {
		return nil, err
	}
	opts := datafile.ReadOptions{BatchSize: readBatchRows, Allocator: mem}
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
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptData, p, err)
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
		return fmt.Errorf("optimize: reading %s: %w", in.path, err)
	}
	return nil
}

// readFile opens, reads and closes one input file.
func readFile(ctx context.Context, store storage.Storage, a *log.Add, want *arrow.Schema, mem memory.Allocator, emit datafile.EmitFunc) error {
	in, err := openInput(ctx, store, a, mem, true)
	if err != nil {
		return err
	}
	defer in.close()
	return in.read(ctx, want, emit)
}

// newOutput returns the data-file output of one commit batch: files of the data
// schema, statistics as the table's properties say, the plan's Bloom columns,
// dataChange=false.
func (p *Plan) newOutput(statsCfg stats.Config) (*datafile.Output, error) {
	out, err := datafile.NewOutput(p.store, datafile.Spec{
		Schema:         p.dataSch,
		TargetFileSize: p.opts.TargetFileSize,
		Stats:          statsCfg,
		BloomColumns:   p.BloomColumns,
		BloomFPP:       p.BloomFPP,
		DataChange:     false,
		Parallelism:    p.opts.Parallelism,
		Allocator:      p.opts.Allocator,
	})
	if err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	return out, nil
}
