package table_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// Helpers shared by the proof_*_test.go files. Names carry a "proof" prefix so they
// never collide with the lead's helpers in the same package.

// proofEnvInt reads a positive integer knob from the environment (def when unset).
func proofEnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// proofFileIDs reads the int64 column idCol of every live data file of snap directly
// from the store (bypassing the scan machinery) and returns file path -> ids. This is
// the ground truth of which file holds which row.
func proofFileIDs(t testing.TB, st storage.Storage, snap *table.Snapshot, idCol string) map[string][]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string][]int64{}
	for _, a := range snap.Log().Files() {
		p, err := a.DecodedPath()
		if err != nil {
			t.Fatalf("decode path %q: %v", a.Path, err)
		}
		raw, err := st.Get(ctx, p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		pr, err := file.NewParquetReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		tbl, err := fr.ReadTable(ctx)
		pr.Close()
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		idx := tbl.Schema().FieldIndices(idCol)
		if len(idx) != 1 {
			tbl.Release()
			t.Fatalf("%s has no column %q", p, idCol)
		}
		var ids []int64
		for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
			ids = append(ids, ch.(*array.Int64).Int64Values()...)
		}
		tbl.Release()
		out[p] = ids
	}
	return out
}

// scanner is what plans scans: a *table.Table (latest version) or a *table.Snapshot.
type scanner interface {
	Scan(ctx context.Context, opts ...table.ScanOption) (*table.Scan, error)
}

// snapshotAt loads version ref of tb.
func snapshotAt(t testing.TB, tb *table.Table, ref table.Ref) *table.Snapshot {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), ref)
	if err != nil {
		t.Fatalf("snapshot %s: %v", ref, err)
	}
	return snap
}

// readAllOf plans a scan of src and reads it whole.
func readAllOf(ctx context.Context, src scanner, opts ...table.ScanOption) (arrow.Table, error) {
	sc, err := src.Scan(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return sc.ReadAll(ctx)
}

// countOf plans a scan of src and counts its rows.
func countOf(ctx context.Context, src scanner, opts ...table.ScanOption) (int64, *table.ScanReport, error) {
	sc, err := src.Scan(ctx, opts...)
	if err != nil {
		return 0, nil, err
	}
	return sc.Count(ctx)
}

// proofScanIDs runs a scan and returns the sorted values of int64 column idCol of the
// rows it returned, with the reader's report.
func proofScanIDs(t testing.TB, src scanner, idCol string, opts ...table.ScanOption) ([]int64, *table.ScanReport, []table.PlannedFile, error) {
	t.Helper()
	ctx := context.Background()
	sc, err := src.Scan(ctx, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	files := sc.Files()
	idx := sc.Schema().FieldIndices(idCol)
	if len(idx) != 1 {
		t.Fatalf("scan schema %v has no column %q", sc.Schema(), idCol)
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rd.Release()
	var ids []int64
	for rd.Next() {
		ids = append(ids, rd.RecordBatch().Column(idx[0]).(*array.Int64).Int64Values()...)
	}
	if err := rd.Err(); err != nil {
		return nil, rd.Report(), files, err
	}
	slices.Sort(ids)
	return ids, rd.Report(), files, nil
}

// proofTableIDs returns the sorted values of int64 column idCol of tbl.
func proofTableIDs(tbl arrow.Table, idCol string) []int64 {
	idx := tbl.Schema().FieldIndices(idCol)[0]
	var ids []int64
	for _, ch := range tbl.Column(idx).Data().Chunks() {
		ids = append(ids, ch.(*array.Int64).Int64Values()...)
	}
	slices.Sort(ids)
	return ids
}

// proofDataObjects lists the objects of st outside _delta_log/ (data files, Bloom
// indexes, deletion vectors).
func proofDataObjects(t testing.TB, st storage.Storage) []string {
	t.Helper()
	objs, err := st.List(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		if len(o.Path) >= len("_delta_log/") && o.Path[:len("_delta_log/")] == "_delta_log/" {
			continue
		}
		out = append(out, o.Path)
	}
	return out
}

// proofDiffIDs describes how two sorted id lists differ (first few ids only).
func proofDiffIDs(got, want []int64) (missing, extra []int64) {
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j >= len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i >= len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) > 5 {
		missing = missing[:5]
	}
	if len(extra) > 5 {
		extra = extra[:5]
	}
	return missing, extra
}
