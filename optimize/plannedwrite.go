package optimize

import (
	"context"
	"fmt"
	"math"
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
// batch (gather.TakeChunks) read each batch's part of a column from cache once the
// window holds several of its rows per cache line (measured: 5-10% less time for
// the whole OPTIMIZE than 64k rows).
const (
	plannedTakeRows  = 256 << 10
	plannedTakeBytes = 32 << 20
)

// plannedWrites counts the bins writePlanned wrote from a probe (tests check that
// their cases take this path).
var plannedWrites atomic.Int64

// writePlanned writes the sorted rows of a bin held in memory (every column of src,
// at the positions or packed row IDs of ord) into files of the target size, several
// files at once.
//
// Writing file after file, each cut where the previous one's encoded size reached the
// target, leaves the write, most of OPTIMIZE's time, on about one core: the columns
// of one file are encoded in parallel, but every row group ends in a barrier, and the
// gather and the statistics are fed by one goroutine. So the cuts are planned first:
// a probe (datafile.Output.Probe) encodes probeBlocks evenly spaced runs of the
// sorted rows, about a row group in all, and its compressed bytes per row give the
// rows a file of the target holds; each cut then moves forward past rows of equal
// key, so that no key is in two files, and the last file takes the rest when that is
// within datafile.LastFileSlack of the target (as Roller does). Then up to
// Parallelism files are written at once, each gathering and encoding its own rows,
// starting from the probe's dictionary choices and size model. The files depend on
// the data and the options only, not on Parallelism or on how the goroutines
// interleave (datafile D8). A bin too small to need a probe goes through the
// roller as before.
func (w *clusterWriter) writePlanned(ctx context.Context, src sortedInput, ord sortedOrder, progress int64) error {
	n := int64(len(ord.ids))
	rgRows := int64(float64(w.out.RowGroupBytes()) / math.Max(src.perRow()/2, 1e-3))
	probe := min(max(rgRows, minProbeRows), maxProbeRows)
	if n < 2*probe {
		return w.writeSorted(ctx, src, ord, nil, 0, progress)
	}
	est, err := w.probe(ctx, src, ord, probe)
	if err != nil {
		return err
	}
	plannedWrites.Add(1)
	cuts := planCuts(ord, w.target(), est)
	place := w.place
	place.Probe = est
	adds := make([]*log.Add, len(cuts)-1)
	rows := make([]int64, len(cuts)-1)
	files := len(cuts) - 1
	par := max(w.o.Parallelism, 1)
	err = parallel(ctx, min(par, files), files, func(ctx context.Context, i int) error {
		// The files still to start share the workers: the last ones get more, so
		// that a lone last file does not leave cores idle.
		fo := place
		fo.Parallelism = max(1, par/min(par, files-i))
		var err error
		adds[i], err = w.writeFile(ctx, src, ord.ids[cuts[i]:cuts[i+1]], fo, progress*(cuts[i+1]-cuts[i])/n)
		if err == nil {
			rows[i] = cuts[i+1] - cuts[i]
		}
		return err
	})
	for i, a := range adds {
		if a != nil {
			w.planned = append(w.planned, a)
			w.res.rows += rows[i]
		}
	}
	return err
}

// target is the size the bin's files aim for.
func (w *clusterWriter) target() int64 {
	if w.place.TargetFileSize > 0 {
		return w.place.TargetFileSize
	}
	return w.out.TargetFileSize()
}

// probe encodes probeBlocks evenly spaced runs of the sorted rows, rows in all
// (fewer than half of ord), and returns what the encoding told.
func (w *clusterWriter) probe(ctx context.Context, src sortedInput, ord sortedOrder, rows int64) (*datafile.Probe, error) {
	n := int64(len(ord.ids))
	run := rows / probeBlocks
	idx := make([]uint32, 0, run*probeBlocks)
	for b := int64(0); b < probeBlocks; b++ {
		// The run centred in the b-th eighth of the rows.
		lo := b*n/probeBlocks + (n/probeBlocks-run)/2
		idx = append(idx, ord.ids[lo:lo+run]...)
	}
	rec, err := w.gather(ctx, src, idx, w.o.Parallelism)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	est, err := w.out.Probe(ctx, rec, w.o.Parallelism)
	if err != nil {
		return nil, fmt.Errorf("optimize: estimating the sorted files' size: %w", err)
	}
	return est, nil
}

// planCuts returns the first row of each file of the sorted rows and, last, their
// count: files of about target bytes at est's bytes per row, each cut moved forward
// past rows of equal key, the last file taking the rest when it fits within
// datafile.LastFileSlack over the target.
func planCuts(ord sortedOrder, target int64, est *datafile.Probe) []int64 {
	n := int64(len(ord.ids))
	per := max(int64(float64(target-est.Overhead)/est.BytesPerRow), 1)
	cuts := []int64{0}
	for lo := int64(0); lo < n; {
		hi := n
		if float64(n-lo) > float64(per)*(1+datafile.LastFileSlack) {
			hi = lo + per
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
		rec, err = w.gather(ctx, src, ids[lo:hi], place.Parallelism)
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

// gather takes the rows at ids from every column of src, on up to par goroutines.
func (w *clusterWriter) gather(ctx context.Context, src sortedInput, ids []uint32, par int) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, len(src.cols))
	err := parallel(ctx, par, len(src.cols), func(ctx context.Context, c int) error {
		var err error
		arrs[c], err = gather.TakeChunks(ctx, src.cols[c], ids, w.o.Allocator)
		return err
	})
	var rec arrow.RecordBatch
	if err == nil {
		rec = array.NewRecordBatch(src.sch, arrs, int64(len(ids)))
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
