package expr

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/value"
)

// Selection is the set of rows of a batch for which a predicate is TRUE, as a
// bitmap (bit i of word i/64 is row i). It does not reference the batch.
type Selection struct {
	words []uint64
	n     int
}

// NewSelection returns a selection of n rows, all selected when all is true.
func NewSelection(n int, all bool) *Selection {
	s := &Selection{words: make([]uint64, (n+63)/64), n: n}
	if all {
		fillWords(s.words, n, true)
	}
	return s
}

// Len returns the number of rows the selection covers.
func (s *Selection) Len() int { return s.n }

// Count returns the number of selected rows.
func (s *Selection) Count() int {
	c := 0
	for _, w := range s.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Contains reports whether row i is selected.
func (s *Selection) Contains(i int) bool {
	return i >= 0 && i < s.n && s.words[i>>6]&(1<<(uint(i)&63)) != 0
}

// Words returns the bitmap words (bits beyond Len are zero). The slice is owned by
// the selection; do not modify it.
func (s *Selection) Words() []uint64 { return s.words }

// Indices appends the selected row indices to dst and returns it.
func (s *Selection) Indices(dst []int) []int {
	for wi, w := range s.words {
		for w != 0 {
			dst = append(dst, wi*64+bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
	return dst
}

func fillWords(w []uint64, n int, v bool) {
	for i := range w {
		if v {
			w[i] = ^uint64(0)
		} else {
			w[i] = 0
		}
	}
	if v && n%64 != 0 && len(w) > 0 {
		w[len(w)-1] = (1 << (uint(n) % 64)) - 1
	}
}

type evalCtx struct {
	n       int
	arrs    []arrow.Array // per column ordinal: the leaf array
	valid   [][]uint64    // per column ordinal: validity words, nil = all valid
	scratch [][]uint64
	// scalar is set when the tree has *ScalarPred leaves: AND and OR then narrow mask
	// (the rows whose result is still open, nil: all) for the terms after the first,
	// so that a scalar leaf is computed, and can fail, only where it decides the
	// result (Spark short-circuits FALSE AND x, TRUE OR x).
	scalar bool
	mask   []uint64
}

func (c *evalCtx) get() []uint64 {
	if k := len(c.scratch); k > 0 {
		w := c.scratch[k-1]
		c.scratch = c.scratch[:k-1]
		return w
	}
	return make([]uint64, (c.n+63)/64)
}

func (c *evalCtx) put(w []uint64) { c.scratch = append(c.scratch, w) }

// Evaluate returns the rows of rec for which the predicate is TRUE (SQL three-valued
// logic: rows where it is FALSE or NULL are not selected). rec must have the schema
// the predicate was bound to (at least: the bound columns at the same positions
// with the same names and types). The work is vectorised per column type; rec is
// neither retained nor released. Evaluate is safe for concurrent use.
func (b *Bound) Evaluate(rec arrow.RecordBatch) (*Selection, error) {
	if b == nil || rec == nil {
		return nil, fmt.Errorf("%w: nil predicate or record", ErrInvalidExpr)
	}
	n := int(rec.NumRows())
	ctx, err := newEvalCtx(rec, b.cols)
	if err != nil {
		return nil, err
	}
	sel := &Selection{words: make([]uint64, (n+63)/64), n: n}
	ctx.scalar = b.scalar
	if err := ctx.eval(b.root, sel.words); err != nil {
		return nil, err
	}
	return sel, nil
}

// newEvalCtx resolves the leaf array and validity of every bound column in rec.
func newEvalCtx(rec arrow.RecordBatch, cols []*BoundColumn) (*evalCtx, error) {
	ctx := &evalCtx{n: int(rec.NumRows()), arrs: make([]arrow.Array, len(cols)), valid: make([][]uint64, len(cols))}
	for _, c := range cols {
		arr, valid, err := leafArray(rec, c)
		if err != nil {
			return nil, err
		}
		ctx.arrs[c.Ordinal], ctx.valid[c.Ordinal] = arr, valid
	}
	return ctx, nil
}

func leafArray(rec arrow.RecordBatch, c *BoundColumn) (arrow.Array, []uint64, error) {
	sc := rec.Schema()
	i0 := c.FieldIndices[0]
	if i0 >= sc.NumFields() || sc.Field(i0).Name != c.Path[0] {
		return nil, nil, fmt.Errorf("%w: no field %q at position %d", ErrSchemaMismatch, c.Path[0], i0)
	}
	n := int(rec.NumRows())
	arr := rec.Column(i0)
	var valid []uint64
	for d := 1; d < len(c.FieldIndices); d++ {
		st, ok := arr.(*array.Struct)
		if !ok || c.FieldIndices[d] >= st.NumField() {
			return nil, nil, fmt.Errorf("%w: column %s is not a struct with field %q", ErrSchemaMismatch, c.Name(), c.Path[d])
		}
		valid = andValidity(valid, validityWords(st, n), n)
		arr = st.Field(c.FieldIndices[d])
	}
	if !arrow.TypeEqual(arr.DataType(), c.Type) {
		got, want := value.DisplayTypes(arr.DataType(), c.Type)
		return nil, nil, fmt.Errorf("%w: column %s has type %s, bound as %s", ErrSchemaMismatch, c.Name(), got, want)
	}
	if arr.Len() != n {
		return nil, nil, fmt.Errorf("%w: column %s has %d rows, batch %d", ErrSchemaMismatch, c.Name(), arr.Len(), n)
	}
	return arr, andValidity(valid, validityWords(arr, n), n), nil
}

func validityWords(arr arrow.Array, n int) []uint64 {
	if arr.NullN() == 0 {
		return nil
	}
	w := make([]uint64, (n+63)/64)
	bm := arr.NullBitmapBytes()
	off := arr.Data().Offset()
	if len(bm) == 0 { // e.g. a null-typed array
		return w
	}
	if off%8 == 0 {
		// Arrow bitmaps are little-endian bit order: byte k holds rows 8k..8k+7, so
		// whole bytes move into words unchanged.
		src := bm[off/8:]
		nb := (n + 7) / 8
		for k := 0; k < nb; k++ {
			w[k/8] |= uint64(src[k]) << (8 * uint(k%8))
		}
		clearTail(w, n)
		return w
	}
	for i := 0; i < n; i++ {
		if bitutil.BitIsSet(bm, off+i) {
			w[i>>6] |= 1 << (uint(i) & 63)
		}
	}
	return w
}

func andValidity(a, b []uint64, n int) []uint64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = a[i] & b[i]
	}
	return out
}

func andInto(dst, src []uint64) {
	if src == nil {
		return
	}
	for i := range dst {
		dst[i] &= src[i]
	}
}

func (c *evalCtx) eval(p Pred, out []uint64) error {
	switch p := p.(type) {
	case *ConstPred:
		fillWords(out, c.n, p.Value)
		return nil
	case *AndPred:
		if err := c.eval(p.Terms[0], out); err != nil {
			return err
		}
		tmp := c.get()
		defer c.put(tmp)
		outer := c.mask
		defer func() { c.mask = outer }()
		for _, t := range p.Terms[1:] {
			if allZero(out) {
				return nil
			}
			if c.scalar {
				c.mask = c.narrow(outer, out, false)
			}
			err := c.eval(t, tmp)
			if c.scalar {
				c.put(c.mask)
			}
			if err != nil {
				return err
			}
			for i := range out {
				out[i] &= tmp[i]
			}
		}
		return nil
	case *OrPred:
		if err := c.eval(p.Terms[0], out); err != nil {
			return err
		}
		tmp := c.get()
		defer c.put(tmp)
		outer := c.mask
		defer func() { c.mask = outer }()
		for _, t := range p.Terms[1:] {
			if c.scalar {
				c.mask = c.narrow(outer, out, true)
			}
			err := c.eval(t, tmp)
			if c.scalar {
				c.put(c.mask)
			}
			if err != nil {
				return err
			}
			for i := range out {
				out[i] |= tmp[i]
			}
		}
		return nil
	case *ScalarPred:
		return c.evalScalarPred(p, out)
	case *NullPred:
		v := c.valid[p.Col.Ordinal]
		if v == nil {
			fillWords(out, c.n, p.Negated)
			return nil
		}
		copy(out, v)
		if !p.Negated {
			for i := range out {
				out[i] = ^out[i]
			}
			clearTail(out, c.n)
		}
		return nil
	case *CmpPred:
		if err := cmpArray(c.arrs[p.Col.Ordinal], p.Op, p.Value, out); err != nil {
			return fmt.Errorf("column %s: %w", p.Col.Name(), err)
		}
		andInto(out, c.valid[p.Col.Ordinal])
		return nil
	case *InPred:
		if err := inArray(c.arrs[p.Col.Ordinal], p.Values, p.Negated, out); err != nil {
			return fmt.Errorf("column %s: %w", p.Col.Name(), err)
		}
		andInto(out, c.valid[p.Col.Ordinal])
		return nil
	case *LikePred:
		arr := c.arrs[p.Col.Ordinal]
		get, ok := arr.(interface{ Value(int) string })
		if !ok {
			return fmt.Errorf("%w: LIKE on %s", ErrSchemaMismatch, value.DisplayType(arr.DataType()))
		}
		loop(out, c.n, func(i int) bool { return p.Pattern.Match(get.Value(i)) != p.Negated })
		andInto(out, c.valid[p.Col.Ordinal])
		return nil
	case *ColCmpPred:
		la, ra := c.arrs[p.Left.Ordinal], c.arrs[p.Right.Ordinal]
		lv, rv := c.valid[p.Left.Ordinal], c.valid[p.Right.Ordinal]
		row := make([]value.Value, max(p.Left.Ordinal, p.Right.Ordinal)+1)
		loop(out, c.n, func(i int) bool {
			row[p.Left.Ordinal], row[p.Right.Ordinal] = value.Null(), value.Null()
			if lv == nil || lv[i>>6]&(1<<(uint(i)&63)) != 0 {
				row[p.Left.Ordinal] = arrayValue(la, i)
			}
			if rv == nil || rv[i>>6]&(1<<(uint(i)&63)) != 0 {
				row[p.Right.Ordinal] = arrayValue(ra, i)
			}
			return p.EvalRow(row)
		})
		return nil
	}
	return fmt.Errorf("%w: unknown predicate node %T", ErrInvalidExpr, p)
}

// narrow returns the rows of outer (nil: all) that the terms so far (done) leave
// open: those done selects for an AND, those it does not for an OR. The words come
// from the scratch pool.
func (c *evalCtx) narrow(outer, done []uint64, or bool) []uint64 {
	m := c.get()
	for i := range m {
		d := done[i]
		if or {
			d = ^d
		}
		if outer != nil {
			d &= outer[i]
		}
		m[i] = d
	}
	clearTail(m, c.n)
	return m
}

func allZero(w []uint64) bool {
	for _, x := range w {
		if x != 0 {
			return false
		}
	}
	return true
}

func clearTail(w []uint64, n int) {
	if n%64 != 0 && len(w) > 0 {
		w[len(w)-1] &= (1 << (uint(n) % 64)) - 1
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// loop fills out from a per-row test (used where no typed fast path applies).
func loop(out []uint64, n int, f func(int) bool) {
	for w := range out {
		base := w * 64
		end := min(base+64, n)
		var word uint64
		for i := base; i < end; i++ {
			word |= b2u(f(i)) << uint(i-base)
		}
		out[w] = word
	}
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// cmpInts compares every value with lit; one tight loop per operator.
func cmpInts[T integer](vals []T, op Op, lit T, out []uint64) {
	n := len(vals)
	for w := range out {
		base := w * 64
		chunk := vals[base:min(base+64, n)]
		var word uint64
		switch op {
		case OpEq:
			for j, v := range chunk {
				word |= b2u(v == lit) << uint(j)
			}
		case OpNe:
			for j, v := range chunk {
				word |= b2u(v != lit) << uint(j)
			}
		case OpLt:
			for j, v := range chunk {
				word |= b2u(v < lit) << uint(j)
			}
		case OpLe:
			for j, v := range chunk {
				word |= b2u(v <= lit) << uint(j)
			}
		case OpGt:
			for j, v := range chunk {
				word |= b2u(v > lit) << uint(j)
			}
		case OpGe:
			for j, v := range chunk {
				word |= b2u(v >= lit) << uint(j)
			}
		}
		out[w] = word
	}
}

type float interface{ ~float32 | ~float64 }

// cmpFloats compares in Spark order: NaN equals NaN and is greater than every
// number; -0 equals 0 (as IEEE already says).
func cmpFloats[T float](vals []T, op Op, lit float64, out []uint64) {
	n := len(vals)
	litNaN := math.IsNaN(lit)
	for w := range out {
		base := w * 64
		chunk := vals[base:min(base+64, n)]
		var word uint64
		if litNaN {
			for j, v := range chunk {
				x := float64(v)
				isNaN := x != x
				var r bool
				switch op {
				case OpEq, OpGe:
					r = isNaN
				case OpNe, OpLt:
					r = !isNaN
				case OpLe:
					r = true
				case OpGt:
					r = false
				}
				word |= b2u(r) << uint(j)
			}
			out[w] = word
			continue
		}
		switch op {
		case OpEq:
			for j, v := range chunk {
				word |= b2u(float64(v) == lit) << uint(j)
			}
		case OpNe:
			for j, v := range chunk {
				word |= b2u(float64(v) != lit) << uint(j)
			}
		case OpLt:
			for j, v := range chunk {
				word |= b2u(float64(v) < lit) << uint(j)
			}
		case OpLe:
			for j, v := range chunk {
				word |= b2u(float64(v) <= lit) << uint(j)
			}
		case OpGt:
			for j, v := range chunk {
				x := float64(v)
				word |= b2u(x > lit || x != x) << uint(j)
			}
		case OpGe:
			for j, v := range chunk {
				x := float64(v)
				word |= b2u(x >= lit || x != x) << uint(j)
			}
		}
		out[w] = word
	}
}

func cmpArray(arr arrow.Array, op Op, lit value.Value, out []uint64) error {
	n := arr.Len()
	switch a := arr.(type) {
	case *array.Int8:
		cmpInts(a.Int8Values(), op, int8(lit.AsInt64()), out)
	case *array.Int16:
		cmpInts(a.Int16Values(), op, int16(lit.AsInt64()), out)
	case *array.Int32:
		cmpInts(a.Int32Values(), op, int32(lit.AsInt64()), out)
	case *array.Int64:
		cmpInts(a.Int64Values(), op, lit.AsInt64(), out)
	case *array.Date32:
		cmpInts(a.Date32Values(), op, arrow.Date32(lit.AsInt64()), out)
	case *array.Timestamp:
		cmpInts(a.TimestampValues(), op, arrow.Timestamp(lit.AsInt64()), out)
	case *array.Float32:
		cmpFloats(a.Float32Values(), op, lit.AsFloat64(), out)
	case *array.Float64:
		cmpFloats(a.Float64Values(), op, lit.AsFloat64(), out)
	case *array.Decimal128:
		l, _, _ := lit.AsDecimal()
		vals := a.Values()
		loop(out, n, func(i int) bool { return opHolds(op, vals[i].Cmp(l)) })
	case *array.String:
		cmpStrings(a.ValueOffsets(), a.ValueBytes(), op, lit.AsString(), out)
	case *array.LargeString:
		s := lit.AsString()
		loop(out, n, func(i int) bool { return opHolds(op, strings.Compare(a.Value(i), s)) })
	case *array.Binary:
		s := lit.AsBytes()
		loop(out, n, func(i int) bool { return opHolds(op, bytes.Compare(a.Value(i), s)) })
	case *array.LargeBinary:
		s := lit.AsBytes()
		loop(out, n, func(i int) bool { return opHolds(op, bytes.Compare(a.Value(i), s)) })
	case *array.Boolean:
		l := lit.AsBool()
		loop(out, n, func(i int) bool { return opHolds(op, cmpBool(a.Value(i), l)) })
	default:
		return fmt.Errorf("%w: cannot evaluate on %s", ErrUnsupportedType, value.DisplayType(arr.DataType()))
	}
	return nil
}

// cmpStrings compares the values of a utf8 array (given by its offsets and data)
// with lit byte-wise; equality tests compare lengths first. ValueBytes of a sliced
// array starts at the first value, so offsets are taken relative to offsets[0].
func cmpStrings(offsets []int32, data []byte, op Op, lit string, out []uint64) {
	n := len(offsets) - 1
	if n <= 0 {
		return
	}
	base := offsets[0]
	for w := range out {
		first := w * 64
		end := min(first+64, n)
		var word uint64
		switch op {
		case OpEq, OpNe:
			want := op == OpEq
			for i := first; i < end; i++ {
				lo, hi := offsets[i]-base, offsets[i+1]-base
				eq := int(hi-lo) == len(lit) && string(data[lo:hi]) == lit
				word |= b2u(eq == want) << uint(i-first)
			}
		default:
			for i := first; i < end; i++ {
				c := strings.Compare(string(data[offsets[i]-base:offsets[i+1]-base]), lit)
				word |= b2u(opHolds(op, c)) << uint(i-first)
			}
		}
		out[w] = word
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

func inInts[T integer](vals []T, set []value.Value, neg bool, out []uint64) {
	m := make(map[T]struct{}, len(set))
	for _, v := range set {
		m[T(v.AsInt64())] = struct{}{}
	}
	n := len(vals)
	for w := range out {
		base := w * 64
		var word uint64
		for j, v := range vals[base:min(base+64, n)] {
			_, ok := m[v]
			word |= b2u(ok != neg) << uint(j)
		}
		out[w] = word
	}
}

func inFloats[T float](vals []T, set []value.Value, neg bool, out []uint64) {
	m := make(map[float64]struct{}, len(set))
	hasNaN := false
	for _, v := range set {
		if f := v.AsFloat64(); math.IsNaN(f) {
			hasNaN = true
		} else {
			m[f] = struct{}{}
		}
	}
	loop(out, len(vals), func(i int) bool {
		x := float64(vals[i])
		_, ok := m[x]
		return (ok || (hasNaN && x != x)) != neg
	})
}

func inArray(arr arrow.Array, set []value.Value, neg bool, out []uint64) error {
	n := arr.Len()
	switch a := arr.(type) {
	case *array.Int8:
		inInts(a.Int8Values(), set, neg, out)
	case *array.Int16:
		inInts(a.Int16Values(), set, neg, out)
	case *array.Int32:
		inInts(a.Int32Values(), set, neg, out)
	case *array.Int64:
		inInts(a.Int64Values(), set, neg, out)
	case *array.Date32:
		inInts(a.Date32Values(), set, neg, out)
	case *array.Timestamp:
		inInts(a.TimestampValues(), set, neg, out)
	case *array.Float32:
		inFloats(a.Float32Values(), set, neg, out)
	case *array.Float64:
		inFloats(a.Float64Values(), set, neg, out)
	case *array.Decimal128:
		m := make(map[decimal128.Num]struct{}, len(set))
		for _, v := range set {
			d, _, _ := v.AsDecimal()
			m[d] = struct{}{}
		}
		vals := a.Values()
		loop(out, n, func(i int) bool { _, ok := m[vals[i]]; return ok != neg })
	case interface{ Value(int) string }:
		m := make(map[string]struct{}, len(set))
		for _, v := range set {
			m[v.AsString()] = struct{}{}
		}
		loop(out, n, func(i int) bool { _, ok := m[a.Value(i)]; return ok != neg })
	case interface{ Value(int) []byte }:
		m := make(map[string]struct{}, len(set))
		for _, v := range set {
			m[v.AsString()] = struct{}{}
		}
		loop(out, n, func(i int) bool { _, ok := m[string(a.Value(i))]; return ok != neg })
	case *array.Boolean:
		var hasT, hasF bool
		for _, v := range set {
			if v.AsBool() {
				hasT = true
			} else {
				hasF = true
			}
		}
		loop(out, n, func(i int) bool { x := a.Value(i); return ((x && hasT) || (!x && hasF)) != neg })
	default:
		return fmt.Errorf("%w: cannot evaluate IN on %s", ErrUnsupportedType, value.DisplayType(arr.DataType()))
	}
	return nil
}

// arrayValue reads row i of a leaf array (the row must be valid). Binding checked
// that the array's type is the column's (describeType), and every bound type has a
// value representation, so value.FromArray cannot fail here.
func arrayValue(arr arrow.Array, i int) value.Value {
	v, _ := value.FromArray(arr, i)
	return v
}

// RowValues reads row i of rec as one value per bound column (value.Null() for
// NULL), in the form Bound.EvaluateRow expects. It is meant for tests and
// diagnostics; it allocates.
func (b *Bound) RowValues(rec arrow.RecordBatch, i int) ([]value.Value, error) {
	return rowValues(b.cols, rec, i)
}

// RowValues reads row i of rec as one value per bound column (value.Null() for
// NULL), in the form BoundScalar.EvaluateRow expects. It is meant for tests and
// diagnostics; it allocates.
func (s *BoundScalar) RowValues(rec arrow.RecordBatch, i int) ([]value.Value, error) {
	return rowValues(s.cols, rec, i)
}

func rowValues(cols []*BoundColumn, rec arrow.RecordBatch, i int) ([]value.Value, error) {
	row := make([]value.Value, len(cols))
	n := int(rec.NumRows())
	if i < 0 || i >= n {
		return nil, fmt.Errorf("%w: row %d out of range [0,%d)", ErrSchemaMismatch, i, n)
	}
	for _, c := range cols {
		arr, valid, err := leafArray(rec, c)
		if err != nil {
			return nil, err
		}
		if valid == nil || valid[i>>6]&(1<<(uint(i)&63)) != 0 {
			row[c.Ordinal] = arrayValue(arr, i)
		}
	}
	return row, nil
}
