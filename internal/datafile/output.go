package datafile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// DefaultTargetFileSize is the size a data file aims for when the table has no
// delta.targetFileSize property: 128 MiB.
const DefaultTargetFileSize = log.DefaultTargetFileSize

// RowGroupTarget sizes the row groups of a file of fileTarget bytes so that a full
// file has about eight of them (in-file skipping needs several), within
// [256 KiB, 64 MiB]: below 256 KiB the footer and page index grow out of proportion,
// above 64 MiB a row group is too coarse to skip.
func RowGroupTarget(fileTarget int64) int64 {
	return min(max(fileTarget/8, 256<<10), 64<<20)
}

// Spec is what every data file of one commit shares. Callers build it from the
// table (schema, column mapping, properties) and their own options; the zero value of
// each optional field is the documented default.
type Spec struct {
	// Schema is the Arrow schema of the batches written: the table's data columns
	// (partition columns left out), logical names, in table order. Required.
	Schema *arrow.Schema
	// FileSchema is Schema as the files store it (default Schema): the same fields,
	// in the same order and of the same types, under the names the files use — under
	// column mapping the physical names, with the field ids as Parquet field ids
	// (PARQUET:field_id metadata). Statistics and Bloom filters are keyed by its
	// names. The table's resolved view (package tableview) supplies it; this package
	// never maps names itself.
	FileSchema *arrow.Schema
	// TargetFileSize is the size at which Roller closes a file (default
	// DefaultTargetFileSize). Files end within a few percent above it, the last file
	// of a roll holding the remainder.
	TargetFileSize int64
	// RowGroupBytes is the compressed row-group size (default
	// RowGroupTarget(TargetFileSize)).
	RowGroupBytes int64
	// Stats selects the columns that get Delta statistics, by FileSchema's names.
	Stats stats.Config
	// BloomColumns are data columns (Schema spelling) that get a Bloom filter per
	// file in skiplake's index and a split-block filter per row group in the Parquet
	// file.
	BloomColumns []string
	// BloomFPP is the filters' false-positive rate (default bloom.DefaultFPP).
	BloomFPP float64
	// BloomNDV, when positive, is the distinct values per row group every Parquet
	// filter is sized for; 0 (the default) sizes each filter to the distinct values
	// of its own row group within BloomFPP (see "Bloom filter sizing" on Writer).
	BloomNDV int64
	// Codec and CompressionLevel choose the compression (default zstd level 3).
	Codec            Codec
	CompressionLevel int
	// DataChange is the dataChange flag of the add actions (true for writes that
	// add data, false for OPTIMIZE).
	DataChange bool
	// Parallelism bounds the columns of one file encoded at once (default
	// GOMAXPROCS; a caller writing several files at once passes less).
	Parallelism int
	// Allocator allocates Arrow and Parquet buffers (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Now is the clock of the add actions' modificationTime (default time.Now).
	Now func() time.Time
	// NamePrefix starts the files' names (default "part": part-NNNNN-<uuid>.c000.
	// <codec>.parquet); change data files are named "cdc" (Delta Spark's names).
	NamePrefix string
}

// FileOptions says where a file goes, what its add action carries besides
// statistics, and how it is encoded when that differs from the Spec.
type FileOptions struct {
	// Dir is the storage directory (decoded; "" for the table root).
	Dir string
	// LogDir is Dir as add.path spells it (percent-encoded); "" derives it from Dir.
	// OPTIMIZE passes the spelling of the files it rewrites.
	LogDir string
	// PartitionValues are the add's partitionValues (physical column names).
	PartitionValues map[string]*string
	// Tags are the add's tags (copied).
	Tags map[string]string
	// ClusteringProvider is the add's clusteringProvider ("" for none): a rewrite
	// that keeps a clustered file's rows in their order keeps its provider.
	ClusteringProvider string
	// Parallelism overrides Spec.Parallelism for this file (0: the Spec's). A caller
	// writing several files at once gives each a share.
	Parallelism int
	// TargetFileSize overrides Spec.TargetFileSize for a Roller's files (0: the
	// Spec's). OPTIMIZE cuts a small liquid clustering cube into smaller files.
	TargetFileSize int64
	// RowGroupBytes overrides Spec.RowGroupBytes for this file (0: the Spec's). A
	// writer that keeps another file's row groups — ending each where the other's
	// ended, with File.FlushRowGroup — sets it above any of them, so that the
	// writer never ends one earlier by size.
	RowGroupBytes int64
	// Probe, when set, is where the file's encoders start from: its dictionary
	// choices and its size model (a copy each), instead of what the Output's
	// earlier files learned. Files written concurrently from one Probe therefore cut
	// their row groups from their own data only, whatever order the others progress
	// in (D8).
	Probe *Probe
}

