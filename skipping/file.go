package skipping

import (
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// PathMapper translates a predicate column's logical path (as bound) to the
// physical path statistics and partition values are keyed by (Delta column
// mapping). ok=false means the column has no physical counterpart: its leaves are
// MightMatch. A nil PathMapper is the identity.
type PathMapper func(logical []string) (physical []string, ok bool)

func (m PathMapper) resolve(logical []string) ([]string, bool) {
	if m == nil {
		return logical, true
	}
	return m(logical)
}

// EvaluatePartition decides pred for a file from its partition values alone.
// partitionValues maps partition column names (physical, top level) to the typed
// value every row of the file has (value.Null() for NULL); names match exactly
// first, then case-insensitively. Leaves on other columns are MightMatch, so the
// result is exact when pred only reads partition columns. A value whose kind is
// not the column's is not trusted (MightMatch).
func EvaluatePartition(pred *expr.Bound, partitionValues map[string]value.Value) Verdict {
	return EvaluateFile(pred, nil, partitionValues, nil)
}

// EvaluateFile decides pred for one data file from its statistics and partition
// values together (either may be nil). Each leaf uses the partition value when its
// column is a partition column (exact) and the file statistics otherwise, so
// `part = 1 OR x > 5` is decided as a whole rather than by combining two partial
// verdicts. This is the reference evaluator; FileIndex does the same for many files
// at once.
func EvaluateFile(pred *expr.Bound, f *stats.File, partitionValues map[string]value.Value, mapper PathMapper) Verdict {
	if pred == nil {
		return MightMatch
	}
	n := int64(-1)
	if f != nil {
		n = f.NumRecords
	}
	lookup := func(c *expr.BoundColumn) (colStats, bool) {
		phys, ok := mapper.resolve(c.Path)
		if !ok {
			return colStats{}, false
		}
		if len(phys) == 1 && partitionValues != nil {
			if v, ok := lookupPartition(partitionValues, phys[0]); ok {
				return colStats{exact: true, val: v}, true
			}
		}
		if f == nil {
			return colStats{}, false
		}
		sc := f.Column(phys...)
		if sc == nil {
			return colStats{}, false
		}
		return fromStatsColumn(sc, c.Kind, n, f.TightBounds), true
	}
	return evalTree(pred.Root(), lookup, n)
}

func lookupPartition(pv map[string]value.Value, name string) (value.Value, bool) {
	if v, ok := pv[name]; ok {
		return v, true
	}
	for k, v := range pv {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return value.Value{}, false
}

// ---- FileIndex: the columnar form ----

// bounds holds one column's per-file lower and upper bounds of type T.
type bounds[T any] struct {
	hasLo, hasHi []bool
	lo, hi       []T
}

func newBounds[T any](n int) *bounds[T] {
	return &bounds[T]{hasLo: make([]bool, n), hasHi: make([]bool, n), lo: make([]T, n), hi: make([]T, n)}
}

// indexColumn is one leaf column of a FileIndex.
type indexColumn struct {
	kind  value.Kind
	scale int32
	nulls []nullState
	ints  *bounds[int64]          // int64, date, timestamp, bool kinds
	flts  *bounds[float64]        // float kinds (hi may be NaN: the top of Spark order)
	decs  *bounds[decimal128.Num] // decimals at the column's scale
	strs  *bounds[string]         // string and binary kinds
	exact []value.Value           // partition columns: each file's value
}

// FileIndex holds the statistics of all files of a snapshot in columnar form
// (per column typed bound slices, presence flags, null states; per file record
// counts), built once, so that a predicate is decided for every file in a few
// tight loops. A FileIndex is immutable after NewFileIndex and safe for concurrent
// Evaluate calls.
//
// An index built by NewLazyFileIndex holds the statistics JSON instead and converts
// a column the first time a predicate reads it (see there); the columns already
// built are published atomically, so Evaluate stays safe for concurrent use.
type FileIndex struct {
	n     int
	state atomic.Pointer[indexState]
	lazy  *lazyStats // nil: every column was built by NewFileIndex
}

// indexState is what a FileIndex has built so far; immutable once published.
type indexState struct {
	records []int64                 // per file numRecords, -1 unknown; nil until a lazy index loaded
	parsed  []bool                  // lazy: file i's statistics parsed (nil until loaded)
	cols    map[string]*indexColumn // by stats.Key(physical path...)
}

// lazyStats is the unparsed side of a lazy FileIndex.
type lazyStats struct {
	mu     sync.Mutex
	json   []string      // per file statistics JSON ("" none)
	pre    []*stats.File // per file statistics already parsed (nil: parse json)
	parser *stats.Parser
	leaves map[string]leafSpec // every stats column the schema has, by key
	loaded map[string]bool     // columns converted so far (built or found empty)
	// parses counts the passes of a projected parser over the files, keys the
	// columns those passes converted (as the parsed files hold them; sorted per
	// pass): what the tests check to prove a filter parses only its own columns.
	parses int
	keys   []string
}

// leafSpec is a leaf column of the physical schema a lazy index may build.
type leafSpec struct {
	path  []string
	kind  value.Kind
	scale int32
}

// FileIndexOption configures NewFileIndex.
type FileIndexOption func(*fileIndexConfig)

type fileIndexConfig struct {
	partitions []map[string]value.Value
}

// WithPartitionValues supplies each file's typed partition values (same order as
// the files; value.Null() for NULL), keyed by physical partition column name
// (matched exactly first, then case-insensitively). Leaves on partition columns
// are then decided exactly. If some file lacks a partition column's value, that
// column falls back to file statistics for all files.
func WithPartitionValues(pv []map[string]value.Value) FileIndexOption {
	return func(c *fileIndexConfig) { c.partitions = pv }
}

// NewFileIndex builds the index of files (nil entries mean "no statistics")
// against the physical schema: every leaf column of schema (structs recurse) with
// a supported type gets typed bounds. Statistics that do not fit the column type
// are ignored (treated as unknown: S1).
func NewFileIndex(files []*stats.File, schema *arrow.Schema, opts ...FileIndexOption) *FileIndex {
	fi := &FileIndex{n: len(files)}
	st := &indexState{records: recordsOf(files), cols: map[string]*indexColumn{}}
	fi.walk(schema, opts, func(key string, l leafSpec) {
		if c := buildColumn(files, l.path, l.kind, l.scale); c != nil {
			st.cols[key] = c
		}
	}, st.cols)
	fi.state.Store(st)
	return fi
}

// NewLazyFileIndex is NewFileIndex for files whose statistics are still JSON
// (statsJSON[i], "" for none; pre[i], when pre is non-nil and pre[i] is not, is file
// i's statistics already parsed and is used instead). Nothing is parsed here:
// Evaluate parses, with parser projected to the columns the predicate reads
// (stats.Parser.Project), only the columns no earlier Evaluate built, and keeps the
// typed bounds, not the parsed files. A predicate without a column to convert
// still makes the first Evaluate read every file's numRecords. Verdicts are those
// of NewFileIndex over the parsed files: a file whose JSON does not parse has no
// statistics (S1), whatever the projection. Partition columns (WithPartitionValues)
// are built at once, as they need no parsing. statsJSON and pre are kept, not
// copied.
func NewLazyFileIndex(statsJSON []string, pre []*stats.File, parser *stats.Parser, schema *arrow.Schema, opts ...FileIndexOption) *FileIndex {
	fi := &FileIndex{n: len(statsJSON)}
	lz := &lazyStats{json: statsJSON, pre: pre, parser: parser, leaves: map[string]leafSpec{}, loaded: map[string]bool{}}
	st := &indexState{cols: map[string]*indexColumn{}}
	fi.walk(schema, opts, func(key string, l leafSpec) { lz.leaves[key] = l }, st.cols)
	fi.lazy = lz
	fi.state.Store(st)
	return fi
}

func recordsOf(files []*stats.File) []int64 {
	records := make([]int64, len(files))
	for i, f := range files {
		records[i] = -1
		if f != nil {
			records[i] = f.NumRecords
		}
	}
	return records
}

// walk visits the leaf columns of schema (structs recurse) with a supported type:
// partition columns every file has a value for go into exact, the others to leaf.
func (fi *FileIndex) walk(schema *arrow.Schema, opts []FileIndexOption, leaf func(key string, l leafSpec), exact map[string]*indexColumn) {
	var cfg fileIndexConfig
	for _, o := range opts {
		o(&cfg)
	}
	n := fi.n
	partNames := map[string]bool{} // lower-cased partition column names
	var last uintptr               // the map of the previous file: files share one per partition
	for _, pv := range cfg.partitions {
		if p := reflect.ValueOf(pv).Pointer(); p != last || p == 0 {
			last = p
			for k := range pv {
				partNames[strings.ToLower(k)] = true
			}
		}
	}
	if schema == nil {
		return
	}
	var walk func(prefix []string, fields []arrow.Field)
	walk = func(prefix []string, fields []arrow.Field) {
		for _, fd := range fields {
			path := append(append([]string(nil), prefix...), fd.Name)
			if st, ok := fd.Type.(*arrow.StructType); ok {
				walk(path, st.Fields())
				continue
			}
			kind, scale, ok := kindOf(fd.Type)
			if !ok {
				continue
			}
			key := stats.Key(path...)
			if len(path) == 1 && partNames[strings.ToLower(fd.Name)] && len(cfg.partitions) == n {
				c := &indexColumn{kind: kind, scale: scale, exact: make([]value.Value, n)}
				if exactValues(c.exact, cfg.partitions, fd.Name) {
					exact[key] = c
					continue
				}
			}
			leaf(key, leafSpec{path: path, kind: kind, scale: scale})
		}
	}
	walk(nil, schema.Fields())
}

// exactMinRange is the fewest files exactValues fills on a goroutine of its own.
const exactMinRange = 1 << 16

// exactValues sets out[i] to file i's value of partition column name, on up to
// GOMAXPROCS goroutines over ranges of files, and reports whether every file has
// one (when some file lacks it, the column falls back to statistics).
func exactValues(out []value.Value, partitions []map[string]value.Value, name string) bool {
	n := len(out)
	workers := max(1, min(runtime.GOMAXPROCS(0), n/exactMinRange))
	fill := func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			v, found := lookupPartition(partitions[i], name)
			if !found {
				return false
			}
			out[i] = v
		}
		return true
	}
	if workers == 1 {
		return fill(0, n)
	}
	oks := make([]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { oks[w] = fill(n*w/workers, n*(w+1)/workers) })
	}
	wg.Wait()
	return !slices.Contains(oks, false)
}

