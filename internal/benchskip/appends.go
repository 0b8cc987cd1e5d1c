package benchskip

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/workload"
)

// AppendsConfig describes the incremental-layout experiment (RunAppends): a
// table of lineitem rows laid out by a workload tree, then Rounds appends of
// Fraction of its rows each, every one followed by an incremental OPTIMIZE
// that routes the new rows through the stored tree; at the end, the same rows
// laid out from scratch (a new tree on everything) for comparison.
type AppendsConfig struct {
	// ScaleFactor and Rows size the base table as Config does (lineitem).
	ScaleFactor float64 `json:"scale_factor"`
	Rows        int     `json:"rows,omitempty"`
	// Files is the number of files of the base layout (default 100); the target
	// file size is the base table's bytes over Files.
	Files int `json:"files"`
	// Rounds and Fraction: Rounds appends of Fraction of the base rows (default
	// 10 and 0.1).
	Rounds   int     `json:"rounds"`
	Fraction float64 `json:"fraction"`
	// Train is the workload the tree is trained on (default "template"); the
	// evaluated queries are held out from the same distribution.
	Train string `json:"train"`
	// Queries is the number of training and of evaluated queries (default 100).
	Queries int `json:"queries"`
	// Seed seeds data and queries.
	Seed uint64 `json:"seed"`
	// Dir, if set, holds the tables (local storage, one subdirectory each);
	// default in memory.
	Dir string `json:"dir,omitempty"`
	// RoundRebuilds also lays out the rows of every round from scratch (a new
	// tree on all of them), to compare each round with a rebuild, not only the
	// last (AppendsRound.RebuildFilesRead).
	RoundRebuilds bool `json:"round_rebuilds,omitempty"`
}

// AppendsRound is the state after one round (round 0: the base layout).
type AppendsRound struct {
	Round int `json:"round"`
	// Files and Bytes are the table's file count and size.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// FilesRead and BytesRead are the mean files and bytes a query plans to read.
	FilesRead float64 `json:"files_read"`
	BytesRead float64 `json:"bytes_read"`
	// AppendedBytes and OptimizeBytes are this round's bytes appended and
	// written by OPTIMIZE; WriteAmplification is (appended + optimize bytes) /
	// appended bytes over rounds 1..Round.
	AppendedBytes      int64   `json:"appended_bytes"`
	OptimizeBytes      int64   `json:"optimize_bytes"`
	WriteAmplification float64 `json:"write_amplification"`
	// RebuildFilesRead and RebuildBytesRead are FilesRead and BytesRead on the
	// same rows laid out from scratch (AppendsConfig.RoundRebuilds; 0 otherwise).
	RebuildFilesRead float64 `json:"rebuild_files_read,omitempty"`
	RebuildBytesRead float64 `json:"rebuild_bytes_read,omitempty"`
}

// AppendsResult is the outcome of RunAppends.
type AppendsResult struct {
	Config AppendsConfig  `json:"config"`
	Rounds []AppendsRound `json:"rounds"`
	// Rebuild is the same rows laid out from scratch after the last round.
	Rebuild AppendsRound `json:"rebuild"`
	// FilesRatio and BytesRatio compare the last round with the rebuild.
	FilesRatio float64 `json:"files_ratio"`
	BytesRatio float64 `json:"bytes_ratio"`
}

