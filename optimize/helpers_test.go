package optimize

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/storage"
)

// testTable is a Delta table built directly with log + datafile + stats (package
// table imports this package, so tests cannot use it).
type testTable struct {
	store    storage.Storage
	lg       *log.Log
	dataSch  *arrow.Schema // data columns (file schema)
	partCol  string        // "" for an unpartitioned table
	fileNo   int
	statsCfg stats.Config
	// writerOpts are the options writeFile writes with (zero: the defaults).
	writerOpts datafile.WriterOptions
}

// dataSchema is the data columns of generated tables: an id, two clustering
// candidates, a nullable float and a string with a long shared prefix.
var dataSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "y", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func newTestTable(t testing.TB, partCol string, props map[string]string) *testTable {
	t.Helper()
	return newTestTableOn(t, storage.NewMemory(), partCol, props)
}

func newTestTableOn(t testing.TB, store storage.Storage, partCol string, props map[string]string) *testTable {
	t.Helper()
	return newTestTableSchema(t, store, dataSchema, partCol, props)
}

func newTestTableSchema(t testing.TB, store storage.Storage, sch *arrow.Schema, partCol string, props map[string]string) *testTable {
	t.Helper()
	fields := append([]arrow.Field(nil), sch.Fields()...)
	var parts []string
	if partCol != "" {
		fields = append(fields, arrow.Field{Name: partCol, Type: arrow.BinaryTypes.String, Nullable: true})
		parts = []string{partCol}
	}
	st, err := log.FromArrow(arrow.NewSchema(fields, nil))
	if err != nil {
		t.Fatal(err)
	}
	if props == nil {
		props = map[string]string{}
	}
	lg := log.New(store)
	md := log.Metadata{ID: uuid.NewString(), Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: st.JSON(), PartitionColumns: nonNil(parts), Configuration: props}
	if _, err := lg.Create(context.Background(), md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, log.CommitInfo{Operation: "CREATE TABLE"}); err != nil {
		t.Fatal(err)
	}
	return &testTable{store: store, lg: lg, dataSch: sch, partCol: partCol, statsCfg: log.ParseTableProperties(props).StatsConfig()}
}

// genRecord makes n rows: id from start, x and y uniform in [0, 1e6), f with 10%
// nulls, s with a long shared prefix.
func genRecord(n int, start int64, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := array.NewRecordBuilder(memory.DefaultAllocator, dataSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(start + int64(i))
		b.Field(1).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
		if rng.IntN(10) == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Float64Builder).Append(rng.Float64() * 100)
		}
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("customer-shared-prefix-0000000000-%06d", rng.IntN(5000)))
	}
	return b.NewRecordBatch()
}

