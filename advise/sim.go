package advise

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/qdtree"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// sim is a sample with its workload, ready to score layouts: exact matching
// rows per query, and per filtered column the sample's distinct values as dense
// codes, from which each simulated file's statistics are built.
type sim struct {
	rec     arrow.RecordBatch
	n       int
	rows    int64              // rows of the table the sample stands for (n for Simulate)
	w       *workload.Workload // the scored workload
	train   *workload.Workload // the workload trees are built from (w unless held out)
	bound   []*expr.Bound
	totalW  float64
	matches []int64
	// statistics columns: those the filters read (top-level fields of rec)
	statCols []int
	codes    [][]int32           // [stat column][row]; -1 for NULL
	vals     [][]value.Value     // [stat column][code]
	quant    map[int]*quantCodes // chart columns, by field index
	// groups are the sample rows of each partition (one group when the table is
	// not partitioned); files are laid out per group, as OPTIMIZE does.
	groups [][]int32
}

// newSim binds the workload to the sample and counts matches.
func newSim(rec arrow.RecordBatch, w *workload.Workload, partCols []string) (*sim, error) {
	s := &sim{rec: rec, n: int(rec.NumRows()), rows: rec.NumRows(), w: w, train: w, totalW: w.TotalWeight()}
	var err error
	if s.bound, err = w.Bind(rec.Schema()); err != nil {
		return nil, fmt.Errorf("advise: %w", err)
	}
	used := map[int]bool{}
	for _, b := range s.bound {
		sel, err := b.Evaluate(rec)
		if err != nil {
			return nil, fmt.Errorf("advise: evaluating %s on the sample: %w", b, err)
		}
		s.matches = append(s.matches, int64(sel.Count()))
		for _, c := range b.Columns() {
			used[c.FieldIndices[0]] = true
		}
	}
	for _, p := range partCols {
		if i := fieldIndex(rec.Schema(), p); i >= 0 {
			used[i] = true
		}
	}
	for i := range int(rec.NumCols()) {
		if used[i] {
			s.statCols = append(s.statCols, i)
		}
	}
	sort.Ints(s.statCols)
	for _, c := range s.statCols {
		codes, vals, err := denseCodes(rec.Column(c))
		if err != nil {
			return nil, fmt.Errorf("advise: column %q: %w", rec.Schema().Field(c).Name, err)
		}
		s.codes = append(s.codes, codes)
		s.vals = append(s.vals, vals)
	}
	// Partition groups.
	if len(partCols) == 0 {
		all := make([]int32, s.n)
		for i := range all {
			all[i] = int32(i)
		}
		s.groups = [][]int32{all}
		return s, nil
	}
	idx := map[string]int{}
	for row := range s.n {
		var key strings.Builder
		for _, p := range partCols {
			v, err := value.FromArray(rec.Column(fieldIndex(rec.Schema(), p)), row)
			if err != nil {
				return nil, fmt.Errorf("advise: partition column %q: %w", p, err)
			}
			key.WriteString(v.Kind().String())
			key.WriteByte(0)
			key.WriteString(v.String())
			key.WriteByte(0)
		}
		g, ok := idx[key.String()]
		if !ok {
			g = len(s.groups)
			idx[key.String()] = g
			s.groups = append(s.groups, nil)
		}
		s.groups[g] = append(s.groups[g], int32(row))
	}
	return s, nil
}

