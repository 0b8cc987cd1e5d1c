package table_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// The DML benchmark (BENCHMARKS.md, section "DML"): an 8-column table written as F
// appends of N/F rows in key order (the newest keys in the newest files, as a table
// fed by a change stream), with a Bloom index on the key and deletion vectors enabled.
// Each operation runs in a child process on a fresh hard-linked copy of the table, so
// that peak RSS is the operation's alone:
//
//   - upsert-cdc: 1,000 updates of keys from the newest 1% plus 1,000 new keys;
//   - upsert-random: 1,000 uniformly random existing keys;
//   - delete-1pct: DELETE of 1% of the rows by a key range (the clustering column)
//     that straddles two files;
//   - upsert-big: a source of 10% of the table's rows (half uniformly random
//     existing keys, half new keys), generated while it is read, with a 64 MiB
//     MERGE memory budget (SKIPLAKE_DML_BENCH_MERGE_MIB): the source is split by key
//     hash and merged in passes, so the source rows held follow the budget, not the
//     source or the table;
//
// each with deletion vectors (dv) and copy-on-write (cow), and rewrite-all, the cost of
// rewriting the whole table once (scan every row, overwrite): what an upsert that loads
// the table costs at least.
//
// SKIPLAKE_DML_BENCH_ROWS=10000000 go test ./table -run TestDMLBenchReport -v -timeout 2h
// (SKIPLAKE_DML_BENCH_FILES, default 100; SKIPLAKE_DML_BENCH_RUNS, default 3;
// SKIPLAKE_DML_BENCH_DIR keeps the base table between invocations;
// SKIPLAKE_DML_BENCH_HEAPPROFILE=path makes each child write a heap profile at its
// peak live heap, see peakHeapProfile). Runs are interleaved
// (every operation once per round); the report gives medians and the ratio to
// rewrite-all.

var dmlBenchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "customer", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "comment", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
}, nil)

// dmlBenchBatch makes rows with keys ids (the other columns pseudo-random from seed).
func dmlBenchBatch(ids []int64, seed uint64) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := array.NewRecordBuilder(memory.DefaultAllocator, dmlBenchSchema)
	defer b.Release()
	statuses := []string{"open", "shipped", "returned", "cancelled"}
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + id*1000))
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(1_000_000))
		b.Field(3).(*array.Int32Builder).Append(int32(rng.IntN(100)))
		b.Field(4).(*array.Float64Builder).Append(float64(rng.IntN(1_000_000)) / 100)
		b.Field(5).(*array.StringBuilder).Append(statuses[rng.IntN(len(statuses))])
		if rng.IntN(10) == 0 {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.StringBuilder).Append("note " + strconv.Itoa(rng.IntN(100_000)))
		}
		b.Field(7).(*array.Date32Builder).Append(arrow.Date32(19_000 + id/100_000))
	}
	return b.NewRecordBatch()
}

// dmlBenchBase builds (or reuses) the base table of rows rows in files appends.
func dmlBenchBase(t testing.TB, dir string, rows, files int) {
	ctx := context.Background()
	if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err == nil {
		return
	}
	tb, err := table.CreateURL(ctx, dir, dmlBenchSchema, table.CreateOptions{Properties: map[string]string{
		log.PropEnableDeletionVectors: "true", log.PropBloomFilterColumns: "id"}})
	if err != nil {
		t.Fatal(err)
	}
	per := rows / files
	for f := 0; f < files; f++ {
		var recs []arrow.RecordBatch
		for start := f * per; start < (f+1)*per; start += 64 << 10 {
			end := min(start+64<<10, (f+1)*per)
			ids := make([]int64, end-start)
			for i := range ids {
				ids[i] = int64(start + i)
			}
			recs = append(recs, dmlBenchBatch(ids, uint64(start)))
		}
		_, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: 1 << 40})
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// linkCopy makes dst a copy of src whose files are hard links (writers never modify a
// file in place, so the copy is independent).
func linkCopy(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return os.Link(p, target)
	})
}

