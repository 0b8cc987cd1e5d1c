package datafile

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
)

// Roller writes a stream of batches for one place (one partition) into files of
// about the Output's TargetFileSize (or the place's own), in input order: each file receives a contiguous
// run of the input, so sorted input stays sorted within and across files. Not safe
// for concurrent use.
//
// Sizing: a file is closed once its estimated size (Writer.EstimatedSize: bytes
// written, the open row group's encoded pages, Bloom filters and footer to come)
// reaches the target. A batch larger than the room left in the file is sliced at the
// row where the file should end, estimated from the compressed bytes per row of the
// files closed so far (or of the open file, once it has encoded pages). So a file
// ends within a slice of its target, whatever the batch sizes, and no size is
// guessed from Arrow bytes except before the first page of the first file.
type Roller struct {
	o     *Output
	place FileOptions
	cur   *File
	adds  []*log.Add // of the files this Roller closed
	// own: sizes are estimated from this Roller's closed files only (ownBytes,
	// ownRows: their bytes without fixed overhead, and rows), not the Output's, and
	// its files start from its first file's dictionary choices (ownDict), not the
	// Output's, nor offer theirs to it.
	own               bool
	ownBytes, ownRows int64
	ownDict           map[string]bool
	ownSizes          *sizeModel
}

// minSliceFraction is the smallest slice Roller gives a file, as a fraction of the
// target: it bounds the number of slices a badly estimated batch is cut into.
const minSliceFraction = 0.01

// NewRoller returns a Roller writing files at place.
func (o *Output) NewRoller(place FileOptions) *Roller { return &Roller{o: o, place: place} }

// NewOwnRoller returns a Roller writing files at place that learns only from the
// files it writes itself, never from other writers' files of the Output: the bytes
// per row from the files it closed, the dictionary choices from its first file,
// the encoders' size model from its files;
// and it decides where a file ends from settled sizes (File.Settle before every
// estimate: the encoders' progress depends on timing). Rollers writing side by
// side then cut the same files however they interleave (D8).
func (o *Output) NewOwnRoller(place FileOptions) *Roller {
	return &Roller{o: o, place: place, own: true, ownSizes: newSizeModel(o.file.NumFields())}
}

// Write appends rec (Spec.Schema) to the current file, closing it and starting the
// next whenever it reaches the target size. The batch is not retained.
func (r *Roller) Write(ctx context.Context, rec arrow.RecordBatch) error {
	n := rec.NumRows()
	arrowPerRow := float64(RecordBytes(rec)) / math.Max(float64(n), 1)
	for off := int64(0); off < n; {
		take := r.Fill(n-off, arrowPerRow)
		part := rec
		if off != 0 || take != n {
			part = rec.NewSlice(off, off+take)
		}
		err := r.Append(ctx, part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return err
		}
		off += take
	}
	return nil
}

// LastFileSlack lets the last file of a roll exceed the target by this fraction
// rather than leave a small file behind (Roller.Fill; writers that plan their cuts
// themselves follow the same rule).
const LastFileSlack = 0.1

// Fill returns how many of the next remaining rows the current file (or the next
// one, if none is open) should take to reach the target size: at least 1, at most
// remaining, and all of remaining when they fit within LastFileSlack over the target.
// arrowPerRow (the rows' in-memory size) serves before any size is known. A caller
// that may cut files only at certain rows (OPTIMIZE, between different keys) moves
// the cut forward to the next such row and Appends.
func (r *Roller) Fill(remaining int64, arrowPerRow float64) int64 {
	target := float64(r.target())
	used := 0.0
	if r.cur != nil {
		if r.own {
			// What the encoders have done so far depends on timing: an own
			// Roller decides from settled sizes only.
			r.cur.Settle()
		}
		used = float64(r.cur.EstimatedSize())
	}
	bpr := r.bytesPerRow(arrowPerRow)
	if used+float64(remaining)*bpr <= target*(1+LastFileSlack) {
		return remaining
	}
	room := math.Max(target-used, target*minSliceFraction)
	return min(max(int64(room/bpr), 1), remaining)
}

// Append writes rec whole to the current file (starting one if none is open) and
// closes the file once it has reached the target size. The batch is not retained.
func (r *Roller) Append(ctx context.Context, rec arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.cur == nil {
		var f *File
		var err error
		if r.own {
			f, err = r.o.create(ctx, r.place, r.ownDict, r.ownSizes)
		} else {
			f, err = r.o.Create(ctx, r.place)
		}
		if err != nil {
			return err
		}
		r.cur = f
	}
	f := r.cur
	if err := f.Write(rec); err != nil {
		return err
	}
	if r.own && r.ownDict == nil {
		// Made once the writer has its sample (Writer.Write).
		r.ownDict = f.w.DictionaryChoices()
	}
	target := float64(r.target())
	if r.own {
		f.Settle()
	}
	if float64(f.EstimatedSize()) >= 0.95*target {
		// Near the end: let the encoders catch up so that the estimate counts
		// encoded pages, then decide.
		f.Settle()
		if float64(f.EstimatedSize()) >= target {
			return r.closeCurrent(ctx)
		}
	}
	return nil
}

// target is the size the Roller's files aim for.
func (r *Roller) target() int64 {
	if r.place.TargetFileSize > 0 {
		return r.place.TargetFileSize
	}
	return r.o.spec.TargetFileSize
}

// bytesPerRow estimates the compressed bytes per row of the data: from the files
// the Output closed, else from the open file once it has rows, else half the Arrow
// size.
func (r *Roller) bytesPerRow(arrowPerRow float64) float64 {
	b, n := r.ownBytes, r.ownRows
	if !r.own {
		r.o.mu.Lock()
		b, n = r.o.closedBytes, r.o.closedRows
		r.o.mu.Unlock()
	}
	if n > 0 {
		return math.Max(float64(b)/float64(n), 1e-3)
	}
	if f := r.cur; f != nil && f.Rows() > 0 {
		return math.Max(float64(f.EstimatedSize()-f.w.overhead())/float64(f.Rows()), 1e-3)
	}
	return math.Max(arrowPerRow/2, 1e-3)
}

func (r *Roller) closeCurrent(ctx context.Context) error {
	f := r.cur
	r.cur = nil
	rows, overhead := f.Rows(), f.w.overhead()
	add, err := f.Close(ctx)
	if add != nil {
		r.adds = append(r.adds, add)
		r.ownBytes += max(add.Size-overhead, 0)
		r.ownRows += rows
	}
	return err
}

// Adds returns the add actions of the files this Roller closed, in order.
func (r *Roller) Adds() []*log.Add { return append([]*log.Add(nil), r.adds...) }

// Close closes the current file (its add action joins the Output's).
func (r *Roller) Close(ctx context.Context) error {
	if r.cur == nil {
		return nil
	}
	return r.closeCurrent(ctx)
}

// Abort discards the current file.
func (r *Roller) Abort() {
	if r.cur != nil {
		r.cur.Abort()
		r.cur = nil
	}
}
