package table_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/cloudtest"
	"github.com/skiplake/skiplake/storage"
	_ "github.com/skiplake/skiplake/storage/s3"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/vacuum"
)

// uploadDir copies every file under dir into st, keeping relative paths.
func uploadDir(t *testing.T, st storage.Storage, dir string) {
	t.Helper()
	ctx := context.Background()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return st.Put(ctx, filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatalf("upload %s: %v", dir, err)
	}
}

// TestS3GoldenTablesReadExactly copies every golden table into a bucket on the S3 test
// server and reads it through s3:// exactly as from the local disk: the same rows
// (as multisets) at the latest version and at each of the first versions (time
// travel), or the same kind of error.
func TestS3GoldenTablesReadExactly(t *testing.T) {
	root := goldenDir(t)
	base := cloudtest.S3.Location(t)
	ctx := context.Background()
	tables := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "delta" {
			return err
		}
		if _, err := os.Stat(filepath.Join(p, "_delta_log")); err != nil {
			return fs.SkipDir
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		name := filepath.ToSlash(rel)
		tables++
		t.Run(name, func(t *testing.T) {
			q := strings.IndexByte(base, '?')
			loc := base[:q] + "/" + strings.NewReplacer(" ", "_", "%", "_").Replace(name) + base[q:]
			st, err := storage.CreateURL(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			uploadDir(t, st, p)
			local, lerr := table.OpenURL(ctx, p)
			remote, rerr := table.OpenURL(ctx, loc)
			if (lerr == nil) != (rerr == nil) {
				t.Fatalf("open: local %v, s3 %v", lerr, rerr)
			}
			if lerr != nil {
				return
			}
			snap, err := local.Snapshot(ctx, table.Latest())
			latest := int64(-1)
			if err == nil {
				latest = snap.Version()
			}
			refs := []table.Ref{table.Latest()}
			for v := int64(0); v <= latest && v < 4; v++ {
				refs = append(refs, table.AtVersion(v))
			}
			for _, ref := range refs {
				want, werr := readAt(ctx, local, ref)
				got, gerr := readAt(ctx, remote, ref)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: local error %v, s3 error %v", ref, werr, gerr)
				}
				if werr != nil {
					continue
				}
				compareMultiset(t, ref.String(), got, want)
				got.Release()
				want.Release()
			}
		})
		return fs.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	if tables < 10 {
		t.Fatalf("found only %d golden tables under %s", tables, root)
	}
}

var e2eSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "part", Type: arrow.BinaryTypes.String},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// batch makes rows with ids [from, to).
func batch(from, to int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, e2eSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", i%3))
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
	}
	return b.NewRecordBatch()
}

