package table

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/skiplake/skiplake/internal/health"
	"github.com/skiplake/skiplake/log"

	"github.com/skiplake/skiplake/optimize"
)

// Maintain's rewrite under a budget.
//
// The plan's bins run one after the other, each committed on its own, so that the
// work done before a budget runs out stays done. A bin larger than what is left of
// the budget is cut (optimize.Plan.SplitBin) into a piece that fits, oldest data
// first; the rest waits for the next run. Compaction bins cut without loss; a
// clustering bin's pieces become cubes of their own, which incremental clustering
// merges later when a run can afford it; a workload-layout bin is never cut. So a
// table whose due work is W bytes converges in about ceil(W/B) runs of budget B
// (TestMaintainBudgetConverges), and every version in between reads the same rows.
//
// A duration budget is turned into bytes by the rate measured on the pieces this
// run committed: the next piece gets rate × time left × pieceMargin. Before any
// piece has finished, the first one is the whole bin; once it has done a tenth of
// its bytes or spent a twentieth of the budget, its progress predicts when it would
// finish, and a piece predicted to end after the deadline is stopped then and cut
// to what the measured rate allows (at most maxRecuts times a run). The deadline itself still cancels a piece in flight (its files are
// deleted, nothing of it commits).
//
// Work that no run with this budget could ever do — a bin whose smallest piece is
// larger than the whole budget (MinPieceBytes) — is reported "beyond-budget" with
// the budget it needs, and does not count as work remaining: a run that did all it
// could is healthy within its budget, and the exit status tells a scheduler to
// raise the budget only through the report.

// pieceMargin is the share of the time left that a piece sized by the measured rate
// may fill: pieces do not all go at the same rate (clustering sorts, the last file
// of a bin is small).
const pieceMargin = 0.8

// judgeAfter: a piece is judged once it has spent 1/judgeAfter of the duration
// budget (or done a tenth of its bytes), so that finding out that the first piece
// of a run is too big costs at most that much of the run.
const judgeAfter = 20

// maxRecuts bounds how often a run stops a piece that would overrun the deadline
// and cuts it smaller.
const maxRecuts = 3

// errPieceTooBig stops a piece whose progress says it would end after the deadline.
var errPieceTooBig = errors.New("the piece would not finish within the MaxDuration budget")

// StatusBeyondBudget: due, but no piece of the work fits the whole budget (Reason
// says the budget it needs); not counted as work remaining.
const StatusBeyondBudget = "beyond-budget"

// MaintainCommit is one commit Maintain's rewrite made.
type MaintainCommit struct {
	// Version is the committed table version; Task the task it belongs to.
	Version int64  `json:"version"`
	Task    string `json:"task"`
	// Bin is the plan's bin number (optimize.Bin.Index) the commit rewrote all or
	// a piece of; Piece is true when it was a piece cut to fit the budget.
	Bin   int  `json:"bin"`
	Piece bool `json:"piece,omitempty"`
	// Files and Bytes are the files it removed (rewrote); AddedFiles and
	// AddedBytes those it added.
	Files      int   `json:"files"`
	Bytes      int64 `json:"bytes"`
	AddedFiles int   `json:"addedFiles"`
	AddedBytes int64 `json:"addedBytes"`
}

// rewriteTaskOf names the maintenance task a bin belongs to.
// (Bloom backfill is no bin kind: every rewritten file gets the filters, and the
// bloom-backfill task counts the files that lacked them, whichever bin they are in.)
func rewriteTaskOf(b *optimize.Bin) string {
	switch {
	case b.Reason == optimize.ReasonPurge:
		return TaskPurge
	case b.Kind == optimize.KindCluster:
		return TaskCluster
	}
	return TaskCompact
}

// rewriteTasks are the tasks of the rewrite, in report order.
var rewriteTasks = []string{TaskCompact, TaskCluster, TaskPurge, TaskBloomBackfill}

// taskWork accumulates one rewrite task's outcome.
type taskWork struct {
	task                MaintainTask
	plannedFiles        int
	plannedBytes        int64
	deferredFiles       int   // left for a later run with the same budget
	deferredBytes       int64 //
	beyondFiles         int   // left because no piece fits the whole budget
	beyondBytes         int64 //
	needs               int64 // the largest smallest-piece among them
	deferredWhy, failed string
}