// ready returns the index state with every column pred reads (through mapper)
// built and the record counts known, converting what a lazy index lacks.
func (fi *FileIndex) ready(pred *expr.Bound, mapper PathMapper) *indexState {
	st := fi.state.Load()
	lz := fi.lazy
	if lz == nil {
		return st
	}
	want := func() []string {
		var keys []string
		for _, c := range pred.Columns() {
			phys, ok := mapper.resolve(c.Path)
			if !ok {
				continue
			}
			k := stats.Key(phys...)
			if _, isLeaf := lz.leaves[k]; isLeaf && !lz.loaded[k] && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		return keys
	}
	lz.mu.Lock()
	defer lz.mu.Unlock()
	st = fi.state.Load()
	keys := want()
	if st.records != nil && len(keys) == 0 {
		return st
	}
	conv := lz.convert(lz.parser.Project(keys), keys, fi.n, st.records == nil)
	lz.parses++
	lz.keys = append(lz.keys, conv.converted...)
	next := &indexState{records: st.records, parsed: st.parsed, cols: make(map[string]*indexColumn, len(st.cols)+len(keys))}
	maps.Copy(next.cols, st.cols)
	if next.records == nil {
		next.records, next.parsed = conv.records, conv.parsed
	}
	for k, key := range keys {
		if c := conv.cols[k]; c != nil {
			next.cols[key] = c
		}
		lz.loaded[key] = true
	}
	fi.state.Store(next)
	return next
}

// parseChunk is how many files one goroutine of convert parses at a time.
const parseChunk = 4096

// conversion is what one pass of convert built.
type conversion struct {
	// records and parsed are per file numRecords (-1 unknown) and whether its
	// statistics parsed; nil unless asked for.
	records []int64
	parsed  []bool
	// cols[k] is the column of the k-th key asked for, nil when no file had
	// statistics for it.
	cols []*indexColumn
	// converted are the keys (sorted) any file's JSON had a column for.
	converted []string
}

// convert builds the index columns of keys (leaves of the index) for the n files:
// a file's statistics already parsed (pre) are used as they are, the others are
// parsed from their JSON with proj (the parser projected to keys) straight into the
// columns, without a stats.File per file. A file whose JSON is absent or does not
// parse has no statistics (S1: "might match", not a failed plan). Files are
// converted over ranges of parseChunk on up to GOMAXPROCS goroutines when there are
// many; each file is written by one goroutine only, so the result does not depend
// on the split. counts asks for every file's numRecords and parse outcome too.
func (lz *lazyStats) convert(proj *stats.Parser, keys []string, n int, counts bool) conversion {
	out := conversion{cols: make([]*indexColumn, len(keys))}
	paths := make([][]string, len(keys))
	for k, key := range keys {
		l := lz.leaves[key]
		out.cols[k] = newIndexColumn(l.kind, l.scale, n)
		paths[k] = l.path
	}
	if counts {
		out.records = make([]int64, n)
		out.parsed = make([]bool, n)
	}
	leaves := proj.Leaves()
	leafCol := make([]int, len(leaves)) // index into keys of each parsed leaf
	for j, key := range leaves {
		leafCol[j] = slices.Index(keys, key)
	}
	// tally is one goroutine's scratch and findings.
	type tally struct {
		buf      []stats.Column // ParseColumns output, reused file after file
		seen     []bool
		had      []bool // per key: some file had statistics for it
		fromJSON []bool // per parsed leaf: some file's JSON had it
	}
	newTally := func() *tally {
		return &tally{buf: make([]stats.Column, len(leaves)), seen: make([]bool, len(leaves)),
			had: make([]bool, len(keys)), fromJSON: make([]bool, len(leaves))}
	}
	convRange := func(lo, hi int, t *tally) {
		for i := lo; i < hi; i++ {
			if counts {
				out.records[i] = -1
			}
			if lz.pre != nil && lz.pre[i] != nil {
				f := lz.pre[i]
				if counts {
					out.records[i], out.parsed[i] = f.NumRecords, true
				}
				for k, c := range out.cols {
					if sc := f.Column(paths[k]...); sc != nil {
						c.set(i, sc, f.NumRecords, f.TightBounds)
						t.had[k] = true
					}
				}
				continue
			}
			js := lz.json[i]
			if js == "" {
				continue
			}
			nr, tight, err := proj.ParseColumns(js, t.buf, t.seen)
			if err != nil {
				continue
			}
			if counts {
				out.records[i], out.parsed[i] = nr, true
			}
			for j, seen := range t.seen {
				if !seen {
					continue
				}
				t.fromJSON[j] = true
				if k := leafCol[j]; k >= 0 {
					out.cols[k].set(i, &t.buf[j], nr, tight)
					t.had[k] = true
				}
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (n+parseChunk-1)/parseChunk)
	tallies := make([]*tally, max(workers, 1))
	for w := range tallies {
		tallies[w] = newTally()
	}
	if workers <= 1 {
		convRange(0, n, tallies[0])
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, t := range tallies {
			wg.Go(func() {
				for {
					lo := int(next.Add(parseChunk)) - parseChunk
					if lo >= n {
						return
					}
					convRange(lo, min(lo+parseChunk, n), t)
				}
			})
		}
		wg.Wait()
	}
	for k := range out.cols {
		if !slices.ContainsFunc(tallies, func(t *tally) bool { return t.had[k] }) {
			out.cols[k] = nil
		}
	}
	for j, key := range leaves {
		if slices.ContainsFunc(tallies, func(t *tally) bool { return t.fromJSON[j] }) {
			out.converted = append(out.converted, key)
		}
	}
	slices.Sort(out.converted)
	return out
}

// hasStats reports whether file i had statistics the last time they were read
// (for a lazy index: after an Evaluate with a predicate).
func (fi *FileIndex) hasStats(i int) bool {
	st := fi.state.Load()
	return st.parsed != nil && st.parsed[i]
}

// Len returns the number of files indexed.
func (fi *FileIndex) Len() int { return fi.n }

func kindOf(dt arrow.DataType) (value.Kind, int32, bool) {
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return value.KindInt64, 0, true
	case *arrow.Float32Type, *arrow.Float64Type:
		return value.KindFloat64, 0, true
	case *arrow.Decimal128Type:
		return value.KindDecimal, t.Scale, true
	case *arrow.StringType, *arrow.LargeStringType:
		return value.KindString, 0, true
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return value.KindBinary, 0, true
	case *arrow.BooleanType:
		return value.KindBool, 0, true
	case *arrow.Date32Type:
		return value.KindDate, 0, true
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return value.KindTimestamp, 0, true
		}
		return value.KindTimestampNTZ, 0, true
	}
	return 0, 0, false
}

func buildColumn(files []*stats.File, path []string, kind value.Kind, scale int32) *indexColumn {
	c := newIndexColumn(kind, scale, len(files))
	any := false
	for i, f := range files {
		if f == nil {
			continue
		}
		sc := f.Column(path...)
		if sc == nil {
			continue
		}
		any = true
		c.set(i, sc, f.NumRecords, f.TightBounds)
	}
	if !any {
		return nil
	}
	return c
}

// newIndexColumn returns a column of n files with no statistics yet.
func newIndexColumn(kind value.Kind, scale int32, n int) *indexColumn {
	c := &indexColumn{kind: kind, scale: scale, nulls: make([]nullState, n)}
	switch kind {
	case value.KindFloat64:
		c.flts = newBounds[float64](n)
	case value.KindDecimal:
		c.decs = newBounds[decimal128.Num](n)
	case value.KindString, value.KindBinary:
		c.strs = newBounds[string](n)
	default:
		c.ints = newBounds[int64](n)
	}
	return c
}

// set records file i's statistics sc of this column (numRecords and tight from the
// file's statistics). Calls for distinct files may run concurrently.
func (c *indexColumn) set(i int, sc *stats.Column, numRecords int64, tight bool) {
	cs := fromStatsColumn(sc, c.kind, numRecords, tight)
	c.nulls[i] = cs.nulls
	hasLo, hasHi := !cs.lo.IsNull(), !cs.hi.IsNull()
	switch {
	case c.flts != nil:
		c.flts.hasLo[i], c.flts.hasHi[i] = hasLo, hasHi
		c.flts.lo[i], c.flts.hi[i] = cs.lo.AsFloat64(), cs.hi.AsFloat64()
	case c.decs != nil:
		if hasLo {
			c.decs.lo[i], c.decs.hasLo[i] = rescale(cs.lo, c.scale, false)
		}
		if hasHi {
			c.decs.hi[i], c.decs.hasHi[i] = rescale(cs.hi, c.scale, true)
		}
	case c.strs != nil:
		c.strs.hasLo[i], c.strs.hasHi[i] = hasLo, hasHi
		c.strs.lo[i], c.strs.hi[i] = cs.lo.AsString(), cs.hi.AsString()
	default:
		c.ints.hasLo[i], c.ints.hasHi[i] = hasLo, hasHi
		c.ints.lo[i], c.ints.hi[i] = cs.lo.AsInt64(), cs.hi.AsInt64()
	}
}

var maxDecimal = new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil), big.NewInt(1))

