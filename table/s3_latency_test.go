package table_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// latencyDelay is the fixed delay the proxy adds to every request: a round trip to an
// object store in another zone or region.
const latencyDelay = 20 * time.Millisecond

// latencyInFlight is the limit on requests in flight, for the scan and the baseline.
const latencyInFlight = 16

// viaProxy rewrites an S3 test location to go through the proxy.
func viaProxy(loc string, p *cloudtest.Proxy) string {
	q := strings.IndexByte(loc, '?')
	prefix := strings.TrimPrefix(loc[:q], "s3://"+cloudtest.Bucket+"/")
	return cloudtest.S3URL(p.URL, cloudtest.Bucket, prefix)
}

// TestS3LatencySelectiveScan measures a selective scan of a 1,000-file table (with a
// checkpoint) in S3 behind a proxy that adds 20 ms to every request: skiplake, which
// skips files on the log's statistics, against a baseline that opens every file's
// footer (one request per file, as a reader without log statistics must), both with
// at most 16 requests in flight. It asserts the request counts (deterministic) and
// logs the wall times; BENCHMARKS.md quotes them. SKIPLAKE_LATENCY_FILES overrides
// the number of files.
func TestS3LatencySelectiveScan(t *testing.T) {
	ctx := context.Background()
	loc, tb, batches, nfiles := latencyTable(t, "SKIPLAKE_LATENCY_FILES", 1000)
	if _, err := tb.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	p := cloudtest.NewProxy(t, cloudtest.S3.Endpoint(t), cloudtest.ProxyOptions{Delay: latencyDelay})
	ploc := viaProxy(loc, p)
	target := int64(batches*437/1000*latencyRowsPerFile + 42)
	filter := fmt.Sprintf("id = %d", target)

	// skiplake: open, plan on the log's statistics, read the one file.
	p.Reset()
	start := time.Now()
	ptb, err := table.OpenURL(ctx, ploc)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(t, ptb, table.WithFilter(filter), table.WithParallelism(latencyInFlight))
	skTime := time.Since(start)
	skReq, skBytes := p.Counts()
	skTotal := p.Total()
	if len(got) != 1 || got[0] != target {
		t.Fatalf("skiplake scan returned %v, want [%d]", got, target)
	}

	// Baseline: the same log load, then every file's footer (one request each on S3:
	// the suffix read), row groups chosen on footer statistics, with the same limit.
	p.Reset()
	start = time.Now()
	btb, err := table.OpenURL(ctx, ploc)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := btb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	files := snap.Log().Files()
	matches := make([]int, len(files))
	storage.ForEachLimit(ctx, len(files), latencyInFlight, func(ctx context.Context, i int) {
		matches[i] = footerMatches(t, btb.Storage(), files[i].Path, target)
	})
	hits := 0
	for _, m := range matches {
		hits += m
	}
	baseTime := time.Since(start)
	baseReq, baseBytes := p.Counts()
	baseTotal := p.Total()
	if hits != 1 {
		t.Fatalf("baseline found %d matching row groups, want 1", hits)
	}
	t.Logf("selective scan, %d files with a checkpoint, %v per request, %d in flight:", nfiles, latencyDelay, latencyInFlight)
	t.Logf("  skiplake: %v, %d requests %v, %d bytes", skTime.Round(time.Millisecond), skTotal, skReq, skBytes)
	t.Logf("  baseline (every footer): %v, %d requests %v, %d bytes", baseTime.Round(time.Millisecond), baseTotal, baseReq, baseBytes)
	t.Logf("  ratio: %.1fx fewer requests, %.1fx less wall time", float64(baseTotal)/float64(skTotal), float64(baseTime)/float64(skTime))
	// skiplake's requests do not grow with the number of files (log: _last_checkpoint,
	// listing, checkpoint, last commit; data: the one matching file), the baseline's do.
	if skTotal > 8 || baseTotal < int64(nfiles) {
		t.Fatalf("requests: skiplake %d (want <= 8 whatever the table size), baseline %d (want >= %d)", skTotal, baseTotal, nfiles)
	}

	// A program measures the same through the ScanReport: loading the snapshot and the
	// scan's own requests, kind by kind, are what went over the wire.
	p.Reset()
	rsnap, err := ptb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := rsnap.Scan(ctx, table.WithFilter(filter), table.WithParallelism(latencyInFlight))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rd.Next() {
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	rd.Release()
	rep := rd.Report()
	if rep.Requests == nil || rep.SnapshotRequests == nil {
		t.Fatalf("the report of a scan on S3 has no request counts: %+v", rep)
	}
	sum := rep.SnapshotRequests.Add(*rep.Requests)
	wire, _ := p.Counts()
	if sum.GET != wire["GET"] || sum.HEAD != wire["HEAD"] || sum.LIST != wire["LIST"] || sum.Total() != p.Total() {
		t.Fatalf("report: snapshot %+v + scan %+v; the wire saw %v", *rep.SnapshotRequests, *rep.Requests, wire)
	}
	t.Logf("  ScanReport: loading the snapshot %d requests, the scan %d (%d bytes read)", rep.SnapshotRequests.Total(), rep.Requests.Total(), rep.Requests.BytesRead)
}

// footerMatches opens one data file, reads its footer and returns how many row groups
// may hold id == target by their statistics.
func footerMatches(t *testing.T, st storage.Storage, path string, target int64) int {
	f, err := st.Open(context.Background(), path)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer f.Close()
	r, err := file.NewParquetReader(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		t.Error(err)
		return 0
	}
	defer r.Close()
	n := 0
	md := r.MetaData()
	col := md.Schema.ColumnIndexByName("id")
	for g := range md.NumRowGroups() {
		cc, err := md.RowGroup(g).ColumnChunk(col)
		if err != nil {
			t.Error(err)
			return 0
		}
		stats, err := cc.Statistics()
		if err != nil || stats == nil || !stats.HasMinMax() {
			n++
			continue
		}
		s := stats.(*metadata.Int64Statistics)
		if s.Min() <= target && target <= s.Max() {
			n++
		}
	}
	return n
}

// TestS3LatencySnapshot100k loads the snapshot of a table with 100,000 files and a
// checkpoint through the 20 ms proxy and counts the requests: a few round trips
// (_last_checkpoint, one listing, the checkpoint), not one per file. Only the log is
// written (the data files need not exist to load a snapshot). Skipped with -short.
func TestS3LatencySnapshot100k(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips writing a 100,000-file checkpoint")
	}
	loc := cloudtest.S3.Location(t)
	ctx := context.Background()
	st, err := storage.CreateURL(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	adds := make([]*log.Add, n)
	now := time.Now().UnixMilli()
	for i := range n {
		adds[i] = &log.Add{
			Path: fmt.Sprintf("part-%05d-%08d.parquet", i%1000, i), Size: 4096, ModificationTime: now, DataChange: true,
			Stats: fmt.Sprintf(`{"numRecords":100,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i*100, i*100+99),
		}
	}
	ds, err := log.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	l := log.New(st)
	md := log.Metadata{ID: "bench-100k", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: ds.JSON(), Configuration: map[string]string{}}
	if _, err := l.Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, adds, log.CommitInfo{Operation: "CREATE TABLE"}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Checkpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	p := cloudtest.NewProxy(t, cloudtest.S3.Endpoint(t), cloudtest.ProxyOptions{Delay: latencyDelay})
	pst, err := storage.OpenURL(ctx, viaProxy(loc, p))
	if err != nil {
		t.Fatal(err)
	}
	p.Reset()
	start := time.Now()
	s2, err := log.New(pst).Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	c, bytes := p.Counts()
	if len(s2.Files()) != n {
		t.Fatalf("snapshot has %d files, want %d", len(s2.Files()), n)
	}
	t.Logf("snapshot of %d files with a checkpoint, %v per request: %v, %d requests %v, %d bytes", n, latencyDelay, elapsed.Round(time.Millisecond), p.Total(), c, bytes)
	if p.Total() > 5 {
		t.Fatalf("loading the snapshot took %d requests, want a few (<= 5)", p.Total())
	}
}

// TestS3LatencyFullScan measures a full scan of a table of many small files (300, or
// SKIPLAKE_LATENCY_SCAN_FILES) in S3 behind the 20 ms proxy, at most 16 requests in
// flight: no file can be skipped, so each is opened (footer) and read. It asserts the
// rows, that the ScanReport's request counts equal what the wire saw, and that they
// are exactly one per file (opening ahead adds no request); it logs the wall
// time, which BENCHMARKS.md quotes (before and after the Reader opened files
// concurrently).
func TestS3LatencyFullScan(t *testing.T) {
	ctx := context.Background()
	loc, _, batches, nfiles := latencyTable(t, "SKIPLAKE_LATENCY_SCAN_FILES", 300)
	p := cloudtest.NewProxy(t, cloudtest.S3.Endpoint(t), cloudtest.ProxyOptions{Delay: latencyDelay})
	ptb, err := table.OpenURL(ctx, viaProxy(loc, p))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := ptb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := snap.Scan(ctx, table.WithColumns("id"), table.WithParallelism(latencyInFlight))
	if err != nil {
		t.Fatal(err)
	}
	p.Reset()
	start := time.Now()
	rd, err := sc.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for rd.Next() {
		rows += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	rd.Release()
	elapsed := time.Since(start)
	wire, bytes := p.Counts()
	if rows != int64(batches*latencyRowsPerFile) {
		t.Fatalf("full scan returned %d rows, want %d", rows, batches*latencyRowsPerFile)
	}
	rep := rd.Report()
	if rep.Requests == nil {
		t.Fatal("the report of a scan on S3 has no request counts")
	}
	// What the Reader sent (the report's counts less planning's) is what the wire saw.
	scan := *rep.Requests
	if sc.Report().Requests != nil {
		scan = scan.Sub(*sc.Report().Requests)
	}
	if scan.GET != wire["GET"] || scan.HEAD != wire["HEAD"] || scan.LIST != wire["LIST"] || scan.Total() != p.Total() {
		t.Fatalf("report: the scan %+v; the wire saw %v", scan, wire)
	}
	t.Logf("full scan, %d files, %v per request, %d in flight: %v, %d requests %v, %d bytes",
		nfiles, latencyDelay, latencyInFlight, elapsed.Round(time.Millisecond), p.Total(), wire, bytes)
	// Every file costs the same requests, whether it is opened ahead or not: none is
	// opened twice, none skipped. A file this small is read whole by the open's
	// speculative tail read (footer and column chunk in one GET), so that is one GET.
	if scan.GET != int64(nfiles) || scan.HEAD != 0 || scan.LIST != 0 {
		t.Fatalf("requests %+v, want exactly one GET per file (%d)", scan, nfiles)
	}
}

// latencyRowsPerFile is the rows of each batch latencyTable writes.
const latencyRowsPerFile = 100

// latencyTable creates a table in a fresh S3 prefix from n batches of
// latencyRowsPerFile rows (n from the environment variable env, default def), about
// one file each, and returns its location, the table, n and the number of files
// written. Files are cut on their encoded
// size: a target just below the size of a file of one batch (measured on a scratch
// table in memory) closes a file after each batch; the writer closes files on an
// estimate of their size, so a batch now and then spills into a second file.
func latencyTable(t *testing.T, env string, def int) (loc string, tb *table.Table, batches, files int) {
	t.Helper()
	loc = cloudtest.S3.Location(t)
	nfiles := def
	if s := os.Getenv(env); s != "" {
		fmt.Sscan(s, &nfiles)
	}
	ctx := context.Background()
	tb, err := table.CreateURL(ctx, loc, e2eSchema, table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]arrow.RecordBatch, nfiles)
	for i := range nfiles {
		recs[i] = batch(int64(i*latencyRowsPerFile), int64((i+1)*latencyRowsPerFile))
	}
	scratch, err := table.Create(ctx, storage.NewMemory(), e2eSchema, table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := scratch.WriteBatches(ctx, recs[:1], table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{TargetFileSize: one.BytesWritten * 95 / 100, Parallelism: 1})
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAdded < nfiles || res.FilesAdded > nfiles*11/10 {
		t.Fatalf("wrote %d files, want %d to %d", res.FilesAdded, nfiles, nfiles*11/10)
	}
	return loc, tb, nfiles, res.FilesAdded
}
