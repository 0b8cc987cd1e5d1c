package advise

import (
	"context"
	"fmt"

	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

// Planned is the layout a rewrite would write, for Predict: the clustering of an
// OPTIMIZE plan (optimize.Plan's Curve and ClusterBy).
type Planned struct {
	// Curve is the plan's curve: CurveLinear, CurveZOrder, CurveHilbert or
	// CurveWorkload (compaction alone, CurveNone, is not modelled).
	Curve optimize.Curve
	// Columns are the clustering columns (a curve), or the columns a workload
	// tree is told to cut (--workload-columns; default the workload's own).
	Columns []string
	// TreeWorkload is the workload a CurveWorkload tree is built from (default:
	// the workload Predict scores); Robustness is its generic-query blend.
	TreeWorkload *workload.Workload
	Robustness   float64
	// Files is the number of files the rewrite writes (default: the table's
	// bytes over TargetFileSize, rounded up).
	Files int
	// TargetFileSize is the rewrite's target file size (default: the table's
	// delta.targetFileSize).
	TargetFileSize int64
	// SampleRows and Seed are as in Options.
	SampleRows int
	Seed       uint64
}

// Prediction is what a rewrite is predicted to gain for a workload: the current
// layout's figures, measured by planning every filter against the table's files,
// and the planned layout's, modelled on a sample exactly as Table models a
// candidate. Figures are weighted means per query.
type Prediction struct {
	// Version is the table version measured.
	Version int64 `json:"version"`
	// Queries, Weight and SampleRows describe the workload and the sample.
	Queries    int     `json:"queries"`
	Weight     float64 `json:"weight"`
	SampleRows int     `json:"sampleRows"`
	// Layout names the planned layout ("hilbert(a,b)", "workload").
	Layout string `json:"layout"`
	// Current and Planned are the two layouts' figures.
	Current PredictedLayout `json:"current"`
	Planned PredictedLayout `json:"planned"`
	// Notes state the model's caveats.
	Notes []string `json:"notes,omitempty"`
}

// PredictedLayout is one layout's files and bytes read per query (weighted
// means). The planned layout's bytes are its share of rows read times the
// table's bytes (rows stand in for bytes); the current layout's are the sizes of
// the files its scans plan.
type PredictedLayout struct {
	Files        int     `json:"files"`
	Bytes        int64   `json:"bytes"`
	FilesRead    float64 `json:"filesRead"`
	FilesReadPct float64 `json:"filesReadPct"`
	BytesRead    float64 `json:"bytesRead"`
	BytesReadPct float64 `json:"bytesReadPct"`
}

// Predict predicts what rewriting the latest version of t into the planned
// layout gains for the workload w: files and bytes read per query now and after
// the rewrite. The planned layout is simulated as Table simulates a candidate
// (sample, OPTIMIZE's cluster keys or workload tree, Delta statistics of the
// simulated files, planning by package skipping, invariant A1), with every file
// of the table rewritten. Precision: the model cuts files at equal row counts
// where OPTIMIZE cuts at byte sizes, so a query's predicted files read may be
// off by the files its range straddles differently; see the package comment on
// sampling.
func Predict(ctx context.Context, t *table.Table, w *workload.Workload, pl Planned) (*Prediction, error) {
	if t == nil || w == nil || w.Len() == 0 {
		return nil, fmt.Errorf("%w: nil table or empty workload", ErrInvalidOptions)
	}
	var kind string
	switch pl.Curve {
	case optimize.CurveLinear:
		kind = KindLinear
	case optimize.CurveZOrder:
		kind = KindZOrder
	case optimize.CurveHilbert:
		kind = KindHilbert
	case optimize.CurveWorkload:
		kind = KindWorkload
	default:
		return nil, fmt.Errorf("%w: compaction without clustering is not modelled", ErrInvalidOptions)
	}
	if pl.Curve != optimize.CurveWorkload && len(pl.Columns) == 0 {
		return nil, fmt.Errorf("%w: %s without clustering columns", ErrInvalidOptions, kind)
	}
	in, err := loadModelInput(ctx, t, w, pl.TargetFileSize)
	if err != nil {
		return nil, err
	}
	snap, schema, exprs, rows, bytes, target := in.snap, in.schema, in.exprs, in.rows, in.bytes, in.target
	files := pl.Files
	if files <= 0 {
		files = int(max(1, (bytes+target-1)/target))
	}
	sampleRows := pl.SampleRows
	if sampleRows <= 0 {
		sampleRows = min(max(DefaultSampleRowsPerFile*max(files, snap.Log().NumFiles()), MinDefaultSample), MaxDefaultSample)
	}
	train := pl.TreeWorkload
	if train == nil {
		train = w
	}
	partCols := snap.PartitionColumns()
	var trainCols []string
	for _, cu := range train.Columns() {
		trainCols = append(trainCols, cu.Column)
	}
	cols := sampleColumns(schema, w, pl.Columns, trainCols, partCols)
	for _, c := range pl.Columns {
		if fieldIndex(schema, c) < 0 {
			return nil, fmt.Errorf("%w: column %q is not a top-level column of the table (nested clustering columns are not modelled)", ErrInvalidOptions, c)
		}
	}
	sample, err := sampleTable(ctx, snap, cols, float64(sampleRows)/float64(rows), pl.Seed)
	if err != nil {
		return nil, err
	}
	defer sample.Release()
	s, err := newSim(sample, w, partCols)
	if err != nil {
		return nil, err
	}
	s.train, s.rows = train, rows
	p := &Prediction{Version: snap.Version(), Queries: w.Len(), Weight: w.TotalWeight(), SampleRows: s.n}
	// A sample of every row is the table: its files' statistics are exact at
	// any file count. A smaller one is cut into at most MinSampleRowsPerFile
	// rows per file, as Table does.
	simFiles := files
	if maxFiles := max(1, s.n/MinSampleRowsPerFile); int64(s.n) < rows && simFiles > maxFiles {
		simFiles = maxFiles
		p.Notes = append(p.Notes, fmt.Sprintf("the sample of %d rows supports %d simulated files, not %d: the planned layout's shares are for %d files, scaled to %d",
			s.n, maxFiles, files, maxFiles, files))
	}
	var l layout
	if pl.Curve == optimize.CurveWorkload {
		treeCols := optimizeTreeColumns(sample.Schema(), train, partCols, pl.Columns)
		if l, _, err = s.treeLayout(ctx, treeCols, pl.Robustness, simFiles, pl.Seed); err != nil {
			return nil, err
		}
		p.Layout = KindWorkload
	} else {
		idx := make([]int, len(pl.Columns))
		for i, c := range pl.Columns {
			idx[i] = fieldIndex(sample.Schema(), c)
		}
		if l, err = s.curveLayout(ctx, pl.Curve, idx, simFiles); err != nil {
			return nil, err
		}
		p.Layout = kind + "(" + joinCols(pl.Columns) + ")"
	}
	sc, err := s.score(l)
	if err != nil {
		return nil, err
	}
	var planned Candidate
	planned.Files = l.nfiles
	planned.fill(sc)
	// Every partition gets at least one file: the layout's own count, unless
	// the sample was cut coarser than the rewrite.
	plannedFiles := l.nfiles
	if simFiles < files {
		plannedFiles = max(files, l.nfiles)
	}
	p.Planned = PredictedLayout{Files: plannedFiles, Bytes: bytes, FilesReadPct: planned.FilesReadPct, BytesReadPct: planned.RowsReadPct}
	p.Planned.FilesRead = planned.FilesReadPct / 100 * float64(plannedFiles)
	p.Planned.BytesRead = planned.RowsReadPct / 100 * float64(bytes)
	cur, err := currentLayout(ctx, snap, s, exprs, bytes)
	if err != nil {
		return nil, err
	}
	p.Current = PredictedLayout{Files: cur.Files, Bytes: bytes, FilesRead: cur.FilesRead, FilesReadPct: cur.FilesReadPct,
		BytesReadPct: cur.RowsReadPct, BytesRead: cur.RowsReadPct / 100 * float64(bytes)}
	return p, nil
}

func joinCols(cols []string) string {
	out := ""
	for i, c := range cols {
		if i > 0 {
			out += ","
		}
		out += c
	}
	return out
}

// FilterWorkload is the workload of the given filters, each of weight 1 (the
// filters a caller predicts for, as Predict takes them).
func FilterWorkload(filters []string) (*workload.Workload, error) {
	w := &workload.Workload{}
	for _, f := range filters {
		q, err := workload.NewQuery(f, 1)
		if err != nil {
			return nil, fmt.Errorf("advise: filter %q: %w", f, err)
		}
		w.Queries = append(w.Queries, q)
	}
	return w, nil
}