// rescale converts a decimal bound to the column's scale, rounding outward (down
// for a lower bound, up for an upper bound) so it stays a bound.
func rescale(v value.Value, scale int32, up bool) (decimal128.Num, bool) {
	u, _, s := v.AsDecimal()
	if s == scale {
		return u, true
	}
	x := u.BigInt()
	if s < scale {
		x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-s)), nil))
	} else {
		d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s-scale)), nil)
		q, m := new(big.Int).DivMod(x, d, new(big.Int)) // Euclidean: q = floor
		if up && m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		x = q
	}
	if x.CmpAbs(maxDecimal) > 0 {
		return decimal128.Num{}, false
	}
	return decimal128.FromBigInt(x), true
}

// Evaluate decides pred for every indexed file: out[i] is the verdict of file i.
// Column paths are used as physical paths (see EvaluateMapped). len(out) must be
// Len().
func (fi *FileIndex) Evaluate(pred *expr.Bound, out []Verdict) error {
	return fi.EvaluateMapped(pred, nil, out)
}

// EvaluateMapped is Evaluate with a logical-to-physical column path mapping. A nil
// predicate keeps every file (MightMatch).
func (fi *FileIndex) EvaluateMapped(pred *expr.Bound, mapper PathMapper, out []Verdict) error {
	if len(out) != fi.n {
		return fmt.Errorf("%w: %d verdicts for %d files", ErrOutputLength, len(out), fi.n)
	}
	if pred == nil {
		fill(out, MightMatch)
		return nil
	}
	st := fi.ready(pred, mapper)
	ev := &indexEval{fi: fi, cols: st.cols, mapper: mapper}
	ev.node(pred.Root(), out)
	for i, r := range st.records {
		if r == 0 {
			out[i] = CannotMatch
		}
	}
	return nil
}