// readAt reads every row of the version ref names.
func readAt(ctx context.Context, tb *table.Table, ref table.Ref, opts ...table.ScanOption) (arrow.Table, error) {
	snap, err := tb.Snapshot(ctx, ref)
	if err != nil {
		return nil, err
	}
	sc, err := snap.Scan(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return sc.ReadAll(ctx)
}

func ids(t *testing.T, tb *table.Table, opts ...table.ScanOption) []int64 {
	t.Helper()
	return idsAt(t, tb, table.Latest(), opts...)
}

func idsAt(t *testing.T, tb *table.Table, ref table.Ref, opts ...table.ScanOption) []int64 {
	t.Helper()
	res, err := readAt(context.Background(), tb, ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var out []int64
	idx := res.Schema().FieldIndices("id")[0]
	for _, c := range res.Column(idx).Data().Chunks() {
		out = append(out, c.(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// TestS3TableLifecycle: create, append, scan with a filter, checkpoint, time travel,
// OPTIMIZE and VACUUM on a table in S3, each result checked exactly.
func TestS3TableLifecycle(t *testing.T) {
	loc := cloudtest.S3.Location(t)
	ctx := context.Background()
	tb, err := table.CreateURL(ctx, loc, e2eSchema, table.CreateOptions{PartitionColumns: []string{"part"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(12) {
		rec := batch(i*100, i*100+100)
		res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if res.Version != i+1 {
			t.Fatalf("append %d committed version %d, want %d", i, res.Version, i+1)
		}
	}
	if _, err := tb.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	// Reopen: the snapshot now starts from a checkpoint read from S3.
	if tb, err = table.OpenURL(ctx, loc); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, tb); !slices.Equal(got, seq(0, 1200)) {
		t.Fatalf("latest: %d ids, want 0..1199", len(got))
	}
	if got := ids(t, tb, table.WithFilter("id >= 250 AND id < 260")); !slices.Equal(got, seq(250, 260)) {
		t.Fatalf("filtered scan = %v", got)
	}
	if got := idsAt(t, tb, table.AtVersion(3)); !slices.Equal(got, seq(0, 300)) {
		t.Fatalf("time travel to version 3: %d ids, want 300", len(got))
	}
	before, err := tb.Storage().List(ctx, "part=", "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := tb.Optimize(ctx, table.OptimizeOptions{ZOrderBy: []string{"id", "v"}})
	if err != nil {
		t.Fatalf("optimize: %v", err)
	}
	if got := ids(t, tb); !slices.Equal(got, seq(0, 1200)) {
		t.Fatalf("after optimize (%+v): %d ids", res, len(got))
	}
	// A clock past the minimum age ages every removed file past a (forced) 1 ns retention.
	vac, err := vacuum.Run(ctx, tb.Log(), vacuum.Options{Retention: time.Nanosecond, Force: true,
		Now: func() time.Time { return time.Now().Add(vacuum.MinUnreferencedAge + time.Minute) }})
	if err != nil {
		t.Fatalf("vacuum: %v", err)
	}
	after, err := tb.Storage().List(ctx, "part=", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(vac.Files) == 0 || len(after) >= len(before) {
		t.Fatalf("vacuum deleted %d files; data files %d before, %d after", len(vac.Files), len(before), len(after))
	}
	for _, f := range vac.Files {
		if _, err := tb.Storage().Stat(ctx, f); err == nil {
			t.Fatalf("vacuum reported %s deleted but it is still there", f)
		}
	}
	if got := ids(t, tb); !slices.Equal(got, seq(0, 1200)) {
		t.Fatalf("after vacuum: %d ids", len(got))
	}
}

// TestS3SecondScanReadsNoFooter (issue 27 item 7) on S3: a Table that scans the same
// unchanged table again reuses its snapshot and the file's footer and page index, so
// the second selective scan skips the tail read that fetched them (the report's
// Requests show one GET less) and says so (Footers); after a new commit it reads
// exactly the new version.
func TestS3SecondScanReadsNoFooter(t *testing.T) {
	loc := cloudtest.S3.Location(t)
	ctx := context.Background()
	tb, err := table.CreateURL(ctx, loc, layoutSchema(), table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One file of several MiB (random doubles do not compress), so that the pages a
	// selective scan reads lie outside the 1 MiB tail that opening the file fetches.
	r := rand.New(rand.NewPCG(9, 9))
	rec := layoutBatch(r, 400_000, func(j int) int64 { return int64(j) }, 0)
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	// Regression: the decoders read pages outside the tail after the dispatcher had
	// ended the context the file was opened with ("context canceled"), without the cache
	// as with it.
	off := tb.WithCache(table.CacheOptions{FooterBytes: -1, NoSnapshot: true})
	if ids, _ := filteredIDs(t, off, "id < 300000"); len(ids) != 300_000 {
		t.Fatalf("%d rows below 300000", len(ids))
	}
	ids, first := filteredIDs(t, tb, "id = 5")
	if len(ids) != 1 || *first.Footers != (table.FooterCounts{Read: 1}) {
		t.Fatalf("first scan: ids %v, footers %+v", ids, first.Footers)
	}
	ids, second := filteredIDs(t, tb, "id = 5")
	if len(ids) != 1 || *second.Footers != (table.FooterCounts{Cached: 1}) {
		t.Fatalf("second scan: ids %v, footers %+v", ids, second.Footers)
	}
	t.Logf("first scan: %v; snapshot %v", *first.Requests, *first.SnapshotRequests)
	t.Logf("second scan: %v; snapshot %v", *second.Requests, *second.SnapshotRequests)
	if second.Requests.GET >= first.Requests.GET || second.Requests.BytesRead >= first.Requests.BytesRead {
		t.Errorf("the second scan made %v, the first %v: the footer was read again", *second.Requests, *first.Requests)
	}
	if second.SnapshotRequests.GET >= first.SnapshotRequests.GET {
		t.Errorf("the snapshot was loaded again: %v, first %v", *second.SnapshotRequests, *first.SnapshotRequests)
	}
	// A new commit is seen at once.
	rec = layoutBatch(r, 10, func(j int) int64 { return 5 }, 0)
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	ids, third := filteredIDs(t, tb, "id = 5")
	if len(ids) != 11 || *third.Footers != (table.FooterCounts{Read: 1, Cached: 1}) {
		t.Fatalf("after a commit: %d ids, footers %+v", len(ids), third.Footers)
	}
}