// pieceWatch is the piece in flight, for the progress callback.
type pieceWatch struct {
	start      time.Time
	stop       context.CancelCauseFunc
	splittable bool
	// measured by the callback when it stops a piece as too big
	doneBytes int64
	elapsed   time.Duration
	// progress of the piece, for the run's own report
	bytes, files int64
	// endsBin: the piece is the whole bin or its last piece, so its bin is done
	// once the piece's files are written.
	endsBin bool
}

// rewriteBudget is what is left of the budgets, and the rate measured so far.
type rewriteBudget struct {
	m         *maintenance
	bytesLeft int64 // math.MaxInt64: no byte budget
	rateBytes int64 // bytes done by the pieces measured...
	rateTime  time.Duration
}

func (b *rewriteBudget) rate() float64 {
	if b.rateTime <= 0 || b.rateBytes <= 0 {
		return 0
	}
	return float64(b.rateBytes) / b.rateTime.Seconds()
}

// limit is the input a piece may have now.
func (b *rewriteBudget) limit() int64 {
	lim := b.bytesLeft
	if d := b.m.opts.MaxDuration; d > 0 {
		if r := b.rate(); r > 0 {
			left := d - b.m.clock().Sub(b.m.start)
			lim = min(lim, int64(r*max(left.Seconds(), 0)*pieceMargin))
		}
	}
	return lim
}

// capacity is what a whole run's budget could rewrite (math.MaxInt64: unknown or
// unbounded).
func (b *rewriteBudget) capacity() int64 {
	c := int64(math.MaxInt64)
	if b.m.opts.MaxBytes > 0 {
		c = b.m.opts.MaxBytes
	}
	if d := b.m.opts.MaxDuration; d > 0 {
		if r := b.rate(); r > 0 {
			c = min(c, int64(r*d.Seconds()*pieceMargin))
		}
	}
	return c
}

// rewrite runs the OPTIMIZE plan bin by bin within the budgets and reports it as the
// compact, cluster, purge and bloom-backfill tasks. It reports whether it failed.
func (m *maintenance) rewrite(ctx context.Context, plan *optimize.Plan) bool {
	work := map[string]*taskWork{}
	for _, name := range rewriteTasks {
		work[name] = &taskWork{task: MaintainTask{Task: name}}
	}
	if plan.Curve == optimize.CurveNone {
		work[TaskCluster].task.Reason = "the table has no clustering columns"
	}
	if len(plan.BloomColumns) == 0 {
		work[TaskBloomBackfill].task.Reason = "the table has no Bloom filter columns"
	}
	work[TaskPurge].task.Reason = fmt.Sprintf("no file has more than %g%% of its rows deleted (%s)",
		100*m.rep.Found.MaxDeletedRowsRatio, log.PropMaxDeletedRowsRatio)
	bins := plan.Bins()
	bloom := work[TaskBloomBackfill]
	for _, b := range bins {
		w := work[rewriteTaskOf(b)]
		w.plannedFiles += len(b.Files)
		w.plannedBytes += b.Bytes
		n, bytes := plan.LackingBloom(b)
		bloom.plannedFiles += n
		bloom.plannedBytes += bytes
	}
	m.runFiles, m.runBytes, m.binsTotal = int64(plan.NumFiles), plan.NumBytes, int64(len(bins))
	bud := &rewriteBudget{m: m, bytesLeft: math.MaxInt64}
	if m.opts.MaxBytes > 0 {
		bud.bytesLeft = m.opts.MaxBytes
		m.runBytes = min(m.runBytes, m.opts.MaxBytes)
	}
	leave := func(b *optimize.Bin, why string) {
		n, bytes := plan.LackingBloom(b)
		need := plan.MinPieceBytes(b)
		for _, w := range []*taskWork{work[rewriteTaskOf(b)], bloom} {
			files, size := len(b.Files), b.Bytes
			if w == bloom {
				files, size = n, bytes
			}
			if files == 0 {
				continue
			}
			if need > bud.capacity() {
				w.beyondFiles += files
				w.beyondBytes += size
				w.needs = max(w.needs, need)
				continue
			}
			w.deferredFiles += files
			w.deferredBytes += size
			if w.deferredWhy == "" {
				w.deferredWhy = why
			}
		}
	}
	stopped := "" // why the rest of the plan is left
	failed := false
	recuts := 0
	for i, b := range bins {
		if stopped != "" {
			leave(b, stopped)
			continue
		}
		for b != nil {
			if !m.opts.DryRun && m.expired() {
				stopped = "the MaxDuration budget (CLI --max-duration) is spent"
				leave(b, stopped)
				break
			}
			lim := bud.limit()
			why := "the MaxBytes budget (CLI --max-bytes) is spent"
			if lim < bud.bytesLeft {
				why = "the time left in the MaxDuration budget (CLI --max-duration) is too short for it"
			}
			// A bin is cut only when no run could rewrite it whole, and then into
			// pieces of most of a budget: a bin that a whole budget holds waits for
			// the next run (cutting it would leave a small file or cube for a later
			// run to rewrite again).
			if capa := bud.capacity(); b.Bytes > lim && (b.Bytes <= capa || lim < capa/2) {
				leave(b, why)
				break
			}
			piece, rest := plan.SplitBin(b, lim)
			if piece == nil {
				leave(b, why)
				break
			}
			if m.opts.DryRun {
				w := work[rewriteTaskOf(b)]
				w.task.Files += len(piece.Files)
				w.task.Bytes += piece.Bytes
				n, bytes := plan.LackingBloom(piece)
				bloom.task.Files += n
				bloom.task.Bytes += bytes
				bud.bytesLeft -= piece.Bytes
				b = rest
				continue
			}
			met, outcome, err := m.runPiece(ctx, plan, piece, rest == nil, bud)
			if m.record(work[rewriteTaskOf(b)], piece, piece != bins[i], met) {
				if n, bytes := plan.LackingBloom(piece); n > 0 {
					bloom.task.Files += n
					bloom.task.Bytes += bytes
					bloom.task.Versions = append(bloom.task.Versions, met.Versions...)
				}
			}
			switch outcome {
			case pieceCommitted:
				bud.bytesLeft -= piece.Bytes
				b = rest
				if rest == nil {
					m.binsDone++
				}
			case pieceTooBig:
				recuts++
				if recuts > maxRecuts {
					stopped = "the MaxDuration budget (CLI --max-duration) leaves too little time for the next piece"
					leave(b, stopped)
					b = nil
				}
			case pieceOutOfTime:
				stopped = "the MaxDuration budget (CLI --max-duration) ran out during the rewrite; the piece in flight was cancelled and its files deleted"
				leave(b, stopped)
				b = nil
			default:
				work[rewriteTaskOf(b)].failed = err.Error()
				stopped, failed = "an earlier piece of the rewrite failed", true
				leave(b, stopped)
				b = nil
			}
		}
	}
	for _, name := range rewriteTasks {
		m.add(work[name].finish(m.opts.DryRun))
	}
	return failed
}