type indexEval struct {
	fi      *FileIndex
	cols    map[string]*indexColumn
	mapper  PathMapper
	scratch [][]Verdict
}

func (ev *indexEval) get() []Verdict {
	if k := len(ev.scratch); k > 0 {
		s := ev.scratch[k-1]
		ev.scratch = ev.scratch[:k-1]
		return s
	}
	return make([]Verdict, ev.fi.n)
}

func fill(out []Verdict, v Verdict) {
	for i := range out {
		out[i] = v
	}
}

func (ev *indexEval) node(p expr.Pred, out []Verdict) {
	switch p := p.(type) {
	case *expr.ConstPred:
		if p.Value {
			fill(out, MustMatch)
		} else {
			fill(out, CannotMatch)
		}
	case *expr.AndPred, *expr.OrPred:
		var terms []expr.Pred
		isAnd := false
		if a, ok := p.(*expr.AndPred); ok {
			terms, isAnd = a.Terms, true
		} else {
			terms = p.(*expr.OrPred).Terms
		}
		ev.node(terms[0], out)
		tmp := ev.get()
		for _, t := range terms[1:] {
			ev.node(t, tmp)
			if isAnd {
				for i := range out {
					out[i] = min(out[i], tmp[i])
				}
			} else {
				for i := range out {
					out[i] = max(out[i], tmp[i])
				}
			}
		}
		ev.scratch = append(ev.scratch, tmp)
	case expr.Leaf:
		ev.leaf(p, out)
	default:
		fill(out, MightMatch)
	}
}