// Output writes the data files of one commit through storage's streaming Creator,
// collects their add actions and Bloom filters, and remembers everything it stored
// so that Discard can remove it when the commit does not happen. Every writer of
// data files (table writes, OPTIMIZE, the skipping benchmark) goes through it.
//
// It is safe for concurrent use; each File and Roller it makes is used by one
// goroutine at a time.
type Output struct {
	store storage.Storage
	spec  Spec
	file  *arrow.Schema // the files' schema: physical names and field ids
	bloom []bloomColumn // Bloom-indexed columns
	pcols []string      // physical names, for Stats translation and tags
	opts  WriterOptions // per-file writer options (DictionaryColumns filled in later)
	mu    sync.Mutex
	seq   int
	dict  map[string]bool // dictionary choices of the first file, reused by the next
	// stored lists every object stored (data files, index), for Discard.
	stored  []string
	adds    []*log.Add
	filters []bloom.Entry
	// closedBytes and closedRows total the files closed so far, closedBytes without
	// each file's estimated overhead (for Roller's bytes-per-row estimate: the overhead
	// is counted once per file, by EstimatedSize).
	closedBytes, closedRows int64
	stitchState             // what Stitch learns once (stitch.go)
}

type bloomColumn struct {
	idx  int    // index in Spec.Schema
	phys string // physical name: the index's and the Parquet filter's column
}

// NewOutput validates spec and returns an Output writing into store.
func NewOutput(store storage.Storage, spec Spec) (*Output, error) {
	if store == nil || spec.Schema == nil {
		return nil, fmt.Errorf("%w: nil store or schema", ErrInvalidArgument)
	}
	var errs []error
	if spec.TargetFileSize < 0 || spec.RowGroupBytes < 0 || spec.BloomNDV < 0 || spec.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("%w: negative TargetFileSize, RowGroupBytes, BloomNDV or Parallelism", ErrInvalidArgument))
	}
	if spec.BloomFPP != 0 && !(spec.BloomFPP >= bloom.MinFPP && spec.BloomFPP <= bloom.MaxFPP) {
		errs = append(errs, fmt.Errorf("%w: BloomFPP %v not in [%g, %g]", ErrInvalidArgument, spec.BloomFPP, bloom.MinFPP, bloom.MaxFPP))
	}
	if err := checkFileSchema(spec.Schema, spec.FileSchema); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if spec.TargetFileSize == 0 {
		spec.TargetFileSize = DefaultTargetFileSize
	}
	if spec.RowGroupBytes == 0 {
		spec.RowGroupBytes = RowGroupTarget(spec.TargetFileSize)
	}
	if spec.BloomFPP == 0 {
		spec.BloomFPP = bloom.DefaultFPP
	}
	if spec.Allocator == nil {
		spec.Allocator = memory.DefaultAllocator
	}
	if spec.Now == nil {
		spec.Now = time.Now
	}
	if spec.NamePrefix == "" {
		spec.NamePrefix = "part"
	}
	o := &Output{store: store, spec: spec, file: spec.Schema}
	if spec.FileSchema != nil {
		o.file = spec.FileSchema
	}
	for _, f := range o.file.Fields() {
		o.pcols = append(o.pcols, f.Name)
	}
	o.opts = WriterOptions{Codec: spec.Codec, CompressionLevel: spec.CompressionLevel, TargetRowGroupBytes: spec.RowGroupBytes,
		BloomFPP: spec.BloomFPP, Parallelism: spec.Parallelism, Allocator: spec.Allocator, sizes: newSizeModel(o.file.NumFields())}
	for _, c := range spec.BloomColumns {
		idx := fieldIndex(spec.Schema, c)
		if idx < 0 {
			return nil, fmt.Errorf("%w: Bloom column %q is not a data column", ErrInvalidArgument, c)
		}
		if o.opts.BloomColumns == nil {
			o.opts.BloomColumns = map[string]int64{}
		}
		o.bloom = append(o.bloom, bloomColumn{idx: idx, phys: o.pcols[idx]})
		o.opts.BloomColumns[o.pcols[idx]] = spec.BloomNDV
	}
	// Fail now on a bad statistics configuration rather than at the first file.
	if _, err := stats.NewCollector(o.file, nil, o.spec.Stats); err != nil {
		return nil, err
	}
	return o, nil
}

