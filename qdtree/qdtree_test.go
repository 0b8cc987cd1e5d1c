package qdtree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

var mixedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// mixedRows makes n rows with NULLs, heavy duplicates, strings with a shared
// prefix, decimals and floats with NaN.
func mixedRows(n int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 9))
	mem := memory.DefaultAllocator
	id := array.NewInt64Builder(mem)
	day := array.NewDate32Builder(mem)
	name := array.NewStringBuilder(mem)
	price := array.NewDecimal128Builder(mem, mixedSchema.Field(3).Type.(*arrow.Decimal128Type))
	score := array.NewFloat64Builder(mem)
	for range n {
		if r.IntN(20) == 0 {
			id.AppendNull()
		} else {
			id.Append(r.Int64N(10_000))
		}
		if r.IntN(30) == 0 {
			day.AppendNull()
		} else {
			day.Append(arrow.Date32(19000 + r.IntN(365)))
		}
		switch r.IntN(10) {
		case 0:
			name.AppendNull()
		case 1, 2, 3:
			name.Append("user/popular")
		default:
			name.Append(fmt.Sprintf("user/%c%03d", 'a'+r.IntN(6), r.IntN(500)))
		}
		price.Append(decimal128.FromI64(r.Int64N(100_000)))
		switch r.IntN(50) {
		case 0:
			score.Append(math.NaN())
		case 1:
			score.AppendNull()
		default:
			score.Append(r.NormFloat64())
		}
	}
	arrs := []arrow.Array{id.NewArray(), day.NewArray(), name.NewArray(), price.NewArray(), score.NewArray()}
	for _, b := range []array.Builder{id, day, name, price, score} {
		b.Release()
	}
	return array.NewRecordBatch(mixedSchema, arrs, int64(n))
}

const mixedWorkload = `id >= 1000 AND id < 2000
3: day >= DATE '2022-03-01' AND day < DATE '2022-04-01' AND name LIKE 'user/b%'
name IN ('user/popular', 'user/c017') OR id > 9000
price BETWEEN 100.00 AND 500.50
id IS NULL
2: score > 1.5 AND day <= DATE '2022-01-15'
name = 'user/popular' AND NOT (id IN (5, 6, 7))
score <> 0.0 OR price < 10
`

func mustWorkload(t testing.TB, s string) *workload.Workload {
	t.Helper()
	w, err := workload.Parse(strings.NewReader(s), "test")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// leafByText follows the cut texts (bound and evaluated as filters) down the
// tree: the reference for Q1.
func leafByText(t *testing.T, tr *Tree, rec arrow.RecordBatch, row int) int {
	t.Helper()
	id := 0
	for tr.Nodes[id].Leaf < 0 {
		nd := tr.Nodes[id]
		e, err := expr.Parse(nd.Cut)
		if err != nil {
			t.Fatal(err)
		}
		b, err := expr.Bind(e, rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]value.Value, len(b.Columns()))
		for _, c := range b.Columns() {
			v, err := value.FromArray(rec.Column(c.FieldIndices[0]), row)
			if err != nil {
				t.Fatal(err)
			}
			vals[c.Ordinal] = v
		}
		isNull := vals[0].IsNull()
		if b.EvaluateRow(vals) || isNull {
			id = nd.Left
		} else {
			id = nd.Right
		}
	}
	return tr.Nodes[id].Leaf
}

