package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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

// readParquetActions streams the actions of a Parquet checkpoint or sidecar. size is
// the file's size when known (from the listing or the sidecar action), else -1.
// hint, when not nil, is told the file's row count before the first action.
func (l *Log) readParquetActions(ctx context.Context, path string, size int64, hint func(rows int64), fn func(*Action) error) (err error) {
	var src io.ReaderAt
	var srcSize int64
	if size >= 0 && size <= wholeCheckpointLimit {
		data, err := l.store.Get(ctx, path)
		if err != nil {
			return fmt.Errorf("log: reading %s: %w", path, err)
		}
		src, srcSize = bytes.NewReader(data), int64(len(data))
	} else {
		f, err := storage.OpenSized(ctx, l.store, path, size)
		if err != nil {
			return fmt.Errorf("log: opening %s: %w", path, err)
		}
		defer f.Close()
		src, srcSize = f, f.Size()
	}
	fail := func(e error) error {
		return fmt.Errorf("log: reading %s: %w: %w", path, ErrCorruptLog, e)
	}
	rdr, rr, err := openCheckpointParquet(ctx, io.NewSectionReader(src, 0, srcSize), srcSize)
	if err != nil {
		return fail(err)
	}
	if rr == nil {
		_ = rdr.Close()
		return nil // no column this package reads
	}
	defer func() {
		releaseCheckpointRecords(rr)
		_ = rdr.Close()
	}()
	if hint != nil {
		hint(rdr.NumRows())
	}
	var pv partitionInterner
	for {
		ok, err := nextCheckpointRecord(rr)
		if err != nil {
			return fail(err)
		}
		if !ok {
			return nil
		}
		rec := rr.RecordBatch()
		for i, col := range rec.Columns() {
			if err := checkDecoded(col); err != nil {
				return fail(fmt.Errorf("column %q: %w", rec.Schema().Field(i).Name, err))
			}
		}
		if err := emitCheckpointRows(rec.Schema().Fields(), rec.Columns(), int(rec.NumRows()), &pv, fn); err != nil {
			return fmt.Errorf("log: reading %s: %w", path, err)
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
// starts a record reader over the checkpoint columns this package reads (rr nil: the
// file has none). The caller closes rdr and releases rr (releaseCheckpointRecords).
func openCheckpointParquet(ctx context.Context, src *io.SectionReader, size int64) (rdr *file.Reader, rr pqarrow.RecordReader, err error) {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	if rdr, err = parseCheckpointFooter(src, props); err != nil {
		return nil, nil, err
	}
	md := rdr.MetaData()
	if err := pqguard.CheckArrowSchema(md.KeyValueMetadata()); err != nil {
		_ = rdr.Close()
		return nil, nil, err
	}
	maxCompressed, _, err := pqguard.ValidateFooter(md, size)
	if err != nil {
		_ = rdr.Close()
		return nil, nil, fmt.Errorf("footer: %w", err)
	}
	pqguard.BoundPages(props, maxCompressed)
	sch := md.Schema
	var cols []int
	for i := 0; i < sch.NumColumns(); i++ {
		p := sch.Column(i).ColumnPath()
		if len(p) > 0 && checkpointColumns[p[0]] {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return rdr, nil, nil
	}
	if rr, err = checkpointRecords(ctx, rdr, cols); err != nil {
		_ = rdr.Close()
		return nil, nil, err
	}
	return rdr, rr, nil
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

// checkpointRecords starts pqarrow's record reader over leaves cols of every row group.
func checkpointRecords(ctx context.Context, rdr *file.Reader, cols []int) (rr pqarrow.RecordReader, err error) {
	defer checkpointGuard.Contain(&err, "arrow schema")
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{
		BatchSize: 1 << 15,
		// Presize each string column's value buffer from its column chunk's
		// uncompressed size instead of letting it grow by doubling: the stats and
		// path columns of a large checkpoint are most of its bytes, and regrowing
		// them was a sixth of a snapshot load (memmove and zeroing of the copies).
		PreAllocBinaryData: true,
	}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	rr, err = fr.GetRecordReader(ctx, cols, nil)
	if err != nil {
		return nil, fmt.Errorf("column readers: %w", err)
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

// emitCheckpointRows hands fn the action of each of the n rows of a checkpoint
// batch. fn must not keep the *Action (one is reused for every row); it may keep the
// actions it points to. The add actions of a batch are allocated together.
func emitCheckpointRows(fields []arrowField, cols []arrowArray, n int, pv *partitionInterner, fn func(*Action) error) error {
	var add *addCols
	var remove *structCols
	var adds []Add
	generic := map[string]arrowArray{}
	for i, f := range fields {
		switch f.Name {
		case "add":
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
	var a Action
	for i := 0; i < n; i++ {
		a = Action{}
		switch {
		case add != nil && add.arr.IsValid(i):
			ad := &adds[0]
			adds = adds[1:]
			if err := addAt(add, i, pv, ad); err != nil {
				return fmt.Errorf("%w: row %d: add stats_parsed: %v", ErrCorruptLog, i, err)
			}
			a.Add = ad
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
					return fmt.Errorf("%w: row %d: %s: %v", ErrCorruptLog, i, name, err)
				}
				found = true
				break
			}
			if !found {
				continue
			}
		}
		if err := a.validate(); err != nil {
			return fmt.Errorf("%w: row %d: %v", ErrCorruptLog, i, err)
		}
		if err := fn(&a); err != nil {
			return err
		}
	}
	return nil
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
	for _, f := range cp.files {
		if cp.kind == cpV2JSON {
			data, err := l.store.Get(ctx, f.Path)
			if err != nil {
				return fmt.Errorf("log: reading %s: %w", f.Path, err)
			}
			if err := scanCommit(f.Path, bytes.NewReader(data), collect); err != nil {
				return err
			}
			continue
		}
		if err := l.readParquetActions(ctx, f.Path, f.Size, hint, collect); err != nil {
			return err
		}
	}
	// Sidecars may also appear in classic-named checkpoints of v2Checkpoint tables.
	for _, sc := range sidecars {
		if isAbsoluteURI(sc.Path) {
			return fmt.Errorf("log: checkpoint %d: sidecar %q: %w", cp.version, sc.Path, ErrUnsupportedPath)
		}
		p := canonicalPath(sc.Path)
		if !strings.HasPrefix(p, sidecarDir) {
			p = sidecarDir + p
		}
		size := sc.SizeInBytes
		if size <= 0 {
			size = -1 // not recorded: let the store find out
		}
		if err := l.readParquetActions(ctx, p, size, hint, fn); err != nil {
			return err
		}
	}
	return nil
}
