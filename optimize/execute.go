package optimize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Metrics describes what Execute did (or, for a dry run, would do).
type Metrics struct {
	// DryRun is true when nothing was written.
	DryRun bool `json:"dryRun,omitempty"`
	// Versions are the committed table versions, in order (one per commit).
	Versions []int64 `json:"versions"`
	// Retries counts replans after conflicting concurrent commits.
	Retries int `json:"retries"`
	// NumPartitions and NumBins count the partitions and bins rewritten.
	NumPartitions int `json:"numPartitions"`
	NumBins       int `json:"numBins"`
	// NumAddedFiles, NumRemovedFiles, NumAddedBytes, NumRemovedBytes count the
	// committed file actions.
	NumAddedFiles   int   `json:"numAddedFiles"`
	NumRemovedFiles int   `json:"numRemovedFiles"`
	NumAddedBytes   int64 `json:"numAddedBytes"`
	NumRemovedBytes int64 `json:"numRemovedBytes"`
	// NumRows counts the rows rewritten.
	NumRows int64 `json:"numRows"`
	// SpilledBytes counts bytes written to spill files (bounded-memory clustering).
	SpilledBytes int64 `json:"spilledBytes,omitempty"`
	// File size distribution of the added files.
	MinFileSize int64 `json:"minFileSize"`
	P25FileSize int64 `json:"p25FileSize"`
	P50FileSize int64 `json:"p50FileSize"`
	P75FileSize int64 `json:"p75FileSize"`
	MaxFileSize int64 `json:"maxFileSize"`
	// NumCopiedBins and NumCopiedBytes count the compaction bins (and their input
	// bytes) written by copying their files' row groups unchanged
	// (datafile.Output.Stitch: no decode, no re-encode); NumReencodedBins and
	// NumReencodedBytes the compaction bins decoded and re-encoded. Clustering bins
	// are always re-encoded and counted in neither.
	NumCopiedBins     int   `json:"numCopiedBins,omitempty"`
	NumCopiedBytes    int64 `json:"numCopiedBytes,omitempty"`
	NumReencodedBins  int   `json:"numReencodedBins,omitempty"`
	NumReencodedBytes int64 `json:"numReencodedBytes,omitempty"`
	// NumMergedBins and NumMergedBytes count the compaction bins (and their input
	// bytes) that qualified for copying but for the size of their row groups, and
	// whose small row groups were merged into row groups of the target size page by
	// page (datafile.Output.Stitch with MergeRowGroups: the columns without a
	// dictionary copied page by page, the others re-encoded; see "Copying row
	// groups" in the package documentation). They are counted in neither
	// NumCopiedBins nor NumReencodedBins.
	NumMergedBins  int   `json:"numMergedBins,omitempty"`
	NumMergedBytes int64 `json:"numMergedBytes,omitempty"`
	// ReencodeReasons counts the re-encoded compaction bins by the first rule of
	// copying they broke (see "Copying row groups" in the package documentation):
	// a datafile.StitchRule, or ReasonDeletionVector, ReasonRowTracking,
	// ReasonStitchDisabled.
	ReencodeReasons map[string]int `json:"reencodeReasons,omitempty"`
	// NumBloomIndexFiles counts the Bloom index files written (one per commit that
	// added files, when the run has Bloom columns).
	NumBloomIndexFiles int `json:"numBloomIndexFiles,omitempty"`
	// Elapsed is the wall time of Execute.
	Elapsed time.Duration `json:"elapsedNanos"`

	addedSizes []int64
}

func (m *Metrics) finishSizes() {
	s := append([]int64(nil), m.addedSizes...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		m.MinFileSize, m.P25FileSize, m.P50FileSize, m.P75FileSize, m.MaxFileSize = 0, 0, 0, 0, 0
		return
	}
	q := func(f float64) int64 { return s[int(f*float64(len(s)-1))] }
	m.MinFileSize, m.P25FileSize, m.P50FileSize, m.P75FileSize, m.MaxFileSize = s[0], q(0.25), q(0.5), q(0.75), s[len(s)-1]
}

