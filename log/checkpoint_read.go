package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

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
func (l *Log) readParquetActions(ctx context.Context, path string, size int64, fn func(*Action) error) (err error) {
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
		return fmt.Errorf("log: reading %s: %w: %v", path, ErrCorruptLog, e)
	}
	rdr, err := file.NewParquetReader(io.NewSectionReader(src, 0, srcSize))
	if err != nil {
		return fail(err)
	}
	defer rdr.Close()
	sch := rdr.MetaData().Schema
	var cols []int
	for i := 0; i < sch.NumColumns(); i++ {
		p := sch.Column(i).ColumnPath()
		if len(p) > 0 && checkpointColumns[p[0]] {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 15}, memory.DefaultAllocator)
	if err != nil {
		return fail(err)
	}
	rr, err := fr.GetRecordReader(ctx, cols, nil)
	if err != nil {
		return fail(err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		if err := emitCheckpointRows(rec.Schema().Fields(), rec.Columns(), int(rec.NumRows()), fn); err != nil {
			if errors.Is(err, ErrCorruptLog) {
				return err
			}
			return fmt.Errorf("log: reading %s: %w", path, err)
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	return nil
}

func emitCheckpointRows(fields []arrowField, cols []arrowArray, n int, fn func(*Action) error) error {
	var add, remove *structCols
	generic := map[string]arrowArray{}
	for i, f := range fields {
		switch f.Name {
		case "add":
			add, _ = newStructCols(cols[i])
		case "remove":
			remove, _ = newStructCols(cols[i])
		default:
			if checkpointColumns[f.Name] {
				generic[f.Name] = cols[i]
			}
		}
	}
	for i := 0; i < n; i++ {
		var a Action
		switch {
		case add != nil && add.arr.IsValid(i):
			ad, err := addAt(add, i)
			if err != nil {
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
// sidecars (which are read after the manifest).
func (l *Log) readCheckpoint(ctx context.Context, cp checkpointSet, fn func(*Action) error) error {
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
		if err := l.readParquetActions(ctx, f.Path, f.Size, collect); err != nil {
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
		if err := l.readParquetActions(ctx, p, size, fn); err != nil {
			return err
		}
	}
	return nil
}
