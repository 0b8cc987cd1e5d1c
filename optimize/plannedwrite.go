package optimize

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/gather"
	"github.com/skiplake/skiplake/log"
)

// probeBlocks is how many evenly spaced runs of the sorted rows a size probe
// encodes: runs, so that the probe compresses as sorted neighbours do; several, so
// that it sees the whole range of the bin's data.
const probeBlocks = 8

// probeRows bounds the rows of a size probe: about a row group's worth (its
// dictionaries and Bloom filters cost per row what a row group's do), at least
// minProbeRows for a stable estimate, at most maxProbeRows so that the probe stays a
// few percent of a large bin's write.
const (
	minProbeRows = 16 << 10
	maxProbeRows = 256 << 10
)

// plannedTakeRows and plannedTakeBytes bound the rows a file of writePlanned
// gathers at a time (and the Arrow bytes of that copy, so that wide rows do not
// make it large): more rows than takeRows, because a gather's IDs grouped by input
// batch (gather.TakeGrouped) read each batch's part of a column from cache once the
// window holds several of its rows per cache line (measured: 5-10% less time for
// the whole OPTIMIZE than 64k rows).
const (
	plannedTakeRows  = 256 << 10
	plannedTakeBytes = 32 << 20
)

// plannedWrites counts the bins writePlanned wrote from a probe, and replannedBins
// those of them whose files missed the target and were written again by the roller
// from the first that did (tests check which path their cases take).
var plannedWrites, replannedBins atomic.Int64

// writePlanned writes the sorted rows of a bin held in memory (every column of src,
// at the positions or packed row IDs of ord) into files of the target size, several
// files at once.
//
// Writing file after file, each cut where the previous one's encoded size reached the
// target, leaves the write, most of OPTIMIZE's time, on about one core: the columns
// of one file are encoded in parallel, but every row group ends in a barrier, and the
// gather and the statistics are fed by one goroutine. So the cuts are planned first:
// a probe (datafile.Output.Probe) encodes probeBlocks evenly spaced runs of the
// sorted rows, about a row group in all, and each row's estimated size is its
// in-memory width times the compression its region's run showed, scaled to the
// probe's bytes per row (sizeEstimate: rows wider or less compressible at one end
// of the order get smaller files). Each cut then moves forward past rows of equal
// key, so that no key is in two files, and the last file takes the rest when that is
// within datafile.LastFileSlack of the target (as Roller does). Then up to
// Parallelism files are written at once, each gathering and encoding its own rows,
// starting from the probe's dictionary choices and size model. Files that still
// miss the target (below 0.9 of it, or above 1+LastFileSlack) are taken back from
// the first that did, and the roller writes the rest. The files depend on the data
// and the options only, not on Parallelism or on how the goroutines interleave
// (datafile D8). A bin too small to need a probe, or whose input fits one file,
// goes through the roller.
func (w *clusterWriter) writePlanned(ctx context.Context, src sortedInput, ord sortedOrder, progress int64) error {
	n := int64(len(ord.ids))
	rgRows := int64(float64(w.out.RowGroupBytes()) / math.Max(src.perRow()/2, 1e-3))
	probe := min(max(rgRows, minProbeRows), maxProbeRows)
	if n < 2*probe || w.it.bin.Bytes <= w.target() {
		// A bin whose input fits one file (sorted rows compress as well as the
		// input or better) has nothing to write side by side: the roller writes
		// it, its columns encoded in parallel, without a probe.
		return w.writeSorted(ctx, src, ord, nil, 0, progress)
	}
	est, starts, err := w.probe(ctx, src, ord, probe)
	if err != nil {
		return err
	}
	plannedWrites.Add(1)
	cuts := planCuts(ord, w.target(), est.Overhead, newSizeEstimate(src, ord, est, starts, probe/probeBlocks))
	place := w.place
	place.Probe = est
	files := len(cuts) - 1
	adds := make([]*log.Add, files)
	par := max(w.o.Parallelism, 1)
	err = parallel(ctx, min(par, files), files, func(ctx context.Context, i int) error {
		// The files still to start share the workers: the last ones get more, so
		// that a lone last file does not leave cores idle.
		fo := place
		fo.Parallelism = max(1, par/min(par, files-i))
		var err error
		adds[i], err = w.writeFile(ctx, src, ord.ids[cuts[i]:cuts[i+1]], fo, progress*(cuts[i+1]-cuts[i])/n)
		return err
	})
	if err != nil {
		return err // the files closed are removed with the batch (Output.Discard)
	}
	// The plan is an estimate: where the sorted rows' width or compressibility
	// changes along the order, a file can miss the target. From the first file that
	// did (deterministic: sizes depend on the data only), the files are taken back
	// and the rest is written by the roller, each file cut at its encoded size.
	bad := misSized(adds, w.target())
	w.planned = append(w.planned, adds[:bad]...)
	w.res.rows += cuts[bad]
	if bad == len(adds) {
		return nil
	}
	replannedBins.Add(1)
	for _, a := range adds[bad:] {
		if err := w.out.Remove(ctx, a); err != nil {
			return err
		}
	}
	return w.writeSorted(ctx, src, ord.from(int(cuts[bad])), nil, 0, 0)
}

