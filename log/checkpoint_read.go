package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/internal/pqguard"
	"github.com/skiplake/skiplake/storage"
)

// checkpointColumns are the top-level checkpoint columns this package reads.
var checkpointColumns = map[string]bool{
	"add": true, "remove": true, "metaData": true, "protocol": true, "txn": true,
	"domainMetadata": true, "checkpointMetadata": true, "sidecar": true,
}

// wholeCheckpointLimit is the largest checkpoint or sidecar file read with one GET
// instead of a footer read and one ranged read per column chunk: on an object store
// the round trips cost more than the bytes, and nearly every column is read anyway.
const wholeCheckpointLimit = 256 << 20

// checkpointPart is one Parquet file of a checkpoint set: a classic checkpoint, a
// part of a multi-part one, a v2 manifest or a sidecar. size is its size when known
// (from the listing or the sidecar action), else -1.
type checkpointPart struct {
	path string
	size int64
}

// cpFile is a checkpoint Parquet file open for decoding. Its row groups are decoded
// by the workers of readParquetParts; the one that decodes the last closes it.
type cpFile struct {
	path    string
	rdr     *file.Reader
	fr      *pqarrow.FileReader
	closer  io.Closer // the opened object when the file was not read whole; may be nil
	cols    []int
	layout  *pageLayout  // how the add column is read from the pages; nil: pqarrow only
	pending atomic.Int64 // row groups not yet decoded
}

// close releases the file's reader and the object under it.
func (f *cpFile) close() {
	_ = f.rdr.Close()
	if f.closer != nil {
		_ = f.closer.Close()
	}
}

// cpJob is one unit of the ordered decode: the start of a file (rg < 0), which tells
// the consumer the file's row count or why it could not be opened, or one row group.
type cpJob struct {
	f    *cpFile // nil for a file start whose file has no column read, or failed
	rg   int
	rows int64 // file start: the file's row count
	err  error // file start: opening the file failed
	done chan cpResult
}

// cpResult is a decoded row group: its actions in row order, then the error that
// stopped the decode (nil when it reached the end), or a panic to re-raise.
type cpResult struct {
	segs     []cpSeg
	err      error
	panicked any
	hasPanic bool
}

// cpSeg is a run of consecutive actions of a checkpoint: add actions (adds not nil,
// in row order) or one other action.
type cpSeg struct {
	adds []Add
	act  Action
}

