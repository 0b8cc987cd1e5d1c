package benchskip

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestWriteLineitemCDC writes the inputs of the CDC benchmark (BENCHMARKS.md, "DML
// keeps the layout") into $BENCHSKIP_CDC: lineitem.parquet, TPC-H lineitem at
// scale factor BENCHSKIP_SF (default 0.1) in insertion order, and cdc.parquet, a
// change batch of 1% of its rows updated — quantity, price, status and comment
// changed, and for every other row the three dates moved by 1 to 30 days (a
// shipping correction, which moves the row in a layout clustered on l_shipdate) —
// plus 0.1% new rows (new order keys). Merge it with
// `skiplake merge T cdc.parquet --on l_orderkey,l_linenumber`. Skipped unless
// BENCHSKIP_CDC is set.
func TestWriteLineitemCDC(t *testing.T) {
	dir := os.Getenv("BENCHSKIP_CDC")
	if dir == "" {
		t.Skip("set BENCHSKIP_CDC=<dir> to write lineitem.parquet and cdc.parquet")
	}
	sf := 0.1
	if s := os.Getenv("BENCHSKIP_SF"); s != "" {
		var err error
		if sf, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	mem := memory.DefaultAllocator
	rec, err := GenerateLineitem(mem, sf, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeParquet(t, filepath.Join(dir, "lineitem.parquet"), rec)

	n := int(rec.NumRows())
	rng := rand.New(rand.NewPCG(28, 1))
	perm := rng.Perm(n)
	updates := perm[:n/100]
	inserts := perm[n/100 : n/100+n/1000]
	slices.Sort(updates)
	changed := take(t, ctx, rec, updates)
	defer changed.Release()
	upd := cdcUpdate(t, changed, rng)
	defer upd.Release()
	base := take(t, ctx, rec, inserts)
	defer base.Release()
	maxKey := int64(0)
	for _, k := range rec.Column(liOrderkey).(*array.Int64).Int64Values() {
		maxKey = max(maxKey, k)
	}
	ins := cdcInsert(t, base, maxKey)
	defer ins.Release()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{upd, ins})
	defer tbl.Release()
	f, err := os.Create(filepath.Join(dir, "cdc.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	if err := pqarrow.WriteTable(tbl, f, 1<<20, props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	t.Logf("lineitem: %d rows; cdc: %d updates (%d with moved dates), %d inserts", n, upd.NumRows(), (upd.NumRows()+1)/2, ins.NumRows())
}

func writeParquet(t *testing.T, path string, rec arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 1 << 20
	for off := int64(0); off < rec.NumRows(); off += chunk {
		part := rec.NewSlice(off, min(off+chunk, rec.NumRows()))
		err := w.Write(part)
		part.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func take(t *testing.T, ctx context.Context, rec arrow.RecordBatch, rows []int) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for _, r := range rows {
		b.Append(int64(r))
	}
	idx := b.NewArray()
	defer idx.Release()
	out, err := compute.TakeArray(ctx, array.NewStructData(array.RecordToStructArray(rec).Data()), idx)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	st := out.(*array.Struct)
	cols := make([]arrow.Array, st.NumField())
	for i := range cols {
		cols[i] = st.Field(i)
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(rows)))
}

// replace returns rec with column i replaced by col (which it releases).
func replace(rec arrow.RecordBatch, i int, col arrow.Array) arrow.RecordBatch {
	cols := slices.Clone(rec.Columns())
	cols[i] = col
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	col.Release()
	return out
}

// cdcUpdate changes quantity (+1), extended price (+1%), line status (flipped)
// and comment, and moves the three dates of every other row by 1..30 days.
func cdcUpdate(t *testing.T, rec arrow.RecordBatch, rng *rand.Rand) arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	n := int(rec.NumRows())
	qb := array.NewDecimal128Builder(mem, lineitemDecimal)
	pb := array.NewDecimal128Builder(mem, lineitemDecimal)
	q, p := rec.Column(liQuantity).(*array.Decimal128), rec.Column(liExtendedprice).(*array.Decimal128)
	for i := 0; i < n; i++ {
		qb.Append(q.Value(i).Add(decimal128.FromI64(100)))
		v := p.Value(i)
		pct, _ := v.Div(decimal128.FromI64(100))
		pb.Append(v.Add(pct))
	}
	sb := array.NewStringBuilder(mem)
	cb := array.NewStringBuilder(mem)
	st := rec.Column(liLinestatus).(*array.String)
	for i := 0; i < n; i++ {
		if st.Value(i) == "O" {
			sb.Append("F")
		} else {
			sb.Append("O")
		}
		cb.Append("cdc correction")
	}
	shift := make([]int32, n)
	for i := range shift {
		if i%2 == 0 {
			shift[i] = int32(1 + rng.IntN(30))
		}
	}
	dates := func(col int) arrow.Array {
		d := rec.Column(col).(*array.Date32)
		b := array.NewDate32Builder(mem)
		defer b.Release()
		for i := 0; i < n; i++ {
			b.Append(d.Value(i) + arrow.Date32(shift[i]))
		}
		return b.NewArray()
	}
	out := rec
	out.Retain()
	for _, c := range []struct {
		i   int
		arr arrow.Array
	}{{liQuantity, qb.NewArray()}, {liExtendedprice, pb.NewArray()}, {liLinestatus, sb.NewArray()}, {liComment, cb.NewArray()},
		{liShipdate, dates(liShipdate)}, {liCommitdate, dates(liCommitdate)}, {liReceiptdate, dates(liReceiptdate)}} {
		next := replace(out, c.i, c.arr)
		out.Release()
		out = next
	}
	qb.Release()
	pb.Release()
	sb.Release()
	cb.Release()
	return out
}

// cdcInsert gives the rows new order keys above maxKey (one order per row, line 1).
func cdcInsert(t *testing.T, rec arrow.RecordBatch, maxKey int64) arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	kb := array.NewInt64Builder(mem)
	lb := array.NewInt32Builder(mem)
	for i := 0; i < int(rec.NumRows()); i++ {
		kb.Append(maxKey + 1 + int64(i))
		lb.Append(1)
	}
	a := replace(rec, liOrderkey, kb.NewArray())
	b := replace(a, liLinenumber, lb.NewArray())
	a.Release()
	kb.Release()
	lb.Release()
	return b
}