// misSized returns the index of the first file (in order) whose size misses the
// target — below 0.9 of it or above 1+datafile.LastFileSlack, the last file only
// above — or len(adds) when none does.
func misSized(adds []*log.Add, target int64) int {
	for i, a := range adds {
		r := float64(a.Size) / float64(target)
		if r > 1+datafile.LastFileSlack || (i < len(adds)-1 && r < 0.9) {
			return i
		}
	}
	return len(adds)
}

// from returns the order of the rows from position lo on.
func (o sortedOrder) from(lo int) sortedOrder {
	n := len(o.ids) - lo
	out := sortedOrder{ids: o.ids[lo:], same: make([]uint64, (n+63)/64)}
	for i := 1; i < n; i++ {
		if o.tied(lo + i) {
			out.same[i/64] |= 1 << (i % 64)
		}
	}
	return out
}

// target is the size the bin's files aim for.
func (w *clusterWriter) target() int64 {
	if w.place.TargetFileSize > 0 {
		return w.place.TargetFileSize
	}
	return w.out.TargetFileSize()
}

// probe encodes probeBlocks evenly spaced runs of the sorted rows, rows in all
// (fewer than half of ord), each ending a row group, and returns what the
// encoding told and the start of each run in the sorted order.
func (w *clusterWriter) probe(ctx context.Context, src sortedInput, ord sortedOrder, rows int64) (*datafile.Probe, []int64, error) {
	n := int64(len(ord.ids))
	run := rows / probeBlocks
	idx := make([]uint32, 0, run*probeBlocks)
	starts := make([]int64, probeBlocks)
	for b := int64(0); b < probeBlocks; b++ {
		// The run centred in the b-th eighth of the rows.
		lo := b*n/probeBlocks + (n/probeBlocks-run)/2
		starts[b] = lo
		idx = append(idx, ord.ids[lo:lo+run]...)
	}
	rec, err := w.gather(ctx, src, src.sch, nil, idx, w.o.Parallelism)
	if err != nil {
		return nil, nil, err
	}
	defer rec.Release()
	runs := make([]arrow.RecordBatch, probeBlocks)
	for b := range runs {
		runs[b] = rec.NewSlice(int64(b)*run, int64(b+1)*run)
	}
	est, err := w.out.Probe(ctx, runs, w.o.Parallelism)
	for _, r := range runs {
		r.Release()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("optimize: estimating the sorted files' size: %w", err)
	}
	return est, starts, nil
}

// estimateScale scales every size estimate (1; a test makes the plan wrong on
// purpose to check that files missing the target are written again).
var estimateScale = 1.0