// binResult is the outcome of rewriting one bin: files stored, not yet committed.
// (The batch's datafile.Output knows every object stored, for cleanup, and the
// files' Bloom filters.)
type binResult struct {
	bin     *Bin
	adds    []*log.Add
	rows    int64
	spilled int64
	trees   []string // workload tree files stored for adds (deleted with them on failure)
	// copied is set for a compaction bin whose row groups were copied whole,
	// merged for one whose small row groups were merged page by page; reencoded
	// names why a compaction bin was re-encoded instead.
	copied, merged bool
	reencoded      string
}

// workItem is a bin with its partition.
type workItem struct {
	part *PartitionPlan
	bin  *Bin
}

// Execute rewrites the plan's bins and commits removes and adds with dataChange=false
// (one commit, or one per CommitEvery bins) at snapshot isolation, so concurrent
// appends never make it fail (O1). When a concurrent commit removes a file it is
// rewriting, the files it wrote for the failed commit are deleted (best effort) and
// it plans again on the latest snapshot, at most MaxRetries times; then it fails with
// ErrConflict. Batches committed before a failure stay committed: each is a complete
// rewrite on its own. A cancelled ctx leaves the table unchanged apart from earlier
// committed batches; data files written but not committed are deleted best effort
// (any left are orphans for Vacuum).
//
// Bloom filters (O3): each batch's files get their filters in one index file,
// stored before the batch's commit and deleted with its data files on failure. When
// the plan has NewBloomColumns, the last commit also carries a metaData action
// adding them to skiplake.bloomFilter.columns (a run with no bins commits just
// that). The log allows a metaData change next to dataChange=false actions and
// keeps SnapshotIsolation for them, so appends concurrent with OPTIMIZE still never
// make it fail; but that commit changes metadata, so a writer that commits after
// it from an older snapshot gets log.ErrMetadataChanged, like after any property
// change, and a concurrent metadata change makes OPTIMIZE replan.
//
// The Metrics returned with an error describe what was committed before it.
func Execute(ctx context.Context, plan *Plan) (*Metrics, error) {
	if plan == nil || plan.snap == nil {
		return nil, &InvalidOptionsError{Problems: []string{"nil or zero plan (use NewPlan)"}}
	}
	start := time.Now()
	m := &Metrics{}
	defer func() { m.Elapsed = time.Since(start); m.finishSizes() }()
	if plan.opts.DryRun {
		m.DryRun = true
		m.NumPartitions, m.NumBins, m.NumRemovedFiles, m.NumRemovedBytes = len(plan.Partitions), plan.NumBins, plan.NumFiles, plan.NumBytes
		return m, nil
	}
	p := plan
	for attempt := 0; ; attempt++ {
		err := p.run(ctx, m)
		if err == nil {
			return m, nil
		}
		var ce *log.ConflictError
		if !errors.As(err, &ce) {
			if errors.Is(err, dv.ErrInvalidRows) {
				// A deletion vector names rows its file does not have: say which version.
				err = fmt.Errorf("optimize: version %d: %w", p.snap.Version(), err)
			}
			return m, err
		}
		if attempt >= p.opts.MaxRetries || ctx.Err() != nil {
			return m, fmt.Errorf("%w (gave up after %d attempts): %w", ErrConflict, attempt+1, err)
		}
		m.Retries++
		snap, serr := log.New(p.store).Snapshot(ctx, -1)
		if serr != nil {
			return m, serr
		}
		var np *Plan
		var perr error
		if p.restricted {
			np, perr = p.rebase(ctx, snap) // only the selected bins' files (shard.go)
		} else {
			np, perr = NewPlan(ctx, snap, p.store, plan.opts)
		}
		if perr != nil {
			return m, perr
		}
		p = np
	}
}