// FileSchema is the schema of the Parquet files: physical names and field ids under
// column mapping, else Spec.Schema.
func (o *Output) FileSchema() *arrow.Schema { return o.file }

// TargetFileSize is the file size Roller aims for.
func (o *Output) TargetFileSize() int64 { return o.spec.TargetFileSize }

// RowGroupBytes is the compressed size at which the files' row groups end
// (Spec.RowGroupBytes or its default).
func (o *Output) RowGroupBytes() int64 { return o.spec.RowGroupBytes }

// fieldIndex finds name among the top-level fields (exactly, else case-insensitively).
func fieldIndex(s *arrow.Schema, name string) int {
	if ix := s.FieldIndices(name); len(ix) > 0 {
		return ix[0]
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// Summary collects what the log and the Bloom index say about one file's rows:
// Delta statistics and one Bloom filter per Bloom column. File keeps one; the
// skipping benchmark, which lays out files without always encoding them, uses it
// alone. Not safe for concurrent use.
type Summary struct {
	o        *Output
	coll     *stats.Collector
	builders []*bloom.Builder
}

// NewSummary returns an empty Summary for files of this Output.
func (o *Output) NewSummary() (*Summary, error) {
	coll, err := stats.NewCollector(o.file, nil, o.spec.Stats)
	if err != nil {
		return nil, err
	}
	sm := &Summary{o: o, coll: coll}
	for _, b := range o.bloom {
		bb, err := bloom.NewBuilder(b.phys, 0, o.spec.BloomFPP)
		if err != nil {
			return nil, fmt.Errorf("datafile: %w", err)
		}
		sm.builders = append(sm.builders, bb)
	}
	return sm, nil
}

// Update adds rec, a batch of Spec.Schema (logical names); it is not retained.
func (sm *Summary) Update(rec arrow.RecordBatch) error {
	phys, err := sm.o.physical(rec)
	if err != nil {
		return err
	}
	defer phys.Release()
	return sm.update(phys)
}

// update adds a batch of the file schema.
func (sm *Summary) update(phys arrow.RecordBatch) error {
	if err := sm.coll.Update(phys); err != nil {
		return err
	}
	for i, b := range sm.builders {
		if err := b.AddArray(phys.Column(sm.o.bloom[i].idx)); err != nil {
			return fmt.Errorf("datafile: Bloom filter on %q: %w", sm.o.bloom[i].phys, err)
		}
	}
	return nil
}

// Stats returns the statistics of the rows added so far (keyed by physical names).
func (sm *Summary) Stats() *stats.File { return sm.coll.Result() }

// Filters builds the Bloom filters of the rows added so far, one per Bloom column in
// Spec.BloomColumns order, as index entries for dataPath. The Summary takes no more
// rows afterwards.
func (sm *Summary) Filters(dataPath string) ([]bloom.Entry, error) {
	out := make([]bloom.Entry, 0, len(sm.builders))
	for _, b := range sm.builders {
		flt, err := b.Finish()
		if err != nil {
			return nil, fmt.Errorf("datafile: Bloom filter of %s: %w", dataPath, err)
		}
		out = append(out, bloom.Entry{DataPath: dataPath, Filter: flt})
	}
	sm.builders = nil
	return out, nil
}

// physical relabels a batch of Spec.Schema with the file schema (a new reference to
// rec when they are the same).
func (o *Output) physical(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if !rec.Schema().Equal(o.spec.Schema) {
		return nil, fmt.Errorf("%w: batch schema %s differs from the data schema %s", ErrInvalidArgument, rec.Schema(), o.spec.Schema)
	}
	if o.file == o.spec.Schema {
		rec.Retain()
		return rec, nil
	}
	return retypeRecord(rec, o.file)
}

// File is one data file being written: Parquet into a hidden storage object,
// statistics and Bloom filters alongside. Write any number of batches, then Close
// (or Abort). Not safe for concurrent use.
type File struct {
	o       *Output
	place   FileOptions
	rel     string // storage path (decoded)
	logPath string // add.path (encoded)
	obj     storage.ObjectWriter
	w       *Writer
	sum     *Summary
	// sumIn feeds the goroutine that updates sum (started by the first Write);
	// sumErr receives its result when sumIn is closed.
	sumIn   chan arrow.RecordBatch
	sumErr  chan error
	filters []bloom.Entry // after Close
	rows    int64
	done    bool
	// dictShared is set once the writer's dictionary choices were offered to the
	// Output (for the files after this one).
	dictShared bool
}

// Create starts a new file at place. The name is unique (part-NNNNN-<uuid>), so the
// put-if-absent commit at Close cannot collide (L2).
func (o *Output) Create(ctx context.Context, place FileOptions) (*File, error) {
	o.mu.Lock()
	dict := o.dict
	o.mu.Unlock()
	return o.create(ctx, place, dict, nil)
}

// create creates a file whose encoders start from the dictionary choices dict (nil:
// from the first batch's sample), or place.Probe's. With sizes nil the file shares
// the Output's size model and offers its dictionary choices to the Output's later
// files once made; else it uses and updates sizes and offers nothing.
func (o *Output) create(ctx context.Context, place FileOptions, dict map[string]bool, sizes *sizeModel) (*File, error) {
	rel, logPath := o.newPath(place)
	f := &File{o: o, place: place, rel: rel, logPath: logPath, dictShared: sizes != nil}
	var err error
	if f.sum, err = o.NewSummary(); err != nil {
		return nil, err
	}
	// The file streams into storage (a hidden temporary object on stores that support
	// it) and becomes visible, complete, only at Commit (L2); Abort discards it.
	if f.obj, err = storage.CreateObject(ctx, o.store, f.rel); err != nil {
		return nil, fmt.Errorf("datafile: creating data file %s: %w", f.rel, err)
	}
	opts := o.opts
	opts.DictionaryColumns = dict
	if sizes != nil {
		opts.sizes = sizes
	}
	if place.Probe != nil {
		opts.DictionaryColumns = place.Probe.dict
		opts.sizes = place.Probe.sizes.clone()
		f.dictShared = true // the probe offered its choices already
	}
	if place.Parallelism > 0 {
		opts.Parallelism = place.Parallelism
	}
	if place.RowGroupBytes > 0 {
		opts.TargetRowGroupBytes = place.RowGroupBytes
	}
	if f.w, err = NewWriter(f.obj, o.file, opts); err != nil {
		_ = f.obj.Abort()
		return nil, err
	}
	return f, nil
}

// A Probe is what encoding a sample of rows told about the files of an Output
// (Output.Probe): their compressed bytes per row, overall and per run of the
// sample, and the encoders' dictionary choices and size model after the sample,
// which files created with FileOptions.Probe start from.
type Probe struct {
	// BytesPerRow is the sample's encoded size per row, the file's fixed overhead
	// (magic, footer) left out: the rows a file of a target size holds are
	// (target - Overhead) / BytesPerRow.
	BytesPerRow float64
	// Overhead is the estimated size of a file with no rows (Writer.EstimatedSize's).
	Overhead int64
	// RunBytes is the compressed size of each run of the sample when each ends a
	// row group of its own: how the runs differ, for callers that weigh parts of
	// their data apart (per-run dictionaries make their sum larger than the
	// sample's size in BytesPerRow, which is the level to scale them to).
	RunBytes []int64
	dict     map[string]bool
	sizes    *sizeModel
}

// Probe encodes runs (batches of Spec.Schema) as the
// Output's files are encoded — same codec, dictionary rule and Bloom columns — into
// a sink that keeps nothing, and returns what it learned. Nothing is stored and no
// file is counted, and the result depends on runs and the Spec only. The sample
// should be taken from where the files will be (say, evenly spaced runs of sorted
// rows), about a row group in all, so that per-row dictionary and Bloom filter
// costs come out as in the files. When the Output has no dictionary choices yet,
// the probe's become the Output's, as a first file's would.
func (o *Output) Probe(ctx context.Context, runs []arrow.RecordBatch, parallelism int) (*Probe, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rows int64
	for _, r := range runs {
		if r.NumRows() == 0 {
			return nil, fmt.Errorf("%w: probe run of no rows", ErrInvalidArgument)
		}
		rows += r.NumRows()
	}
	if rows == 0 {
		return nil, fmt.Errorf("%w: probe of no rows", ErrInvalidArgument)
	}
	// The probe starts from nothing the Output's other files learned (they may be
	// in flight), so what it returns depends on the runs and the Spec only.
	opts := o.opts
	opts.DictionaryColumns = nil
	opts.sizes = newSizeModel(o.file.NumFields())
	if parallelism > 0 {
		opts.Parallelism = parallelism
	}
	// Twice: the runs in row groups as the files will have them (the bytes per row,
	// the dictionary choices and the size model), then each run ending a row group
	// (how the runs differ: a run is smaller than a row group, so its own
	// dictionaries cost it more per row than a file's row groups do).
	res, w, err := o.encodeProbe(runs, opts, false)
	if err != nil {
		return nil, err
	}
	p := &Probe{Overhead: w.overhead(), dict: w.DictionaryChoices(), sizes: opts.sizes}
	p.BytesPerRow = math.Max(float64(res.Size-p.Overhead)/float64(res.NumRows), 1e-3)
	p.RunBytes = make([]int64, len(runs))
	if len(runs) == 1 {
		p.RunBytes[0] = max(res.Size-p.Overhead, 0)
	} else {
		split := opts
		split.sizes = newSizeModel(o.file.NumFields())
		split.DictionaryColumns = p.dict
		res, _, err := o.encodeProbe(runs, split, true)
		if err != nil {
			return nil, err
		}
		// Every run ends a row group (a large one may have ended some before), so
		// each row group belongs to the run its first row is in.
		run, end := 0, runs[0].NumRows()
		var at int64
		for g := range res.Metadata.NumRowGroups() {
			rg := res.Metadata.RowGroup(g)
			for at >= end && run < len(runs)-1 {
				run++
				end += runs[run].NumRows()
			}
			p.RunBytes[run] += rg.TotalCompressedSize()
			at += rg.NumRows()
		}
	}
	o.mu.Lock()
	if o.dict == nil {
		o.dict = p.dict
	}
	o.mu.Unlock()
	return p, nil
}

// encodeProbe encodes runs with opts into a sink that keeps nothing, ending a row
// group after each run when split.
func (o *Output) encodeProbe(runs []arrow.RecordBatch, opts WriterOptions, split bool) (*WriteResult, *Writer, error) {
	w, err := NewWriter(io.Discard, o.file, opts)
	if err != nil {
		return nil, nil, err
	}
	for _, run := range runs {
		phys, err := o.physical(run)
		if err == nil {
			err = w.Write(phys)
			phys.Release()
		}
		if err == nil && split {
			err = w.FlushRowGroup()
		}
		if err != nil {
			w.Abort()
			return nil, nil, err
		}
	}
	res, err := w.Close()
	if err != nil {
		return nil, nil, err
	}
	return res, w, nil
}

// newPath returns a fresh file name under place's directory: its storage path
// (decoded) and its add.path (encoded). The name is unique (<prefix>-NNNNN-<uuid>),
// so the put-if-absent commit cannot collide (L2).
func (o *Output) newPath(place FileOptions) (rel, logPath string) {
	o.mu.Lock()
	o.seq++
	seq := o.seq
	o.mu.Unlock()
	name := fmt.Sprintf("%s-%05d-%s.c000.%s.parquet", o.spec.NamePrefix, seq%100000, uuid.NewString(), o.opts.Codec)
	if place.Dir == "" {
		return name, partition.EncodeLogPath(name)
	}
	logDir := place.LogDir
	if logDir == "" {
		logDir = partition.EncodeLogPath(place.Dir)
	}
	return place.Dir + "/" + name, logDir + "/" + name
}

// newAdd returns the add action of a file published at logPath.
func (o *Output) newAdd(place FileOptions, logPath string, size int64, statsJSON string) *log.Add {
	values := make(map[string]*string, len(place.PartitionValues))
	for k, v := range place.PartitionValues {
		values[k] = v
	}
	var tags map[string]string
	if len(place.Tags) > 0 {
		tags = make(map[string]string, len(place.Tags))
		for k, v := range place.Tags {
			tags[k] = v
		}
	}
	return &log.Add{Path: logPath, PartitionValues: values, Size: size, ModificationTime: o.spec.Now().UnixMilli(),
		DataChange: o.spec.DataChange, Stats: statsJSON, Tags: tags, ClusteringProvider: place.ClusteringProvider}
}

// Write appends rec, a batch of Spec.Schema (logical names). The batch is not retained
// after Write returns.
func (f *File) Write(rec arrow.RecordBatch) error {
	if f.done {
		return ErrClosed
	}
	if rec.NumRows() == 0 {
		return nil
	}
	phys, err := f.o.physical(rec)
	if err != nil {
		return err
	}
	defer phys.Release()
	// The Parquet writer queues the columns to its encoders and returns; statistics
	// and Bloom filters are computed by a goroutine of their own meanwhile (in
	// order: the collectors see the batches as the file holds them). Both read phys
	// while the writer (and the caller, whose arrays phys shares) go on slicing it:
	// its null counts are settled first (R1, share.go).
	Settle(phys)
	if err := f.w.Write(phys); err != nil {
		return err
	}
	if f.sumIn == nil {
		f.sumIn, f.sumErr = make(chan arrow.RecordBatch, 2), make(chan error, 1)
		go func(in <-chan arrow.RecordBatch, out chan<- error) {
			var err error
			for rec := range in {
				if err == nil {
					err = f.sum.update(rec)
				}
				rec.Release()
			}
			out <- err
		}(f.sumIn, f.sumErr)
	}
	phys.Retain()
	f.sumIn <- phys
	if !f.dictShared {
		// The choice is made once the writer has its sample (Writer.Write).
		if d := f.w.DictionaryChoices(); d != nil {
			f.dictShared = true
			f.o.mu.Lock()
			if f.o.dict == nil {
				f.o.dict = d
			}
			f.o.mu.Unlock()
		}
	}
	f.rows += rec.NumRows()
	return nil
}

// Rows returns the rows written so far.
func (f *File) Rows() int64 { return f.rows }

// Summary returns the file's statistics and Bloom filters. Read it only after Close
// (its statistics are computed concurrently with the writes until then).
func (f *File) Summary() *Summary { return f.sum }

// summaryDone waits until every batch written has been added to the summary.
func (f *File) summaryDone() error {
	if f.sumIn == nil {
		return nil
	}
	close(f.sumIn)
	err := <-f.sumErr
	f.sumIn = nil
	return err
}

// Filters returns the file's Bloom index entries once Close has succeeded.
func (f *File) Filters() []bloom.Entry { return f.filters }

// FlushRowGroup ends the current row group now (the writer otherwise ends row
// groups by size).
func (f *File) FlushRowGroup() error { return f.w.FlushRowGroup() }

// EstimatedSize estimates the file's size if it were closed now (see
// Writer.EstimatedSize). It does not wait for columns still being encoded.
func (f *File) EstimatedSize() int64 { return f.w.EstimatedSize() }

// Settle waits until every column has encoded what it was given, so that the next
// EstimatedSize counts encoded pages rather than Arrow bytes.
func (f *File) Settle() { f.w.settle() }

// Close finishes the file, publishes it in storage (put-if-absent; the file is
// complete and durable before any commit can reference it, L2) and returns its add
// action. A file with no rows is discarded and Close returns nil. On error nothing is
// left in storage.
func (f *File) Close(ctx context.Context) (*log.Add, error) {
	if f.done {
		return nil, ErrClosed
	}
	f.done = true
	sumErr := f.summaryDone()
	res, err := f.w.Close()
	if err == nil {
		err = sumErr
	}
	if err != nil {
		_ = f.obj.Abort()
		return nil, err
	}
	if f.rows == 0 {
		return nil, f.obj.Abort()
	}
	statsJSON, err := f.sum.coll.ToJSON()
	if err != nil {
		_ = f.obj.Abort()
		return nil, err
	}
	filters, err := f.sum.Filters(f.logPath)
	if err != nil {
		_ = f.obj.Abort()
		return nil, err
	}
	f.filters = filters
	if err := ctx.Err(); err != nil {
		_ = f.obj.Abort()
		return nil, err
	}
	if err := f.obj.Commit(); err != nil {
		return nil, fmt.Errorf("datafile: writing data file %s: %w", f.rel, err)
	}
	add := f.o.newAdd(f.place, f.logPath, res.Size, statsJSON)
	o := f.o
	o.mu.Lock()
	o.stored = append(o.stored, f.rel)
	o.adds = append(o.adds, add)
	o.filters = append(o.filters, filters...)
	o.closedBytes += max(res.Size-f.w.overhead(), 0)
	o.closedRows += f.rows
	o.mu.Unlock()
	return add, nil
}

// Abort discards the file. It is a no-op after Close.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	_ = f.summaryDone()
	f.w.Abort()
	_ = f.obj.Abort()
}

// Remove takes back a file this Output closed (its add action, as Close returned
// it): the file is deleted from storage and no longer among Adds, the Bloom index's
// filters or what Discard removes. A writer that checks the files it wrote and
// writes some again uses it; the file must not be referenced by a commit.
func (o *Output) Remove(ctx context.Context, add *log.Add) error {
	rel, err := add.DecodedPath()
	if err != nil {
		return err
	}
	o.mu.Lock()
	found := false
	for i, a := range o.adds {
		if a == add {
			o.adds = append(o.adds[:i], o.adds[i+1:]...)
			found = true
			break
		}
	}
	if found {
		o.stored = slices.DeleteFunc(o.stored, func(p string) bool { return p == rel })
		o.filters = slices.DeleteFunc(o.filters, func(e bloom.Entry) bool { return e.DataPath == add.Path })
		if n, ok := add.NumRecords(); ok && n <= o.closedRows {
			o.closedRows -= n
			o.closedBytes = max(o.closedBytes-max(add.Size-fileOverhead(o.file.NumFields()), 0), 0)
		}
	}
	o.mu.Unlock()
	if !found {
		return fmt.Errorf("%w: %s was not written by this Output", ErrInvalidArgument, add.Path)
	}
	if err := o.store.Delete(ctx, rel); err != nil {
		return fmt.Errorf("datafile: removing data file %s: %w", rel, err)
	}
	return nil
}

// Adds returns the add actions of the files closed so far, sorted by path.
func (o *Output) Adds() []*log.Add {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]*log.Add(nil), o.adds...)
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