// sizeEstimate estimates the compressed size of ranges of the sorted rows: each
// row's in-memory width (fixed-width columns, the bytes of its strings and
// binaries, the average of other columns) times the compression ratio the probe
// measured on the run of its eighth of the order. Widths are read every stride
// rows (at most 1<<16 of them), so that the estimate costs a few milliseconds
// whatever the bin's size; cum[j] is the estimate of the rows before j*stride.
type sizeEstimate struct {
	stride int64
	n      int64
	cum    []float64
	rate   []float64 // estimated bytes per row from j*stride on
}

// newSizeEstimate measures the widths of the sorted rows and weighs them by the
// probe's per-run ratios (runs of run rows starting at starts).
func newSizeEstimate(src sortedInput, ord sortedOrder, est *datafile.Probe, starts []int64, run int64) sizeEstimate {
	n := int64(len(ord.ids))
	wd := newWidths(src)
	// The runs' sizes give how the regions differ; the probe's bytes per row (the
	// runs in row groups as files have them) the level: the ratios are scaled so that
	// they estimate the probe's own rows at that size.
	ratio := make([]float64, len(starts))
	var runBytes int64
	for _, b := range est.RunBytes {
		runBytes += b
	}
	level := est.BytesPerRow * float64(run*int64(len(starts))) / math.Max(float64(runBytes), 1)
	for b, lo := range starts {
		var arrowBytes float64
		for _, id := range ord.ids[lo : lo+run] {
			arrowBytes += wd.of(id)
		}
		ratio[b] = estimateScale * level * float64(est.RunBytes[b]) / math.Max(arrowBytes, 1)
	}
	e := sizeEstimate{stride: max(1, n>>16), n: n}
	m := (n + e.stride - 1) / e.stride
	e.cum = make([]float64, m+1)
	e.rate = make([]float64, m)
	for j := int64(0); j < m; j++ {
		p := j * e.stride
		seg := min(p*int64(len(starts))/n, int64(len(starts)-1))
		e.rate[j] = wd.of(ord.ids[p]) * ratio[seg]
		e.cum[j+1] = e.cum[j] + e.rate[j]*float64(min(e.stride, n-p))
	}
	return e
}

// at is the estimated compressed size of the sorted rows before position p.
func (e sizeEstimate) at(p int64) float64 {
	if p >= e.n {
		return e.cum[len(e.cum)-1]
	}
	j := p / e.stride
	return e.cum[j] + float64(p-j*e.stride)*e.rate[j]
}

// widths gives a row's in-memory width by its packed ID (or position).
type widths struct {
	fixed  float64   // bytes of the fixed-width columns and of other columns' average
	vars   [][]int32 // per string or binary column, then chunk: the offsets
	nvar   int
	chunks int // per column
	shift  uint
	mask   uint32
}

func newWidths(src sortedInput) widths {
	var wd widths
	if len(src.cols) > 0 {
		wd.chunks = len(src.cols[0].Arrays)
		wd.shift = src.cols[0].Shift
		wd.mask = uint32(uint64(1)<<wd.shift - 1)
	}
	for c, col := range src.cols {
		dt := src.sch.Field(c).Type
		switch {
		case dt.ID() == arrow.STRING || dt.ID() == arrow.BINARY:
			for _, a := range col.Arrays {
				d := a.Data()
				wd.vars = append(wd.vars, arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():])
			}
			wd.nvar++
			wd.fixed += 4
		case dt.ID() == arrow.BOOL:
			wd.fixed += 0.125
		default:
			if fw, ok := dt.(arrow.FixedWidthDataType); ok {
				wd.fixed += float64(fw.BitWidth()) / 8
				continue
			}
			var bytes, rows float64
			for _, a := range col.Arrays {
				rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{src.sch.Field(c)}, nil), []arrow.Array{a}, int64(a.Len()))
				bytes += float64(datafile.RecordBytes(rec))
				rows += float64(a.Len())
				rec.Release()
			}
			wd.fixed += bytes / math.Max(rows, 1)
		}
	}
	return wd
}