func (ev *indexEval) leaf(l expr.Leaf, out []Verdict) {
	col := l.Column()
	phys, ok := ev.mapper.resolve(col.Path)
	var c *indexColumn
	if ok {
		c = ev.cols[stats.Key(phys...)]
	}
	if c == nil || (c.kind != col.Kind && c.exact == nil) {
		fill(out, MightMatch)
		return
	}
	if c.exact != nil {
		for i, v := range c.exact {
			out[i] = leafRule(l, colStats{exact: true, val: v})
		}
		return
	}
	if np, ok := l.(*expr.NullPred); ok {
		for i, ns := range c.nulls {
			out[i] = leafRule(np, colStats{nulls: ns})
		}
		return
	}
	switch {
	case c.ints != nil:
		leafTyped(l, c, c.ints, cmp64, func(v value.Value) int64 { return v.AsInt64() }, out)
	case c.flts != nil:
		leafTyped(l, c, c.flts, value.CompareFloat, func(v value.Value) float64 { return v.AsFloat64() }, out)
	case c.decs != nil:
		if !literalsAtScale(l, c.scale) {
			fill(out, MightMatch) // bound against a schema with another scale
			return
		}
		leafTyped(l, c, c.decs, func(a, b decimal128.Num) int { return a.Cmp(b) }, func(v value.Value) decimal128.Num {
			d, _, _ := v.AsDecimal()
			return d
		}, out)
	case c.strs != nil:
		if lp, ok := l.(*expr.LikePred); ok {
			b := c.strs
			for i := range out {
				if c.nulls[i] == nullsAll {
					out[i] = CannotMatch
					continue
				}
				out[i] = likeRule(lp.Pattern, lp.Negated, b.hasLo[i], b.lo[i], b.hasHi[i], b.hi[i], c.nulls[i] == nullsNone)
			}
			return
		}
		leafTyped(l, c, c.strs, strings.Compare, func(v value.Value) string { return v.AsString() }, out)
	default:
		fill(out, MightMatch)
	}
}

