package advise

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

// Table advises a layout for the latest version of t: it draws a uniform
// random sample of the rows (only the columns the workload filters on and the
// partition columns are read), simulates every candidate on it (see Simulate),
// and adds the current layout, measured by planning each filter against the
// table's own file statistics as a scan does.
//
// Sampling reads the filtered columns of every file and keeps each row with
// probability SampleRows/rows, so its time grows with the table (a few seconds
// per ten million rows on one core); the simulation's time grows with the
// sample and the number of candidates, not with the table.
func Table(ctx context.Context, t *table.Table, w *workload.Workload, opts Options) (*Report, error) {
	if t == nil || w == nil || w.Len() == 0 {
		return nil, fmt.Errorf("%w: nil table or empty workload", ErrInvalidOptions)
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	in, err := loadModelInput(ctx, t, w, opts.TargetFileSize)
	if err != nil {
		return nil, err
	}
	snap, schema, exprs, rows, bytes, target := in.snap, in.schema, in.exprs, in.rows, in.bytes, in.target
	// Candidates are simulated with the current layout's file count by default:
	// a layout of fewer, larger files reads a larger share of them for the same
	// filter, so only equal counts compare layouts.
	nfiles := snap.Log().NumFiles()
	rewriteFiles := int(max(1, (bytes+target-1)/target))
	defaulted := opts.Files <= 0 && opts.TargetFileSize <= 0
	switch {
	case defaulted:
		opts.Files = nfiles
	case opts.Files <= 0:
		opts.Files = rewriteFiles
	}
	if opts.SampleRows <= 0 {
		opts.SampleRows = min(max(DefaultSampleRowsPerFile*opts.Files, MinDefaultSample), MaxDefaultSample)
	}
	partCols := snap.PartitionColumns()
	clusterCols, err := snap.ClusteringColumns()
	if err != nil {
		return nil, err
	}
	// Columns to read: what the filters use, plus partition and clustering columns.
	cols := sampleColumns(schema, w, opts.Columns, partCols, clusterCols)
	progress("sample", 0, 1)
	sample, err := sampleTable(ctx, snap, cols, float64(opts.SampleRows)/float64(rows), opts.Seed)
	if err != nil {
		return nil, err
	}
	defer sample.Release()
	progress("sample", 1, 1)
	rep := &Report{Rows: rows}
	s, err := simulate(ctx, sample, w, partCols, opts, rep)
	if err != nil {
		return nil, err
	}
	s.rows = rows
	cur, err := currentLayout(ctx, snap, s, exprs, bytes)
	if err != nil {
		return nil, err
	}
	// A table laid out by a workload tree: how far has the workload drifted?
	if path, tr, err := optimize.CurrentTree(ctx, t.Storage(), snap.Log().Files()); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the current workload tree could not be read: %v", err))
	} else if tr != nil && tr.Workload != nil {
		if rep.Drift, err = tr.Drift(w, schema); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("drift from the workload of %s: %v", path, err))
		} else {
			rep.Notes = append(rep.Notes, "the current layout is the workload tree "+path)
		}
	}
	if defaulted && rewriteFiles != nfiles {
		rep.Notes = append(rep.Notes, fmt.Sprintf("candidates are compared with the current layout at its %d files; OPTIMIZE at a target of %d bytes writes about %d (rank at that count with --files %d or --target-size)",
			nfiles, target, rewriteFiles, rewriteFiles))
	}
	comparable := opts.Files == nfiles
	if !comparable {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the current layout has %d files, the candidates %d: its shares are not comparable and it is not recommended", nfiles, opts.Files))
	}
	refused, err := keepAccepted(ctx, t, snap.Version(), w, opts, rep)
	if err != nil {
		return nil, err
	}
	if clusterCols != nil {
		if err := addLiquid(ctx, s, clusterCols, refused, opts, rep); err != nil {
			return nil, err
		}
	}
	rep.finish(cur, comparable)
	return rep, nil
}

// tableSize returns the live rows (net of deletion vectors) and bytes of snap's
// files.
func tableSize(snap *table.Snapshot) (rows, bytes int64, err error) {
	for _, a := range snap.Log().Files() {
		n, ok := a.NumRecords()
		if !ok {
			return 0, 0, fmt.Errorf("%w: file %s has no row count in its statistics", ErrUnsupportedTable, a.Path)
		}
		if a.DeletionVector != nil {
			n -= a.DeletionVector.Cardinality
		}
		rows += n
		bytes += a.Size
	}
	if rows == 0 {
		return 0, 0, fmt.Errorf("%w: the table has no rows", ErrUnsupportedTable)
	}
	return rows, bytes, nil
}