// record adds what a piece committed to its task and the report, and reports
// whether it committed.
func (m *maintenance) record(w *taskWork, piece *optimize.Bin, cut bool, met *optimize.Metrics) bool {
	if met == nil || len(met.Versions) == 0 {
		return false
	}
	w.task.Versions = append(w.task.Versions, met.Versions...)
	w.task.Files += met.NumRemovedFiles
	w.task.Bytes += met.NumRemovedBytes
	m.doneFiles += int64(met.NumRemovedFiles)
	m.doneBytes += met.NumRemovedBytes
	for i, v := range met.Versions {
		c := MaintainCommit{Version: v, Task: w.task.Task, Bin: piece.Index, Piece: cut}
		if i == len(met.Versions)-1 {
			// One bin is one commit; a retried bin commits once too, so all the
			// counts belong to the last version.
			c.Files, c.Bytes, c.AddedFiles, c.AddedBytes = met.NumRemovedFiles, met.NumRemovedBytes, met.NumAddedFiles, met.NumAddedBytes
		}
		m.rep.Commits = append(m.rep.Commits, c)
	}
	return true
}

// finish turns the accumulated outcome into the task's report.
func (w *taskWork) finish(dry bool) MaintainTask {
	t := w.task
	t.LeftFiles = w.deferredFiles + w.beyondFiles
	t.LeftBytes = w.deferredBytes + w.beyondBytes
	t.NeedsBytes = w.needs
	did := t.Files > 0
	var why []string
	switch {
	case w.failed != "":
		t.Status, t.Error = StatusFailed, w.failed
	case w.plannedFiles == 0:
		t.Status = StatusNotNeeded
	case dry:
		t.Status = StatusPlanned
		why = append(why, "dry run")
		if w.deferredFiles > 0 {
			why = append(why, "this budget leaves the rest for later runs")
		}
	case w.deferredFiles > 0 && did:
		t.Status = StatusPartial
	case w.deferredFiles > 0:
		t.Status = StatusSkipped
	case w.beyondFiles > 0 && !did:
		t.Status = StatusBeyondBudget
	default:
		t.Status = StatusDone
	}
	if w.deferredFiles > 0 && w.deferredWhy != "" && !dry {
		why = append(why, w.deferredWhy)
	}
	if w.beyondFiles > 0 {
		why = append(why, fmt.Sprintf("%d files (%s) need a budget of at least %s: no piece of their rewrite fits this one",
			w.beyondFiles, health.FormatBytes(w.beyondBytes), health.FormatBytes(w.needs)))
	}
	if len(why) > 0 {
		t.Reason = strings.Join(why, "; ")
	}
	return t
}