// decodeWorkers is how many row groups readParquetParts decodes at once.
func decodeWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// readParquetParts streams the actions of Parquet checkpoint files in order: every
// action of parts[0] in row order, then parts[1], and so on, exactly as reading them
// one after another. Row groups are decoded and converted to actions concurrently,
// at most decodeWorkers() of them in flight (decoded and not yet handed to fn), and
// handed to fn on the calling goroutine in file and row-group order. hint, when not
// nil, is told each file's row count before its first action. A file that cannot be
// opened or decoded stops the read with its error after the actions before it.
func (l *Log) readParquetParts(ctx context.Context, parts []checkpointPart, hint func(rows int64), fn func(*Action) error) (err error) {
	if len(parts) == 0 {
		return nil
	}
	workers := decodeWorkers()
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg     sync.WaitGroup
		opened []*cpFile // written by the dispatcher only; read after wg.Wait
		stop   error     // the dispatcher's reason for stopping early; read after order closes
	)
	order := make(chan *cpJob, workers+2)
	work := make(chan *cpJob, workers)
	tokens := make(chan struct{}, workers)
	defer func() {
		cancel()
		for range order { // let a dispatcher blocked on order finish
		}
		wg.Wait()
		for _, f := range opened {
			if f.pending.Load() > 0 {
				f.close() // row groups left undecoded: no worker closed it
			}
		}
	}()

	// The dispatcher opens the files in order and queues their row groups.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		send := func(ch chan *cpJob, j *cpJob) bool {
			select {
			case ch <- j:
				return true
			case <-ctx.Done():
				stop = ctx.Err()
				return false
			}
		}
		for _, p := range parts {
			f, rows, err := l.openCheckpointPart(ctx, p)
			if f != nil {
				opened = append(opened, f)
				f.pending.Store(int64(f.rdr.NumRowGroups()))
			}
			if !send(order, &cpJob{f: f, rg: -1, rows: rows, err: err}) || err != nil {
				return
			}
			if f == nil {
				continue
			}
			n := f.rdr.NumRowGroups()
			if n == 0 {
				f.close()
				continue
			}
			for rg := 0; rg < n; rg++ {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					stop = ctx.Err()
					return
				}
				j := &cpJob{f: f, rg: rg, done: make(chan cpResult, 1)}
				if !send(order, j) || !send(work, j) {
					return
				}
			}
		}
	}()

	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc pageScratch
			for j := range work {
				var res cpResult
				if ctx.Err() != nil {
					res.err = fmt.Errorf("log: reading %s: %w", j.f.path, ctx.Err())
				} else {
					res = decodeRowGroup(ctx, j.f, j.rg, &sc)
				}
				if j.f.pending.Add(-1) == 0 {
					j.f.close()
				}
				j.done <- res
			}
		}()
	}

	var a Action // handed to fn, which must not keep it
	for j := range order {
		if j.rg < 0 {
			if j.err != nil {
				return j.err
			}
			if j.f != nil && hint != nil {
				hint(j.rows)
			}
			continue
		}
		var res cpResult
		select {
		case res = <-j.done:
		case <-ctx.Done():
			return fmt.Errorf("log: reading %s: %w", j.f.path, ctx.Err())
		}
		<-tokens
		if res.hasPanic {
			panic(res.panicked)
		}
		for i := range res.segs {
			s := &res.segs[i]
			if s.adds == nil {
				a = s.act
				if err := fn(&a); err != nil {
					return err
				}
				continue
			}
			for k := range s.adds {
				a = Action{Add: &s.adds[k]}
				if err := fn(&a); err != nil {
					return err
				}
			}
		}
		if res.err != nil {
			return res.err
		}
	}
	if stop != nil {
		return fmt.Errorf("log: reading checkpoint: %w", stop)
	}
	return nil
}

// openCheckpointPart reads the footer of checkpoint file p and prepares its column
// readers. f is nil when the file has no column this package reads; rows is the
// file's row count.
func (l *Log) openCheckpointPart(ctx context.Context, p checkpointPart) (f *cpFile, rows int64, err error) {
	var src io.ReaderAt
	var srcSize int64
	var closer io.Closer
	var mem *bytes.Reader // the file's bytes when read whole
	if p.size >= 0 && p.size <= wholeCheckpointLimit {
		data, err := l.store.Get(ctx, p.path)
		if err != nil {
			return nil, 0, fmt.Errorf("log: reading %s: %w", p.path, err)
		}
		mem = bytes.NewReader(data)
		src, srcSize = mem, int64(len(data))
	} else {
		o, err := storage.OpenSized(ctx, l.store, p.path, p.size)
		if err != nil {
			return nil, 0, fmt.Errorf("log: opening %s: %w", p.path, err)
		}
		src, srcSize, closer = o, o.Size(), o
	}
	rdr, fr, cols, err := openCheckpointParquet(io.NewSectionReader(src, 0, srcSize), srcSize)
	if err != nil {
		if closer != nil {
			_ = closer.Close()
		}
		return nil, 0, fmt.Errorf("log: reading %s: %w: %w", p.path, ErrCorruptLog, err)
	}
	if fr == nil {
		_ = rdr.Close()
		if closer != nil {
			_ = closer.Close()
		}
		return nil, 0, nil // no column this package reads
	}
	f = &cpFile{path: p.path, rdr: rdr, fr: fr, closer: closer, cols: cols}
	if pageDecoding {
		f.layout = newFilePageLayout(rdr, fr, cols, mem)
	}
	return f, rdr.NumRows(), nil
}

// pageDecoding enables the page decoder of the add column (a variable so tests
// can compare it with the pqarrow path).
var pageDecoding = true

