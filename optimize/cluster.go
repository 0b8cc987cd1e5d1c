package optimize

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/log"
)

// takeRows is how many rows are gathered (Arrow take) and written at a time when a
// sorted range is written out; it bounds the extra copy a sorted write holds.
const takeRows = 64 << 10

// keyColumn is the sort key carried in spill files.
const keyColumn = "__skiplake_optimize_key"

// fileInfo is what the footer of an input file tells before it is read.
type fileInfo struct {
	rows   int64
	offset int64 // position of the file's first row in the bin
	memEst int64 // estimated Arrow bytes
}

// keyed is one row's sort key and its position.
type keyed struct {
	key uint64
	pos uint32
}

// cluster rewrites a clustering bin: rank the clustering columns from a sample,
// compute one key per row, range-partition the rows by key into files of about the
// target size (cut only where the key changes, so file key ranges never overlap),
// sort each file by key and write it with row groups of about an eighth of the
// target. Inputs estimated to fit in the memory budget are clustered in memory;
// larger ones through spill files (see clusterSpill).
//
// o is the plan's options with the MemoryBudget and Parallelism this bin may use
// (a share of them when small bins run side by side).
//
// On error the files this bin already wrote are deleted and the result is nil. (The
// cleanup holds its own reference to the result: an early "return nil, err" must not
// leave it a nil result to clean up.)
func (e *executor) cluster(ctx context.Context, it workItem, o Options) (*binResult, error) {
	p := e.plan
	b := it.bin
	res := &binResult{bin: b}
	done := false
	defer func() {
		if !done {
			cleanup(p, []*binResult{res})
		}
	}()
	infos, err := e.footers(ctx, b.adds, o.Parallelism)
	if err != nil {
		return nil, err
	}
	var memEst, rows int64
	for _, fi := range infos {
		memEst += fi.memEst
		rows += fi.rows
	}
	nFiles := int(math.Round(float64(b.Bytes) / float64(p.opts.TargetFileSize)))
	nFiles = max(nFiles, 1)
	cols, _ := json.Marshal(p.ClusterBy)
	w := &clusterWriter{e: e, it: it, o: o, res: res, tags: map[string]string{
		TagCubeID:      uuid.NewString(),
		TagCubeColumns: string(cols),
		TagCubeCurve:   p.Curve.String(),
		TagTargetSize:  strconv.FormatInt(p.opts.TargetFileSize, 10),
	}}
	first := b.adds[0]
	dec, _ := first.DecodedPath()
	w.encDir, w.decDir = dirOf(first.Path), dirOf(dec)
	// The in-memory path holds the input, its concatenation and one take slice
	// per worker: about three times the estimate.
	if 3*memEst <= o.MemoryBudget && rows < math.MaxUint32 {
		err = e.clusterInMemory(ctx, w, infos, nFiles)
	} else {
		err = e.clusterSpill(ctx, w, infos, nFiles, memEst)
	}
	if err != nil {
		return nil, err
	}
	done = true
	return res, nil
}