func fieldIndex(sch *arrow.Schema, name string) int {
	if ix := sch.FieldIndices(name); len(ix) > 0 {
		return ix[0]
	}
	for i, f := range sch.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// denseCodes numbers the distinct non-null values of arr in order (NULL: -1)
// and returns the values by code.
func denseCodes(arr arrow.Array) ([]int32, []value.Value, error) {
	if keys, ok := wordKeys(arr); ok {
		return denseWordCodes(arr, keys)
	}
	n := arr.Len()
	vals := make([]value.Value, n)
	rows := make([]int32, 0, n)
	for i := range n {
		v, err := value.FromArray(arr, i)
		if err != nil {
			return nil, nil, err
		}
		vals[i] = v
		if !v.IsNull() {
			rows = append(rows, int32(i))
		}
	}
	slices.SortFunc(rows, func(a, b int32) int {
		c, _ := value.Compare(vals[a], vals[b])
		return c
	})
	codes := make([]int32, n)
	for i := range codes {
		codes[i] = -1
	}
	var distinct []value.Value
	for i, r := range rows {
		if i == 0 {
			distinct = append(distinct, vals[r])
		} else if c, _ := value.Compare(vals[rows[i-1]], vals[r]); c != 0 {
			distinct = append(distinct, vals[r])
		}
		codes[r] = int32(len(distinct) - 1)
	}
	return codes, distinct, nil
}

// wordKeys returns an order-preserving uint64 per row for integer, date,
// timestamp, small decimal and float columns (floats in Spark order: -0 = 0,
// NaN greatest), ok false for other types.
func wordKeys(arr arrow.Array) ([]uint64, bool) {
	n := arr.Len()
	out := make([]uint64, n)
	const sign = uint64(1) << 63
	switch a := arr.(type) {
	case *array.Int64:
		for i, v := range a.Int64Values() {
			out[i] = uint64(v) ^ sign
		}
	case *array.Int32:
		for i, v := range a.Int32Values() {
			out[i] = uint64(int64(v)) ^ sign
		}
	case *array.Date32:
		for i, v := range a.Date32Values() {
			out[i] = uint64(int64(v)) ^ sign
		}
	case *array.Timestamp:
		for i, v := range a.TimestampValues() {
			out[i] = uint64(int64(v)) ^ sign
		}
	case *array.Decimal128:
		for i, v := range a.Values() {
			if !v.FitsInPrecision(18) {
				return nil, false
			}
			out[i] = uint64(int64(v.LowBits())) ^ sign
		}
	case *array.Float64:
		for i, f := range a.Float64Values() {
			switch {
			case f != f:
				out[i] = math.MaxUint64
			case f == 0:
				out[i] = sign
			case math.Signbit(f):
				out[i] = ^math.Float64bits(f)
			default:
				out[i] = math.Float64bits(f) | sign
			}
		}
	default:
		return nil, false
	}
	return out, true
}

// denseWordCodes is denseCodes for columns with word keys.
func denseWordCodes(arr arrow.Array, keys []uint64) ([]int32, []value.Value, error) {
	n := arr.Len()
	type kr struct {
		k uint64
		r int32
	}
	pairs := make([]kr, 0, n)
	codes := make([]int32, n)
	for i := range n {
		codes[i] = -1
		if !arr.IsNull(i) {
			pairs = append(pairs, kr{keys[i], int32(i)})
		}
	}
	slices.SortFunc(pairs, func(a, b kr) int { return cmp.Compare(a.k, b.k) })
	var distinct []value.Value
	for i, p := range pairs {
		if i == 0 || pairs[i-1].k != p.k {
			v, err := value.FromArray(arr, int(p.r))
			if err != nil {
				return nil, nil, err
			}
			distinct = append(distinct, v)
		}
		codes[p.r] = int32(len(distinct) - 1)
	}
	return codes, distinct, nil
}

// layout is a candidate's assignment of sample rows to files.
type layout struct {
	file   []int32 // per sample row
	nfiles int
}

// score is one layout's figures on the workload.
type score struct {
	filesRead    float64 // weighted mean
	lowerBound   float64 // weighted mean
	ratioGeoMean float64 // weighted
	ratioP90     float64
	bytesRead    float64 // weighted mean share of rows read (rows stand in for bytes)
}

// score evaluates every query against the layout's simulated file statistics
// with package skipping, exactly as a scan plans files.
func (s *sim) score(l layout) (score, error) {
	qs, err := s.scoreEach(l, nil)
	if err != nil {
		return score{}, err
	}
	return aggregate(qs), nil
}

// queryScore is one query's outcome on a layout.
type queryScore struct {
	w, read, lb, readShare float64
}

// scoreEach scores the queries qs (nil: all) on l and returns each one's
// outcome.
func (s *sim) scoreEach(l layout, qs []int) ([]queryScore, error) {
	rows := make([]int64, l.nfiles)
	for _, f := range l.file {
		rows[f]++
	}
	files := make([]*stats.File, l.nfiles)
	for f := range files {
		files[f] = &stats.File{NumRecords: rows[f], TightBounds: true, Columns: map[string]*stats.Column{}}
	}
	for si, c := range s.statCols {
		name := s.rec.Schema().Field(c).Name
		lo := make([]int32, l.nfiles)
		hi := make([]int32, l.nfiles)
		nulls := make([]int64, l.nfiles)
		for f := range lo {
			lo[f], hi[f] = math.MaxInt32, -1
		}
		for row, code := range s.codes[si] {
			f := l.file[row]
			if code < 0 {
				nulls[f]++
				continue
			}
			lo[f], hi[f] = min(lo[f], code), max(hi[f], code)
		}
		for f := range files {
			col := &stats.Column{NullCount: nulls[f], HasNullCount: true}
			if hi[f] >= 0 {
				col.Min, col.Max = s.vals[si][lo[f]], s.vals[si][hi[f]]
			}
			files[f].Columns[stats.Key(name)] = col
		}
	}
	fi := skipping.NewFileIndex(files, s.rec.Schema())
	verdicts := make([]skipping.Verdict, fi.Len())
	// The bound uses this layout's largest file, so it is a true bound for it
	// (a workload tree's files vary within its tolerance).
	var maxRows int64 = 1
	for _, r := range rows {
		maxRows = max(maxRows, r)
	}
	if qs == nil {
		qs = make([]int, len(s.bound))
		for i := range qs {
			qs[i] = i
		}
	}
	out := make([]queryScore, 0, len(qs))
	for _, qi := range qs {
		b := s.bound[qi]
		if err := fi.Evaluate(b, verdicts); err != nil {
			return nil, fmt.Errorf("advise: planning %s: %w", b, err)
		}
		read, readRows := 0, int64(0)
		for f, v := range verdicts {
			if v != skipping.CannotMatch && rows[f] > 0 {
				read++
				readRows += rows[f]
			}
		}
		lb := (s.matches[qi] + maxRows - 1) / maxRows
		out = append(out, queryScore{w: s.w.Queries[qi].Weight, read: float64(read), lb: float64(lb),
			readShare: float64(readRows) / float64(max(s.n, 1))})
	}
	return out, nil
}

// aggregate turns per-query outcomes into a layout's weighted figures.
func aggregate(qs []queryScore) score {
	var sc score
	var total, logSum float64
	ratios := make([]weighted, 0, len(qs))
	for _, q := range qs {
		r := ratioOf(q.read, q.lb)
		total += q.w
		sc.filesRead += q.w * q.read
		sc.lowerBound += q.w * q.lb
		sc.bytesRead += q.w * q.readShare
		logSum += q.w * math.Log(r)
		ratios = append(ratios, weighted{q.w, r})
	}
	if total == 0 {
		return sc
	}
	sc.filesRead /= total
	sc.lowerBound /= total
	sc.bytesRead /= total
	sc.ratioGeoMean = math.Exp(logSum / total)
	sc.ratioP90 = weightedP90(ratios, total)
	return sc
}

// weighted is a query's ratio and weight.
type weighted struct{ w, r float64 }

// weightedP90 returns the smallest ratio at or above which lies at least 10%
// of the weight (the weighted 90th percentile).
func weightedP90(rs []weighted, total float64) float64 {
	slices.SortFunc(rs, func(a, b weighted) int { return cmp.Compare(a.r, b.r) })
	var acc float64
	for _, x := range rs {
		acc += x.w
		if acc >= 0.9*total*(1-1e-12) {
			return x.r
		}
	}
	if len(rs) > 0 {
		return rs[len(rs)-1].r
	}
	return 0
}

// filesPerGroup splits nfiles over the partition groups in proportion to their
// rows (at least one each).
func (s *sim) filesPerGroup(nfiles int) []int {
	out := make([]int, len(s.groups))
	for g, rows := range s.groups {
		out[g] = max(1, int(math.Round(float64(nfiles)*float64(len(rows))/float64(max(s.n, 1)))))
	}
	return out
}

// groupColumns returns the named columns of rows of the sample (the whole
// columns for a single group). The caller releases the arrays.
func (s *sim) groupColumns(ctx context.Context, rows []int32, cols []int) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(cols))
	if len(rows) == s.n {
		for i, c := range cols {
			out[i] = s.rec.Column(c)
			out[i].Retain()
		}
		return out, nil
	}
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	ib.AppendValues(rows, nil)
	idx := ib.NewArray()
	ib.Release()
	defer idx.Release()
	for i, c := range cols {
		a, err := compute.TakeArray(ctx, s.rec.Column(c), idx)
		if err != nil {
			for _, x := range out[:i] {
				x.Release()
			}
			return nil, fmt.Errorf("advise: %w", err)
		}
		out[i] = a
	}
	return out, nil
}