// dmlBenchResult is what a child reports.
type dmlBenchResult struct {
	Op           string  `json:"op"`
	WallSeconds  float64 `json:"wallSeconds"`
	FilesRead    int     `json:"filesRead"`
	FilesTotal   int     `json:"filesTotal"`
	FilesRemoved int     `json:"filesRemoved"`
	Rewritten    int     `json:"rewritten"`
	DVsWritten   int     `json:"dvsWritten"`
	BytesWritten int64   `json:"bytesWritten"`
	Rows         int64   `json:"rows"`
	Passes       int     `json:"passes"`
	MaxRSSKiB    int64   `json:"maxRSSKiB"`
	CPUSeconds   float64 `json:"cpuSeconds"` // user + system, from the parent's wait
}

// dmlBenchOp runs one operation on the table at dir and reports it (mergeMiB: the
// MERGE memory budget of upsert-big).
func dmlBenchOp(ctx context.Context, dir, op string, rows, mergeMiB int) (*dmlBenchResult, error) {
	tb, err := table.OpenURL(ctx, dir)
	if err != nil {
		return nil, err
	}
	mode, _ := strings.CutPrefix(op[strings.LastIndex(op, "-")+1:], "")
	opts := table.DMLOptions{RewriteFiles: mode == "cow"}
	start := time.Now()
	var res *table.DMLResult
	switch {
	case strings.HasPrefix(op, "upsert-cdc"):
		newest := int64(rows) - int64(rows)/100
		rng := rand.New(rand.NewPCG(1, 2))
		seen := map[int64]bool{}
		var ids []int64
		for len(ids) < 1000 {
			id := newest + rng.Int64N(int64(rows)/100)
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		for i := 0; i < 1000; i++ {
			ids = append(ids, int64(rows)+int64(i))
		}
		res, err = dmlBenchMerge(ctx, tb, ids, opts)
	case strings.HasPrefix(op, "upsert-random"):
		rng := rand.New(rand.NewPCG(3, 4))
		seen := map[int64]bool{}
		var ids []int64
		for len(ids) < 1000 {
			id := rng.Int64N(int64(rows))
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		res, err = dmlBenchMerge(ctx, tb, ids, opts)
	case strings.HasPrefix(op, "upsert-big"):
		mo := table.Upsert("id")
		mo.DMLOptions = opts
		mo.MemoryBudget = int64(mergeMiB) << 20
		src := newDMLBenchSource(int64(rows), int64(rows)/10)
		defer src.Release()
		res, err = tb.Merge(ctx, src, mo)
	case strings.HasPrefix(op, "delete-1pct"):
		lo := int64(rows)/2 + int64(rows)/200
		res, err = tb.Delete(ctx, fmt.Sprintf("id >= %d AND id < %d", lo, lo+int64(rows)/100), opts)
	case op == "rewrite-all":
		return dmlBenchRewriteAll(ctx, tb, start)
	default:
		return nil, fmt.Errorf("unknown op %q", op)
	}
	if err != nil {
		return nil, err
	}
	return &dmlBenchResult{Op: op, WallSeconds: time.Since(start).Seconds(), FilesRead: res.FilesRead, FilesTotal: res.FilesConsidered,
		FilesRemoved: res.FilesRemoved, Rewritten: res.FilesRewritten, DVsWritten: res.DeletionVectorsAdded + res.DeletionVectorsUpdated,
		BytesWritten: res.BytesAdded + res.DeletionVectorBytes, Rows: res.RowsUpdated + res.RowsInserted + res.RowsDeleted, Passes: res.Passes}, nil
}

// dmlBenchSource is a MERGE source of n rows made batch by batch as it is read (so
// the child holds no copy of it): even rows update existing keys spread over the whole
// table (j*dmlBenchStride mod the table's rows: distinct while the row count is a
// product of 2s and 5s, as the benchmark's are, since the stride is divisible by
// neither), odd rows insert new keys above the table's.
type dmlBenchSource struct {
	tableRows, n, done int64
	cur                arrow.RecordBatch
}

const dmlBenchStride = 7_919_993

func newDMLBenchSource(tableRows, n int64) *dmlBenchSource {
	return &dmlBenchSource{tableRows: tableRows, n: n}
}

func (s *dmlBenchSource) Retain() {}
func (s *dmlBenchSource) Release() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}
func (s *dmlBenchSource) Schema() *arrow.Schema { return dmlBenchSchema }
func (s *dmlBenchSource) Err() error            { return nil }
func (s *dmlBenchSource) RecordBatch() arrow.RecordBatch {
	return s.cur
}

// Record is RecordBatch (array.RecordReader's deprecated name).
func (s *dmlBenchSource) Record() arrow.RecordBatch { return s.cur }

func (s *dmlBenchSource) Next() bool {
	s.Release()
	if s.done >= s.n {
		return false
	}
	ids := make([]int64, min(64<<10, s.n-s.done))
	for i := range ids {
		k := s.done + int64(i)
		if k%2 == 1 {
			ids[i] = s.tableRows + k/2
			continue
		}
		ids[i] = (k / 2) * dmlBenchStride % s.tableRows
	}
	s.cur = dmlBenchBatch(ids, uint64(1000+s.done))
	s.done += int64(len(ids))
	return true
}

func dmlBenchMerge(ctx context.Context, tb *table.Table, ids []int64, opts table.DMLOptions) (*table.DMLResult, error) {
	rec := dmlBenchBatch(ids, 777)
	defer rec.Release()
	rdr, err := array.NewRecordReader(dmlBenchSchema, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	mo := table.Upsert("id")
	mo.DMLOptions = opts
	return tb.Merge(ctx, rdr, mo)
}

// dmlBenchRewriteAll reads every row and overwrites the table with them in one
// commit: the I/O any whole-table rewrite pays.
func dmlBenchRewriteAll(ctx context.Context, tb *table.Table, start time.Time) (*dmlBenchResult, error) {
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		return nil, err
	}
	sc, err := snap.Scan(ctx)
	if err != nil {
		return nil, err
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	wr, err := tb.Write(ctx, rd.RecordReader(), table.WriteOptions{Overwrite: true})
	if err != nil {
		return nil, err
	}
	return &dmlBenchResult{Op: "rewrite-all", WallSeconds: time.Since(start).Seconds(), FilesRead: snap.Log().NumFiles(), FilesTotal: snap.Log().NumFiles(),
		FilesRemoved: wr.FilesRemoved, Rewritten: wr.FilesRemoved, BytesWritten: wr.BytesWritten, Rows: wr.RowsWritten}, nil
}

const dmlBenchChildEnv = "SKIPLAKE_DML_BENCH_CHILD"

// peakRSSKiB is this process's peak resident set (VmHWM in /proc/self/status; 0 where
// there is none). It is read by the process itself because the rusage a parent gets
// for a child started with vfork/exec (as os/exec does) also counts the parent's
// resident set at the time of the exec.
func peakRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// TestDMLBenchChild is the child process of TestDMLBenchReport (it does nothing
// otherwise): it runs one operation and prints its result as JSON.
func TestDMLBenchChild(t *testing.T) {
	spec := os.Getenv(dmlBenchChildEnv)
	if spec == "" {
		t.Skip("child process of TestDMLBenchReport")
	}
	parts := strings.SplitN(spec, "|", 3)
	rows, _ := strconv.Atoi(parts[2])
	if path := os.Getenv("SKIPLAKE_DML_BENCH_HEAPPROFILE"); path != "" {
		stop := peakHeapProfile(path)
		defer stop()
	}
	res, err := dmlBenchOp(context.Background(), parts[0], parts[1], rows, proofEnvInt(t, "SKIPLAKE_DML_BENCH_MERGE_MIB", 64))
	if err != nil {
		t.Fatal(err)
	}
	res.MaxRSSKiB = peakRSSKiB()
	js, _ := json.Marshal(res)
	fmt.Println("RESULT " + string(js))
}

// peakHeapProfile watches the live heap (after each GC) and writes a heap profile to
// path whenever it grows 5% past the largest seen, so that path ends up holding the
// profile at the peak (the profile -memprofile writes is the one at the end). The
// returned function stops the watch.
func peakHeapProfile(path string) func() {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak+peak/20 {
				peak = v
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
					fmt.Fprintf(os.Stderr, "heap profile at live heap %d MiB\n", v>>20)
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

func TestDMLBenchReport(t *testing.T) {
	rows := proofEnvInt(t, "SKIPLAKE_DML_BENCH_ROWS", -1)
	if rows < 0 {
		t.Skip("set SKIPLAKE_DML_BENCH_ROWS to run the DML benchmark")
	}
	files := proofEnvInt(t, "SKIPLAKE_DML_BENCH_FILES", 100)
	runs := proofEnvInt(t, "SKIPLAKE_DML_BENCH_RUNS", 3)
	root := os.Getenv("SKIPLAKE_DML_BENCH_DIR")
	if root == "" {
		root = t.TempDir()
	}
	base := filepath.Join(root, fmt.Sprintf("base-%d-%d", rows, files))
	t0 := time.Now()
	dmlBenchBase(t, base, rows, files)
	var size int64
	var nfiles int
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
				nfiles++
			}
		}
		return nil
	})
	t.Logf("base table: %d rows, %d files, %.1f MiB (%.2f MiB per file), built in %s", rows, nfiles, float64(size)/(1<<20), float64(size)/(1<<20)/float64(nfiles), time.Since(t0).Round(time.Second))
	ops := []string{"upsert-cdc-dv", "upsert-cdc-cow", "upsert-random-dv", "upsert-random-cow", "delete-1pct-dv", "delete-1pct-cow", "upsert-big-dv", "rewrite-all"}
	if s := os.Getenv("SKIPLAKE_DML_BENCH_OPS"); s != "" {
		ops = strings.Split(s, ",")
	}
	results := map[string][]*dmlBenchResult{}
	for r := 0; r < runs; r++ {
		for _, op := range ops {
			dir := filepath.Join(root, fmt.Sprintf("run-%s-%d", op, r))
			os.RemoveAll(dir)
			if err := linkCopy(base, dir); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestDMLBenchChild$", "-test.v")
			cmd.Env = append(os.Environ(), dmlBenchChildEnv+"="+dir+"|"+op+"|"+strconv.Itoa(rows))
			out, err := cmd.CombinedOutput()
			os.RemoveAll(dir)
			if err != nil {
				t.Fatalf("%s: %v\n%s", op, err, out)
			}
			var res dmlBenchResult
			for _, line := range strings.Split(string(out), "\n") {
				if js, ok := strings.CutPrefix(line, "RESULT "); ok {
					if err := json.Unmarshal([]byte(js), &res); err != nil {
						t.Fatal(err)
					}
				}
			}
			res.CPUSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			results[op] = append(results[op], &res)
		}
	}
	median := func(op string, f func(*dmlBenchResult) float64) float64 {
		var v []float64
		for _, r := range results[op] {
			v = append(v, f(r))
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	wall := func(r *dmlBenchResult) float64 { return r.WallSeconds }
	ref := 0.0
	if _, ok := results["rewrite-all"]; ok {
		ref = median("rewrite-all", wall)
	}
	var b strings.Builder
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "\nload average at the end: %s", load)
	fmt.Fprintf(&b, "\n| operation | rows changed | passes | files read / total | files removed (rewritten) | DVs written | bytes written | wall s (median of %d) | vs rewrite-all | CPU s | peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|---|\n", runs)
	for _, op := range ops {
		r := results[op][0]
		ratio := "-"
		if ref > 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*median(op, wall)/ref)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d / %d | %d (%d) | %d | %.1f MiB | %.2f | %s | %.1f | %.0f |\n", op, r.Rows, r.Passes, r.FilesRead, r.FilesTotal, r.FilesRemoved, r.Rewritten, r.DVsWritten,
			float64(r.BytesWritten)/(1<<20), median(op, wall), ratio, median(op, func(r *dmlBenchResult) float64 { return r.CPUSeconds }),
			median(op, func(r *dmlBenchResult) float64 { return float64(r.MaxRSSKiB) / 1024 }))
	}
	t.Log(b.String())
}