// footers reads the row count and a memory estimate of every input file.
func (e *executor) footers(ctx context.Context, adds []*log.Add, par int) ([]fileInfo, error) {
	p := e.plan
	infos := make([]fileInfo, len(adds))
	err := parallel(ctx, par, len(adds), func(ctx context.Context, i int) error {
		in, err := openInput(ctx, p.store, adds[i], p.opts.Allocator, false)
		if err != nil {
			return err
		}
		defer in.close()
		md := in.r.Metadata()
		var unc int64
		for g := 0; g < md.NumRowGroups(); g++ {
			unc += md.RowGroup(g).TotalByteSize()
		}
		infos[i] = fileInfo{rows: in.r.NumRows(), memEst: max(unc, 2*adds[i].Size)}
		if n, ok := adds[i].NumRecords(); ok && n != infos[i].rows {
			return fmt.Errorf("%w: %s: footer has %d rows, its stats say numRecords=%d", ErrCorruptData, in.path, infos[i].rows, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var off int64
	for i := range infos {
		infos[i].offset = off
		off += infos[i].rows
	}
	return infos, nil
}

// clusterColumns returns the clustering columns of a batch of the data schema.
func (p *Plan) clusterColumns(rec arrow.RecordBatch) []arrow.Array {
	out := make([]arrow.Array, len(p.clusters))
	for i, c := range p.clusters {
		out[i] = rec.Column(c)
	}
	return out
}

func (e *executor) clusterInMemory(ctx context.Context, w *clusterWriter, infos []fileInfo, nFiles int) error {
	p := e.plan
	o := w.o
	adds := w.it.bin.adds
	perFile := make([][]arrow.RecordBatch, len(adds))
	defer func() {
		for _, recs := range perFile {
			for _, r := range recs {
				r.Release()
			}
		}
	}()
	var mu sync.Mutex
	err := parallel(ctx, o.Parallelism, len(adds), func(ctx context.Context, i int) error {
		var recs []arrow.RecordBatch
		err := readFile(ctx, p.store, adds[i], p.dataSch, o.Allocator, func(rec arrow.RecordBatch, _ int64) error {
			rec.Retain()
			recs = append(recs, rec)
			return nil
		})
		mu.Lock()
		perFile[i] = recs
		mu.Unlock()
		if err == nil {
			var rows int64
			for _, r := range recs {
				rows += r.NumRows()
			}
			err = checkRows(adds[i], rows)
		}
		if err == nil {
			e.progress("read", adds[i].Size/2)
		}
		return err
	})
	if err != nil {
		return err
	}
	var recs []arrow.RecordBatch
	for _, r := range perFile {
		recs = append(recs, r...)
	}
	s := newSamplers(len(p.clusters))
	var n int64
	for _, r := range recs {
		if err := s.add(p.clusterColumns(r)); err != nil {
			return err
		}
		n += r.NumRows()
	}
	k, err := newKeyer(p.Curve, s)
	if err != nil {
		return err
	}
	pairs := make([]keyed, n)
	keys := make([]uint64, 0)
	var scratch [][]uint32
	var off int64
	for _, r := range recs {
		m := int(r.NumRows())
		keys = slices.Grow(keys[:0], m)[:m]
		if scratch, err = k.keys(p.clusterColumns(r), off, keys, scratch); err != nil {
			return err
		}
		for i, key := range keys {
			pairs[off+int64(i)] = keyed{key, uint32(off) + uint32(i)}
		}
		off += int64(m)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	all, err := concatRecords(p.dataSch, recs, o.Allocator)
	if err != nil {
		return err
	}
	defer all.Release()
	for i := range perFile {
		for _, r := range perFile[i] {
			r.Release()
		}
		perFile[i] = nil
	}
	sortKeyed(pairs, tieBreak{p.clusterColumns(all)})
	cuts := cutPoints(pairs, nFiles)
	return parallel(ctx, o.Parallelism, len(cuts)-1, func(ctx context.Context, f int) error {
		out, err := w.newFile(ctx)
		if err != nil {
			return err
		}
		if err := writeSorted(ctx, out, all, pairs[cuts[f]:cuts[f+1]], nil, o.Allocator); err != nil {
			out.abort()
			return err
		}
		e.progress("write", (w.it.bin.Bytes/2)*int64(cuts[f+1]-cuts[f])/max(n, 1))
		return w.finish(ctx, out)
	})
}

// cutPoints splits sorted pairs into about n ranges of equal row count, moving each
// cut forward past equal keys so that no key appears in two ranges. It returns the
// range boundaries, starting with 0 and ending with len(pairs).
func cutPoints(pairs []keyed, n int) []int {
	cuts := []int{0}
	for f := 1; f < n; f++ {
		c := int(int64(len(pairs)) * int64(f) / int64(n))
		if c <= cuts[len(cuts)-1] {
			continue
		}
		for c < len(pairs) && pairs[c].key == pairs[c-1].key {
			c++
		}
		if c >= len(pairs) {
			break
		}
		cuts = append(cuts, c)
	}
	return append(cuts, len(pairs))
}

// writeSorted writes the rows of src at the positions of pairs, in that order, to
// out, gathering takeRows at a time. cols selects the columns of src to write (nil:
// all).
func writeSorted(ctx context.Context, out *outFile, src arrow.RecordBatch, pairs []keyed, cols []int, mem memory.Allocator) error {
	tctx := compute.WithAllocator(ctx, mem)
	if cols == nil {
		cols = make([]int, src.NumCols())
		for i := range cols {
			cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = src.Schema().Field(c)
	}
	sch := arrow.NewSchema(fields, nil)
	idx := make([]uint32, 0, takeRows)
	for lo := 0; lo < len(pairs); lo += takeRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+takeRows, len(pairs))
		idx = idx[:0]
		for _, pr := range pairs[lo:hi] {
			idx = append(idx, pr.pos)
		}
		ib := array.NewUint32Builder(mem)
		ib.AppendValues(idx, nil)
		ia := ib.NewArray()
		ib.Release()
		arrs := make([]arrow.Array, len(cols))
		var err error
		for i, c := range cols {
			arrs[i], err = compute.TakeArray(tctx, src.Column(c), ia)
			if err != nil {
				break
			}
		}
		ia.Release()
		if err == nil {
			rec := array.NewRecordBatch(sch, arrs, int64(hi-lo))
			err = out.write(rec)
			rec.Release()
		}
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
		if err != nil {
			return fmt.Errorf("optimize: writing sorted rows: %w", err)
		}
	}
	return nil
}

// concatRecords concatenates batches of one schema into one batch.
func concatRecords(sch *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, sch.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for c := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		var err error
		if len(parts) == 0 {
			cols[c] = array.MakeArrayOfNull(mem, sch.Field(c).Type, 0)
		} else {
			cols[c], err = array.Concatenate(parts, mem)
		}
		if err != nil {
			for _, a := range cols[:c] {
				a.Release()
			}
			return nil, fmt.Errorf("optimize: concatenating batches: %w", err)
		}
	}
	rec := array.NewRecordBatch(sch, cols, n)
	for _, a := range cols {
		a.Release()
	}
	return rec, nil
}

// clusterWriter creates the output files of one clustering bin.
type clusterWriter struct {
	e              *executor
	it             workItem
	o              Options
	tags           map[string]string
	encDir, decDir string
	mu             sync.Mutex
	res            *binResult
}

func (w *clusterWriter) newFile(ctx context.Context) (*outFile, error) {
	p := w.e.plan
	return newOutFile(ctx, p.store, w.encDir, w.decDir, p.dataSch, w.e.statsCfg, rowGroupTarget(p.opts.TargetFileSize), p.opts.Allocator, p.bloomSpec())
}

func (w *clusterWriter) finish(ctx context.Context, out *outFile) error {
	tags := make(map[string]string, len(w.tags))
	for k, v := range w.tags {
		tags[k] = v
	}
	add, rel, err := out.finish(ctx, tags, copyValues(w.it.part.Values))
	if err != nil || add == nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.res.adds = append(w.res.adds, add)
	w.res.written = append(w.res.written, rel)
	w.res.filters = append(w.res.filters, out.filters...)
	w.res.rows += out.rows
	return nil
}

// parallel runs fn(i) for i in [0, n) on up to par goroutines and returns the first
// error (cancelling the others).
func parallel(ctx context.Context, par, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range min(max(par, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := ctx.Err(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// reservoir keeps a uniform sample of keys (algorithm R, seeded).
type reservoir struct {
	k    int
	seen int64
	keys []uint64
	rng  *rand.Rand
}

func newReservoir(k int) *reservoir {
	return &reservoir{k: k, rng: rand.New(rand.NewPCG(sampleSeed, 7))}
}

func (r *reservoir) add(keys []uint64) {
	for _, key := range keys {
		r.seen++
		if len(r.keys) < r.k {
			r.keys = append(r.keys, key)
			continue
		}
		if j := r.rng.Int64N(r.seen); j < int64(r.k) {
			r.keys[j] = key
		}
	}
}

// spillRun is one key range's temporary file: an Arrow IPC stream. (Parquet
// spill files were tried first: their writers keep a dictionary hash table per
// column and a buffered row group per run, which made the spill pass the memory
// peak; IPC writes each batch straight through.)
type spillRun struct {
	mu   sync.Mutex
	f    *os.File
	cw   *countingWriter
	w    *ipc.Writer
	rows int64
	size int64
}