// sampleColumns returns the top-level columns of schema a sample reads: those
// w filters on, then each of extra's, once each in the schema's spelling
// (names that are not top-level columns are left out).
func sampleColumns(schema *arrow.Schema, w *workload.Workload, extra ...[]string) []string {
	var cols []string
	seen := map[string]bool{}
	add := func(name string) {
		i := fieldIndex(schema, name)
		if i < 0 {
			return
		}
		n := schema.Field(i).Name
		if !seen[strings.ToLower(n)] {
			seen[strings.ToLower(n)] = true
			cols = append(cols, n)
		}
	}
	for _, cu := range w.Columns() {
		add(cu.Column)
	}
	for _, list := range extra {
		for _, c := range list {
			add(c)
		}
	}
	return cols
}

// refusal reports whether err is OPTIMIZE refusing the options on the table
// (retrying cannot help), not a failure to read it.
func refusal(err error) bool {
	for _, target := range []error{table.ErrInvalidArgument, table.ErrUnknownColumn, table.ErrMissingStats,
		optimize.ErrInvalidOptions, optimize.ErrClusterColumn, optimize.ErrBloomColumn, optimize.ErrUnsupportedTable, workload.ErrBind} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// keepAccepted drops the candidates OPTIMIZE refuses on the table: each
// candidate's command is planned as a dry run (table.Optimize with DryRun, the
// validation and planning `skiplake optimize` runs, reading no data file) on the
// version the advisor measured; a refusal is a note naming the candidates and
// OPTIMIZE's reason. It returns the refused candidates. Other errors (storage,
// cancellation) are returned.
func keepAccepted(ctx context.Context, t *table.Table, version int64, w *workload.Workload, opts Options, rep *Report) ([]Candidate, error) {
	var dropped []Candidate
	kept := rep.Candidates[:0]
	var reasons []string
	refused := map[string][]string{}
	for _, c := range rep.Candidates {
		o := table.OptimizeOptions{Full: true, DryRun: true, TargetFileSize: opts.TargetFileSize, PlanAt: table.AtVersion(version)}
		switch c.Kind {
		case KindLinear:
			o.LinearBy = c.Columns
		case KindZOrder:
			o.ZOrderBy = c.Columns
		case KindHilbert:
			o.HilbertBy = c.Columns
		case KindWorkload:
			o.Layout, o.Workload, o.Robustness = "workload", w, c.Robustness
			if c.namedColumns {
				o.WorkloadColumns = c.Columns
			}
		}
		_, err := t.Optimize(ctx, o)
		if err == nil {
			kept = append(kept, c)
			continue
		}
		if !refusal(err) {
			return nil, fmt.Errorf("advise: checking %s with optimize: %w", c.Name, err)
		}
		dropped = append(dropped, c)
		msg := err.Error()
		if _, ok := refused[msg]; !ok {
			reasons = append(reasons, msg)
		}
		refused[msg] = append(refused[msg], c.Name)
	}
	clear(rep.Candidates[len(kept):])
	rep.Candidates = kept
	for _, msg := range reasons {
		rep.Notes = append(rep.Notes, fmt.Sprintf("optimize refuses %s on this table, left out: %s", strings.Join(refused[msg], ", "), msg))
	}
	return dropped, nil
}

// sampleTable reads cols of every row of snap and keeps each with probability p
// (all when p ≥ 1). The caller releases the result.
func sampleTable(ctx context.Context, snap *table.Snapshot, cols []string, p float64, seed uint64) (arrow.RecordBatch, error) {
	sc, err := snap.Scan(ctx, table.WithColumns(cols...))
	if err != nil {
		return nil, err
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	r := rand.New(rand.NewPCG(seed, 0x73616d70)) // "samp"
	mem := memory.DefaultAllocator
	var parts []arrow.RecordBatch
	defer func() {
		for _, b := range parts {
			b.Release()
		}
	}()
	sch := rd.Schema()
	for rd.Next() {
		rec := rd.RecordBatch()
		if p >= 1 {
			rec.Retain()
			parts = append(parts, rec)
			continue
		}
		ib := array.NewInt32Builder(mem)
		for i := range int(rec.NumRows()) {
			if r.Float64() < p {
				ib.Append(int32(i))
			}
		}
		idx := ib.NewArray()
		ib.Release()
		if idx.Len() == 0 {
			idx.Release()
			continue
		}
		arrs := make([]arrow.Array, rec.NumCols())
		var terr error
		for c := range arrs {
			if arrs[c], terr = compute.TakeArray(ctx, rec.Column(c), idx); terr != nil {
				break
			}
		}
		idx.Release()
		if terr != nil {
			for _, a := range arrs {
				if a != nil {
					a.Release()
				}
			}
			return nil, fmt.Errorf("advise: sampling: %w", terr)
		}
		n := int64(arrs[0].Len())
		parts = append(parts, array.NewRecordBatch(sch, arrs, n))
		for _, a := range arrs {
			a.Release()
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	out := make([]arrow.Array, sch.NumFields())
	for c := range out {
		chunks := make([]arrow.Array, len(parts))
		for i, b := range parts {
			chunks[i] = b.Column(c)
		}
		var err error
		if len(chunks) == 0 {
			out[c] = array.MakeArrayOfNull(mem, sch.Field(c).Type, 0)
		} else if out[c], err = array.Concatenate(chunks, mem); err != nil {
			for _, a := range out[:c] {
				a.Release()
			}
			return nil, fmt.Errorf("advise: sampling: %w", err)
		}
	}
	n := int64(out[0].Len())
	rec := array.NewRecordBatch(sch, out, n)
	for _, a := range out {
		a.Release()
	}
	if n == 0 {
		rec.Release()
		return nil, fmt.Errorf("%w: the sample is empty (raise SampleRows)", ErrInvalidOptions)
	}
	return rec, nil
}

// currentLayout plans every filter against the table's files (partition
// values, statistics and Bloom filters, as a scan does) and returns the current
// layout's figures (its share of bytes read stands in for rows read). A
// query's lower bound is its matching share in the sample
// times the table's file count.
func currentLayout(ctx context.Context, snap *table.Snapshot, s *sim, exprs []expr.Expr, totalBytes int64) (*Candidate, error) {
	nfiles := snap.Log().NumFiles()
	c := &Candidate{Name: "current", Kind: KindCurrent, Files: nfiles}
	var sc score
	var logSum float64
	ratios := make([]weighted, 0, len(exprs))
	for qi, e := range exprs {
		scan, err := snap.Scan(ctx, table.WithPredicate(e))
		if err != nil {
			return nil, fmt.Errorf("advise: planning %s on the table: %w", e, err)
		}
		files := scan.Files()
		var readBytes int64
		for _, f := range files {
			readBytes += f.Size
		}
		read := float64(len(files))
		lb := math.Ceil(float64(s.matches[qi]) / float64(max(s.n, 1)) * float64(nfiles))
		w := s.w.Queries[qi].Weight
		sc.filesRead += w * read
		sc.lowerBound += w * lb
		sc.bytesRead += w * float64(readBytes) / float64(max(totalBytes, 1))
		r := ratioOf(read, lb)
		logSum += w * math.Log(r)
		ratios = append(ratios, weighted{w, r})
	}
	sc.filesRead /= s.totalW
	sc.lowerBound /= s.totalW
	sc.bytesRead /= s.totalW
	sc.ratioGeoMean = math.Exp(logSum / s.totalW)
	sc.ratioP90 = weightedP90(ratios, s.totalW)
	c.fill(sc)
	return c, nil
}

// modelInput is what the advisor and Predict read of a table before modelling it: the
// latest snapshot, its schema, the workload's filters bound to it, its live rows and
// bytes, and the target file size (the caller's, else the table's).
type modelInput struct {
	snap        *table.Snapshot
	schema      *arrow.Schema
	exprs       []expr.Expr
	rows, bytes int64
	target      int64
}

func loadModelInput(ctx context.Context, t *table.Table, w *workload.Workload, target int64) (*modelInput, error) {
	snap, err := t.Snapshot(ctx, table.Latest())
	if err != nil {
		return nil, err
	}
	schema := snap.Schema()
	exprs, err := bindAll(w, schema)
	if err != nil {
		return nil, err
	}
	rows, bytes, err := tableSize(snap)
	if err != nil {
		return nil, err
	}
	if target <= 0 {
		target = snap.Properties().TargetFileSize
	}
	return &modelInput{snap: snap, schema: schema, exprs: exprs, rows: rows, bytes: bytes, target: target}, nil
}
