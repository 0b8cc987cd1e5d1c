package optimize

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"golang.org/x/sync/semaphore"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/gather"
)

// Spill sizing.
const (
	// maxRuns bounds the number of spill runs (open spill writers) of one bin.
	maxRuns = 4096
	// keySampleSize is the number of keys sampled to choose run boundaries.
	keySampleSize = 1 << 17
)

// clusterSpill clusters a bin larger than the memory budget in bounded memory:
//
//  1. read the clustering columns only, sampling them for rank boundaries and
//     keeping the values of a seeded uniform sample of rows (samplePositions);
//  2. compute the sampled rows' keys (each at its position, as pass 3 does);
//  3. choose R run boundaries at key-sample quantiles, R large enough that one run
//     sorts within its share of MemoryBudget (spillLanes); equal keys always go to
//     one run;
//  4. stream every input row (with its key and its position in the bin) into its
//     run's temporary Arrow IPC stream file (uncompressed) in SpillDir;
//  5. load each run in turn, in key order, put its rows back in position order, sort
//     them stably by key and write them to the bin's files (a datafile.Roller cutting
//     files at the target size, between keys).
//
// Runs are written in key order, so output files are sorted and their key ranges
// are disjoint, exactly as on the in-memory path. Encoding is most of the write, so
// when the budget holds more than one writer, pass 5 writes lanes side by side
// (writeLanes): consecutive runs of about a whole number of files each, each lane
// with its own roller, its writer charged against the budget. With one lane, one
// file is written at a time (its columns encoded in parallel), and the writer's own
// memory is counted once: writerOverhead. The rows come out in the order of the
// in-memory path (a stable sort of the bin's rows in input order), so the files
// written depend on the data and the options only (datafile D8), however the
// concurrent readers of pass 4 and the lanes interleave.
func (e *executor) clusterSpill(ctx context.Context, w *clusterWriter, infos []fileInfo, nFiles int, memEst int64) error {
	p := e.plan
	o := w.o
	adds := w.it.bin.adds
	// The top-level fields of the clustering columns (each once), read through the
	// column mapping, and where the columns are in them.
	var clFields []arrow.Field
	clCols := make([]clusterCol, len(p.clusters))
	at := map[int]int{}
	for i, c := range p.clusters {
		j, ok := at[c[0]]
		if !ok {
			j = len(clFields)
			at[c[0]] = j
			clFields = append(clFields, p.readSch.Field(c[0]))
		}
		clCols[i] = append(clusterCol{j}, c[1:]...)
	}
	clSch := arrow.NewSchema(clFields, nil)
	leaves := func(rec arrow.RecordBatch, fn func([]arrow.Array) error) error {
		cols, err := leafColumns(rec, clCols, o.Allocator)
		if err != nil {
			return err
		}
		defer releaseAll(cols)
		return fn(cols)
	}

	// Pass 1: rank sample, and the clustering values of a uniform sample of rows
	// for the key sample (their keys are computed once the ranks are known).
	s := newSamplers(len(p.clusters))
	_, binRows := totals(infos)
	rs := &rowSample{want: samplePositions(binRows, keySampleSize)}
	defer rs.release()
	for i, a := range adds {
		err := readFile(ctx, p.store, a, clSch, o.Allocator, func(rec arrow.RecordBatch, firstRow int64) error {
			return leaves(rec, func(cols []arrow.Array) error {
				if err := s.add(cols); err != nil {
					return err
				}
				return rs.add(ctx, cols, infos[i].offset+firstRow, o.Allocator)
			})
		})
		if err != nil {
			return err
		}
	}
	k, err := newKeyer(p.Curve, s)
	if err != nil {
		return err
	}
	sample, err := rs.keys(k)
	if err != nil {
		return err
	}
	rs.release()
	// Run boundaries: lanes (bins of consecutive runs written side by side, see
	// spillLanes) first, at quantiles of whole files, then the runs of each lane.
	lanes, perRun := spillLanes(o, nFiles)
	nRuns := int(min(int64(maxRuns), max(int64(nFiles), (memEst+perRun-1)/perRun)))
	slices.Sort(sample)
	splits, laneStart := runSplits(sample, nRuns, nFiles, lanes)
	nRuns = len(splits) + 1
	lanes = len(laneStart)
	runs := make([]*spillRun, nRuns)
	defer func() {
		for _, r := range runs {
			if r != nil {
				r.discard()
			}
		}
	}()
	spillFields := append(slices.Clone(p.dataSch.Fields()),
		arrow.Field{Name: posColumn, Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: keyColumn, Type: arrow.PrimitiveTypes.Int64})
	spillSch := arrow.NewSchema(spillFields, nil)
	for r := range runs {
		runs[r], err = newSpillRun(o.SpillDir, spillSch, o)
		if err != nil {
			return err
		}
	}
	// Pass 3: route rows to runs.
	err = parallel(ctx, o.Parallelism, len(adds), func(ctx context.Context, i int) error {
		var scratch [][]uint32
		var keys []uint64
		err := p.readInput(ctx, adds[i], o.Allocator, func(rec arrow.RecordBatch, firstRow int64) error {
			m := int(rec.NumRows())
			keys = slices.Grow(keys[:0], m)[:m]
			cols, err := p.clusterColumns(rec)
			if err != nil {
				return err
			}
			scratch, err = k.keys(cols, infos[i].offset+firstRow, keys, scratch)
			releaseAll(cols)
			if err != nil {
				return err
			}
			return routeRows(ctx, rec, infos[i].offset+firstRow, keys, splits, runs, spillSch, o)
		})
		if err == nil {
			e.progress("spill", adds[i].Size/2)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := r.close(); err != nil {
			return err
		}
		w.res.spilled += r.size
	}
	// Pass 4: sort the runs, in key order, into the bin's files: one lane after
	// another through the bin's roller, or the lanes side by side.
	dataCols := make([]int, p.dataSch.NumFields())
	for i := range dataCols {
		dataCols[i] = i
	}
	if lanes == 1 {
		var after int64
		for _, r := range runs {
			after += r.rows
		}
		for _, r := range runs {
			after -= r.rows
			if err := r.sortInto(ctx, w, spillSch, dataCols, p.clusters, after, o); err != nil {
				return err
			}
			r.discard()
		}
		return nil
	}
	return e.writeLanes(ctx, w, runs, laneStart, spillSch, dataCols)
}

// spillWriterCharge is what each output writer beyond the first costs against the
// memory budget when a spilled bin writes lanes side by side (writerOverhead; a
// test lowers it to run lanes at a small budget).
var spillWriterCharge int64 = writerOverhead

// spillPeakAccounted is the largest memory a spilled bin writing lanes accounted
// at once (runs being sorted and written, and the extra writers); tests check it
// against the budget.
var spillPeakAccounted atomic.Int64

// runCostFactor is the memory a run costs while it is sorted and written, in
// times its Arrow bytes: its batches as read and their concatenation (then the
// sort pairs and the gathered windows, smaller).
const runCostFactor = 3

// spillLanes returns how many lanes a spilled bin of nFiles output files writes
// side by side, and the memory estimate a run may hold. One lane is the bin's
// roller writing run after run, its writer (writerOverhead) outside the budget and
// a run within a quarter of it. With more lanes (up to Parallelism, one per file at
// most) each lane has its own writer, every one but the first charged
// spillWriterCharge against the budget, at most half of it in all, and the rest is
// shared: a run within a quarter of a lane's share.
func spillLanes(o Options, nFiles int) (int, int64) {
	budget := o.MemoryBudget
	lanes := min(max(o.Parallelism, 1), nFiles)
	for lanes > 1 && int64(lanes-1)*spillWriterCharge > budget/2 {
		lanes--
	}
	if lanes <= 1 {
		return 1, max(budget/4, 1)
	}
	return lanes, max((budget-int64(lanes-1)*spillWriterCharge)/int64(4*lanes), 1)
}

// runSplits chooses the run boundaries from the sorted key sample: run r holds the
// keys in [splits[r-1], splits[r]). With lanes > 1 the lane boundaries come first,
// at the sample quantiles of whole files (lane g ends after round(nFiles(g+1)/lanes)
// files' worth of rows), and each lane gets its share of nRuns runs at quantiles
// within it. Boundaries are distinct keys, so equal keys always go to one run (and
// lanes whose boundary keys coincide merge). laneStart[g] is lane g's first run.
func runSplits(sample []uint64, nRuns, nFiles, lanes int) (splits []uint64, laneStart []int) {
	laneStart = []int{0}
	n := len(sample)
	if n == 0 {
		return nil, laneStart
	}
	for g := 0; g < lanes; g++ {
		lo := n * int(math.Round(float64(nFiles*g)/float64(lanes))) / nFiles
		hi := n * int(math.Round(float64(nFiles*(g+1))/float64(lanes))) / nFiles
		if g > 0 && hi > lo {
			// The lane's first boundary.
			if kk := sample[lo]; len(splits) == 0 || kk > splits[len(splits)-1] {
				splits = append(splits, kk)
				laneStart = append(laneStart, len(splits))
			}
		}
		runs := max(1, (nRuns*(hi-lo)+n-1)/n)
		for r := 1; r < runs; r++ {
			kk := sample[lo+(hi-lo)*r/runs]
			if len(splits) == 0 || kk > splits[len(splits)-1] {
				splits = append(splits, kk)
			}
		}
	}
	return splits, laneStart
}

// writeLanes writes the sorted runs of a spilled bin lane by lane, the lanes side
// by side: each lane (runs laneStart[g] up to the next lane's first) has its own
// roller (sizes from its own files, so the cuts do not depend on how the lanes
// interleave), sorts its runs in key order into it and closes its last file at the
// lane's end. A run is loaded only once its cost (runCostFactor times its Arrow
// bytes, at most the budget) and the extra writers fit in the budget with what the
// other lanes hold. The lanes' files join the bin's in lane order, so the bin's
// files are in key order as on the one-lane path, with the same rows in the same
// order; a lane's end is also a file's end.
func (e *executor) writeLanes(ctx context.Context, w *clusterWriter, runs []*spillRun, laneStart []int, spillSch *arrow.Schema, dataCols []int) error {
	o := w.o
	budget := max(o.MemoryBudget, 1)
	sem := semaphore.NewWeighted(budget)
	var held atomic.Int64
	acquire := func(ctx context.Context, n int64) error {
		n = min(n, budget)
		if err := sem.Acquire(ctx, n); err != nil {
			return err
		}
		h := held.Add(n)
		for {
			p := spillPeakAccounted.Load()
			if h <= p || spillPeakAccounted.CompareAndSwap(p, h) {
				break
			}
		}
		return nil
	}
	release := func(n int64) {
		n = min(n, budget)
		held.Add(-n)
		sem.Release(n)
	}
	lanes := len(laneStart)
	// The writers beyond the first are held for the whole write.
	extra := int64(lanes-1) * spillWriterCharge
	if err := acquire(ctx, extra); err != nil {
		return err
	}
	defer release(extra)
	laneW := make([]*clusterWriter, lanes)
	for g := range laneW {
		lw := *w
		lw.roller = w.out.NewOwnRoller(w.place)
		lw.res = &binResult{bin: w.res.bin}
		lw.planned = nil
		laneW[g] = &lw
	}
	err := parallel(ctx, lanes, lanes, func(ctx context.Context, g int) error {
		lw := laneW[g]
		end := len(runs)
		if g+1 < lanes {
			end = laneStart[g+1]
		}
		var after int64
		for _, r := range runs[laneStart[g]:end] {
			after += r.rows
		}
		for _, r := range runs[laneStart[g]:end] {
			after -= r.rows
			cost := runCostFactor * r.arrowBytes
			if err := acquire(ctx, cost); err != nil {
				return err
			}
			err := r.sortInto(ctx, lw, spillSch, dataCols, e.plan.clusters, after, o)
			release(cost)
			if err != nil {
				return err
			}
			r.discard()
		}
		return lw.roller.Close(ctx)
	})
	for _, lw := range laneW {
		w.res.rows += lw.res.rows
	}
	if err != nil {
		for _, lw := range laneW {
			lw.roller.Abort()
		}
		return err // the files closed are removed with the batch (Output.Discard)
	}
	for _, lw := range laneW {
		w.planned = append(w.planned, lw.roller.Adds()...)
	}
	return nil
}

// routeRows appends each row of rec, with its position in the bin (pos0 + its row in
// rec) and its key, to the run its key falls in.
func routeRows(ctx context.Context, rec arrow.RecordBatch, pos0 int64, keys []uint64, splits []uint64, runs []*spillRun, spillSch *arrow.Schema, o Options) error {
	byRun := make(map[int][]uint32)
	for i, key := range keys {
		r := sort.Search(len(splits), func(j int) bool { return splits[j] > key })
		byRun[r] = append(byRun[r], uint32(i))
	}
	for r, rows := range byRun {
		cols := make([]arrow.Array, rec.NumCols()+2)
		var err error
		for c := 0; c < int(rec.NumCols()); c++ {
			if cols[c], err = gather.Take(ctx, rec.Column(c), rows, o.Allocator); err != nil {
				break
			}
		}
		if err == nil {
			pb := array.NewInt64Builder(o.Allocator)
			pb.Reserve(len(rows))
			for _, i := range rows {
				pb.UnsafeAppend(pos0 + int64(i))
			}
			cols[len(cols)-2] = pb.NewArray()
			pb.Release()
			kb := array.NewInt64Builder(o.Allocator)
			kb.Reserve(len(rows))
			for _, i := range rows {
				kb.UnsafeAppend(int64(keys[i] ^ (1 << 63))) // order-preserving as int64
			}
			cols[len(cols)-1] = kb.NewArray()
			kb.Release()
			sub := array.NewRecordBatch(spillSch, cols, int64(len(rows)))
			err = runs[r].write(sub)
			sub.Release()
		}
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func newSpillRun(dir string, sch *arrow.Schema, o Options) (*spillRun, error) {
	f, err := os.CreateTemp(dir, "skiplake-optimize-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("optimize: creating spill file: %w", err)
	}
	r := &spillRun{f: f}
	r.cw = &countingWriter{w: bufio.NewWriterSize(f, 64<<10)}
	// No compression: LZ4 cost about a tenth of a spilled bin's CPU and zstd more
	// than doubled it (BENCHMARKS.md, "Keys carried through spill runs"), for files
	// that live until the bin is written; the bytes only need room in SpillDir.
	r.w = ipc.NewWriter(r.cw, ipc.WithSchema(sch), ipc.WithAllocator(o.Allocator))
	return r, nil
}

// countingWriter counts bytes on their way to a buffered writer.
type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (r *spillRun) write(rec arrow.RecordBatch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows += rec.NumRows()
	r.arrowBytes += datafile.RecordBytes(rec)
	if err := r.w.Write(rec); err != nil {
		return fmt.Errorf("optimize: writing spill file: %w", err)
	}
	return nil
}

// close finishes the spill file (it stays on disk until discard).
func (r *spillRun) close() error {
	err := r.w.Close()
	r.w = nil
	if err == nil {
		err = r.cw.w.Flush()
	}
	if err != nil {
		return fmt.Errorf("optimize: finishing spill file: %w", err)
	}
	r.size = r.cw.n
	return nil
}

// discard closes and deletes the spill file.
func (r *spillRun) discard() {
	if r.f == nil {
		return
	}
	if r.w != nil {
		r.w.Close()
		r.w = nil
	}
	r.f.Close()
	os.Remove(r.f.Name())
	r.f = nil
}

// sortInto loads the run, sorts it by key and writes the data columns to the bin's
// files; after is the number of rows in later runs. The rows are gathered from the
// run's batches as read where every column has a chunked gather (chunkShift), else
// from their concatenation.
func (r *spillRun) sortInto(ctx context.Context, w *clusterWriter, sch *arrow.Schema, dataCols []int, clusters []clusterCol, after int64, o Options) error {
	if r.rows == 0 {
		return nil
	}
	rd, err := ipc.NewReader(bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.size), 64<<10), ipc.WithSchema(sch), ipc.WithAllocator(o.Allocator))
	if err != nil {
		return fmt.Errorf("optimize: reopening spill file: %w", err)
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	err = rd.Err()
	rd.Release()
	if err != nil {
		return fmt.Errorf("optimize: reading spill file: %w", err)
	}
	// Position order: every batch holds rows of one input batch in ascending position,
	// and input batches cover disjoint ranges, so ordering the batches by their first
	// position orders the rows.
	posCol := int(sch.NumFields()) - 2
	slices.SortFunc(recs, func(a, b arrow.RecordBatch) int {
		return cmp.Compare(a.Column(posCol).(*array.Int64).Value(0), b.Column(posCol).(*array.Int64).Value(0))
	})
	progress := func(rows int) int64 {
		return w.it.bin.Bytes / 2 * int64(rows) / max(w.rowsTotal, 1)
	}
	if shift, ok := chunkShift(sch, recs); ok {
		// Gathered from the batches as read (packed row IDs, ascending in position
		// order), without concatenating them first.
		keyCol := int(sch.NumFields()) - 1
		pairs := make([]keyed, 0, r.rows)
		tb := tieBreak{chunks: make([][]arrow.Array, len(clusters)), shift: shift}
		defer func() {
			for _, cs := range tb.chunks {
				releaseAll(cs)
			}
		}()
		for b, rec := range recs {
			for i, v := range rec.Column(keyCol).(*array.Int64).Int64Values() {
				pairs = append(pairs, keyed{uint64(v) ^ (1 << 63), uint32(b)<<shift | uint32(i)})
			}
			cols, err := leafColumns(rec, clusters, o.Allocator)
			if err != nil {
				return err
			}
			for c, a := range cols {
				tb.chunks[c] = append(tb.chunks[c], a)
			}
		}
		sortKeyed(ctx, pairs, tb, o.Parallelism)
		return w.writeSorted(ctx, chunkedInput(sch, recs, shift), orderOf(pairs), dataCols, after, progress(len(pairs)))
	}
	all, err := concatRecords(ctx, sch, recs, o.Parallelism, o.Allocator)
	if err != nil {
		return err
	}
	defer all.Release()
	for _, rec := range recs {
		rec.Release()
	}
	recs = nil
	kc := all.Column(int(all.NumCols()) - 1).(*array.Int64).Int64Values()
	pairs := make([]keyed, len(kc))
	for i, v := range kc {
		pairs[i] = keyed{uint64(v) ^ (1 << 63), uint32(i)}
	}
	tbCols, err := leafColumns(all, clusters, o.Allocator)
	if err != nil {
		return err
	}
	sortKeyed(ctx, pairs, tieBreak{cols: tbCols}, o.Parallelism)
	releaseAll(tbCols)
	return w.writeSorted(ctx, batchInput(all), orderOf(pairs), dataCols, after, progress(len(pairs)))
}