// run executes every bin of p, committing per batch.
func (p *Plan) run(ctx context.Context, m *Metrics) error {
	var items []workItem
	for _, pp := range p.Partitions {
		for _, b := range pp.Bins {
			items = append(items, workItem{pp, b})
		}
	}
	per := p.opts.CommitEvery
	if per <= 0 || per > len(items) {
		per = len(items)
	}
	e := &executor{plan: p, total: p.NumBytes, binsTotal: int64(p.NumBins), filesTotal: int64(p.NumFiles)}
	if len(items) == 0 {
		if len(p.NewBloomColumns) == 0 {
			return nil
		}
		// Nothing to rewrite, but the new Bloom columns are still persisted.
		return p.commit(ctx, e, nil, nil, m, true)
	}
	for lo := 0; lo < len(items); lo += per {
		hi := min(lo+per, len(items))
		batch := items[lo:hi]
		// One Output per commit: it stores the batch's data files and Bloom index
		// and, if the commit surely did not happen, deletes them all (best effort).
		out, err := p.newOutput()
		if err != nil {
			return err
		}
		results, err := e.runBatch(ctx, batch, out)
		var index string
		if err == nil {
			// B1: one index file covers exactly the batch's files, durable before
			// the commit that references it.
			index, err = out.WriteBloomIndex(ctx)
		}
		if err == nil {
			err = p.commit(ctx, e, batch, results, m, hi == len(items))
		}
		if err != nil {
			if !errors.Is(err, log.ErrCommitUnknown) {
				// Never delete the files of a commit that may have landed (its
				// outcome is unknown): if it did not, they are orphans for VACUUM.
				out.Discard()
				p.discardTrees(results)
			}
			return err
		}
		if index != "" {
			m.NumBloomIndexFiles++
		}
	}
	return nil
}

// executor holds what bin workers share.
type executor struct {
	plan                  *Plan
	total                 int64 // bytes
	binsTotal, filesTotal int64
	mu                    sync.Mutex
	done                  int64 // bytes
	binsDone, filesDone   int64
}

// progress reports bytes more of input processed in phase.
func (e *executor) progress(phase string, bytes int64) { e.advance(phase, bytes, 0, 0) }

// advance adds bytes, files and bins done and reports the totals so far in bytes.
func (e *executor) advance(phase string, bytes, files, bins int64) {
	if e.plan.opts.Progress == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done += bytes
	e.filesDone += files
	e.binsDone += bins
	e.plan.opts.Progress(e.counts(Progress{Phase: phase, Done: e.done, Total: e.total, Unit: "bytes"}))
}

// commitProgress reports a commit starting (done 0) or finished (done 1).
func (e *executor) commitProgress(done int64) {
	if e.plan.opts.Progress == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.plan.opts.Progress(e.counts(Progress{Phase: "commit", Done: done, Total: 1, Unit: "commits"}))
}

// counts fills in the bins and files done; e.mu is held.
func (e *executor) counts(p Progress) Progress {
	p.BinsDone, p.BinsTotal, p.FilesDone, p.FilesTotal = e.binsDone, e.binsTotal, e.filesDone, e.filesTotal
	return p
}

// runBatch rewrites a batch of bins. Compaction bins and small clustering bins
// (whose input fits in 1/Parallelism of the memory budget) run side by side, up to
// Parallelism at once, and share the workers and the budget among as many of them
// as run together: a lone small bin gets every worker and the whole budget, two
// bins on two cores one each. Larger clustering bins run one after the other, each
// with the whole budget and every worker. So a table of many small partitions uses
// every core, and a single partition, small or large, does too.
func (e *executor) runBatch(ctx context.Context, items []workItem, out *datafile.Output) ([]*binResult, error) {
	results := make([]*binResult, len(items))
	o := e.plan.opts
	// A bin is small when it fits 1/Parallelism of the budget, so that Parallelism
	// of them fit together; those that run together share workers and budget.
	smallBudget := max(o.MemoryBudget/int64(o.Parallelism), 1)
	together := 0
	for _, it := range items {
		if it.bin.Kind != KindCluster || smallBin(it.bin, smallBudget) {
			together++
		}
	}
	together = max(1, min(together, o.Parallelism))
	share := o
	share.MemoryBudget = max(o.MemoryBudget/int64(together), 1)
	share.Parallelism = max(1, o.Parallelism/together)
	// The concurrent bins run on an errgroup: the first bin that fails cancels the
	// others (their ctx) and no bin starts after it or after ctx ends. The first
	// error is the real one: the others' cancellations come after it.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Parallelism)
	for i, it := range items {
		if it.bin.Kind == KindCluster && !smallBin(it.bin, smallBudget) {
			continue // below, after the concurrent ones
		}
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped while waiting for a slot (reported below)
			}
			var err error
			if it.bin.Kind == KindCluster {
				results[i], err = e.cluster(gctx, it, share, out)
			} else {
				results[i], err = e.compact(gctx, it, out, share.Parallelism)
			}
			if err != nil {
				return err
			}
			e.binDone(it.bin)
			return nil
		})
	}
	err := g.Wait()
	for i, it := range items {
		if err != nil || it.bin.Kind != KindCluster || smallBin(it.bin, smallBudget) {
			continue
		}
		if err = ctx.Err(); err != nil {
			break
		}
		if results[i], err = e.cluster(ctx, it, o, out); err != nil {
			break
		}
		e.binDone(it.bin)
	}
	if err == nil {
		err = ctx.Err()
	}
	// The bins rewritten so far, also on failure: the caller removes their files.
	var done []*binResult
	for _, r := range results {
		if r != nil {
			done = append(done, r)
		}
	}
	return done, err
}