// curveLayout lays each group out as OPTIMIZE clusters it: keys from
// optimize.ClusterKeys, rows sorted by key, cut into equal parts moved forward
// past equal keys.
func (s *sim) curveLayout(ctx context.Context, curve optimize.Curve, cols []int, nfiles int) (layout, error) {
	l := layout{file: make([]int32, s.n)}
	for g, f := range s.filesPerGroup(nfiles) {
		rows := s.groups[g]
		arrs, err := s.groupColumns(ctx, rows, cols)
		if err != nil {
			return l, err
		}
		keys, err := optimize.ClusterKeys(curve, arrs)
		for _, a := range arrs {
			a.Release()
		}
		if err != nil {
			return l, fmt.Errorf("advise: %w", err)
		}
		ord := make([]int, len(rows))
		for i := range ord {
			ord[i] = i
		}
		slices.SortFunc(ord, func(a, b int) int {
			if c := cmp.Compare(keys[a], keys[b]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		// Cuts as optimize places them: at equal row counts, each moved forward
		// past rows of equal key, a cut at or before the previous one dropped.
		cuts := []int{0}
		for k := 1; k < f; k++ {
			c := len(ord) * k / f
			if c <= cuts[len(cuts)-1] {
				continue
			}
			for c < len(ord) && keys[ord[c]] == keys[ord[c-1]] {
				c++
			}
			if c >= len(ord) {
				break
			}
			cuts = append(cuts, c)
		}
		cuts = append(cuts, len(ord))
		for k := 0; k+1 < len(cuts); k++ {
			for _, i := range ord[cuts[k]:cuts[k+1]] {
				l.file[rows[i]] = int32(l.nfiles + k)
			}
		}
		l.nfiles += len(cuts) - 1
	}
	return l, nil
}

// treeLayout builds a workload tree per group and routes the group's rows; a
// leaf of several units is cut into that many files in row order.
func (s *sim) treeLayout(ctx context.Context, cols []string, robustness float64, nfiles int, seed uint64) (layout, *qdtree.Tree, error) {
	l := layout{file: make([]int32, s.n)}
	var first *qdtree.Tree
	for g, f := range s.filesPerGroup(nfiles) {
		rows := s.groups[g]
		all := make([]int, s.rec.NumCols())
		for i := range all {
			all[i] = i
		}
		arrs, err := s.groupColumns(ctx, rows, all)
		if err != nil {
			return l, nil, err
		}
		rec := array.NewRecordBatch(s.rec.Schema(), arrs, int64(len(rows)))
		for _, a := range arrs {
			a.Release()
		}
		// The tree is built on at most treeSampleRows(f) of the group's rows (as
		// OPTIMIZE builds it on a sample of a bin) and routes them all.
		build := rec
		if limit := treeSampleRows(f); len(rows) > limit {
			idx := make([]int32, limit)
			for i := range idx {
				idx[i] = int32(int64(i) * int64(len(rows)) / int64(limit))
			}
			sub := make([]int32, limit)
			for i, k := range idx {
				sub[i] = rows[k]
			}
			sarrs, err := s.groupColumns(ctx, sub, all)
			if err != nil {
				rec.Release()
				return l, nil, err
			}
			build = array.NewRecordBatch(s.rec.Schema(), sarrs, int64(limit))
			for _, a := range sarrs {
				a.Release()
			}
			defer build.Release()
		}
		tr, err := qdtree.Build(ctx, build, s.train, qdtree.Options{Leaves: f, Columns: cols, Robustness: robustness, Seed: seed})
		if err == nil && first == nil {
			first = tr
		}
		var leaves []int32
		if err == nil {
			var r *qdtree.Router
			if r, err = tr.Router(rec.Schema()); err == nil {
				leaves = make([]int32, len(rows))
				err = r.Route(rec, leaves)
			}
		}
		rec.Release()
		if err != nil {
			return l, nil, fmt.Errorf("advise: %w", err)
		}
		// Leaf ordinal -> first file; leaves of several units get consecutive files.
		firstFile := make([]int, tr.Leaves+1)
		units := make([]int, tr.Leaves)
		for _, nd := range tr.Nodes {
			if nd.Leaf >= 0 {
				units[nd.Leaf] = nd.Units
			}
		}
		for i, u := range units {
			firstFile[i+1] = firstFile[i] + u
		}
		seen := make([]int, tr.Leaves)
		count := make([]int, tr.Leaves)
		for _, lf := range leaves {
			count[lf]++
		}
		for i, lf := range leaves {
			u := units[lf]
			part := seen[lf] * u / max(count[lf], 1)
			seen[lf]++
			l.file[rows[i]] = int32(l.nfiles + firstFile[lf] + part)
		}
		l.nfiles += firstFile[tr.Leaves]
	}
	return l, first, nil
}

// fileBoxes returns each file's bounding box on columns x and y of the sample
// in quantile space: [x0, x1, y0, y1], the shares of rows below the file's
// smallest value and up to its largest. Files without non-null values on both
// get no box.
func (s *sim) fileBoxes(l layout, x, y int) ([][4]float64, error) {
	if s.quant == nil {
		s.quant = map[int]*quantCodes{}
	}
	qc := func(col int) (*quantCodes, error) {
		if q, ok := s.quant[col]; ok {
			return q, nil
		}
		codes, vals, err := denseCodes(s.rec.Column(col))
		if err != nil {
			return nil, err
		}
		cum := make([]int64, len(vals)+1)
		for _, c := range codes {
			if c >= 0 {
				cum[c+1]++
			}
		}
		for i := 1; i < len(cum); i++ {
			cum[i] += cum[i-1]
		}
		q := &quantCodes{codes: codes, cum: cum}
		s.quant[col] = q
		return q, nil
	}
	qx, err := qc(x)
	if err != nil {
		return nil, err
	}
	qy, err := qc(y)
	if err != nil {
		return nil, err
	}
	type mm struct{ x0, x1, y0, y1 int32 }
	b := make([]mm, l.nfiles)
	for i := range b {
		b[i] = mm{math.MaxInt32, -1, math.MaxInt32, -1}
	}
	for row, f := range l.file {
		cx, cy := qx.codes[row], qy.codes[row]
		if cx < 0 || cy < 0 {
			continue
		}
		m := &b[f]
		m.x0, m.x1, m.y0, m.y1 = min(m.x0, cx), max(m.x1, cx), min(m.y0, cy), max(m.y1, cy)
	}
	nx, ny := float64(max(qx.cum[len(qx.cum)-1], 1)), float64(max(qy.cum[len(qy.cum)-1], 1))
	var out [][4]float64
	for _, m := range b {
		if m.x1 < 0 {
			continue
		}
		out = append(out, [4]float64{float64(qx.cum[m.x0]) / nx, float64(qx.cum[m.x1+1]) / nx, float64(qy.cum[m.y0]) / ny, float64(qy.cum[m.y1+1]) / ny})
	}
	return out, nil
}

// quantCodes are a column's dense codes and the rows below each code.
type quantCodes struct {
	codes []int32
	cum   []int64
}

// treeSampleRows is the most rows a workload tree of leaves leaves is built
// on: TreeSampleRowsPerLeaf per leaf, at least MinTreeSample.
func treeSampleRows(leaves int) int {
	return max(TreeSampleRowsPerLeaf*leaves, MinTreeSample)
}

// crossValidate builds a tree on the even-numbered queries and scores the
// odd-numbered ones on it, and the other way round, returning every query's
// outcome on the tree that did not see it.
func (s *sim) crossValidate(ctx context.Context, cols []string, robustness float64, nfiles int, seed uint64) ([]queryScore, error) {
	var out []queryScore
	for fold := range 2 {
		var build, held []int
		for qi := range s.w.Queries {
			if qi%2 == fold {
				build = append(build, qi)
			} else {
				held = append(held, qi)
			}
		}
		sub := &workload.Workload{}
		for _, qi := range build {
			sub.Queries = append(sub.Queries, s.train.Queries[qi])
		}
		saved := s.train
		s.train = sub
		l, _, err := s.treeLayout(ctx, cols, robustness, nfiles, seed)
		s.train = saved
		if err != nil {
			return nil, err
		}
		qs, err := s.scoreEach(l, held)
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	return out, nil
}
