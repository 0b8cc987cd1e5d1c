package benchskip

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/skiplake/skiplake/advise"
	"github.com/skiplake/skiplake/workload"
)

// AdviceCheck compares, for one workload, the layout advisor's pick (package
// advise: simulated on a sample, with training queries) with what the full
// data and the held-out queries say (advise's simulation run on every row, as
// the benchmark evaluates layouts: statistics of whole files, planned by
// package skipping).
type AdviceCheck struct {
	// Workload is the evaluated workload.
	Workload string `json:"workload"`
	// SampleRows is the advisor's sample size.
	SampleRows int `json:"sample_rows"`
	// Predicted is the advisor's best candidate and PredictedPct its predicted
	// % of files read.
	Predicted    string  `json:"predicted"`
	PredictedPct float64 `json:"predicted_pct"`
	// Best is the candidate reading the fewest files on the full data with the
	// held-out queries, BestPct that share.
	Best    string  `json:"best"`
	BestPct float64 `json:"best_pct"`
	// ActualPct is the predicted candidate's share on the full data; Excess is
	// ActualPct/BestPct - 1 (0: the advisor picked the best).
	ActualPct float64 `json:"actual_pct"`
	Excess    float64 `json:"excess"`
	// Candidates lists every candidate's predicted and actual share, best
	// actual first.
	Candidates []AdviceRow `json:"candidates"`
}

// AdviceRow is one candidate of an AdviceCheck.
type AdviceRow struct {
	Name         string  `json:"name"`
	PredictedPct float64 `json:"predicted_pct"`
	ActualPct    float64 `json:"actual_pct"`
}

// adviceKinds are the workloads the advisor is checked on (those with
// training queries of the same distribution).
func adviceKind(w Workload) bool { return w.Kind == WorkloadBox || w.Kind == WorkloadTemplate }

// checkAdvice runs the advisor check for every evaluated box or template
// workload.
func (p *prepared) checkAdvice(ctx context.Context, progress Progress) ([]AdviceCheck, error) {
	cfg := p.cfg
	fields := make([]arrow.Field, len(p.cl))
	cols := make([]arrow.Array, len(p.cl))
	for i, c := range p.cl {
		fields[i], cols[i] = c.field, c.arr
	}
	sch := arrow.NewSchema(fields, nil)
	all := array.NewRecordBatch(sch, cols, int64(p.d.rows))
	defer all.Release()
	n := p.d.rows
	size := min(cfg.AdviseSample, n)
	r := rand.New(rand.NewPCG(cfg.Seed, 0x61647673)) // "advs"
	idx := make([]int32, 0, size)
	for _, i := range r.Perm(n)[:size] {
		idx = append(idx, int32(i))
	}
	slices.Sort(idx)
	sample, err := p.d.gatherColumns(sch, p.cl, idx)
	if err != nil {
		return nil, err
	}
	defer sample.Release()
	var out []AdviceCheck
	for wi, name := range p.workloads {
		w, _ := ParseWorkload(name)
		if !adviceKind(w) {
			continue
		}
		progress("advice "+name, 0, 2)
		qs, note, err := p.genQueriesStream(w, name, cfg.TrainQueries, cfg.Seed, hashName("train:"+name))
		if err != nil {
			return nil, err
		}
		if note != "" {
			continue
		}
		train, err := toWorkload(qs)
		if err != nil {
			return nil, err
		}
		held, err := toWorkload(p.queries[wi])
		if err != nil {
			return nil, err
		}
		// Both runs consider the same candidates: every subset of the clustering
		// columns, in the configured order.
		opts := advise.Options{Files: cfg.Files, Seed: cfg.Seed, Columns: cfg.Columns}
		pred, err := advise.Simulate(ctx, sample, train, opts)
		if err != nil {
			return nil, errorf(ErrInternal, "advice %s (sample): %v", name, err)
		}
		progress("advice "+name, 1, 2)
		// The full run builds its workload trees from the training queries too and
		// scores every candidate on the held-out ones.
		fullOpts := opts
		fullOpts.Holdout = held
		full, err := advise.Simulate(ctx, all, train, fullOpts)
		if err != nil {
			return nil, errorf(ErrInternal, "advice %s (full): %v", name, err)
		}
		progress("advice "+name, 2, 2)
		actual := map[string]float64{}
		for _, c := range full.Candidates {
			actual[c.Name] = c.FilesReadPct
		}
		chk := AdviceCheck{Workload: name, SampleRows: size, Predicted: pred.Best.Name, PredictedPct: pred.Best.FilesReadPct,
			Best: full.Best.Name, BestPct: full.Best.FilesReadPct, ActualPct: actual[pred.Best.Name]}
		chk.Excess = chk.ActualPct/math.Max(chk.BestPct, 1e-9) - 1
		for _, c := range pred.Candidates {
			chk.Candidates = append(chk.Candidates, AdviceRow{Name: c.Name, PredictedPct: c.FilesReadPct, ActualPct: actual[c.Name]})
		}
		sort.SliceStable(chk.Candidates, func(i, j int) bool { return chk.Candidates[i].ActualPct < chk.Candidates[j].ActualPct })
		out = append(out, chk)
	}
	return out, nil
}

// toWorkload turns generated queries into a workload of weight-1 filters.
func toWorkload(qs []*query) (*workload.Workload, error) {
	w := &workload.Workload{}
	for _, q := range qs {
		wq, err := workload.NewQuery(q.text, 1)
		if err != nil {
			return nil, errorf(ErrInternal, "query %q: %v", q.text, err)
		}
		w.Queries = append(w.Queries, wq)
	}
	return w, nil
}

// writeAdvice writes the advice checks as text.
func writeAdvice(w io.Writer, checks []AdviceCheck) {
	for _, c := range checks {
		fmt.Fprintf(w, "advice %s: advisor (sample of %d rows, training queries) picks %s (predicted %.2f%%); full data, held-out queries: %s %.2f%%, best %s %.2f%% (excess %.1f%%)\n",
			c.Workload, c.SampleRows, c.Predicted, c.PredictedPct, c.Predicted, c.ActualPct, c.Best, c.BestPct, 100*c.Excess)
	}
}