// gridTree builds a nested grid of levels (named columns, slab counts) on
// rec directly, as Build does when a grid wins.
func gridTree(t *testing.T, rec arrow.RecordBatch, w *workload.Workload, opts Options, cols []string, levels []gridLevel) *Tree {
	t.Helper()
	opts.Tolerance, opts.Oversize, opts.Fit, opts.Augment = DefaultTolerance, DefaultOversize, DefaultFit, DefaultAugment
	var idx []int
	for _, c := range cols {
		idx = append(idx, fieldIndex(rec.Schema(), c))
	}
	b, err := newBuilder(rec, idx, mustBind(t, w, rec.Schema()), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.buildGrid(context.Background(), levels); err != nil {
		t.Fatal(err)
	}
	return b.tree(w)
}

func TestBuildPartitionsRowsExactly(t *testing.T) {
	rec := mixedRows(20_000, 1)
	defer rec.Release()
	w := mustWorkload(t, mixedWorkload)
	cols := []string{"id", "day", "name", "price", "score"}
	for _, c := range []struct {
		name string
		rob  float64
		fit  float64
		grid []gridLevel // built directly: id, day, then name take the rest
	}{
		{name: "robustness=0"}, {name: "robustness=0.3", rob: 0.3}, {name: "fit=-1", fit: -1},
		{name: "grid", grid: []gridLevel{{col: 0, m: 4}, {col: 1, m: 3}, {col: 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const leaves = 37
			opts := Options{Leaves: leaves, Robustness: c.rob, Fit: c.fit, Columns: cols}
			var tr *Tree
			if c.grid != nil {
				tr = gridTree(t, rec, w, opts, cols, c.grid)
			} else {
				var err error
				if tr, err = Build(context.Background(), rec, w, opts); err != nil {
					t.Fatal(err)
				}
			}
			if c.grid != nil && !strings.HasPrefix(tr.Nodes[0].Cut, "id ") {
				t.Fatalf("grid root cuts %q, want a cut on id", tr.Nodes[0].Cut)
			}
			units := 0
			for _, nd := range tr.Nodes {
				if nd.Leaf >= 0 {
					units += nd.Units
				}
			}
			if units != leaves {
				t.Fatalf("Q2: leaves' units sum to %d, want %d", units, leaves)
			}
			r, err := tr.Router(rec.Schema())
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int32, rec.NumRows())
			if err := r.Route(rec, got); err != nil {
				t.Fatal(err)
			}
			counts := make([]int64, tr.Leaves)
			for _, l := range got {
				counts[l]++
			}
			unit := float64(rec.NumRows()) / leaves
			for id, nd := range tr.Nodes {
				if nd.Leaf < 0 {
					continue
				}
				// Routing agrees with the builder's own partition of the sample.
				if counts[nd.Leaf] != nd.Rows {
					t.Fatalf("leaf %d (node %d): routed %d rows, built with %d", nd.Leaf, id, counts[nd.Leaf], nd.Rows)
				}
				if nd.Units == 1 {
					f := float64(nd.Rows) / unit
					if f < 1-DefaultTolerance-1e-9 || f > 1+DefaultOversize+1e-9 {
						t.Errorf("Q2: leaf %d holds %.3f units of rows", nd.Leaf, f)
					}
				}
			}
			// Q1: the cut texts, evaluated as filters, send every row to the same leaf.
			for row := 0; row < int(rec.NumRows()); row += 7 {
				if want := leafByText(t, tr, rec, row); int(got[row]) != want {
					t.Fatalf("Q1: row %d routed to leaf %d, cut texts say %d", row, got[row], want)
				}
			}
			// Encode, decode, route again: the same leaves.
			data, err := tr.Encode()
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(data)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, data)
			}
			r2, err := dec.Router(rec.Schema())
			if err != nil {
				t.Fatal(err)
			}
			again := make([]int32, rec.NumRows())
			if err := r2.Route(rec, again); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != again[i] {
					t.Fatalf("row %d: leaf %d before encoding, %d after", i, got[i], again[i])
				}
			}
			data2, _ := dec.Encode()
			if !bytes.Equal(data, data2) {
				t.Fatal("decode/encode is not the identity")
			}
		})
	}
}

