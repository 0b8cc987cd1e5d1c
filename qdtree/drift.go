package qdtree

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/rank"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// Drift compares a workload with the one a tree was built for. The read
// fractions are estimates from the tree alone (no data): a query is taken to
// read a leaf when its ranges meet the leaf's region (the cuts on the path to
// it), weighted by the leaf's sample rows. They overstate what file statistics
// skip (a region is wider than its rows' minimum and maximum) equally for both
// workloads, so their ratio is the figure to watch.
type Drift struct {
	// TrainingFingerprint and Fingerprint identify the two workloads; equal
	// fingerprints mean no drift.
	TrainingFingerprint string `json:"trainingFingerprint"`
	Fingerprint         string `json:"fingerprint"`
	// TrainingReadFraction and ReadFraction are the estimated weighted shares of
	// rows the training and the given workload read on the tree.
	TrainingReadFraction float64 `json:"trainingReadFraction"`
	ReadFraction         float64 `json:"readFraction"`
	// SeenWeight is the share of the given workload's weight on filters that the
	// training workload also has (same canonical text).
	SeenWeight float64 `json:"seenWeight"`
	// UncutColumns are columns the given workload filters on that the tree never
	// cuts, with the share of the workload's weight that uses them.
	UncutColumns []workload.ColumnUse `json:"uncutColumns,omitempty"`
}

// String summarises the drift in one line.
func (d *Drift) String() string {
	var b strings.Builder
	if d.Fingerprint == d.TrainingFingerprint {
		b.WriteString("workload unchanged since the tree was built")
	} else {
		fmt.Fprintf(&b, "workload drift: %.0f%% of its weight on filters the tree was built for; estimated read fraction %.3g vs %.3g when built",
			100*d.SeenWeight, d.ReadFraction, d.TrainingReadFraction)
	}
	for _, c := range d.UncutColumns {
		fmt.Fprintf(&b, "; %s (%.0f%% of the weight) is never cut", c.Column, 100*c.Weight)
	}
	return b.String()
}

// Drift estimates how w fares on t compared with t's training workload. schema
// binds both workloads' filters and the tree's cuts.
func (t *Tree) Drift(w *workload.Workload, schema *arrow.Schema) (*Drift, error) {
	if t.Workload == nil {
		return nil, fmt.Errorf("%w: the tree has no training workload", ErrInvalidOptions)
	}
	train := workload.New(t.Workload.Queries...)
	tb, err := train.Bind(schema)
	if err != nil {
		return nil, fmt.Errorf("qdtree: training workload: %w", err)
	}
	nb, err := w.Bind(schema)
	if err != nil {
		return nil, fmt.Errorf("qdtree: %w", err)
	}
	r, err := t.Router(schema)
	if err != nil {
		return nil, err
	}
	// One slot space for the cuts and both workloads' literals.
	sp := &space{names: append([]string(nil), t.Columns...)}
	lits := make([][]value.Value, len(t.Columns))
	for ci, p := range r.pts {
		for j := range p.Len() {
			lits[ci] = append(lits[ci], p.Value(j))
		}
	}
	colOf := func(bc *expr.BoundColumn) int { return sp.column(bc) }
	for _, bq := range append(append([]*expr.Bound(nil), tb...), nb...) {
		literals(bq.Root(), colOf, lits)
	}
	for ci, f := range r.fields {
		p, err := rank.NewPoints(f.Type, lits[ci])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSchema, err)
		}
		sp.types = append(sp.types, f.Type)
		sp.pts = append(sp.pts, p)
	}
	// Leaf regions in that space.
	type region struct {
		b    box
		rows float64
	}
	var leaves []region
	var walk func(id int, b box) error
	walk = func(id int, b box) error {
		nd := &t.Nodes[id]
		if nd.Leaf >= 0 {
			leaves = append(leaves, region{b, float64(nd.Rows)})
			return nil
		}
		c, err := bindCut(nd.Cut, nd.cut.col, schema)
		if err != nil {
			return fmt.Errorf("%w: node %d: %v", ErrSchema, id, err)
		}
		thr := uint32(1)
		if !c.isNull {
			s, err := sp.pts[c.col].Slot(c.val)
			if err != nil {
				return fmt.Errorf("%w: node %d: %v", ErrSchema, id, err)
			}
			thr = s
			if c.inclusive {
				thr++
			}
		}
		l, rr := append(box(nil), b...), append(box(nil), b...)
		l[c.col].hi = min(l[c.col].hi, thr-1)
		rr[c.col].lo = max(rr[c.col].lo, thr)
		if l[c.col].lo <= l[c.col].hi {
			if err := walk(nd.Left, l); err != nil {
				return err
			}
		} else if err := walk(nd.Left, b); err != nil { // empty region: keep it, it holds no sample rows of value
			return err
		}
		if rr[c.col].lo <= rr[c.col].hi {
			return walk(nd.Right, rr)
		}
		return walk(nd.Right, b)
	}
	if err := walk(0, sp.full()); err != nil {
		return nil, err
	}
	frac := func(bs []*expr.Bound, ws []workload.Query) float64 {
		var read, total, all float64
		for _, l := range leaves {
			all += l.rows
		}
		for i, bq := range bs {
			q := sp.toQuery(bq.Root(), ws[i].Weight)
			for _, l := range leaves {
				if q.mightMatch(l.b) {
					read += q.weight * l.rows
				}
			}
			total += q.weight * all
		}
		if total == 0 {
			return 0
		}
		return read / total
	}
	d := &Drift{
		TrainingFingerprint:  t.Workload.Fingerprint,
		Fingerprint:          w.Fingerprint(),
		TrainingReadFraction: frac(tb, train.Queries),
		ReadFraction:         frac(nb, w.Queries),
	}
	seen := map[string]bool{}
	for _, q := range train.Queries {
		seen[q.Filter] = true
	}
	tw := w.TotalWeight()
	for _, q := range w.Queries {
		if seen[q.Filter] {
			d.SeenWeight += q.Weight / tw
		}
	}
	cut := map[string]bool{}
	for i := range t.Nodes {
		if t.Nodes[i].Leaf < 0 {
			cut[strings.ToLower(t.Columns[t.Nodes[i].cut.col])] = true
		}
	}
	for _, cu := range w.Columns() {
		if !cut[strings.ToLower(cu.Column)] {
			cu.Weight /= tw
			d.UncutColumns = append(d.UncutColumns, cu)
		}
	}
	return d, nil
}
