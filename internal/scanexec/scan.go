package scanexec

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
)

// Scan is what reading the files of a planned scan needs besides the tasks: the
// snapshot's storage and version, the table's footer cache, the filter and the
// column mapping. A Scan is immutable and safe for concurrent use.
type Scan struct {
	// Store is the table's storage (paths are relative to its root).
	Store storage.Storage
	// Version is the snapshot version scanned (named in errors).
	Version int64
	// Footers is the table's footer cache (nil: none).
	Footers *datafile.FooterCache
	// Filter is the filter bound to the scan's logical columns (nil: none).
	Filter *expr.Bound
	// Mapper translates the filter's logical column paths to the files' physical
	// ones (nil: the identity).
	Mapper skipping.PathMapper
}

// OpenFile opens a planned file and its footer. With a footer cache, a file whose
// footer is cached (under its path, size and modification time: footerKey) is
// opened with its logged size (storage.OpenSized: no request on object stores) and
// its footer is not read again; a footer read from storage is cached when the
// object's size is the logged one. rec (nil: nothing recorded) counts footers read
// and footers reused. The caller closes the reader, then the file.
func (s *Scan) OpenFile(ctx context.Context, task *Task, opts datafile.ReadOptions, rec Recorder) (storage.File, *datafile.Reader, error) {
	rec = orNop(rec)
	cache := s.Footers
	var key string
	var ft *datafile.Footer
	if cache != nil {
		key = footerKey(task.Add, task.Path)
		ft = cache.Get(key)
	}
	var (
		f   storage.File
		err error
	)
	if ft != nil {
		f, err = storage.OpenSized(ctx, s.Store, task.Path, task.Add.Size)
	} else {
		f, err = s.Store.Open(ctx, task.Path)
	}
	if err != nil {
		if errors.Is(err, storage.ErrNotExist) {
			if task.Change != nil {
				return nil, nil, task.Change.Missing(task.Path)
			}
			return nil, nil, fmt.Errorf("%w: %s (referenced by version %d)", ErrMissingDataFile, task.Path, s.Version)
		}
		return nil, nil, fmt.Errorf("table: open %s: %w", task.Path, err)
	}
	if ft != nil && ft.Size() != f.Size() {
		// Not the file the footer was read from: forget it and read this one's.
		cache.Remove(key)
		ft = nil
	}
	opts.Name = task.Path
	opts.Footer = ft
	r, err := datafile.Open(f, f.Size(), opts)
	if err != nil {
		f.Close()
		if errors.Is(err, dv.ErrInvalidRows) {
			return nil, nil, fmt.Errorf("table: version %d: %w", s.Version, err) // the error names the file
		}
		return nil, nil, fmt.Errorf("table: %w", err) // the error names the file
	}
	if ft != nil {
		rec.CountFooter(false)
	} else {
		rec.CountFooter(true)
		if cache != nil && f.Size() == task.Add.Size {
			cache.Put(key, r.Footer())
		}
	}
	return f, r, nil
}

// footerKey names one data file's bytes in the footer cache: its path and the size
// and modification time its add action records. Delta data files are never changed
// in place, but a path can come back (RESTORE re-adds a removed file, a file
// VACUUM deleted can be written again by another writer): a re-added file with the
// same size and time is the same file; a rewritten one differs in its modification
// time, and its size is checked against the object's before the cached footer is used.
// A footer cache belongs to one table, so the table root is implied.
func footerKey(a *log.Add, path string) string {
	return path + "\x00" + strconv.FormatInt(a.Size, 10) + "\x00" + strconv.FormatInt(a.ModificationTime, 10)
}

// DecideFile decides a file's row groups from its footer statistics and Parquet
// Bloom filters (for equality and IN) and, for those still needing a recheck, its
// pages from the page index, records both levels in rec (the page level counts
// ROWS), and returns the units to read. Without a recheck the whole file is read.
// The recheck still runs on every row read where a level said only "might", so the
// result does not depend on these steps (S1, S2).
func (s *Scan) DecideFile(task *Task, r *datafile.Reader, rec Recorder) []Unit {
	rec = orNop(rec)
	md := r.Metadata()
	if !task.Recheck || s.Filter == nil {
		units := make([]Unit, md.NumRowGroups())
		for i := range units {
			units[i] = Unit{RG: i, Recheck: task.Recheck}
		}
		return units
	}
	colIndex := s.leafIndex(md)
	verdicts := skipping.EvaluateRowGroups(s.Filter, md, colIndex)
	if len(skipping.BloomProbeColumns(s.Filter)) > 0 {
		// Equality and IN: the row groups' Parquet Bloom filters may prove what the
		// footer statistics could not.
		for rg, v := range verdicts {
			if v == skipping.MightMatch && skipping.RowGroupBloomCannotMatch(s.Filter, r.ParquetReader(), rg, colIndex) {
				verdicts[rg] = skipping.CannotMatch
			}
		}
	}
	rgLv := skipping.LevelStats{Level: "rowgroup", Unit: skipping.UnitRowGroups}
	pgLv := skipping.LevelStats{Level: "page", Unit: skipping.UnitRows}
	var units []Unit
	for rg, v := range verdicts {
		rgLv.Add(v, rowGroupStoredBytes(md.RowGroup(rg)))
		switch v {
		case skipping.CannotMatch:
			continue
		case skipping.MustMatch:
			units = append(units, Unit{RG: rg})
			continue
		}
		n := md.RowGroup(rg).NumRows()
		pgLv.Total += n
		ranges, err := skipping.EvaluatePages(s.Filter, r.ParquetReader(), rg, colIndex)
		if err != nil {
			rec.Warn(fmt.Sprintf("page index of %s row group %d unusable, row group read whole: %v", task.Path, rg, err))
		}
		if err != nil || ranges.Rows() >= n {
			pgLv.Kept += n
			units = append(units, Unit{RG: rg, Recheck: true})
			continue
		}
		pgLv.Kept += ranges.Rows()
		pgLv.Skipped += n - ranges.Rows()
		if len(ranges) == 0 {
			continue
		}
		want := make([]datafile.RowRange, len(ranges))
		for i, rr := range ranges {
			want[i] = datafile.RowRange{Start: rr.Start, End: rr.End}
		}
		units = append(units, Unit{RG: rg, Ranges: want, Recheck: true})
	}
	rec.AddRowGroups(rgLv)
	rec.AddPages(pgLv)
	return units
}