// binDone reports a bin rewritten: with it, a clustering bin's input files (a
// compaction bin counts each file as it copies it).
func (e *executor) binDone(b *Bin) {
	var files int64
	if b.Kind == KindCluster {
		files = int64(len(b.adds))
	}
	e.advance("write", 0, files, 1)
}

// smallBin reports a clustering bin whose input surely fits in budget on the
// in-memory path (Parquet expands about 3-5 times in Arrow; the path needs three
// times that).
func smallBin(b *Bin, budget int64) bool { return b.Bytes*16 <= budget }

// compact concatenates a bin's files into one new file (rows in input order): by
// copying their row groups when they qualify (stitch), else by decoding them and
// encoding up to par of the columns at once (bins run side by side).
func (e *executor) compact(ctx context.Context, it workItem, out *datafile.Output, par int) (*binResult, error) {
	res, reason, err := e.stitch(ctx, it, out)
	if res != nil || err != nil {
		return res, err
	}
	p := e.plan
	first := it.bin.adds[0]
	dec, err := first.DecodedPath()
	if err != nil {
		return nil, err
	}
	f, err := out.Create(ctx, datafile.FileOptions{Dir: dirOf(dec), LogDir: dirOf(first.Path),
		PartitionValues: it.part.Values, Tags: cubeTags(it.bin.adds), Parallelism: par})
	if err != nil {
		return nil, err
	}
	res = &binResult{bin: it.bin, reencoded: reason}
	for _, a := range it.bin.adds {
		var rows int64
		err := p.readInputRows(ctx, a, p.opts.Allocator, compactBatchRows, func(rec arrow.RecordBatch, _ int64) error {
			rows += rec.NumRows()
			return f.Write(rec)
		})
		if err == nil {
			err = checkRows(a, rows)
		}
		if err != nil {
			f.Abort()
			return nil, err
		}
		res.rows += rows
		e.advance("write", a.Size, 1, 0)
	}
	add, err := f.Close(ctx)
	if err != nil {
		return nil, err
	}
	if add != nil {
		res.adds = append(res.adds, add)
	}
	return res, nil
}

// Why a compaction bin was re-encoded rather than copied, besides the rules of
// datafile.Output.Stitch (datafile.StitchRule values): Metrics.ReencodeReasons.
const (
	// ReasonDeletionVector: an input file has a deletion vector (its deleted rows
	// must be dropped, which copying pages cannot do).
	ReasonDeletionVector = "deletion-vector"
	// ReasonRowTracking: the table has row tracking (delta.enableRowTracking): the
	// new file must materialize the rows' stable row IDs, which the inputs' pages
	// lack.
	ReasonRowTracking = "row-tracking"
	// ReasonStitchDisabled: Options.StitchMinRowGroupBytes is negative.
	ReasonStitchDisabled = "disabled"
)

