package optimize

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/gather"
	"github.com/skiplake/skiplake/log"
)

// takeRows is how many rows are gathered (Arrow take) and written at a time when a
// sorted range is written out; it bounds the extra copy a sorted write holds.
const takeRows = 64 << 10

// keyColumn is the sort key carried in spill files (their last column).
const keyColumn = "__skiplake_optimize_key"

// posColumn is each row's position in the bin (its input file's first row in the bin
// plus its row in the file), carried in spill files just before keyColumn: rows reach a
// run from the bin's files concurrently, and a run puts its batches back in position
// order before it sorts, so that rows with equal keys and clustering values come out in
// input order, as on the in-memory path, whatever order the readers finished in.
const posColumn = "__skiplake_optimize_pos"

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
// compute one key per row, sort the rows by key and write them, in key order, into
// files of the target size (datafile.Roller, cut only where the key changes, so file
// key ranges never overlap) with row groups of about an eighth of the target.
// Inputs estimated to fit in the memory budget are clustered in memory; larger ones
// through spill files (see clusterSpill). Files the bin stored before an error are
// removed with the rest of the batch (out.Discard).
//
// o is the plan's options with the MemoryBudget and Parallelism this bin may use
// (a share of them when small bins run side by side); the columns of each file are
// encoded on up to o.Parallelism goroutines.
func (e *executor) cluster(ctx context.Context, it workItem, o Options, out *datafile.Output) (*binResult, error) {
	if it.bin.Layout != nil {
		return e.clusterWorkload(ctx, it, o, out)
	}
	p := e.plan
	b := it.bin
	res := &binResult{bin: b}
	infos, err := e.footers(ctx, b.adds, o.Parallelism)
	if err != nil {
		return nil, err
	}
	memEst, rows := totals(infos)
	nFiles := int(math.Round(float64(b.Bytes) / float64(b.fileSize(p.opts.TargetFileSize))))
	nFiles = max(nFiles, 1)
	cols, _ := json.Marshal(p.ClusterBy)
	first := b.adds[0]
	dec, err := first.DecodedPath()
	if err != nil {
		return nil, err
	}
	place := datafile.FileOptions{
		Dir: dirOf(dec), LogDir: dirOf(first.Path), PartitionValues: it.part.Values, Parallelism: o.Parallelism,
		TargetFileSize: b.FileSize,
		Tags: map[string]string{
			TagCubeID:      uuid.NewString(),
			TagCubeColumns: string(cols),
			TagCubeCurve:   p.Curve.String(),
			TagTargetSize:  strconv.FormatInt(p.opts.TargetFileSize, 10),
		}}
	w := &clusterWriter{e: e, it: it, o: o, res: res, rowsTotal: rows, out: out, place: place, roller: out.NewRoller(place)}
	// The in-memory path holds the input, its concatenation and one take slice:
	// about three times the estimate.
	if 3*memEst <= o.MemoryBudget && rows < math.MaxUint32 {
		err = e.clusterInMemory(ctx, w, infos)
	} else {
		err = e.clusterSpill(ctx, w, infos, nFiles, memEst)
	}
	if err == nil {
		err = w.roller.Close(ctx)
	}
	if err != nil {
		w.roller.Abort()
		return nil, err
	}
	res.adds = append(w.planned, w.roller.Adds()...)
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

// totals returns the estimated Arrow bytes and the rows of a bin's files.
func totals(infos []fileInfo) (memEst, rows int64) {
	for _, fi := range infos {
		memEst += fi.memEst
		rows += fi.rows
	}
	return memEst, rows
}

// clusterColumns returns the clustering columns of a batch of the data schema (a
// nested column's leaf values), new references: release them with releaseAll.
func (p *Plan) clusterColumns(rec arrow.RecordBatch) ([]arrow.Array, error) {
	return leafColumns(rec, p.clusters, p.opts.Allocator)
}

func (e *executor) clusterInMemory(ctx context.Context, w *clusterWriter, infos []fileInfo) error {
	p := e.plan
	o := w.o
	w.pacer = newHeapPacer(o.MemoryBudget)
	defer func() { w.pacer = nil }()
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
		err := p.readInput(ctx, adds[i], o.Allocator, func(rec arrow.RecordBatch, _ int64) error {
			// Sampled, keyed and gathered from on several goroutines below (R1).
			datafile.Settle(rec)
			rec.Retain()
			recs = append(recs, rec)
			w.pacer.add(datafile.RecordBytes(rec))
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
		n += r.NumRows()
	}
	// One sampler per worker: each sees its column's batches in order, so the
	// sample is the one a single pass gives.
	err = parallel(ctx, o.Parallelism, len(s), func(ctx context.Context, c int) error {
		for _, r := range recs {
			a, err := leafArray(r.Column(p.clusters[c][0]), p.clusters[c][1:], p.opts.Allocator)
			if err != nil {
				return err
			}
			err = s[c].Add(a)
			a.Release()
			if err != nil {
				return fmt.Errorf("optimize: sampling clustering column %d: %w", c, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	k, err := newKeyer(p.Curve, s)
	if err != nil {
		return err
	}
	pairs := make([]keyed, n)
	offs := make([]int64, len(recs)+1)
	for i, r := range recs {
		offs[i+1] = offs[i] + r.NumRows()
	}
	// The rows are gathered from the batches as they were read (packed row IDs), or,
	// when some column's type has no chunked gather or the IDs do not fit 32 bits,
	// from their concatenation (positions in the bin).
	shift, chunked := chunkShift(p.dataSch, recs)
	id := func(b, i int) uint32 { return uint32(offs[b]) + uint32(i) }
	if chunked {
		id = func(b, i int) uint32 { return uint32(b)<<shift | uint32(i) }
	}
	// Keys batch by batch on every worker (the keyer is immutable).
	err = parallel(ctx, o.Parallelism, len(recs), func(ctx context.Context, b int) error {
		off, m := offs[b], int(recs[b].NumRows())
		keys := make([]uint64, m)
		cols, err := p.clusterColumns(recs[b])
		if err != nil {
			return err
		}
		_, err = k.keys(cols, off, keys, nil)
		releaseAll(cols)
		if err != nil {
			return err
		}
		for i, key := range keys {
			pairs[off+int64(i)] = keyed{key, id(b, i)}
		}
		w.pacer.add(int64(m) * 16) // the keys and the ranks, garbage now
		return nil
	})
	if err != nil {
		return err
	}
	if chunked {
		tb := tieBreak{chunks: make([][]arrow.Array, len(p.clusters)), shift: shift}
		defer func() {
			for _, cs := range tb.chunks {
				releaseAll(cs)
			}
		}()
		for _, r := range recs {
			cols, err := p.clusterColumns(r)
			if err != nil {
				return err
			}
			for c, a := range cols {
				tb.chunks[c] = append(tb.chunks[c], a)
			}
		}
		sortKeyed(ctx, pairs, tb, o.Parallelism)
		ord := orderOf(pairs)
		pairs = nil
		w.pacer.add(ord.len() * 32) // the pairs and the sort's buffer, garbage now
		return w.writePlanned(ctx, chunkedInput(p.dataSch, recs, shift), ord, w.it.bin.Bytes/2)
	}
	all, err := concatRecords(ctx, p.dataSch, recs, o.Parallelism, o.Allocator)
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
	tb, err := p.clusterColumns(all)
	if err != nil {
		return err
	}
	sortKeyed(ctx, pairs, tieBreak{cols: tb}, o.Parallelism)
	releaseAll(tb)
	return w.writePlanned(ctx, batchInput(all), orderOf(pairs), w.it.bin.Bytes/2)
}

// gatherChunked lets the in-memory clustering gather from the batches as read (a
// test turns it off to compare with the concatenation).
var gatherChunked = true

// sortedInput is the rows a sorted write gathers from: each column of sch as
// chunks that the pairs' positions address (gather.Chunks), and the Arrow size of
// the rows as one batch (what datafile.RecordBytes gives for their concatenation:
// the size the first file's cut is estimated from).
type sortedInput struct {
	sch   *arrow.Schema
	cols  []gather.Chunks
	rows  int64
	bytes int64
}

// batchInput is the rows of one batch, addressed by position. rec is settled: the
// files and columns written from it gather from it side by side (R1).
func batchInput(rec arrow.RecordBatch) sortedInput {
	datafile.Settle(rec)
	in := sortedInput{sch: rec.Schema(), rows: rec.NumRows(), bytes: datafile.RecordBytes(rec)}
	for _, c := range rec.Columns() {
		in.cols = append(in.cols, gather.Chunks{Arrays: []arrow.Array{c}, Shift: 32})
	}
	return in
}

// chunkedInput is the rows of batches of sch, addressed by packed row IDs with
// the given shift (see chunkShift). The batches are settled, as in batchInput.
func chunkedInput(sch *arrow.Schema, recs []arrow.RecordBatch, shift uint) sortedInput {
	for _, r := range recs {
		datafile.Settle(r)
	}
	in := sortedInput{sch: sch, cols: make([]gather.Chunks, sch.NumFields())}
	for c := range in.cols {
		in.cols[c].Shift = shift
		for _, r := range recs {
			in.cols[c].Arrays = append(in.cols[c].Arrays, r.Column(c))
		}
		in.bytes += concatBytes(in.cols[c].Arrays)
	}
	for _, r := range recs {
		in.rows += r.NumRows()
	}
	return in
}

// chunkShift returns the shift of packed row IDs (gather.Chunks) that address the
// rows of recs, the fewest bits that hold a row of the longest batch, and whether
// the batches can be gathered from as they are: they are not empty, every column
// has a chunked gather (gather.ChunkedType) and every ID fits 32 bits.
func chunkShift(sch *arrow.Schema, recs []arrow.RecordBatch) (uint, bool) {
	if len(recs) == 0 || !gatherChunked {
		return 0, false
	}
	for _, f := range sch.Fields() {
		if !gather.ChunkedType(f.Type) {
			return 0, false
		}
	}
	var longest int64
	for _, r := range recs {
		longest = max(longest, r.NumRows())
	}
	shift := uint(bits.Len64(uint64(max(longest, 1) - 1)))
	if shift > 32 || uint64(len(recs)-1) > math.MaxUint32>>shift {
		return 0, false
	}
	return shift, true
}

// concatBytes is the Arrow size array.Concatenate gives arrs (one flat type that
// gather.ChunkedType accepts) without concatenating them: a validity bitmap when
// some value is NULL, then the values (a bitmap for booleans; offsets and bytes for
// strings and binaries).
func concatBytes(arrs []arrow.Array) int64 {
	var n, nulls, data int64
	for _, a := range arrs {
		n += int64(a.Len())
		nulls += int64(a.NullN())
		if o, ok := a.(interface{ ValueOffsets() []int32 }); ok && a.Len() > 0 {
			offs := o.ValueOffsets()
			data += int64(offs[len(offs)-1] - offs[0])
		}
	}
	var size int64
	if nulls > 0 {
		size += bitutil.BytesForBits(n)
	}
	dt := arrs[0].DataType()
	switch dt.ID() {
	case arrow.BOOL:
		size += bitutil.BytesForBits(n)
	case arrow.STRING, arrow.BINARY:
		size += 4*(n+1) + data
	default:
		size += n * int64(dt.(arrow.FixedWidthDataType).BitWidth()/8)
	}
	return size
}

// writeSorted writes the rows of src at the positions (or packed row IDs) of pairs, in that order, to
// the bin's roller, gathering takeRows at a time, and reports progress bytes as it
// goes. cols selects the columns of src to write (nil: all); after is the number of
// the bin's rows still to come after these. Where a file should end (Roller.Fill),
// the chunk is cut there, moved forward past rows of equal key so that no key
// appears in two files, and the roller closes the file after it.
func (w *clusterWriter) writeSorted(ctx context.Context, src sortedInput, ord sortedOrder, cols []int, after, progress int64) error {
	if cols == nil {
		cols = make([]int, len(src.cols))
		for i := range cols {
			cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = src.sch.Field(c)
	}
	sch := arrow.NewSchema(fields, nil)
	arrowPerRow := float64(src.bytes) / math.Max(float64(src.rows), 1)
	if len(cols) < len(src.cols) {
		arrowPerRow *= float64(len(cols)) / float64(len(src.cols))
	}
	n := len(ord.ids)
	for lo := 0; lo < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		fill := int(min(w.roller.Fill(int64(n-lo)+after, arrowPerRow), int64(n-lo)))
		hi := lo + min(fill, takeRows)
		if fill <= takeRows {
			for hi < n && ord.tied(hi) {
				hi++
			}
		}
		// Gather the columns on every worker: the take of strings is random access
		// into the whole bin and would otherwise be the serial part of the write.
		rec, err := w.gather(ctx, src, sch, cols, ord.ids[lo:hi], w.o.Parallelism)
		if err == nil {
			err = w.roller.Append(ctx, rec)
			w.pacer.add(datafile.RecordBytes(rec))
			rec.Release()
		}
		if err != nil {
			return fmt.Errorf("optimize: writing sorted rows: %w", err)
		}
		w.res.rows += int64(hi - lo)
		w.e.progress("write", progress*int64(hi-lo)/int64(n))
		lo = hi
	}
	return nil
}

// sortedOrder is the rows of a sorted write, in order: their positions (or packed
// row IDs) and which rows have the key of the row before them (where a file may not
// end). It is what writeSorted needs of sorted pairs, in a quarter of their memory.
type sortedOrder struct {
	ids  []uint32
	same []uint64 // bit i: row i has the key of row i-1
}

// orderOf returns the order of sorted pairs.
func orderOf(pairs []keyed) sortedOrder {
	o := sortedOrder{ids: make([]uint32, len(pairs)), same: make([]uint64, (len(pairs)+63)/64)}
	for i, p := range pairs {
		o.ids[i] = p.pos
		if i > 0 && p.key == pairs[i-1].key {
			o.same[i/64] |= 1 << (i % 64)
		}
	}
	return o
}

// tied reports whether row i has the key of row i-1.
func (o sortedOrder) tied(i int) bool { return o.same[i/64]&(1<<(i%64)) != 0 }

// len returns the number of rows.
func (o sortedOrder) len() int64 { return int64(len(o.ids)) }

// concatRecords concatenates batches of one schema into one batch.
func concatRecords(ctx context.Context, sch *arrow.Schema, recs []arrow.RecordBatch, par int, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, sch.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	// Column by column on every worker.
	err := parallel(ctx, par, len(cols), func(_ context.Context, c int) error {
		if len(recs) == 0 {
			cols[c] = array.MakeArrayOfNull(mem, sch.Field(c).Type, 0)
			return nil
		}
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		var err error
		cols[c], err = array.Concatenate(parts, mem)
		return err
	})
	if err != nil {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
		return nil, fmt.Errorf("optimize: concatenating batches: %w", err)
	}
	rec := array.NewRecordBatch(sch, cols, n)
	for _, a := range cols {
		a.Release()
	}
	// Concatenate leaves null counts unknown; the batch is sorted and gathered
	// from on several goroutines (R1).
	datafile.Settle(rec)
	return rec, nil
}

// clusterWriter writes the output files of one clustering bin, in key order.
type clusterWriter struct {
	e         *executor
	it        workItem
	o         Options
	res       *binResult
	out       *datafile.Output
	place     datafile.FileOptions // of the bin's files
	roller    *datafile.Roller
	planned   []*log.Add // files writePlanned closed, in order (after the roller's)
	rowsTotal int64      // the bin's live rows
	pacer     *heapPacer
}

// heapPacer starts a garbage collection each time a bin clustered in memory has
// read or written a given number of Arrow bytes. Such a bin holds its whole input
// (live, and up to the memory budget) while it reads it and while it writes the
// sorted rows, each time producing garbage at the rate it goes (decoded pages, the
// gathered rows once encoded); Go collects only when the heap has grown by as much
// as was live after the last collection (GOGC=100), so the process peaked at twice
// the input — and faulted in every page of that second half. Collecting every
// budget/32 Arrow bytes keeps the peak near the input plus about three times that
// (the reader and the encoders allocate about twice the Arrow bytes they handle).
// The collections are cheap: the input is Arrow buffers without pointers, which the
// collector does not scan. The methods are safe for concurrent use and do nothing on a nil pacer.
type heapPacer struct {
	every   int64
	collect func() // runtime.GC; tests count the calls
	mu      sync.Mutex
	since   int64
}

// minPacerBytes is the smallest interval between a heapPacer's collections.
const minPacerBytes = 16 << 20

func newHeapPacer(budget int64) *heapPacer {
	return &heapPacer{every: max(budget/32, minPacerBytes), collect: runtime.GC}
}

// add counts n bytes read or written and collects once they reach the interval.
func (h *heapPacer) add(n int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.since += n
	run := h.since >= h.every
	if run {
		h.since = 0
	}
	h.mu.Unlock()
	if run {
		h.collect()
	}
}

// writerOverhead is the memory the bin's file writer holds beyond the rows it is
// given: zstd encoder state, Parquet dictionary tables and the open row group
// (measured: 40-50 MiB with arrow-go v18.8 at zstd level 3, most of it zstd history
// buffers). On stores without streaming writes (storage.Creator) the encoded file,
// up to TargetFileSize, also stays in memory until it is stored.
const writerOverhead = 48 << 20

// parallel runs fn(ctx, i) for i in [0, n) on up to par goroutines (an errgroup)
// and returns the first error: the ctx fn runs with is cancelled once a call fails,
// no call starts after that or after ctx ends, and then ctx's error is returned.
func parallel(ctx context.Context, par, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(par, 1))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped while waiting for a slot (reported below)
			}
			return fn(gctx, i)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// samplePositions returns k distinct positions in [0, n) drawn uniformly (all of them
// when n <= k), in ascending order. The draw is seeded: the same bin gives the same
// sample, so the same run and lane boundaries (datafile D8).
func samplePositions(n int64, k int) []int64 {
	if n <= int64(k) {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	// Floyd's algorithm: k draws, each adding one new position.
	rng := rand.New(rand.NewPCG(sampleSeed, 7))
	seen := make(map[int64]struct{}, k)
	out := make([]int64, 0, k)
	for j := n - int64(k); j < n; j++ {
		t := rng.Int64N(j + 1)
		if _, dup := seen[t]; dup {
			t = j
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// rowSample keeps the clustering values of the rows at chosen positions of a bin
// (samplePositions), taken while the bin is read for its rank sample, so that the key
// sample needs no second read: once the ranks are known, keys computes the sampled
// rows' keys.
type rowSample struct {
	want   []int64         // positions to keep, ascending
	chunks [][]arrow.Array // per batch that had sampled rows: its clustering columns at them
	pos    [][]int64       // the positions of each chunk's rows
}

// add keeps the rows of a batch (clustering columns cols, its first row at position
// pos0) whose positions were chosen.
func (s *rowSample) add(ctx context.Context, cols []arrow.Array, pos0 int64, mem memory.Allocator) error {
	if len(cols) == 0 {
		return nil
	}
	n := int64(cols[0].Len())
	lo, _ := slices.BinarySearch(s.want, pos0)
	hi, _ := slices.BinarySearch(s.want, pos0+n)
	if lo == hi {
		return nil
	}
	pos := s.want[lo:hi]
	rows := make([]uint32, len(pos))
	for i, p := range pos {
		rows[i] = uint32(p - pos0)
	}
	taken := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		a, err := gather.Take(ctx, c, rows, mem)
		if err != nil {
			releaseAll(taken)
			return fmt.Errorf("optimize: sampling clustering rows: %w", err)
		}
		taken = append(taken, a)
	}
	s.chunks = append(s.chunks, taken)
	s.pos = append(s.pos, pos)
	return nil
}

// keys returns the keys of the sampled rows, each computed at its own position (the
// ranks' heavy-hitter tie-breaker depends on it), consecutive positions together.
func (s *rowSample) keys(k *keyer) ([]uint64, error) {
	var out []uint64
	var scratch [][]uint32
	sub := make([]arrow.Array, 0)
	for c, cols := range s.chunks {
		pos := s.pos[c]
		for i := 0; i < len(pos); {
			j := i + 1
			for j < len(pos) && pos[j] == pos[j-1]+1 {
				j++
			}
			sub = sub[:0]
			for _, a := range cols {
				sub = append(sub, array.NewSlice(a, int64(i), int64(j)))
			}
			at := len(out)
			out = slices.Grow(out, j-i)[:at+j-i]
			var err error
			scratch, err = k.keys(sub, pos[i], out[at:], scratch)
			releaseAll(sub)
			if err != nil {
				return nil, err
			}
			i = j
		}
	}
	return out, nil
}

// release frees the sampled values.
func (s *rowSample) release() {
	for _, cols := range s.chunks {
		releaseAll(cols)
	}
	s.chunks, s.pos = nil, nil
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
	// arrowBytes is the Arrow size of the rows written (datafile.RecordBytes).
	arrowBytes int64
}
