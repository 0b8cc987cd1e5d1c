package dml

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/conform"
	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/value"
)

// DefaultSourceMemory is the default memory budget of a MERGE source: the source rows
// (in Arrow form, plus the join table) one pass holds.
const DefaultSourceMemory = 256 << 20

// mergeFanout is the number of key-hash partitions a source larger than the memory
// budget is spilled into; passes take consecutive partitions up to the budget. A
// partition that alone exceeds the budget is split again with a new hash seed.
const mergeFanout = 64

// maxSplitDepth bounds re-splitting: a partition still over budget after it (one
// hot key) is merged in one pass over the budget.
const maxSplitDepth = 3

// joinOverheadPerRow estimates the join table's memory per source row (map entry,
// key bytes, row index), counted against the budget.
const joinOverheadPerRow = 96

// KeyEncoder appends the canonical bytes of the key of row i: equal keys (SQL
// equality after conversion to the table's key types, with Spark's float
// normalization: -0.0 = 0.0, NaN = NaN) give equal bytes, different keys different
// bytes. A row with a NULL key component matches nothing (hasNull).
type KeyEncoder struct {
	cols []arrow.Array
}

// NewKeyEncoder returns the encoder of the keys made of cols (one array per key
// column, of a type CheckKeyType accepts, all of one length).
func NewKeyEncoder(cols []arrow.Array) KeyEncoder { return KeyEncoder{cols: cols} }

// Encode appends row i's key to dst; ok is false when a component is NULL.
func (k KeyEncoder) Encode(dst []byte, i int) (out []byte, ok bool) {
	for _, c := range k.cols {
		if c.IsNull(i) {
			return dst, false
		}
		switch a := c.(type) {
		case *array.Int8:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(i)))
		case *array.Int16:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(i)))
		case *array.Int32:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(i)))
		case *array.Int64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(i)))
		case *array.Float32:
			dst = binary.LittleEndian.AppendUint64(dst, floatKey(float64(a.Value(i))))
		case *array.Float64:
			dst = binary.LittleEndian.AppendUint64(dst, floatKey(a.Value(i)))
		case *array.Boolean:
			if a.Value(i) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case *array.String:
			dst = binary.AppendUvarint(dst, uint64(a.ValueLen(i)))
			dst = append(dst, a.Value(i)...)
		case *array.LargeString:
			s := a.Value(i)
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		case *array.Binary:
			b := a.Value(i)
			dst = binary.AppendUvarint(dst, uint64(len(b)))
			dst = append(dst, b...)
		case *array.Date32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(a.Value(i)))
		case *array.Timestamp:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(a.Value(i)))
		case *array.Decimal128:
			v := a.Value(i)
			dst = binary.LittleEndian.AppendUint64(dst, v.LowBits())
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v.HighBits()))
		default:
			// CheckKeyType refuses every other type before any row is encoded.
			panic(fmt.Sprintf("table: internal error: key type %s", c.DataType()))
		}
	}
	return dst, true
}

// floatKey normalizes a float for equality as Spark joins do: every NaN is one value
// and -0.0 equals 0.0.
func floatKey(f float64) uint64 {
	switch {
	case math.IsNaN(f):
		return 0x7ff8000000000001
	case f == 0:
		return 0
	}
	return math.Float64bits(f)
}

// CheckKeyType refuses MERGE key types KeyEncoder does not handle.
func CheckKeyType(name string, t arrow.DataType) error {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL,
		arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.DATE32, arrow.TIMESTAMP, arrow.DECIMAL128:
		return nil
	}
	return fmt.Errorf("%w: MERGE key column %q has type %s; keys must be numbers, strings, binary, booleans, dates, timestamps or decimals", tableview.ErrInvalidArgument, name, value.DisplayType(t))
}

// hashConstraint says a key belongs to partition part of a split with seed.
type hashConstraint struct {
	seed maphash.Seed
	part int
}

func partOf(seed maphash.Seed, key []byte) int {
	return int(maphash.Bytes(seed, key) % mergeFanout)
}

// Unit is a piece of the source merged in one pass with others: held in memory
// (recs) or spilled to a file, with the hash constraints its keys satisfy.
type Unit struct {
	recs  []arrow.RecordBatch
	path  string
	rows  int64
	bytes int64
	cons  []hashConstraint
}

// Member reports whether a key belongs to the unit.
func (u *Unit) Member(key []byte) bool {
	for _, c := range u.cons {
		if partOf(c.seed, key) != c.part {
			return false
		}
	}
	return true
}