// literalsAtScale reports whether every decimal literal of l has the given scale
// (expr.Bind coerces literals to the bound column's scale).
func literalsAtScale(l expr.Leaf, scale int32) bool {
	var vals []value.Value
	switch p := l.(type) {
	case *expr.CmpPred:
		vals = []value.Value{p.Value}
	case *expr.InPred:
		vals = p.Values
	}
	for _, v := range vals {
		if _, _, s := v.AsDecimal(); v.Kind() != value.KindDecimal || s != scale {
			return false
		}
	}
	return true
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// leafTyped applies the comparison and IN rules with typed bounds.
func leafTyped[T any](l expr.Leaf, c *indexColumn, b *bounds[T], cmp func(a, b T) int, conv func(value.Value) T, out []Verdict) {
	switch p := l.(type) {
	case *expr.CmpPred:
		if p.Value.Kind() != c.kind {
			fill(out, MightMatch)
			return
		}
		v := conv(p.Value)
		for i := range out {
			if c.nulls[i] == nullsAll {
				out[i] = CannotMatch
				continue
			}
			hl, hh := b.hasLo[i], b.hasHi[i]
			var lv, hv int
			if hl {
				lv = cmp(b.lo[i], v)
			}
			if hh {
				hv = cmp(b.hi[i], v)
			}
			out[i] = cmpRule(p.Op, hl, lv, hh, hv, c.nulls[i] == nullsNone)
		}
	case *expr.InPred:
		vals := make([]T, len(p.Values))
		for k, x := range p.Values {
			if x.Kind() != c.kind {
				fill(out, MightMatch)
				return
			}
			vals[k] = conv(x)
		}
		for i := range out {
			if c.nulls[i] == nullsAll {
				out[i] = CannotMatch
				continue
			}
			hl, hh := b.hasLo[i], b.hasHi[i]
			out[i] = inRule(len(vals), p.Negated, hl, hh, c.nulls[i] == nullsNone, func(k int) (int, int) {
				var lv, hv int
				if hl {
					lv = cmp(b.lo[i], vals[k])
				}
				if hh {
					hv = cmp(b.hi[i], vals[k])
				}
				return lv, hv
			}, func() bool { return hl && hh && cmp(b.lo[i], b.hi[i]) == 0 })
		}
	default:
		fill(out, MightMatch)
	}
}