// RunAppends runs the incremental-layout experiment.
func RunAppends(ctx context.Context, c AppendsConfig, progress Progress) (*AppendsResult, error) {
	if c.ScaleFactor == 0 {
		c.ScaleFactor = DefaultScaleFactor
	}
	if c.Files == 0 {
		c.Files = 100
	}
	if c.Rounds == 0 {
		c.Rounds = 10
	}
	if c.Fraction == 0 {
		c.Fraction = 0.1
	}
	if c.Train == "" {
		c.Train = "template"
	}
	if c.Queries == 0 {
		c.Queries = DefaultQueries * 2
	}
	if progress == nil {
		progress = func(string, int, int) {}
	}
	base := c.Rows
	if base == 0 {
		base = lineitemRows(c.ScaleFactor)
	}
	extra := int(math.Round(float64(base) * c.Fraction))
	cfg := Config{Dataset: DatasetLineitem, ScaleFactor: c.ScaleFactor, Rows: base, Files: c.Files, Queries: c.Queries,
		Workloads: []string{c.Train}, Layouts: []string{LayoutHilbert}, Train: c.Train, TrainQueries: c.Queries, Seed: c.Seed, ParquetBytes: true}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p, err := prepare(ctx, cfg, progress)
	if err != nil {
		return nil, err
	}
	defer p.d.release()
	train, err := p.trainingWorkload()
	if err != nil {
		return nil, err
	}
	held, err := toWorkload(p.queries[0])
	if err != nil {
		return nil, err
	}
	more, err := genLineitem(memory.DefaultAllocator, c.ScaleFactor, extra*c.Rounds, c.Seed+1, keepSet(nil))
	if err != nil {
		return nil, err
	}
	defer more.release()
	baseRec := p.d.record()
	defer baseRec.Release()
	moreRec := more.record()
	defer moreRec.Release()

	store := func(name string) (storage.Storage, error) {
		if c.Dir == "" {
			return storage.NewMemory(), nil
		}
		if err := os.MkdirAll(c.Dir+"/"+name, 0o755); err != nil {
			return nil, err
		}
		return storage.NewLocal(c.Dir + "/" + name)
	}
	st, err := store("incremental")
	if err != nil {
		return nil, err
	}
	tbl, err := table.Create(ctx, st, baseRec.Schema(), table.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := tbl.WriteBatches(ctx, []arrow.RecordBatch{baseRec}, table.WriteOptions{}); err != nil {
		return nil, err
	}
	bytes, err := tableBytes(ctx, tbl)
	if err != nil {
		return nil, err
	}
	target := max(bytes/int64(c.Files), 1)
	// rebuild lays out the base rows and the first n appended ones from
	// scratch and measures the table.
	rebuild := func(name string, n int) (AppendsRound, error) {
		st, err := store(name)
		if err != nil {
			return AppendsRound{}, err
		}
		reb, err := table.Create(ctx, st, baseRec.Schema(), table.CreateOptions{})
		if err != nil {
			return AppendsRound{}, err
		}
		recs := []arrow.RecordBatch{baseRec}
		if n > 0 {
			all := moreRec.NewSlice(0, int64(n))
			defer all.Release()
			recs = append(recs, all)
		}
		if _, err := reb.WriteBatches(ctx, recs, table.WriteOptions{}); err != nil {
			return AppendsRound{}, err
		}
		if _, err := reb.Optimize(ctx, table.OptimizeOptions{Layout: "workload", Workload: train, TargetFileSize: target}); err != nil {
			return AppendsRound{}, err
		}
		return measure(ctx, reb, held)
	}
	res := &AppendsResult{Config: c}
	progress("appends", 0, c.Rounds+2)
	if _, err := tbl.Optimize(ctx, table.OptimizeOptions{Layout: "workload", Workload: train, TargetFileSize: target}); err != nil {
		return nil, err
	}
	r0, err := measure(ctx, tbl, held)
	if err != nil {
		return nil, err
	}
	if c.RoundRebuilds { // the base layout is a build from scratch
		r0.RebuildFilesRead, r0.RebuildBytesRead = r0.FilesRead, r0.BytesRead
	}
	res.Rounds = append(res.Rounds, r0)
	var appended, written int64
	for round := 1; round <= c.Rounds; round++ {
		progress("appends", round, c.Rounds+2)
		slice := moreRec.NewSlice(int64((round-1)*extra), int64(round*extra))
		before, err := tableBytes(ctx, tbl)
		if err == nil {
			_, err = tbl.WriteBatches(ctx, []arrow.RecordBatch{slice}, table.WriteOptions{})
		}
		slice.Release()
		if err != nil {
			return nil, err
		}
		after, err := tableBytes(ctx, tbl)
		if err != nil {
			return nil, err
		}
		opt, err := tbl.Optimize(ctx, table.OptimizeOptions{Layout: "workload", TargetFileSize: target})
		if err != nil {
			return nil, err
		}
		r, err := measure(ctx, tbl, held)
		if err != nil {
			return nil, err
		}
		r.Round, r.AppendedBytes = round, after-before
		if opt.Metrics != nil {
			r.OptimizeBytes = opt.Metrics.NumAddedBytes
		}
		appended += r.AppendedBytes
		written += r.OptimizeBytes
		r.WriteAmplification = float64(appended+written) / math.Max(float64(appended), 1)
		if c.RoundRebuilds && round < c.Rounds {
			rb, err := rebuild(fmt.Sprintf("rebuild-%d", round), round*extra)
			if err != nil {
				return nil, err
			}
			r.RebuildFilesRead, r.RebuildBytesRead = rb.FilesRead, rb.BytesRead
		}
		res.Rounds = append(res.Rounds, r)
	}
	// The rebuild: every row, a new tree.
	progress("appends", c.Rounds+1, c.Rounds+2)
	if res.Rebuild, err = rebuild("rebuild", c.Rounds*extra); err != nil {
		return nil, err
	}
	res.Rebuild.Round = c.Rounds
	last := &res.Rounds[len(res.Rounds)-1]
	if c.RoundRebuilds {
		last.RebuildFilesRead, last.RebuildBytesRead = res.Rebuild.FilesRead, res.Rebuild.BytesRead
	}
	res.FilesRatio = last.FilesRead / math.Max(res.Rebuild.FilesRead, 1e-9)
	res.BytesRatio = last.BytesRead / math.Max(res.Rebuild.BytesRead, 1e-9)
	progress("appends", c.Rounds+2, c.Rounds+2)
	return res, nil
}

// tableBytes is the size of the table's live files.
func tableBytes(ctx context.Context, t *table.Table) (int64, error) {
	snap, err := t.Snapshot(ctx, table.Latest())
	if err != nil {
		return 0, err
	}
	var n int64
	for _, a := range snap.Log().Files() {
		n += a.Size
	}
	return n, nil
}

// measure plans every query on the table and returns the mean files and bytes
// it would read and the file count.
func measure(ctx context.Context, t *table.Table, w *workload.Workload) (AppendsRound, error) {
	var r AppendsRound
	snap, err := t.Snapshot(ctx, table.Latest())
	if err != nil {
		return r, err
	}
	r.Files = snap.Log().NumFiles()
	for _, a := range snap.Log().Files() {
		r.Bytes += a.Size
	}
	for _, q := range w.Queries {
		sc, err := snap.Scan(ctx, table.WithPredicate(q.Expr()))
		if err != nil {
			return r, fmt.Errorf("benchskip: planning %q: %w", q.Filter, err)
		}
		for _, f := range sc.Files() {
			r.FilesRead++
			r.BytesRead += float64(f.Size)
		}
	}
	r.FilesRead /= float64(max(w.Len(), 1))
	r.BytesRead /= float64(max(w.Len(), 1))
	return r, nil
}

// WriteText writes the experiment's rounds as a table.
func (r *AppendsResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tfiles\ttable MB\tfiles read\tMB read\tappended MB\toptimize MB\twrite ampl.\trebuild: files read\tMB read\tfiles ×\tbytes ×\t")
	for i, x := range append(r.Rounds, r.Rebuild) {
		name := fmt.Sprint(x.Round)
		if i == len(r.Rounds) {
			name = "rebuild"
		}
		cmp := "\t\t\t\t"
		if x.RebuildFilesRead > 0 {
			cmp = fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f\t", x.RebuildFilesRead, x.RebuildBytesRead/1e6, x.FilesRead/x.RebuildFilesRead, x.BytesRead/math.Max(x.RebuildBytesRead, 1e-9))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\n", name, x.Files, float64(x.Bytes)/1e6, x.FilesRead, x.BytesRead/1e6,
			float64(x.AppendedBytes)/1e6, float64(x.OptimizeBytes)/1e6, x.WriteAmplification, cmp)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "after %d appends of %.0f%%: %.2f× the files and %.2f× the bytes a rebuild reads, write amplification %.2f\n",
		r.Config.Rounds, 100*r.Config.Fraction, r.FilesRatio, r.BytesRatio, r.Rounds[len(r.Rounds)-1].WriteAmplification)
	return err
}