// stitch writes a compaction bin by copying its files' row groups into one new
// file (datafile.Output.Stitch) when the bin qualifies; otherwise it returns no
// result, no error, and the reason (nothing was stored). The add's statistics are
// the merge of the inputs' log statistics, parsed as the table's readers parse
// them; its Bloom index filters are built from the inputs' Bloom columns (O3).
func (e *executor) stitch(ctx context.Context, it workItem, out *datafile.Output) (*binResult, string, error) {
	p := e.plan
	switch {
	case p.opts.StitchMinRowGroupBytes < 0:
		return nil, ReasonStitchDisabled, nil
	case p.hidden > 0 || p.view.Properties().EnableRowTracking:
		return nil, ReasonRowTracking, nil
	}
	parser := p.view.StatsParser()
	adds := it.bin.adds
	srcs := make([]datafile.StitchSource, len(adds))
	var rows int64
	for i, a := range adds {
		if a.DeletionVector != nil {
			return nil, ReasonDeletionVector, nil
		}
		dec, err := a.DecodedPath()
		if err != nil {
			return nil, "", err
		}
		srcs[i] = datafile.StitchSource{Path: dec, Size: a.Size}
		if a.Stats != "" {
			if st, err := parser.Parse(a.Stats); err == nil {
				srcs[i].Stats = st
				rows += st.NumRecords
			}
		}
	}
	first := adds[0]
	place := datafile.FileOptions{Dir: dirOf(srcs[0].Path), LogDir: dirOf(first.Path),
		PartitionValues: it.part.Values, Tags: cubeTags(adds)}
	res, err := out.Stitch(ctx, place, srcs, datafile.StitchOptions{
		MinRowGroupBytes: p.opts.StitchMinRowGroupBytes,
		MergeRowGroups:   !p.opts.NoRowGroupMerge,
		Progress:         func(i int) { e.advance("write", adds[i].Size, 1, 0) },
	})
	var ne *datafile.NotStitchableError
	switch {
	case errors.As(err, &ne):
		return nil, string(ne.Rule), nil
	case err == nil:
		return &binResult{bin: it.bin, adds: []*log.Add{res.Add}, rows: rows, copied: res.MergedRowGroups == 0, merged: res.MergedRowGroups > 0}, "", nil
	case ctx.Err() != nil:
		return nil, "", ctx.Err()
	case errors.Is(err, datafile.ErrCorruptData):
		return nil, "", fmt.Errorf("%w: %w", ErrCorruptData, err) // err names the file
	case errors.Is(err, storage.ErrNotExist):
		return nil, "", fmt.Errorf("%w: an input file is in the log but missing from storage: %w", ErrCorruptData, err)
	}
	return nil, "", fmt.Errorf("optimize: copying the row groups of %d files: %w", len(adds), err)
}

// cubeTags returns the clustering tags (ZCUBE_*, OPTIMIZE_TARGET_SIZE) of the input
// of a single-file compaction bin: its rows keep their order (deleted rows dropped,
// Bloom filters added), so the new file stays part of the cube. A bin of several
// files gets no tags.
func cubeTags(adds []*log.Add) map[string]string {
	if len(adds) != 1 {
		return nil
	}
	var tags map[string]string
	for _, k := range []string{TagCubeID, TagCubeColumns, TagCubeCurve, TagTargetSize} {
		if v, ok := adds[0].Tags[k]; ok {
			if tags == nil {
				tags = map[string]string{}
			}
			tags[k] = v
		}
	}
	return tags
}

// checkRows guards O1 against files whose content disagrees with their stats:
// rows is the number of live rows read (deletion vector applied).
func checkRows(a *log.Add, rows int64) error {
	n, ok := a.NumRecords()
	if !ok {
		return nil
	}
	if a.DeletionVector != nil {
		n -= a.DeletionVector.Cardinality
	}
	if n != rows {
		return fmt.Errorf("%w: %s: read %d live rows, its stats and deletion vector say %d", ErrCorruptData, a.Path, rows, n)
	}
	return nil
}

