package table

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/storage"
)

// CopyParquet writes the scan's rows to w as one Parquet file made of the table's
// own row groups, copied byte for byte (their compression, Bloom filters and page
// indexes with them) under a new footer, when the scan allows it; otherwise it
// writes nothing and returns why (reason non-empty, err nil), and the caller
// encodes the rows it reads (Read) instead.
//
// The copy is made when the scan is the whole table version — no filter, no limit,
// every column in table order — of a table without partition columns, whose live
// files carry no deletion vector and are all files skiplake's writer wrote for the
// table's current schema (datafile.Output.Export's rules: same Parquet schema,
// codec and key-value metadata, page indexes, Bloom filters of the Bloom columns,
// no type widening since, row groups of 32Ki rows or 1 MiB on average). Column
// mapping is allowed: the file gets the logical names and no field ids, as the
// re-encoded file would. The file's schema and key-value metadata (ARROW:schema)
// are the ones the re-encoding export writes for Schema, so a Parquet reader reads
// the same rows and schema from either. A file that is damaged or missing also
// gives a reason, so that the caller's read reports it as a scan does.
//
// Every file is checked before anything is written. An error after that (a failed
// read or write, ctx cancelled) leaves a partial file in w, which the caller
// discards.
func (s *Scan) CopyParquet(ctx context.Context, w io.Writer) (reason string, err error) {
	v := s.snap.view
	switch {
	case s.table != nil:
		return "filter", nil
	case s.cfg.Limit > 0:
		return "limit", nil
	case len(v.Partitions()) > 0:
		return "partition columns", nil
	case len(s.tasks) == 0:
		return "no files", nil
	}
	full, err := s.project(nil, false)
	if err != nil {
		return "", err
	}
	if !full.Schema.Equal(s.proj.Schema) {
		return "columns", nil
	}
	parser := v.StatsParser()
	srcs := make([]datafile.StitchSource, len(s.tasks))
	for i, t := range s.tasks {
		if t.Add.DeletionVector != nil {
			return "deletion vector", nil
		}
		srcs[i] = datafile.StitchSource{Path: t.Path, Size: t.Add.Size}
		if t.Add.Stats != "" {
			if st, err := parser.Parse(t.Add.Stats); err == nil {
				srcs[i].Stats = st
			}
		}
	}
	spec, err := v.FileSpec(tableview.FileOptions{})
	if err != nil {
		return err.Error(), nil // the table's files are not what skiplake writes now
	}
	out, err := datafile.NewOutput(s.snap.store, spec)
	if err != nil {
		return "", fmt.Errorf("table: version %d: copying row groups: %w", s.snap.Version(), err)
	}
	cw := &countWriter{w: w}
	_, err = out.Export(ctx, cw, srcs, datafile.ExportOptions{Schema: s.proj.Schema,
		MinRowGroupRows: s.cfg.copyMin[0], MinRowGroupBytes: s.cfg.copyMin[1]})
	var ne *datafile.NotStitchableError
	switch {
	case err == nil:
		return "", nil
	case cw.n > 0:
	case errors.As(err, &ne):
		return fmt.Sprintf("%s: %s: %s", ne.Rule, ne.Path, ne.Detail), nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, datafile.ErrCorruptData), errors.Is(err, storage.ErrNotExist):
		return err.Error(), nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", fmt.Errorf("table: version %d: copying row groups: %w", s.snap.Version(), err)
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