// BloomColumns returns the index's column names (physical) of the Bloom-indexed
// columns, in Spec.BloomColumns order.
func (o *Output) BloomColumns() []string {
	out := make([]string, len(o.bloom))
	for i, b := range o.bloom {
		out[i] = b.phys
	}
	return out
}

// WriteBloomIndex stores one index file holding the Bloom filters of every file
// closed so far and tags their add actions with it (B1: a file is covered exactly
// when its tag says so). Like the data files, the index is durable, under a fresh
// name, before the commit that references it. It returns the index path, "" when
// there are no Bloom columns or no files.
func (o *Output) WriteBloomIndex(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.bloom) == 0 || len(o.adds) == 0 {
		return "", nil
	}
	if len(o.filters) != len(o.adds)*len(o.bloom) {
		return "", fmt.Errorf("datafile: internal error: %d Bloom filters for %d files and %d columns", len(o.filters), len(o.adds), len(o.bloom))
	}
	entries := append([]bloom.Entry(nil), o.filters...)
	sort.Slice(entries, func(a, b int) bool {
		if entries[a].DataPath != entries[b].DataPath {
			return entries[a].DataPath < entries[b].DataPath
		}
		return entries[a].Filter.Column() < entries[b].Filter.Column()
	})
	data, err := bloom.MarshalIndex(entries...)
	if err != nil {
		return "", fmt.Errorf("datafile: Bloom index: %w", err)
	}
	cols := make([]string, len(o.bloom))
	for i, b := range o.bloom {
		cols[i] = b.phys
	}
	path := bloom.NewIndexPath()
	tag, err := bloom.EncodeTag(bloom.Tag{Path: path, Columns: cols})
	if err != nil {
		return "", fmt.Errorf("datafile: Bloom index tag: %w", err)
	}
	if err := o.store.PutIfAbsent(ctx, path, data); err != nil {
		return "", fmt.Errorf("datafile: writing Bloom index %s: %w", path, err)
	}
	o.stored = append(o.stored, path)
	for _, a := range o.adds {
		if a.Tags == nil {
			a.Tags = map[string]string{}
		}
		a.Tags[bloom.TagKey] = tag
	}
	return path, nil
}