// TestSlotPredictionIsSound checks Q3: whenever the slot-space test says a query
// cannot match a group of rows (from their per-column min and max slots), no row
// of the group satisfies the query.
func TestSlotPredictionIsSound(t *testing.T) {
	rec := mixedRows(5_000, 2)
	defer rec.Release()
	w := mustWorkload(t, mixedWorkload+"name LIKE 'user/c0%' AND score IS NOT NULL\nday IS NULL OR price > 999.99\nFALSE\nTRUE\n")
	b, err := newBuilder(rec, []int{0, 1, 2, 3, 4}, mustBind(t, w, rec.Schema()), w, Options{Leaves: 1, Resolution: 1, Augment: -1})
	if err != nil {
		t.Fatal(err)
	}
	bound := mustBind(t, w, rec.Schema())
	r := rand.New(rand.NewPCG(5, 5))
	n := int(rec.NumRows())
	sels := make([]*expr.Selection, len(bound))
	for i, bq := range bound {
		if sels[i], err = bq.Evaluate(rec); err != nil {
			t.Fatal(err)
		}
	}
	skipped := 0
	for range 3000 {
		// A random group of rows: a window of a random order.
		size := 1 + r.IntN(40)
		rows := make([]int32, size)
		for i := range rows {
			rows[i] = int32(r.IntN(n))
		}
		bb := b.bbox(rows)
		for qi, q := range b.queries[:b.trainQ] {
			if q.mightMatch(bb) {
				continue
			}
			skipped++
			for _, row := range rows {
				if sels[qi].Contains(int(row)) {
					t.Fatalf("Q3: query %q was predicted to skip rows that hold row %d, which matches", w.Queries[qi].Filter, row)
				}
			}
		}
	}
	if skipped == 0 {
		t.Fatal("no group was ever predicted skippable: the test checks nothing")
	}
}

