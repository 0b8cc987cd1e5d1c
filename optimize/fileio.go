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
	add  *log.Add
	path string // storage path (decoded)
	f    storage.File
	r    *datafile.Reader
}

func openInput(ctx context.Context, store storage.Storage, a *log.Add, mem memory.Allocator) (*inputFile, error) {
	p, err := a.DecodedPath()
	if err != nil {
		return nil, err
	}
	f, err := store.Open(ctx, p)
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is in the log but missing from storage: %w", ErrCorruptData, p, err)
		}
		return nil, fmt.Errorf("optimize: open %s: %w", p, err)
	}
	r, err := datafile.Open(f, f.Size(), datafile.ReadOptions{BatchSize: readBatchRows, Allocator: mem})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrCorruptData, p, err)
	}
	return &inputFile{add: a, path: p, f: f, r: r}, nil
}

func (in *inputFile) close() {
	in.r.Close()
	in.f.Close()
}

// read emits every live row of the file (its deletion vector applied) with the
// columns of want. The batch passed to emit is released when emit returns; firstRow
// is the file position of the batch's first row before deletions.
func (in *inputFile) read(ctx context.Context, store storage.Storage, want *arrow.Schema, mem memory.Allocator, emit datafile.EmitFunc) error {
	fn := emit
	if d := in.add.DeletionVector; d != nil {
		desc := dv.Descriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
		if d.Offset != nil {
			desc.Offset = *d.Offset
		}
		del, err := dv.Load(ctx, store.Get, storage.RootOf(store), desc)
		if err != nil {
			return fmt.Errorf("optimize: deletion vector of %s: %w", in.path, err)
		}
		fn = func(rec arrow.RecordBatch, firstRow int64) error {
			kept, err := datafile.ApplyDeletionVector(rec, firstRow, del.Contains, mem)
			if err != nil {
				return err
			}
			defer kept.Release()
			if kept.NumRows() == 0 {
				return nil
			}
			return emit(kept, firstRow)
		}
	}
	if err := in.r.Read(ctx, want, nil, fn); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("optimize: reading %s: %w", in.path, err)
	}
	return nil
}

// readFile opens, reads and closes one input file.
func readFile(ctx context.Context, store storage.Storage, a *log.Add, want *arrow.Schema, mem memory.Allocator, emit datafile.EmitFunc) error {
	in, err := openInput(ctx, store, a, mem)
	if err != nil {
		return err
	}
	defer in.close()
	return in.read(ctx, store, want, mem, emit)
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