// Discard deletes everything the Output stored (data files and index), best effort:
// after a failed or abandoned commit the files are unreferenced, and any left behind
// are removed by VACUUM. It uses its own short deadline, so it works after ctx of the
// write was cancelled.
func (o *Output) Discard() {
	o.mu.Lock()
	paths := o.stored
	o.stored = nil
	o.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range paths {
		_ = o.store.Delete(ctx, p)
	}
}

// retypeRecord relabels rec's columns with the (physical) file schema: the same
// buffers, the field names and metadata of sch at every nesting level.
func retypeRecord(rec arrow.RecordBatch, sch *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		d, err := retypeData(rec.Column(i).Data(), sch.Field(i).Type)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, fmt.Errorf("datafile: column %q: %w", sch.Field(i).Name, err)
		}
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecordBatch(sch, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// retypeData returns d with type to, which must have d's layout (the same type but
// for field names and metadata), children retyped likewise.
func retypeData(d arrow.ArrayData, to arrow.DataType) (arrow.ArrayData, error) {
	if d.DataType().ID() != to.ID() {
		from, want := value.DisplayTypes(d.DataType(), to)
		return nil, fmt.Errorf("%w: %s cannot be written as %s", ErrSchemaMismatch, from, want)
	}
	var childTypes []arrow.DataType
	switch t := to.(type) {
	case *arrow.StructType:
		for _, f := range t.Fields() {
			childTypes = append(childTypes, f.Type)
		}
	case *arrow.MapType:
		childTypes = []arrow.DataType{t.Elem()}
	case arrow.ListLikeType:
		childTypes = []arrow.DataType{t.Elem()}
	}
	if len(childTypes) != len(d.Children()) {
		if len(childTypes) == 0 && len(d.Children()) == 0 {
			return array.NewData(to, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset()), nil
		}
		return nil, fmt.Errorf("%w: %s has %d children, %s %d", ErrSchemaMismatch, d.DataType(), len(d.Children()), to, len(childTypes))
	}
	children := make([]arrow.ArrayData, len(childTypes))
	for i, c := range d.Children() {
		rc, err := retypeData(c, childTypes[i])
		if err != nil {
			for _, x := range children[:i] {
				x.Release()
			}
			return nil, err
		}
		children[i] = rc
	}
	out := array.NewData(to, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out, nil
}

// checkFileSchema checks that file (nil: none) renames the fields of data without
// changing their number, order or types.
func checkFileSchema(data, file *arrow.Schema) error {
	if file == nil || data == nil {
		return nil
	}
	if file.NumFields() != data.NumFields() {
		return fmt.Errorf("%w: FileSchema has %d fields, Schema %d", ErrInvalidArgument, file.NumFields(), data.NumFields())
	}
	for i, f := range data.Fields() {
		pf := file.Field(i)
		if !arrow.TypeEqual(stripNames(pf.Type), stripNames(f.Type)) {
			got, want := value.DisplayTypes(f.Type, pf.Type)
			return fmt.Errorf("%w: column %q is %s in the batches, %s in the files", ErrSchemaMismatch, f.Name, got, want)
		}
	}
	return nil
}

// stripNames renames every nested field to its position, so that two types compare
// equal when only their field names and metadata differ.
func stripNames(t arrow.DataType) arrow.DataType {
	switch dt := t.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, dt.NumFields())
		for i, f := range dt.Fields() {
			fs[i] = arrow.Field{Name: fmt.Sprint(i), Type: stripNames(f.Type), Nullable: f.Nullable}
		}
		return arrow.StructOf(fs...)
	case *arrow.ListType:
		return arrow.ListOfField(arrow.Field{Name: "e", Type: stripNames(dt.Elem()), Nullable: dt.ElemField().Nullable})
	case *arrow.MapType:
		m := arrow.MapOfFields(arrow.Field{Name: "k", Type: stripNames(dt.KeyType())},
			arrow.Field{Name: "v", Type: stripNames(dt.ItemType()), Nullable: dt.ItemField().Nullable})
		m.KeysSorted = dt.KeysSorted
		return m
	}
	return t
}