// of is the width of the row with packed ID id.
func (wd widths) of(id uint32) float64 {
	w := wd.fixed
	if wd.nvar == 0 {
		return w
	}
	k, r := int(id>>wd.shift), id&wd.mask
	for v := 0; v < wd.nvar; v++ {
		o := wd.vars[v*wd.chunks+k]
		w += float64(o[r+1] - o[r])
	}
	return w
}

// planCuts returns the first row of each file of the sorted rows and, last, their
// count: files of about target bytes (overhead of them fixed, the rest rows as size
// estimates them), each cut moved forward past rows of equal key, the last file
// taking the rest when it fits within datafile.LastFileSlack over the target.
func planCuts(ord sortedOrder, target, overhead int64, size sizeEstimate) []int64 {
	n := int64(len(ord.ids))
	room := math.Max(float64(target-overhead), 1)
	cuts := []int64{0}
	for lo := int64(0); lo < n; {
		base := size.at(lo)
		hi := n
		if size.at(n)-base > room*(1+datafile.LastFileSlack) {
			// The first row at which the file holds room bytes.
			hi = lo + 1 + int64(sort.Search(int(n-lo-1), func(i int) bool { return size.at(lo+1+int64(i))-base >= room }))
			for hi < n && ord.tied(int(hi)) {
				hi++
			}
		}
		cuts = append(cuts, hi)
		lo = hi
	}
	return cuts
}

// writeFile writes the rows at ids, in order, into one file at place, gathering
// up to plannedTakeRows (and plannedTakeBytes) at a time on up to place.Parallelism goroutines, and returns its add
// action. On error the file is discarded.
func (w *clusterWriter) writeFile(ctx context.Context, src sortedInput, ids []uint32, place datafile.FileOptions, progress int64) (*log.Add, error) {
	f, err := w.out.Create(ctx, place)
	if err != nil {
		return nil, err
	}
	n := len(ids)
	window := int(min(plannedTakeRows, max(plannedTakeBytes/math.Max(src.perRow(), 1), 4096)))
	for lo := 0; lo < n; {
		hi := min(lo+window, n)
		var rec arrow.RecordBatch
		rec, err = w.gather(ctx, src, src.sch, nil, ids[lo:hi], place.Parallelism)
		if err != nil {
			break
		}
		err = f.Write(rec)
		w.pacer.add(datafile.RecordBytes(rec))
		rec.Release()
		if err != nil {
			err = fmt.Errorf("optimize: writing sorted rows: %w", err)
			break
		}
		w.e.progress("write", progress*int64(hi-lo)/int64(n))
		lo = hi
	}
	if err != nil {
		f.Abort()
		return nil, err
	}
	return f.Close(ctx)
}

// gather takes the rows at ids from the columns cols of src (nil: every column),
// on up to par goroutines, as a batch of sch (those columns' fields).
func (w *clusterWriter) gather(ctx context.Context, src sortedInput, sch *arrow.Schema, cols []int, ids []uint32, par int) (arrow.RecordBatch, error) {
	if len(src.cols) == 0 {
		return nil, fmt.Errorf("optimize: gathering rows of no columns")
	}
	if cols == nil {
		cols = make([]int, len(src.cols))
		for i := range cols {
			cols[i] = i
		}
	}
	// The columns are chunked alike (the batches as read): the IDs are grouped by
	// chunk once for all of them.
	grp, err := gather.GroupIDs(ids, src.cols[0].Shift, len(src.cols[0].Arrays))
	if err != nil {
		return nil, err
	}
	arrs := make([]arrow.Array, len(cols))
	err = parallel(ctx, par, len(cols), func(ctx context.Context, i int) error {
		var err error
		arrs[i], err = gather.TakeGrouped(ctx, src.cols[cols[i]], grp, w.o.Allocator)
		return err
	})
	var rec arrow.RecordBatch
	if err == nil {
		rec = array.NewRecordBatch(sch, arrs, int64(len(ids)))
	}
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
	return rec, err
}

// perRow is the Arrow bytes of a row of src.
func (src sortedInput) perRow() float64 { return float64(src.bytes) / math.Max(float64(src.rows), 1) }
