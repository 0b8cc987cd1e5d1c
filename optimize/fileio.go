package optimize

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/datafile"
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
	return &inputFile{add: a, path: p, f: f, r: r}, nil
}

func (in *inputFile) close() {
	in.r.Close()
	in.f.Close()
}

// read emits every live row of the file (opened with deletions) with the columns of
// want. The batch passed to emit is released when emit returns; firstRow is the file
// position of the first row read for the batch, before deletions.
func (in *inputFile) read(ctx context.Context, want *arrow.Schema, emit datafile.EmitFunc) error {
	if err := in.r.Read(ctx, want, nil, emit); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("optimize: reading %s: %w", in.path, err)
	}
	return nil
}

// storeRoot returns the absolute location of a store's root when it has one (local
// directories), which deletion vectors stored by absolute path ('p') are resolved
// against; "" otherwise (such deletion vectors then fail to load with an error).
func storeRoot(st storage.Storage) string {
	if r, ok := st.(interface{ Root() string }); ok {
		return r.Root()
	}
	return ""
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

// fileSeq numbers output files within the process (the part-NNNNN of their names).
var fileSeq atomic.Int64

// bloomSpec says which columns of the data schema get Bloom filters.
type bloomSpec struct {
	cols []string // column names (schema spelling)
	idx  []int    // their indices in the data schema
	fpp  float64
}

// bloomSpec returns the plan's Bloom filter columns.
func (p *Plan) bloomSpec() bloomSpec {
	return bloomSpec{cols: p.BloomColumns, idx: p.bloomIdx, fpp: p.BloomFPP}
}

// outFile streams one output data file into storage (a hidden object until finish
// commits it; storage.CreateObject buffers only on stores without streaming) and
// collects its Delta statistics and Bloom filters on the way.
type outFile struct {
	obj      storage.ObjectWriter
	rel      string // storage path (decoded)
	logPath  string // add.path (encoded)
	w        *datafile.Writer
	coll     *stats.Collector
	rows     int64
	bl       bloomSpec
	builders []*bloom.Builder
	// filters holds the file's Bloom index entries after finish stored it.
	filters []bloom.Entry
}

func newOutFile(ctx context.Context, store storage.Storage, encDir, decDir string, sch *arrow.Schema, cfg stats.Config, rowGroupBytes int64, mem memory.Allocator, bl bloomSpec) (*outFile, error) {
	o := &outFile{bl: bl}
	name := fmt.Sprintf("part-%05d-%s.c000.zstd.parquet", fileSeq.Add(1)%100000, uuid.NewString())
	o.rel, o.logPath = name, name
	if decDir != "" {
		o.rel = decDir + "/" + name
		o.logPath = encDir + "/" + name
	}
	opts := datafile.WriterOptions{TargetRowGroupBytes: rowGroupBytes, Allocator: mem}
	if len(bl.cols) > 0 {
		opts.BloomColumns = make(map[string]int64, len(bl.cols))
		opts.BloomFPP = bl.fpp
		for _, c := range bl.cols {
			opts.BloomColumns[c] = 0 // the writer's default sizing per row group
			b, err := bloom.NewBuilder(c, 0, bl.fpp)
			if err != nil {
				return nil, fmt.Errorf("optimize: %w", err)
			}
			o.builders = append(o.builders, b)
		}
	}
	var err error
	if o.obj, err = storage.CreateObject(ctx, store, o.rel); err != nil {
		return nil, fmt.Errorf("optimize: creating data file %s: %w", o.rel, err)
	}
	o.w, err = datafile.NewWriter(o.obj, sch, opts)
	if err != nil {
		o.obj.Abort()
		return nil, fmt.Errorf("optimize: %w", err)
	}
	o.coll, err = stats.NewCollector(sch, nil, cfg)
	if err != nil {
		o.w.Close()
		o.obj.Abort()
		return nil, err
	}
	return o, nil
}

func (o *outFile) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if err := o.coll.Update(rec); err != nil {
		return err
	}
	for i, b := range o.builders {
		if err := b.AddArray(rec.Column(o.bl.idx[i])); err != nil {
			return fmt.Errorf("optimize: bloom filter on %q: %w", o.bl.cols[i], err)
		}
	}
	o.rows += rec.NumRows()
	if err := o.w.Write(rec); err != nil {
		return fmt.Errorf("optimize: %w", err)
	}
	return nil
}

// abort discards the file.
func (o *outFile) abort() {
	o.w.Close()
	_ = o.obj.Abort()
}

// finish closes the file, commits it to storage (put-if-absent semantics) and returns
// its add action (dataChange=false). The returned storage path is for cleanup. A file
// with no rows is discarded (nil add). The file's Bloom filters are left in o.filters,
// keyed by the add's path; the caller writes them to the batch's index file and tags
// the add.
func (o *outFile) finish(ctx context.Context, tags map[string]string, partValues map[string]*string) (*log.Add, string, error) {
	res, err := o.w.Close()
	if err != nil {
		o.obj.Abort()
		return nil, "", fmt.Errorf("optimize: %w", err)
	}
	if o.rows == 0 {
		o.obj.Abort()
		return nil, "", nil
	}
	statsJSON, err := o.coll.ToJSON()
	if err != nil {
		o.obj.Abort()
		return nil, "", err
	}
	if err := ctx.Err(); err != nil {
		o.obj.Abort()
		return nil, "", err
	}
	rel, logPath := o.rel, o.logPath
	for _, b := range o.builders {
		f, err := b.Finish()
		if err != nil {
			o.obj.Abort()
			return nil, "", fmt.Errorf("optimize: bloom filter of %s: %w", rel, err)
		}
		o.filters = append(o.filters, bloom.Entry{DataPath: logPath, Filter: f})
	}
	o.builders = nil
	// L2: the file is complete and durable before any commit references it.
	if err := o.obj.Commit(); err != nil {
		return nil, "", fmt.Errorf("optimize: writing data file %s: %w", rel, err)
	}
	if partValues == nil {
		partValues = map[string]*string{}
	}
	add := &log.Add{
		Path:             logPath,
		PartitionValues:  partValues,
		Size:             res.Size,
		ModificationTime: time.Now().UnixMilli(),
		DataChange:       false,
		Stats:            statsJSON,
		Tags:             tags,
	}
	return add, rel, nil
}

// rowGroupTarget sizes row groups so a full file has about eight of them (in-file
// skipping needs several), within [256 KiB, 64 MiB]: the same rule as the table
// writer, with a lower floor because clustered files are sorted, so even small row
// groups have narrow ranges.
func rowGroupTarget(fileTarget int64) int64 {
	rg := fileTarget / 8
	if rg < 256<<10 {
		rg = 256 << 10
	}
	if rg > 64<<20 {
		rg = 64 << 20
	}
	return rg
}