// commit commits one batch of bin results. The last batch of a run also adds
// NewBloomColumns to the table property skiplake.bloomFilter.columns: a metaData
// action in the same transaction. (Earlier batches cannot carry it: they all read
// the plan's snapshot, and a later batch would then conflict with the earlier
// batch's metadata change.)
func (p *Plan) commit(ctx context.Context, e *executor, items []workItem, results []*binResult, m *Metrics, last bool) error {
	txn := p.snap.NewTransaction(log.TxnOptions{})
	if p.hidden > 0 {
		txn.PreserveRowTracking()
	}
	if last && len(p.NewBloomColumns) > 0 {
		proto, md, err := p.metadataWithBloomColumns()
		if err != nil {
			return err
		}
		txn.SetMetadata(md)
		if !reflect.DeepEqual(proto, p.snap.Protocol()) {
			txn.SetProtocol(proto)
		}
	}
	now := time.Now().UnixMilli()
	var added, removed []int64
	var addedBytes, removedBytes, rows int64
	var parts = map[*PartitionPlan]bool{}
	for _, it := range items {
		parts[it.part] = true
		for _, a := range it.bin.adds {
			size := a.Size
			txn.ReadFiles(a.Path)
			txn.Remove(&log.Remove{Path: a.Path, DeletionTimestamp: &now, DataChange: false, ExtendedFileMetadata: true,
				PartitionValues: a.PartitionValues, Size: &size, Tags: a.Tags, Stats: a.Stats, DeletionVector: a.DeletionVector,
				BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion})
			removed = append(removed, size)
			removedBytes += size
		}
	}
	for _, r := range results {
		p.markClustered(r)
		txn.Add(r.adds...)
		for _, a := range r.adds {
			added = append(added, a.Size)
			addedBytes += a.Size
		}
		rows += r.rows
	}
	// T1: the new files were written for the plan's layout (its view); the commit
	// lands on that layout or, when a winner changed metadata, not at all.
	var written []*log.Add
	for _, r := range results {
		written = append(written, r.adds...)
	}
	if err := tableview.CheckCommit(ctx, p.store, p.view, p.view, written); err != nil {
		return err
	}
	sorted := append([]int64(nil), added...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	q := func(f float64) string {
		if len(sorted) == 0 {
			return "0"
		}
		return strconv.FormatInt(sorted[int(f*float64(len(sorted)-1))], 10)
	}
	params := p.operationParameters(workloadTrees(items, results))
	operation := "OPTIMIZE"
	if purgeOnly(items) {
		// Delta records a purge of deletion vectors as REORG TABLE ... APPLY (PURGE).
		operation = "REORG"
		params = map[string]string{"predicate": params["predicate"], "applyPurge": "true"}
	}
	dvsRemoved := 0
	for _, it := range items {
		for _, a := range it.bin.adds {
			if a.DeletionVector != nil {
				dvsRemoved++
			}
		}
	}
	info := log.CommitInfo{
		Operation:           operation,
		OperationParameters: params,
		OperationMetrics: map[string]string{
			"numAddedFiles":             strconv.Itoa(len(added)),
			"numRemovedFiles":           strconv.Itoa(len(removed)),
			"numAddedBytes":             strconv.FormatInt(addedBytes, 10),
			"numRemovedBytes":           strconv.FormatInt(removedBytes, 10),
			"minFileSize":               q(0),
			"p25FileSize":               q(0.25),
			"p50FileSize":               q(0.5),
			"p75FileSize":               q(0.75),
			"maxFileSize":               q(1),
			"numBatches":                "1",
			"numDeletionVectorsRemoved": strconv.Itoa(dvsRemoved),
			"totalConsideredFiles":      strconv.Itoa(p.snap.NumFiles()),
		},
		IsolationLevel: log.SnapshotIsolation,
	}
	e.commitProgress(0)
	v, err := txn.Commit(ctx, info)
	if err != nil {
		return err
	}
	e.commitProgress(1)
	m.Versions = append(m.Versions, v)
	m.NumPartitions += len(parts)
	m.NumBins += len(items)
	m.NumAddedFiles += len(added)
	m.NumRemovedFiles += len(removed)
	m.NumAddedBytes += addedBytes
	m.NumRemovedBytes += removedBytes
	m.NumRows += rows
	m.addedSizes = append(m.addedSizes, added...)
	for _, r := range results {
		m.SpilledBytes += r.spilled
		switch {
		case r.bin.Kind == KindCluster:
		case r.copied:
			m.NumCopiedBins++
			m.NumCopiedBytes += r.bin.Bytes
		case r.merged:
			m.NumMergedBins++
			m.NumMergedBytes += r.bin.Bytes
		default:
			m.NumReencodedBins++
			m.NumReencodedBytes += r.bin.Bytes
			if m.ReencodeReasons == nil {
				m.ReencodeReasons = map[string]int{}
			}
			m.ReencodeReasons[r.reencoded]++
		}
	}
	return nil
}

// purgeOnly reports a batch of bins that each purge one file's deleted rows.
func purgeOnly(items []workItem) bool {
	for _, it := range items {
		if it.bin.Reason != ReasonPurge {
			return false
		}
	}
	return len(items) > 0
}

// metadataWithBloomColumns returns the snapshot's metadata with the table property
// skiplake.bloomFilter.columns set to BloomColumns (the property's columns followed
// by the new ones), set as any property change is (log.ApplyPropertyChange): only
// this key is validated and it is stored under its canonical spelling, replacing a
// differently cased one; the rest of the configuration is kept as it is.
func (p *Plan) metadataWithBloomColumns() (log.Protocol, log.Metadata, error) {
	proto, md, err := log.ApplyPropertyChange(p.snap.Protocol(), p.snap.Metadata(),
		log.PropertyChange{Set: map[string]string{log.PropBloomFilterColumns: strings.Join(p.BloomColumns, ",")}})
	if err != nil {
		return proto, md, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return proto, md, nil
}

// operationParameters records the run in commitInfo.operationParameters, in Delta
// Spark's vocabulary where it has a word (DeltaOperations.Optimize), with Spark's
// JSON types (log.CommitInfo.OperationParameters):
//
//   - predicate: the partition predicate, a string holding a JSON list ("[]" for none);
//   - zOrderBy: the Z-order columns, "[]" unless the run Z-ordered;
//   - clusterBy: the clustering columns of a liquid clustering run, else "[]";
//   - auto: true for an auto-compaction run (Options.Auto), a boolean.
//
// Spark has no word for the other layouts; skiplake records them beside those:
//
//   - hilbertBy, sortBy, workloadColumns: the columns of a Hilbert, linear
//     (lexicographic) or workload-tree run outside liquid clustering (Databricks'
//     liquid clustering orders by Hilbert too, and says so under clusterBy only);
//   - clusteringCurve: the curve that ordered the rows (zorder, hilbert, linear,
//     workload) whenever rows were reordered, liquid runs included;
//   - workloadTrees: the workload trees the files were laid out by;
//   - bloomFilterColumns: the columns the written files carry Bloom filters on.
func (p *Plan) operationParameters(trees []string) map[string]string {
	preds := []string{}
	if p.opts.Predicate != "" {
		preds = append(preds, p.opts.Predicate)
	}
	zorder, liquid := []string{}, []string{}
	params := map[string]string{"predicate": paramJSON(preds), "auto": strconv.FormatBool(p.opts.Auto)}
	switch {
	case p.Liquid:
		liquid = nonNil(p.ClusterBy)
	case p.Curve == CurveNone:
	case p.Curve == CurveZOrder:
		zorder = nonNil(p.ClusterBy)
	case p.Curve == CurveHilbert:
		params["hilbertBy"] = paramJSON(nonNil(p.ClusterBy))
	case p.Curve == CurveLinear:
		params["sortBy"] = paramJSON(nonNil(p.ClusterBy))
	case p.Curve == CurveWorkload:
		params["workloadColumns"] = paramJSON(nonNil(p.ClusterBy))
	}
	params["zOrderBy"], params["clusterBy"] = paramJSON(zorder), paramJSON(liquid)
	if p.Curve != CurveNone {
		params["clusteringCurve"] = jsonString(p.Curve.String())
	}
	if len(trees) > 0 {
		params["workloadTrees"] = paramJSON(trees)
	}
	if len(p.BloomColumns) > 0 {
		params["bloomFilterColumns"] = paramJSON(p.BloomColumns)
	}
	return params
}

// paramJSON is the text of an operation parameter Delta Spark records as a string
// holding v's JSON (predicate, zOrderBy, clusterBy).
func paramJSON(v any) string { return jsonString(jsonString(v)) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}