// Source is a MERGE source read once and kept for the command's passes (and its
// re-plans): in memory when it fits the budget, else partitioned by key hash into
// spill files. Its batches have the source's schema with the key columns converted to
// the table's key types.
type Source struct {
	schema   *arrow.Schema  // the batches kept: planned columns converted
	inSchema *arrow.Schema  // the source's own schema
	table    *arrow.Schema  // the table schema the source is merged into
	convs    []conform.Func // per source column: its conversion (nil: kept)
	notNull  []int          // source columns feeding NOT NULL table columns
	keyIdx   []int          // key columns in schema
	budget   int64
	dir      string // spill directory ("" until spilling)
	spillTo  string // where to create dir
	mem      memory.Allocator
	units    []*Unit
	rows     int64
}

// Schema is the schema of the source's batches (Load): the source's columns, the
// planned ones converted to the table's types.
func (s *Source) Schema() *arrow.Schema { return s.schema }

// KeyIndices are the key columns' indices in Schema, in the order of the key names.
func (s *Source) KeyIndices() []int { return s.keyIdx }

// Rows counts the source's rows.
func (s *Source) Rows() int64 { return s.rows }

// Release frees the in-memory batches and deletes the spill files.
func (s *Source) Release() {
	for _, u := range s.units {
		for _, r := range u.recs {
			r.Release()
		}
		u.recs = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// SourcePlan decides, from the source's schema, the table schema the source is
// merged into (the table's logical schema, or the schema a MERGE with MergeSchema
// evolves it to) and whether every source column the table has is converted to the
// table's type (convertAll: a clause takes source rows into the table) or only the
// key columns.
type SourcePlan func(in *arrow.Schema) (table *arrow.Schema, convertAll bool, err error)

// ReadSource reads rdr (every batch must have the first batch's schema, which
// may differ from rdr.Schema() for readers that conform lazily), converts the key
// columns (keyNames, in the table's spelling) and, when plan says so, every other
// source column the table has to the table's types — by the conversions a write
// applies (store assignment, package internal/conform), so a value that does not fit is an error
// naming the column and its row in the source before any table file is read — and
// keeps the rows in memory up to budget bytes, spilling by key hash beyond.
func ReadSource(ctx context.Context, rdr array.RecordReader, keyNames []string, plan SourcePlan, budget int64, spillDir string, mem memory.Allocator) (*Source, error) {
	s := &Source{budget: budget, spillTo: spillDir, mem: mem}
	if !rdr.Next() {
		if err := rdr.Err(); err != nil {
			return nil, fmt.Errorf("table: reading the MERGE source: %w", err)
		}
		// An empty source: its declared schema.
		if err := s.init(rdr.Schema(), keyNames, plan); err != nil {
			return nil, err
		}
		s.units = []*Unit{{}}
		return s, nil
	}
	if err := s.init(rdr.RecordBatch().Schema(), keyNames, plan); err != nil {
		return nil, err
	}
	mem0 := &Unit{}
	s.units = []*Unit{mem0}
	var spill []*spillPart
	fail := func(err error) (*Source, error) {
		for _, p := range spill {
			p.discard()
		}
		s.Release()
		return nil, err
	}
	for more := true; more; more = rdr.Next() {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		rec, err := s.conform(ctx, rdr.RecordBatch())
		if err != nil {
			return fail(err)
		}
		s.rows += rec.NumRows()
		if spill == nil {
			mem0.recs = append(mem0.recs, rec)
			mem0.rows += rec.NumRows()
			mem0.bytes += datafile.RecordBytes(rec) + rec.NumRows()*joinOverheadPerRow
			if mem0.bytes <= budget {
				continue
			}
			// Over budget: partition what is held and everything that follows.
			if spill, err = s.startSpill(); err != nil {
				return fail(err)
			}
			held := mem0.recs
			mem0.recs = nil
			for i, r := range held {
				if err == nil {
					err = s.route(ctx, spill, r)
				}
				held[i].Release()
			}
			if err != nil {
				return fail(err)
			}
			continue
		}
		err = s.route(ctx, spill, rec)
		rec.Release()
		if err != nil {
			return fail(err)
		}
	}
	if err := rdr.Err(); err != nil {
		return fail(fmt.Errorf("table: reading the MERGE source: %w", err))
	}
	if spill == nil {
		return s, nil
	}
	s.units = nil
	for _, p := range spill {
		if err := p.close(); err != nil {
			return fail(err)
		}
		s.units = append(s.units, p.unit())
	}
	return s, nil
}

// init sets the source schema from the first batch's, finds the key columns and
// plans the conversions of the source columns to the table's types.
func (s *Source) init(in *arrow.Schema, keyNames []string, plan SourcePlan) error {
	s.inSchema = in
	table, convertAll, err := plan(in)
	if err != nil {
		return err
	}
	s.table = table
	fields := append([]arrow.Field(nil), in.Fields()...)
	s.convs = make([]conform.Func, len(fields))
	convert := make([]bool, len(fields))
	for _, k := range keyNames {
		j := value.MatchField(in.Fields(), k)
		if j < 0 {
			return fmt.Errorf("%w: MERGE key %q is not a source column (source columns: %s)", conform.ErrSchemaMismatch, k, columnNames(in))
		}
		s.keyIdx = append(s.keyIdx, j)
		convert[j] = true
	}
	for j, f := range in.Fields() {
		t := value.MatchField(table.Fields(), f.Name)
		if t < 0 || !(convert[j] || convertAll) {
			continue
		}
		tf := table.Field(t)
		conv, err := conform.Converter(f.Type, tf.Type, tf.Name)
		if err != nil {
			return fmt.Errorf("MERGE source column %q: %w", f.Name, err)
		}
		s.convs[j] = conv
		fields[j].Type = tf.Type
		if convertAll && !tf.Nullable {
			s.notNull = append(s.notNull, j)
		}
	}
	s.schema = arrow.NewSchema(fields, nil)
	return nil
}

// conform converts the planned columns of a source batch to the table's types. The
// caller releases the result.
func (s *Source) conform(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if !rec.Schema().Equal(s.inSchema) {
		return nil, fmt.Errorf("%w: MERGE source batches change schema: %s, then %s", conform.ErrSchemaMismatch, s.inSchema, rec.Schema())
	}
	base := s.rows
	rows := func(i int) int64 { return base + int64(i) }
	cols := make([]arrow.Array, rec.NumCols())
	defer releaseArrays(cols)
	for j := range cols {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out, err := conform.Apply(s.convs[j], s.mem, rec.Column(j), rows)
		if err != nil {
			return nil, fmt.Errorf("MERGE source: %w", err)
		}
		cols[j] = out
	}
	for _, j := range s.notNull {
		if i, ok := conform.FirstNullWhereValid(cols[j], nil); ok {
			return nil, fmt.Errorf("MERGE source: %w", conform.NullError(s.schema.Field(j).Name, rows(i)))
		}
	}
	return array.NewRecordBatch(s.schema, cols, rec.NumRows()), nil
}

// KeysOf is the key encoder of a batch of the source (Schema).
func (s *Source) KeysOf(rec arrow.RecordBatch) KeyEncoder {
	cols := make([]arrow.Array, len(s.keyIdx))
	for i, j := range s.keyIdx {
		cols[i] = rec.Column(j)
	}
	return KeyEncoder{cols: cols}
}

// spillPart is one key-hash partition's spill file.
type spillPart struct {
	f     *os.File
	bw    *bufio.Writer
	w     *ipc.Writer
	rows  int64
	bytes int64 // Arrow bytes of the rows (what loading them costs)
	seed  maphash.Seed
	cons  []hashConstraint
}

func (p *spillPart) close() error {
	if p.w == nil {
		return nil
	}
	err := p.w.Close()
	p.w = nil
	if err == nil {
		err = p.bw.Flush()
	}
	if err == nil {
		err = p.f.Close()
	}
	if err != nil {
		return fmt.Errorf("table: finishing MERGE spill file: %w", err)
	}
	return nil
}

// unit returns the closed partition as a source unit. An empty partition keeps no
// file but stays a unit: every key hash must belong to exactly one unit, so that a NOT
// MATCHED BY SOURCE clause sees each target row in exactly one pass.
func (p *spillPart) unit() *Unit {
	u := &Unit{rows: p.rows, bytes: p.bytes, cons: p.cons}
	if p.rows == 0 {
		p.discard()
	} else {
		u.path = p.f.Name()
	}
	return u
}

func (p *spillPart) discard() {
	if p.w != nil {
		p.w.Close()
		p.w = nil
	}
	p.f.Close()
	os.Remove(p.f.Name())
}

// startSpill creates the spill directory and one partition file per hash bucket.
func (s *Source) startSpill() ([]*spillPart, error) {
	if s.dir == "" {
		dir, err := os.MkdirTemp(s.spillTo, "skiplake-merge-*")
		if err != nil {
			return nil, fmt.Errorf("table: creating MERGE spill directory: %w", err)
		}
		s.dir = dir
	}
	return s.newParts(maphash.MakeSeed(), nil)
}

func (s *Source) newParts(seed maphash.Seed, parent []hashConstraint) ([]*spillPart, error) {
	parts := make([]*spillPart, mergeFanout)
	for i := range parts {
		f, err := os.CreateTemp(s.dir, "part-*.arrows")
		if err != nil {
			for _, p := range parts[:i] {
				p.discard()
			}
			return nil, fmt.Errorf("table: creating MERGE spill file: %w", err)
		}
		bw := bufio.NewWriterSize(f, 64<<10)
		cons := append(append([]hashConstraint(nil), parent...), hashConstraint{seed: seed, part: i})
		parts[i] = &spillPart{f: f, bw: bw, w: ipc.NewWriter(bw, ipc.WithSchema(s.schema), ipc.WithAllocator(s.mem), ipc.WithLZ4()),
			seed: seed, cons: cons}
	}
	return parts, nil
}

// route writes each row of rec to the partition its key hashes to.
func (s *Source) route(ctx context.Context, parts []*spillPart, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	seed := parts[0].seed
	enc := s.KeysOf(rec)
	idx := make([][]int32, len(parts))
	var buf []byte
	for i := 0; i < n; i++ {
		buf, _ = enc.Encode(buf[:0], i)
		p := partOf(seed, buf)
		idx[p] = append(idx[p], int32(i))
	}
	for p, rows := range idx {
		if len(rows) == 0 {
			continue
		}
		part, err := TakeRows(ctx, rec, rows, s.mem)
		if err != nil {
			return err
		}
		parts[p].rows += part.NumRows()
		parts[p].bytes += datafile.RecordBytes(part) + part.NumRows()*joinOverheadPerRow
		err = parts[p].w.Write(part)
		part.Release()
		if err != nil {
			return fmt.Errorf("table: writing MERGE spill file: %w", err)
		}
	}
	return nil
}

// Passes groups the source units into passes of at most budget bytes each (a unit
// over budget is split by a new hash first, up to maxSplitDepth times).
func (s *Source) Passes(ctx context.Context) ([][]*Unit, error) {
	var out [][]*Unit
	var cur []*Unit
	var curBytes int64
	var visit func(u *Unit, depth int) error
	visit = func(u *Unit, depth int) error {
		if u.bytes > s.budget && u.path != "" && depth < maxSplitDepth {
			subs, err := s.split(ctx, u)
			if err != nil {
				return err
			}
			for _, sub := range subs {
				if err := visit(sub, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		if len(cur) > 0 && curBytes+u.bytes > s.budget {
			out = append(out, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, u)
		curBytes += u.bytes
		return nil
	}
	for _, u := range s.units {
		if err := visit(u, 0); err != nil {
			return nil, err
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	s.units = nil
	for _, p := range out {
		s.units = append(s.units, p...)
	}
	return out, nil
}

// split re-partitions a spilled unit with a new seed (its file is deleted).
func (s *Source) split(ctx context.Context, u *Unit) ([]*Unit, error) {
	parts, err := s.newParts(maphash.MakeSeed(), u.cons)
	if err != nil {
		return nil, err
	}
	err = s.Load(ctx, u, func(rec arrow.RecordBatch) error { return s.route(ctx, parts, rec) })
	var out []*Unit
	for _, p := range parts {
		if cerr := p.close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		for _, p := range parts {
			p.discard()
		}
		return nil, err
	}
	os.Remove(u.path)
	for _, p := range parts {
		out = append(out, p.unit())
	}
	return out, nil
}

// Load calls fn with every batch of the unit (released after fn returns).
func (s *Source) Load(ctx context.Context, u *Unit, fn func(arrow.RecordBatch) error) error {
	if u.path == "" {
		for _, r := range u.recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	f, err := os.Open(u.path)
	if err != nil {
		return fmt.Errorf("table: opening MERGE spill file: %w", err)
	}
	defer f.Close()
	rd, err := ipc.NewReader(bufio.NewReaderSize(f, 64<<10), ipc.WithAllocator(s.mem))
	if err != nil {
		return fmt.Errorf("table: reading MERGE spill file: %w", err)
	}
	defer rd.Release()
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(rd.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rd.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("table: reading MERGE spill file: %w", err)
	}
	return nil
}

// TakeRows returns the rows of rec at the given indices. The caller releases it.
func TakeRows(ctx context.Context, rec arrow.RecordBatch, rows []int32, mem memory.Allocator) (arrow.RecordBatch, error) {
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.AppendValues(rows, nil)
	idx := ib.NewInt32Array()
	defer idx.Release()
	cols := make([]arrow.Array, rec.NumCols())
	defer releaseArrays(cols)
	for i := range cols {
		c, err := compute.TakeArray(compute.WithAllocator(ctx, mem), rec.Column(i), idx)
		if err != nil {
			return nil, fmt.Errorf("table: gathering rows: %w", err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(rows))), nil
}

// releaseArrays releases the non-nil arrays of as.
func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// columnNames lists the schema's column names for an error message.
func columnNames(schema *arrow.Schema) string {
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