type pieceOutcome int

const (
	pieceCommitted pieceOutcome = iota
	pieceTooBig
	pieceOutOfTime
	pieceFailed
)

// runPiece executes one piece as a plan of its own and commits it.
func (m *maintenance) runPiece(ctx context.Context, plan *optimize.Plan, piece *optimize.Bin, endsBin bool, bud *rewriteBudget) (*optimize.Metrics, pieceOutcome, error) {
	sub, err := plan.Select([]*optimize.Bin{piece})
	if err != nil {
		return nil, pieceFailed, err
	}
	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if d := m.opts.MaxDuration; d > 0 && m.opts.budgetClock == nil {
		// The wall clock ends the piece at the deadline even between progress
		// reports. (A test's clock moves only when the test says.)
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeoutCause(pctx, d-m.clock().Sub(m.start), errBudgetSpent)
		defer cancel()
	}
	w := &pieceWatch{start: m.clock(), stop: stop, splittable: plan.Splittable(piece) && m.opts.MaxDuration > 0, endsBin: endsBin}
	m.piece = w
	met, err := optimize.Execute(pctx, sub)
	m.piece = nil
	elapsed := m.clock().Sub(w.start)
	switch cause := context.Cause(pctx); {
	case err == nil:
		if n := met.NumRemovedBytes; n > 0 && elapsed > 0 {
			bud.rateBytes += n
			bud.rateTime += elapsed
		}
		return met, pieceCommitted, nil
	case ctx.Err() != nil:
		return met, pieceFailed, err
	case errors.Is(cause, errPieceTooBig):
		if w.doneBytes > 0 && w.elapsed > 0 {
			bud.rateBytes += w.doneBytes
			bud.rateTime += w.elapsed
		}
		return met, pieceTooBig, err
	case errors.Is(cause, errBudgetSpent):
		return met, pieceOutOfTime, err
	}
	return met, pieceFailed, err
}

// onProgress receives OPTIMIZE's reports for the piece in flight: it enforces the
// duration budget and passes the run's progress on.
func (m *maintenance) onProgress(p optimize.Progress) {
	w := m.piece
	if w == nil {
		return
	}
	if p.Unit == "bytes" {
		w.bytes = p.Done
	}
	w.files = p.FilesDone
	// The caller hears of the work first: a report says work is done, and the budget
	// is judged on the clock after it (a caller's clock may move with the reports).
	if user := m.opts.Progress; user != nil {
		bins := m.binsDone
		if w.endsBin {
			bins += p.BinsDone
		}
		q := Progress{Phase: p.Phase, Done: p.Done, Total: p.Total, Unit: p.Unit,
			BinsDone: bins, BinsTotal: m.binsTotal, FilesDone: m.doneFiles + p.FilesDone, FilesTotal: m.runFiles}
		if p.Unit == "bytes" {
			q.Done, q.Total = m.doneBytes+p.Done, max(m.runBytes, m.doneBytes+p.Done)
		}
		user(q)
	}
	// The budget is checked at every report of work (reports come one at a time),
	// not at a batch's commit reports: a piece whose work is done gets its commit.
	if m.opts.MaxDuration > 0 && p.Phase != "commit" {
		now := m.clock()
		deadline := m.start.Add(m.opts.MaxDuration)
		switch {
		case !now.Before(deadline):
			w.stop(errBudgetSpent)
		case w.splittable && p.Unit == "bytes" && p.Total > 0 && p.Done > 0 &&
			(p.Done*10 >= p.Total || now.Sub(w.start)*judgeAfter >= m.opts.MaxDuration):
			// A tenth of the piece done, or a twentieth of the budget spent on it:
			// predict its end from the rate so far.
			el := now.Sub(w.start)
			if el > 0 && w.start.Add(time.Duration(float64(el)*float64(p.Total)/float64(p.Done))).After(deadline) {
				w.doneBytes, w.elapsed = p.Done, el
				w.stop(errPieceTooBig)
			}
		}
	}
}