// writeFile stores rec as one data file in partition part and returns its add.
func (tt *testTable) writeFile(t testing.TB, part *string, rec arrow.RecordBatch, modTime int64) *log.Add {
	t.Helper()
	var buf bytes.Buffer
	w, err := datafile.NewWriter(&buf, tt.dataSch, tt.writerOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	coll, err := stats.NewCollector(tt.dataSch, nil, tt.statsCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := coll.Update(rec); err != nil {
		t.Fatal(err)
	}
	js, err := coll.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	tt.fileNo++
	name := fmt.Sprintf("part-%05d-%s.c000.zstd.parquet", tt.fileNo, uuid.NewString())
	pv := map[string]*string{}
	if tt.partCol != "" {
		pv[tt.partCol] = part
		dir := tt.partCol + "=__HIVE_DEFAULT_PARTITION__"
		if part != nil {
			dir = tt.partCol + "=" + *part
		}
		name = dir + "/" + name
	}
	if err := tt.store.PutIfAbsent(context.Background(), name, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return &log.Add{Path: name, PartitionValues: pv, Size: res.Size, ModificationTime: modTime, DataChange: true, Stats: js}
}

// appendFiles commits one new file per record (in partition parts[i % len(parts)]).
func (tt *testTable) appendFiles(t testing.TB, recs []arrow.RecordBatch, parts []*string) int64 {
	t.Helper()
	snap, err := tt.lg.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	txn := snap.NewTransaction(log.TxnOptions{IsolationLevel: log.WriteSerializable})
	base := time.Now().UnixMilli()
	for i, r := range recs {
		var part *string
		if len(parts) > 0 {
			part = parts[i%len(parts)]
		}
		txn.Add(tt.writeFile(t, part, r, base+int64(i)))
	}
	v, err := txn.Commit(context.Background(), log.CommitInfo{Operation: "WRITE"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (tt *testTable) snapshot(t testing.TB) *log.Snapshot {
	t.Helper()
	snap, err := tt.lg.Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// allRows is rows (deletion vectors are applied by readFile).
func (tt *testTable) allRows(t testing.TB) []string { return tt.rows(t) }

// rows returns every live row as a string (data columns then the partition value),
// sorted: the multiset O1 compares.
func (tt *testTable) rows(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, a := range tt.snapshot(t).Files() {
		pv := ""
		if tt.partCol != "" {
			v, isNull := a.PartitionValue(tt.partCol)
			pv = "|" + v
			if isNull {
				pv = "|<null>"
			}
		}
		tt.readRecords(t, a, func(rec arrow.RecordBatch) {
			for i := 0; i < int(rec.NumRows()); i++ {
				var sb strings.Builder
				for c := 0; c < int(rec.NumCols()); c++ {
					sb.WriteString(rec.Column(c).ValueStr(i))
					sb.WriteByte('|')
				}
				out = append(out, sb.String()+pv)
			}
		})
	}
	sort.Strings(out)
	return out
}

func (tt *testTable) readRecords(t testing.TB, a *log.Add, fn func(arrow.RecordBatch)) {
	t.Helper()
	err := readFile(context.Background(), tt.store, a, tt.dataSch, memory.DefaultAllocator, func(rec arrow.RecordBatch, _ int64) error {
		fn(rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkStats recomputes every live file's statistics from its rows and compares
// them with the add action's stats JSON.
func (tt *testTable) checkStats(t testing.TB) {
	t.Helper()
	for _, a := range tt.snapshot(t).Files() {
		coll, err := stats.NewCollector(tt.dataSch, nil, tt.statsCfg)
		if err != nil {
			t.Fatal(err)
		}
		tt.readRecords(t, a, func(rec arrow.RecordBatch) {
			if err := coll.Update(rec); err != nil {
				t.Fatal(err)
			}
		})
		want, err := coll.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, want, a.Stats) {
			t.Errorf("file %s: stats %s, recomputed %s", a.Path, a.Stats, want)
		}
	}
}

func jsonEqual(t testing.TB, a, b string) bool {
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("bad JSON %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// fileBox is the [min,max] of x and y of one file, from its stats JSON.
type fileBox struct{ minX, maxX, minY, maxY float64 }

func boxes(t testing.TB, snap *log.Snapshot) []fileBox {
	t.Helper()
	var out []fileBox
	for _, a := range snap.Files() {
		f, err := stats.Parse(a.Stats, dataSchema)
		if err != nil {
			t.Fatal(err)
		}
		b := fileBox{math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)}
		if c := f.Column("x"); c != nil && !c.Min.IsNull() && !c.Max.IsNull() {
			b.minX, b.maxX = float64(c.Min.AsInt64()), float64(c.Max.AsInt64())
		}
		if c := f.Column("y"); c != nil && !c.Min.IsNull() && !c.Max.IsNull() {
			b.minY, b.maxY = float64(c.Min.AsInt64()), float64(c.Max.AsInt64())
		}
		out = append(out, b)
	}
	return out
}

// filesHit counts files whose box intersects [x0,x1]×[y0,y1].
func filesHit(bs []fileBox, x0, x1, y0, y1 float64) int {
	n := 0
	for _, b := range bs {
		if b.maxX >= x0 && b.minX <= x1 && b.maxY >= y0 && b.minY <= y1 {
			n++
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// objects lists the table's data files in storage (everything outside _delta_log).
func (tt *testTable) objects(t testing.TB) []string {
	t.Helper()
	objs, err := tt.store.List(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		if !strings.HasPrefix(o.Path, "_delta_log/") {
			out = append(out, o.Path)
		}
	}
	return out
}

func logTxn() log.TxnOptions { return log.TxnOptions{IsolationLevel: log.WriteSerializable} }

func commitWrite() log.CommitInfo { return log.CommitInfo{Operation: "WRITE"} }

// recs returns n generated batches of rows rows each (the caller does not release them;
// they are small).
func (tt *testTable) recs(n, rows int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for i := range n {
		out = append(out, genRecord(rows, int64(i*rows), uint64(i+1)))
	}
	return out
}
