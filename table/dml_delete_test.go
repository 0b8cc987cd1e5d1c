package table_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

func dmlSampleRows(n int, grp func(i int) string) []dmlRow {
	rows := make([]dmlRow, n)
	for i := range rows {
		rows[i] = dmlRow{id: int64(i), grp: sp(grp(i)), qty: ip(int64(i % 7)), note: sp("n")}
		if i%5 == 0 {
			rows[i].note = nil
		}
	}
	return rows
}

func TestDeleteBasic(t *testing.T) {
	ctx := context.Background()
	for _, dvOn := range []bool{false, true} {
		for _, parts := range [][]string{nil, {"grp"}} {
			props := map[string]string{}
			if dvOn {
				props = dvProps
			}
			rows := dmlSampleRows(200, func(i int) string { return []string{"a", "b", "c"}[i%3] })
			tb, _ := dmlTable(t, props, parts, rows[:100], rows[100:])
			res, err := tb.Delete(ctx, "qty = 3 OR id >= 190", table.DMLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var want []dmlRow
			for _, r := range rows {
				if !(*r.qty == 3 || r.id >= 190) {
					want = append(want, r)
				}
			}
			got := dmlRowsAt(t, tb, table.Latest())
			if len(got) != len(want) || res.RowsDeleted != int64(len(rows)-len(want)) {
				t.Fatalf("dv=%v parts=%v: %d rows left (want %d), result %+v", dvOn, parts, len(got), len(want), res)
			}
			for i, w := range dmlRowStrings(want) {
				if got[i] != w {
					t.Fatalf("row %d: %s, want %s", i, got[i], w)
				}
			}
			ci := lastCommit(t, tb)
			if ci.Operation != "DELETE" || ci.OperationMetrics["numDeletedRows"] != itoaTest(res.RowsDeleted) {
				t.Fatalf("commit info %+v", ci)
			}
			wantMode := table.ModeCopyOnWrite
			if dvOn {
				wantMode = table.ModeDeletionVectors
			}
			if res.Mode != wantMode {
				t.Fatalf("mode %s", res.Mode)
			}
		}
	}
}

// readRecorder is a storage that records which Parquet data files are read.
type readRecorder struct {
	storage.Storage
	mu    sync.Mutex
	reads map[string]int
}

func (r *readRecorder) note(path string) {
	if strings.HasSuffix(path, ".parquet") && !strings.HasPrefix(path, "_delta_log/") {
		r.mu.Lock()
		r.reads[path]++
		r.mu.Unlock()
	}
}

func (r *readRecorder) Get(ctx context.Context, path string) ([]byte, error) {
	r.note(path)
	return r.Storage.Get(ctx, path)
}

func (r *readRecorder) Open(ctx context.Context, path string) (storage.File, error) {
	r.note(path)
	return r.Storage.Open(ctx, path)
}

func (r *readRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.reads {
		n += c
	}
	return n
}

// TestDeleteMetadataOnlyReadsNoDataFile: a DELETE whose predicate covers whole files
// (by partition values, or by statistics) removes them without reading any data file.
func TestDeleteMetadataOnlyReadsNoDataFile(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(300, func(i int) string { return []string{"a", "b", "c"}[i/100] })
	for _, c := range []struct {
		name  string
		parts []string
		where string
		files int
	}{
		{"partition values", []string{"grp"}, "grp = 'a' OR grp = 'c'", 2},
		{"statistics", nil, "id < 200", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, st := dmlTable(t, dvProps, c.parts, rows[:100], rows[100:200], rows[200:])
			rec := &readRecorder{Storage: st, reads: map[string]int{}}
			tb2, err := table.Open(ctx, rec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tb2.Delete(ctx, c.where, table.DMLOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := rec.count(); n != 0 {
				t.Fatalf("metadata-only DELETE read %d data files: %v", n, rec.reads)
			}
			if res.RowsDeleted != 200 || res.FilesRemoved != c.files || res.FilesRead != 0 {
				t.Fatalf("result %+v", res)
			}
			for _, f := range res.Files {
				if f.Read || f.Action != table.FileRemoved {
					t.Fatalf("file %+v", f)
				}
			}
			if got := dmlRowsAt(t, tb, table.Latest()); len(got) != 100 {
				t.Fatalf("%d rows left", len(got))
			}
		})
	}
}

// TestDeleteDryRun lists what a DELETE would do and changes nothing.
func TestDeleteDryRun(t *testing.T) {
	ctx := context.Background()
	rows := dmlSampleRows(100, func(int) string { return "a" })
	for _, props := range []map[string]string{nil, dvProps} {
		tb, st := dmlTable(t, props, nil, rows)
		before, _ := st.List(ctx, "", "")
		res, err := tb.Delete(ctx, "qty = 2", table.DMLOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		after, _ := st.List(ctx, "", "")
		if len(after) != len(before) || res.Version != -1 || !res.DryRun || res.RowsDeleted != 14 || len(res.Files) != 1 {
			t.Fatalf("dry run: %d objects before, %d after, result %+v", len(before), len(after), res)
		}
	}
}