// decodeRowGroup decodes row group rg of f into actions: from the pages when f's
// add column is one the page decoder reads and the row group decodes that way,
// else (and always on an error, which it then reports) through pqarrow. A panic
// outside arrow-go's decoder (whose panics the guard turns into errors) is handed to
// the consumer to re-raise on its goroutine, as when the decode ran there.
func decodeRowGroup(ctx context.Context, f *cpFile, rg int, sc *pageScratch) (res cpResult) {
	defer func() {
		if r := recover(); r != nil {
			res = cpResult{panicked: r, hasPanic: true}
		}
	}()
	if f.layout != nil {
		if segs, err := decodePages(ctx, f, rg, sc); err == nil {
			return cpResult{segs: segs}
		}
	}
	return decodeRowGroupArrow(ctx, f, rg, &sc.pv)
}

// decodeRowGroupArrow decodes row group rg of f into actions with pqarrow's record
// reader.
func decodeRowGroupArrow(ctx context.Context, f *cpFile, rg int, pv *partitionInterner) (res cpResult) {
	fail := func(e error) error {
		return fmt.Errorf("log: reading %s: %w: %w", f.path, ErrCorruptLog, e)
	}
	rr, err := checkpointRecords(ctx, f.fr, f.cols, rg)
	if err != nil {
		return cpResult{err: fail(err)}
	}
	defer releaseCheckpointRecords(rr)
	for {
		ok, err := nextCheckpointRecord(rr)
		if err != nil {
			res.err = fail(err)
			return res
		}
		if !ok {
			return res
		}
		rec := rr.RecordBatch()
		for i, col := range rec.Columns() {
			if err := checkDecoded(col); err != nil {
				res.err = fail(fmt.Errorf("column %q: %w", rec.Schema().Field(i).Name, err))
				return res
			}
		}
		res.segs, err = appendCheckpointRows(res.segs, rec.Schema().Fields(), rec.Columns(), int(rec.NumRows()), pv)
		if err != nil {
			res.err = fmt.Errorf("log: reading %s: %w", f.path, err)
			return res
		}
	}
}

// Damaged checkpoints: a checkpoint or sidecar is Parquet that another writer may have
// written and that storage may have damaged, so it is read with package pqguard's
// defences, as data files are (invariant CK1 in doc.go): the footer is validated
// before anything is decoded, and each call into arrow-go's decoder below does nothing
// but that call and contains a panic raised inside it into an error.

// checkpointGuard contains decoder panics; readParquetActions wraps the errors into
// ErrCorruptLog naming the file.
var checkpointGuard = pqguard.Guard{}