// rowGroupStoredBytes is a row group's size in the file: its compressed column
// chunks (the footer's total_compressed_size when the writer set it). The footer's
// total_byte_size is the uncompressed size, which can exceed the file's.
func rowGroupStoredBytes(rg *metadata.RowGroupMetaData) int64 {
	if n := rg.TotalCompressedSize(); n > 0 {
		return n
	}
	var n int64
	for c := 0; c < rg.NumColumns(); c++ {
		if cc, err := rg.ColumnChunk(c); err == nil {
			n += cc.TotalCompressedSize()
		}
	}
	return n
}

// leafIndex maps a bound column path (logical) to the file's leaf column index.
func (s *Scan) leafIndex(md *metadata.FileMetaData) func(path []string) int {
	leaf := skipping.LeafIndexByPath(md)
	mapper := s.Mapper
	return func(path []string) int {
		phys, ok := MapPath(mapper, path)
		if !ok {
			return -1
		}
		return leaf(phys)
	}
}

// Explain opens the files of tasks that need a recheck and decides their row groups
// and pages (DecideFile, recorded in rec) without reading any data.
func (s *Scan) Explain(ctx context.Context, tasks []*Task, opts datafile.ReadOptions, rec Recorder) error {
	if s.Filter == nil {
		return nil
	}
	for _, task := range tasks {
		if !task.Recheck {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f, r, err := s.OpenFile(ctx, task, opts, rec)
		if err != nil {
			return err
		}
		s.DecideFile(task, r, rec)
		r.Close()
		f.Close()
	}
	return nil
}

// CountFromLog splits tasks for a count: the rows of files the planner proved match
// entirely and whose add records its row count are counted from the log (their
// deletion vectors' cardinalities subtracted, after checking each vector deletes only
// rows its file has: dv V5), into n and the "metadata" level; the others are
// returned to be read. S2: no file is answered from the log unless every live row
// of it matches.
func (s *Scan) CountFromLog(ctx context.Context, tasks []*Task) (n int64, lv skipping.LevelStats, read []*Task, err error) {
	lv = skipping.LevelStats{Level: "metadata", Unit: skipping.UnitFiles}
	var withDV []*Task
	for _, task := range tasks {
		recs, ok := task.Add.NumRecords()
		if !task.Recheck && ok {
			if dvec := task.Add.DeletionVector; dvec != nil {
				recs -= dvec.Cardinality
				withDV = append(withDV, task)
			}
			n += recs
			lv.Add(skipping.MustMatch, task.Add.Size)
			continue
		}
		lv.Add(skipping.MightMatch, task.Add.Size)
		read = append(read, task)
	}
	// A count answered from a vector's cardinality must not count rows the vector
	// names but the file does not have (dv V5): the vectors are loaded and checked.
	if err := s.checkDeletionVectors(ctx, withDV); err != nil {
		return 0, lv, nil, err
	}
	return n, lv, read, nil
}

// checkDeletionVectors loads the deletion vectors of tasks (several at once) and checks
// that each deletes only rows its file has, by the file's numRecords (dv V5): the one
// check the data-file reader makes against the footer, for files counted without being
// read.
func (s *Scan) checkDeletionVectors(ctx context.Context, tasks []*Task) error {
	errs := make([]error, len(tasks))
	storage.ForEachLimit(ctx, len(tasks), deletionVectorLoads, func(ctx context.Context, i int) {
		task := tasks[i]
		del, err := datafile.LoadDeletionVector(ctx, s.Store, task.Add.DeletionVector)
		if err != nil {
			errs[i] = fmt.Errorf("table: deletion vector of %s: %w", task.Path, err)
			return
		}
		n, _ := task.Add.NumRecords()
		if err := del.CheckRows(n); err != nil {
			errs[i] = fmt.Errorf("table: version %d: %s: %w", s.Version, task.Path, err)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// deletionVectorLoads bounds the deletion vectors a count loads at once (on an object
// store each is a GET).
const deletionVectorLoads = 16