func mustBind(t testing.TB, w *workload.Workload, sch *arrow.Schema) []*expr.Bound {
	t.Helper()
	b, err := w.Bind(sch)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildIsDeterministic(t *testing.T) {
	rec := mixedRows(8_000, 3)
	defer rec.Release()
	w := mustWorkload(t, mixedWorkload)
	var prev []byte
	for range 2 {
		tr, err := Build(context.Background(), rec, w, Options{Leaves: 16, Robustness: 0.2, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := tr.Encode()
		if prev != nil && !bytes.Equal(prev, data) {
			t.Fatal("Q4: two builds differ")
		}
		prev = data
	}
}

func TestBuildErrors(t *testing.T) {
	rec := mixedRows(100, 4)
	defer rec.Release()
	w := mustWorkload(t, "id > 5")
	cases := []struct {
		name string
		opts Options
		w    *workload.Workload
		want error
	}{
		{"no leaves", Options{}, w, ErrInvalidOptions},
		{"bad tolerance", Options{Leaves: 2, Tolerance: 0.9}, w, ErrInvalidOptions},
		{"oversize above tolerance", Options{Leaves: 2, Tolerance: 0.1, Oversize: 0.2}, w, ErrInvalidOptions},
		{"negative oversize", Options{Leaves: 2, Oversize: -0.1}, w, ErrInvalidOptions},
		{"unfiltered above 0.9", Options{Leaves: 2, Unfiltered: 1}, w, ErrInvalidOptions},
		{"bad robustness", Options{Leaves: 2, Robustness: 1}, w, ErrInvalidOptions},
		{"fit above 1", Options{Leaves: 2, Fit: 1.5}, w, ErrInvalidOptions},
		{"unknown column", Options{Leaves: 2, Columns: []string{"nope"}}, w, ErrInvalidOptions},
		{"filter on unknown column", Options{Leaves: 2}, mustWorkload(t, "zz > 1"), workload.ErrBind},
		{"no cuttable column", Options{Leaves: 2}, mustWorkload(t, "TRUE"), ErrNoColumns},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Build(context.Background(), rec, c.w, c.opts); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, rec, w, Options{Leaves: 4}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled build: %v", err)
	}
}

func TestDecodeRejectsBrokenTrees(t *testing.T) {
	rec := mixedRows(2_000, 6)
	defer rec.Release()
	tr, err := Build(context.Background(), rec, mustWorkload(t, "id < 5000 AND day > DATE '2022-02-01'"), Options{Leaves: 4})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := tr.Encode()
	mutate := func(f func(*Tree)) []byte {
		c, err := Decode(good)
		if err != nil {
			t.Fatal(err)
		}
		f(c)
		data, _ := c.Encode()
		return data
	}
	cases := map[string][]byte{
		"not json":          []byte("{"),
		"other format":      mutate(func(t *Tree) { t.Format = "x" }),
		"future version":    mutate(func(t *Tree) { t.Version = 3 }),
		"cycle":             mutate(func(t *Tree) { t.Nodes[0].Right = 0 }),
		"left not next":     mutate(func(t *Tree) { t.Nodes[0].Left = 2 }),
		"leaf ordinal":      mutate(func(t *Tree) { t.Nodes[len(t.Nodes)-1].Leaf = 7 }),
		"cut on other col":  mutate(func(t *Tree) { t.Nodes[0].Cut = "zz < 3" }),
		"cut not a compare": mutate(func(t *Tree) { t.Nodes[0].Cut = "id > 3 AND id < 4" }),
		"cut greater":       mutate(func(t *Tree) { t.Nodes[0].Cut = "id > 3" }),
		"leaf count":        mutate(func(t *Tree) { t.Leaves = 9 }),
		"no nodes":          mutate(func(t *Tree) { t.Nodes = nil }),
		"zero units":        mutate(func(t *Tree) { t.Nodes[1].Units = 0 }),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(data); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
	// A cut whose literal does not fit the column's type fails at Router.
	bad := mutate(func(t *Tree) { t.Nodes[0].Cut = t.Columns[t.Nodes[0].cut.col] + " < 'abc'" })
	dec, err := Decode(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Router(rec.Schema()); !errors.Is(err, ErrSchema) {
		t.Fatalf("router with a string cut on a typed column: %v", err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := tr.Router(other); !errors.Is(err, ErrSchema) {
		t.Fatalf("router on a schema without the cut columns: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	rec := mixedRows(1_000, 7)
	defer rec.Release()
	w, _ := workload.Parse(strings.NewReader(mixedWorkload), "")
	tr, err := Build(context.Background(), rec, w, Options{Leaves: 5})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := tr.Encode()
	f.Add(good)
	f.Add([]byte(`{"format":"skiplake.qdtree","version":1,"columns":["id"],"leaves":1,"nodes":[{"id":0,"leaf":0,"units":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		r, err := dec.Router(rec.Schema())
		if err != nil {
			return
		}
		out := make([]int32, rec.NumRows())
		if err := r.Route(rec, out); err != nil {
			return
		}
		for _, l := range out {
			if l < 0 || int(l) >= dec.Leaves {
				t.Fatalf("routed to leaf %d of %d", l, dec.Leaves)
			}
		}
	})
}

func TestDrift(t *testing.T) {
	rec := mixedRows(10_000, 8)
	defer rec.Release()
	w := mustWorkload(t, "id >= 1000 AND id < 2000\nid >= 5000 AND id < 5100\n")
	tr, err := Build(context.Background(), rec, w, Options{Leaves: 20, Columns: []string{"id", "day"}})
	if err != nil {
		t.Fatal(err)
	}
	same, err := tr.Drift(w, rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if same.Fingerprint != same.TrainingFingerprint || same.SeenWeight != 1 || same.ReadFraction != same.TrainingReadFraction || len(same.UncutColumns) != 0 {
		t.Fatalf("unchanged workload: %+v", same)
	}
	if !strings.Contains(same.String(), "unchanged") {
		t.Fatalf("summary %q", same)
	}
	moved := mustWorkload(t, "id >= 1000 AND id < 2000\n3: name = 'user/a001'\n")
	d, err := tr.Drift(moved, rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if d.SeenWeight != 0.25 || len(d.UncutColumns) != 1 || d.UncutColumns[0].Column != "name" || d.UncutColumns[0].Weight != 0.75 {
		t.Fatalf("drifted workload: %+v", d)
	}
	// A filter on a column the tree never cut reads every leaf.
	if d.ReadFraction <= same.ReadFraction {
		t.Fatalf("drifted workload reads %.3f, training %.3f", d.ReadFraction, same.ReadFraction)
	}
	if !strings.Contains(d.String(), "name (75% of the weight) is never cut") {
		t.Fatalf("summary %q", d)
	}
}