// openCheckpointParquet validates the footer of the Parquet file src (size bytes) and
// prepares Arrow readers for the checkpoint columns this package reads, cols (fr nil:
// the file has none). The caller closes rdr.
func openCheckpointParquet(src *io.SectionReader, size int64) (rdr *file.Reader, fr *pqarrow.FileReader, cols []int, err error) {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	if rdr, err = parseCheckpointFooter(src, props); err != nil {
		return nil, nil, nil, err
	}
	md := rdr.MetaData()
	if err := pqguard.CheckArrowSchema(md.KeyValueMetadata()); err != nil {
		_ = rdr.Close()
		return nil, nil, nil, err
	}
	maxCompressed, _, err := pqguard.ValidateFooter(md, size)
	if err != nil {
		_ = rdr.Close()
		return nil, nil, nil, fmt.Errorf("footer: %w", err)
	}
	pqguard.BoundPages(props, maxCompressed)
	sch := md.Schema
	for i := 0; i < sch.NumColumns(); i++ {
		p := sch.Column(i).ColumnPath()
		if len(p) > 0 && checkpointColumns[p[0]] {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return rdr, nil, nil, nil
	}
	if fr, err = checkpointFileReader(rdr); err != nil {
		_ = rdr.Close()
		return nil, nil, nil, err
	}
	return rdr, fr, cols, nil
}

// parseCheckpointFooter parses the footer of src.
func parseCheckpointFooter(src *io.SectionReader, props *parquet.ReaderProperties) (rdr *file.Reader, err error) {
	defer checkpointGuard.Contain(&err, "footer")
	rdr, err = file.NewParquetReader(src, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	return rdr, nil
}

// checkpointFileReader prepares pqarrow's reader of rdr (the Arrow schema of its columns).
func checkpointFileReader(rdr *file.Reader) (fr *pqarrow.FileReader, err error) {
	return checkpointFileReaderBatch(rdr, 1<<15)
}

// checkpointFileReaderBatch is checkpointFileReader with record batches of batch rows.
func checkpointFileReaderBatch(rdr *file.Reader, batch int64) (fr *pqarrow.FileReader, err error) {
	defer checkpointGuard.Contain(&err, "arrow schema")
	fr, err = pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{
		BatchSize: batch,
		// Presize each string column's value buffer from its column chunk's
		// uncompressed size instead of letting it grow by doubling: the stats and
		// path columns of a large checkpoint are most of its bytes, and regrowing
		// them was a sixth of a snapshot load (memmove and zeroing of the copies).
		PreAllocBinaryData: true,
	}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	return fr, nil
}

// checkpointRecords starts a record reader over leaves cols of row group rg. Readers
// of different row groups of one file may run concurrently (arrow-go reads through
// ReadAt and keeps no per-file decoding state).
func checkpointRecords(ctx context.Context, fr *pqarrow.FileReader, cols []int, rg int) (rr pqarrow.RecordReader, err error) {
	defer checkpointGuard.Contain(&err, "column readers")
	rr, err = fr.GetRecordReader(ctx, cols, []int{rg})
	if err != nil {
		return nil, fmt.Errorf("column readers: row group %d: %w", rg, err)
	}
	return rr, nil
}

// nextCheckpointRecord advances rr; ok false with a nil error is the end of the file.
func nextCheckpointRecord(rr pqarrow.RecordReader) (ok bool, err error) {
	defer checkpointGuard.Contain(&err, "decoding")
	if rr.Next() {
		return true, nil
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("decoding: %w", err)
	}
	return false, nil
}

// releaseCheckpointRecords releases a record reader, which may panic once its decoder did.
func releaseCheckpointRecords(rr pqarrow.RecordReader) {
	defer func() { _ = recover() }()
	rr.Release()
}

// appendCheckpointRows appends to out the action of each of the n rows of a
// checkpoint batch that holds one, validated, consecutive adds as one run; on an
// error, out holds the actions of the rows before the bad one. The add actions of a
// batch are allocated together.
func appendCheckpointRows(out []cpSeg, fields []arrowField, cols []arrowArray, n int, pv *partitionInterner) ([]cpSeg, error) {
	return appendRows(out, fields, cols, n, pv, nil, 0)
}

// appendRows is appendCheckpointRows, with the adds of the rows taken from pre when
// it is not nil (rows base to base+n of pre's row group; cols then has no add).
func appendRows(out []cpSeg, fields []arrowField, cols []arrowArray, n int, pv *partitionInterner, pre *pageAdds, base int) ([]cpSeg, error) {
	var add *addCols
	var remove *structCols
	var adds []Add
	generic := map[string]arrowArray{}
	for i, f := range fields {
		switch f.Name {
		case "add":
			if pre != nil {
				continue
			}
			if s, ok := newStructCols(cols[i]); ok {
				add = newAddCols(s)
				adds = make([]Add, n-s.arr.NullN())
			}
		case "remove":
			remove, _ = newStructCols(cols[i])
		default:
			if checkpointColumns[f.Name] {
				generic[f.Name] = cols[i]
			}
		}
	}
	// adds[run:used] are the validated adds of the run not yet appended to out.
	used, run := 0, 0
	if pre != nil {
		adds, used, run = pre.adds, pre.used, pre.used
		defer func() { pre.used = used }()
	}
	flush := func() {
		if used > run {
			out = append(out, cpSeg{adds: adds[run:used:used]})
		}
		run = used
	}
	var a Action
	for i := 0; i < n; i++ {
		a = Action{}
		switch {
		case pre != nil && pre.valid[base+i]:
			a.Add = &adds[used]
			if err := a.validate(); err != nil {
				flush()
				return out, fmt.Errorf("%w: row %d: %v", ErrCorruptLog, i, err)
			}
			used++
			continue
		case add != nil && add.arr.IsValid(i):
			ad := &adds[used]
			if err := addAt(add, i, pv, ad); err != nil {
				flush()
				return out, fmt.Errorf("%w: row %d: add stats_parsed: %v", ErrCorruptLog, i, err)
			}
			a.Add = ad
			if err := a.validate(); err != nil {
				flush()
				return out, fmt.Errorf("%w: row %d: %v", ErrCorruptLog, i, err)
			}
			used++
			continue
		case remove != nil && remove.arr.IsValid(i):
			a.Remove = removeAt(remove, i)
		default:
			found := false
			for name, col := range generic {
				if !col.IsValid(i) {
					continue
				}
				var target any
				switch name {
				case "metaData":
					a.Metadata = &Metadata{}
					target = a.Metadata
				case "protocol":
					a.Protocol = &Protocol{}
					target = a.Protocol
				case "txn":
					a.Txn = &Txn{}
					target = a.Txn
				case "domainMetadata":
					a.DomainMetadata = &DomainMetadata{}
					target = a.DomainMetadata
				case "checkpointMetadata":
					a.CheckpointMetadata = &CheckpointMetadata{}
					target = a.CheckpointMetadata
				case "sidecar":
					a.Sidecar = &Sidecar{}
					target = a.Sidecar
				}
				if err := decodeGeneric(col, i, target); err != nil {
					flush()
					return out, fmt.Errorf("%w: row %d: %s: %v", ErrCorruptLog, i, name, err)
				}
				found = true
				break
			}
			if !found {
				continue
			}
		}
		flush()
		if err := a.validate(); err != nil {
			return out, fmt.Errorf("%w: row %d: %v", ErrCorruptLog, i, err)
		}
		out = append(out, cpSeg{act: a})
	}
	flush()
	return out, nil
}

// readCheckpoint streams every action of a checkpoint set, following v2
// sidecars (which are read after the manifest). hint (may be nil) is told the row
// count of each Parquet file before its actions.
func (l *Log) readCheckpoint(ctx context.Context, cp checkpointSet, hint func(rows int64), fn func(*Action) error) error {
	var sidecars []*Sidecar
	collect := func(a *Action) error {
		if a.Sidecar != nil {
			sidecars = append(sidecars, a.Sidecar)
			return nil
		}
		return fn(a)
	}
	if cp.kind == cpV2JSON {
		for _, f := range cp.files {
			data, err := l.store.Get(ctx, f.Path)
			if err != nil {
				return fmt.Errorf("log: reading %s: %w", f.Path, err)
			}
			if err := scanCommit(f.Path, bytes.NewReader(data), collect); err != nil {
				return err
			}
		}
	} else {
		parts := make([]checkpointPart, len(cp.files))
		for i, f := range cp.files {
			parts[i] = checkpointPart{path: f.Path, size: f.Size}
		}
		if err := l.readParquetParts(ctx, parts, hint, collect); err != nil {
			return err
		}
	}
	// Sidecars may also appear in classic-named checkpoints of v2Checkpoint tables.
	// They are read in order up to the first one that cannot be named.
	var parts []checkpointPart
	var bad error
	for _, sc := range sidecars {
		if isAbsoluteURI(sc.Path) {
			bad = fmt.Errorf("log: checkpoint %d: sidecar %q: %w", cp.version, sc.Path, ErrUnsupportedPath)
			break
		}
		p := canonicalPath(sc.Path)
		if !strings.HasPrefix(p, sidecarDir) {
			p = sidecarDir + p
		}
		size := sc.SizeInBytes
		if size <= 0 {
			size = -1 // not recorded: let the store find out
		}
		parts = append(parts, checkpointPart{path: p, size: size})
	}
	if err := l.readParquetParts(ctx, parts, hint, fn); err != nil {
		return err
	}
	return bad
}
