package optimize

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/log"
)

// copyOpts are Options under which the small files of these tests are copied
// (their single row groups are far below the default threshold), or, with
// mergeOpts set, merged page by page (the default threshold).
func copyOpts(tt *testTable, t *testing.T) Options {
	if mergeOpts {
		return Options{TargetFileSize: avgFileSize(t, tt) * 4, Parallelism: 2}
	}
	return Options{TargetFileSize: avgFileSize(t, tt) * 4, StitchMinRowGroupBytes: 1, Parallelism: 2}
}

// mergeOpts makes copyOpts merge row groups (set by a test, not in parallel).
var mergeOpts bool

// inputRowsInOrder returns, per added file of m's commit, the rows of the bin's
// input files in the order the bin lists them.
func fileRows(t *testing.T, tt *testTable, a *log.Add) []string {
	t.Helper()
	var rows []string
	tt.readRecords(t, a, func(rec arrow.RecordBatch) {
		for i := range int(rec.NumRows()) {
			s := ""
			for c := range int(rec.NumCols()) {
				s += rec.Column(c).ValueStr(i) + "|"
			}
			rows = append(rows, s)
		}
	})
	return rows
}

// Compaction of files whose row groups qualify copies them: the same rows in
// the bins' order, every input row group kept, statistics equal to those
// recomputed from the rows, O1 and commit semantics as for a re-encode.
func TestCompactionCopiesRowGroups(t *testing.T) {
	parts := []*string{ptr("a"), ptr("b"), nil}
	for _, partCol := range []string{"", "p"} {
		t.Run("partition="+partCol, func(t *testing.T) {
			var ps []*string
			if partCol != "" {
				ps = parts
			}
			tt := smallTable(t, partCol, ps, 12, 2000)
			before := tt.rows(t)
			inputs := map[string]*log.Add{}
			for _, a := range tt.snapshot(t).Files() {
				inputs[a.Path] = a
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			opts := copyOpts(tt, t)
			opts.Allocator = mem
			plan, m := runOptimize(t, tt, opts)
			mem.AssertSize(t, 0)
			if m.NumCopiedBins != plan.NumBins || m.NumReencodedBins != 0 || m.NumCopiedBytes != plan.NumBytes || len(m.ReencodeReasons) != 0 {
				t.Fatalf("metrics %+v: want all %d bins (%d bytes) copied", m, plan.NumBins, plan.NumBytes)
			}
			// Each bin's new file holds its inputs' rows in bin order, one row group
			// per input row group.
			added := checkCompacted(t, tt, before, inputs, m)
			if len(added) != plan.NumBins {
				t.Fatalf("%d files added for %d bins", len(added), plan.NumBins)
			}
			for _, pp := range plan.Partitions {
				for _, b := range pp.Bins {
					var want []string
					groups := 0
					for _, f := range b.Files {
						want = append(want, fileRows(t, tt, inputs[f.Path])...)
						groups += rowGroups(t, tt, inputs[f.Path])
					}
					found := false
					for _, a := range added {
						got := fileRows(t, tt, a)
						if slices.Equal(got, want) {
							found = true
							if n := rowGroups(t, tt, a); n != groups {
								t.Errorf("%s: %d row groups, its inputs %d", a.Path, n, groups)
							}
							if a.DataChange || a.DeletionVector != nil {
								t.Errorf("%s: dataChange %v, deletion vector %v", a.Path, a.DataChange, a.DeletionVector)
							}
						}
					}
					if !found {
						t.Fatalf("no added file holds the rows of bin %v in order", b.Files)
					}
				}
			}
		})
	}
}

func rowGroups(t *testing.T, tt *testTable, a *log.Add) int {
	t.Helper()
	in, err := openInput(context.Background(), tt.store, a, memory.DefaultAllocator, false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	return in.r.NumRowGroups()
}

// Bloom columns (O3): copied files keep their inputs' native filters and get index
// filters built from their rows, for exactly the plan's columns.
func TestCompactionCopiesWithBloomColumns(t *testing.T) {
	tt := newTestTable(t, "", map[string]string{"skiplake.bloomFilter.columns": "id,s"})
	tt.writerOpts = datafile.WriterOptions{BloomColumns: map[string]int64{"id": 4096, "s": 4096}}
	tt.appendFiles(t, tt.recs(8, 2000), nil)
	before := tt.rows(t)
	opts := copyOpts(tt, t)
	opts.BackfillBloom = true // files without the index tag are candidates, alone if need be
	_, m := runOptimize(t, tt, opts)
	if m.NumCopiedBins == 0 || m.NumReencodedBins != 0 {
		t.Fatalf("metrics %+v: want every bin copied", m)
	}
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatal("O1 violated")
	}
	indexes := checkBloomCoverage(t, tt, []string{"id", "s"})
	checkIndexCoversCommit(t, tt, indexes, []string{"id", "s"})
	tt.checkStats(t)
}

// Every rule that makes a bin re-encode instead of copy, each on its own, with
// the rows kept (O1) and the statistics right.
func TestCompactionReencodesWhenCopyingIsNotPossible(t *testing.T) {
	cases := []struct {
		name   string
		props  map[string]string
		writer datafile.WriterOptions
		setup  func(t *testing.T, tt *testTable)
		opts   func(o *Options)
		reason string
	}{
		{name: "small row groups under the default threshold, merging off", opts: func(o *Options) { o.StitchMinRowGroupBytes, o.NoRowGroupMerge = 0, true },
			reason: string(datafile.RuleRowGroupSize)},
		{name: "copying disabled", opts: func(o *Options) { o.StitchMinRowGroupBytes = -1 }, reason: ReasonStitchDisabled},
		{name: "deletion vector", setup: addDeletionVector, reason: ReasonDeletionVector,
			opts: func(o *Options) { o.TargetFileSize = 1 << 30 }}, // one bin, with the file
		{name: "table codec differs from the files'", props: map[string]string{"delta.parquet.compression.codec": "snappy"}, reason: string(datafile.RuleCodec)},
		{name: "no native Bloom filter for a new Bloom column", opts: func(o *Options) { o.BloomColumns = []string{"id"} }, reason: string(datafile.RuleBloom)},
		{name: "files without page index", writer: datafile.WriterOptions{DisablePageIndex: true}, reason: string(datafile.RulePageIndex)},
		{name: "files with other key-value metadata", writer: datafile.WriterOptions{KeyValueMetadata: map[string]string{"writer": "other"}}, reason: string(datafile.RuleSchema)},
		{name: "files without statistics", setup: dropStats, reason: string(datafile.RuleStats)},
		{name: "row tracking enabled", props: map[string]string{"delta.enableRowTracking": "true"}, reason: ReasonRowTracking},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tt := newTestTable(t, "", tc.props)
			tt.writerOpts = tc.writer
			tt.appendFiles(t, tt.recs(6, 1500), nil)
			if tc.setup != nil {
				tc.setup(t, tt)
			}
			before := tt.rows(t)
			opts := copyOpts(tt, t)
			if tc.opts != nil {
				tc.opts(&opts)
			}
			plan, m := runOptimize(t, tt, opts)
			if plan.NumBins == 0 || m.NumCopiedBins != 0 || m.NumReencodedBins != plan.NumBins || m.NumReencodedBytes != plan.NumBytes {
				t.Fatalf("metrics %+v: want all %d bins re-encoded", m, plan.NumBins)
			}
			if want := map[string]int{tc.reason: plan.NumBins}; !maps.Equal(m.ReencodeReasons, want) {
				t.Fatalf("reasons %v, want %v", m.ReencodeReasons, want)
			}
			if after := tt.rows(t); !slices.Equal(before, after) {
				t.Fatalf("O1 violated: %d rows before, %d after", len(before), len(after))
			}
			if tc.setup == nil {
				tt.checkStats(t)
			}
		})
	}
}

// addDeletionVector deletes three rows of the first file with a deletion vector.
func addDeletionVector(t *testing.T, tt *testTable) {
	deleteRows(t, tt, tt.snapshot(t).Files()[0], 0, 5, 9)
}

// dropStats re-adds every file without statistics.
func dropStats(t *testing.T, tt *testTable) {
	snap := tt.snapshot(t)
	txn := snap.NewTransaction(logTxn())
	now := time.Now().UnixMilli()
	for _, a := range snap.Files() {
		c := *a
		c.Stats = ""
		txn.Remove(&log.Remove{Path: a.Path, DeletionTimestamp: &now, DataChange: true})
		txn.Add(&c)
	}
	if _, err := txn.Commit(context.Background(), commitWrite()); err != nil {
		t.Fatal(err)
	}
}

// A damaged input fails the bin with ErrCorruptData (the re-encode would fail
// on it too), never a panic, with nothing committed or left behind; so does a run
// cancelled while copying.
func TestCompactionCopyFailuresLeaveNothing(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, tt *testTable) error
		want error
	}{
		{"damaged footer", func(t *testing.T, tt *testTable) error {
			a := tt.snapshot(t).Files()[2]
			data, err := tt.store.Get(ctx, a.Path)
			if err != nil {
				t.Fatal(err)
			}
			// Damage the footer's row-group list: the row counts no longer add up.
			for i := len(data) - 40; i < len(data)-8; i += 3 {
				data[i] ^= 0x5a
			}
			return replaceAndCompact(t, tt, a.Path, data)
		}, ErrCorruptData},
		{"truncated input", func(t *testing.T, tt *testTable) error {
			a := tt.snapshot(t).Files()[1]
			data, err := tt.store.Get(ctx, a.Path)
			if err != nil {
				t.Fatal(err)
			}
			return replaceAndCompact(t, tt, a.Path, data[:len(data)-100])
		}, ErrCorruptData},
		{"cancelled while copying", func(t *testing.T, tt *testTable) error {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			opts := copyOpts(tt, t)
			opts.Parallelism = 1
			opts.Progress = func(p Progress) {
				if p.Phase == "write" && p.FilesDone > 0 {
					cancel()
				}
			}
			plan, err := NewPlan(cctx, tt.snapshot(t), tt.store, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Execute(cctx, plan)
			return err
		}, context.Canceled},
	}
	for _, tc := range cases {
		for _, merge := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/merge=%v", tc.name, merge), func(t *testing.T) {
				mergeOpts = merge
				defer func() { mergeOpts = false }()
				tt := smallTable(t, "", nil, 8, 1500)
				objs := tt.objects(t)
				latest, _ := tt.lg.LatestVersion(ctx)
				err := tc.run(t, tt)
				if !errors.Is(err, tc.want) {
					t.Fatalf("error %v, want %v", err, tc.want)
				}
				if after := tt.objects(t); !slices.Equal(objs, after) {
					t.Errorf("files left behind: before %v, after %v", objs, after)
				}
				if v, _ := tt.lg.LatestVersion(ctx); v != latest {
					t.Errorf("committed version %d", v)
				}
			})
		}
	}
}

// Compaction of small files that qualify for copying but for the size of their
// row groups merges them page by page into row groups of the output's size: the
// same rows in the bins' order, fewer row groups, statistics equal to those
// recomputed from the rows, O1, Bloom coverage (O3) and native filters for the
// merged row groups; NumMergedBins counts the bins.
func TestCompactionMergesSmallRowGroups(t *testing.T) {
	cases := []struct {
		name    string
		partCol string
		parts   []*string
		props   map[string]string
		writer  datafile.WriterOptions
		bloom   []string
	}{
		{name: "plain columns copied page by page"},
		{name: "a dictionary column re-encoded", writer: datafile.WriterOptions{DictionaryColumns: map[string]bool{"s": true, "x": true}}},
		{name: "partitioned", partCol: "p", parts: []*string{ptr("a"), ptr("b"), nil}},
		{name: "Bloom columns", props: map[string]string{"skiplake.bloomFilter.columns": "id,s"},
			writer: datafile.WriterOptions{BloomColumns: map[string]int64{"id": 4096, "s": 4096}}, bloom: []string{"id", "s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tt := newTestTable(t, tc.partCol, tc.props)
			tt.writerOpts = tc.writer
			tt.appendFiles(t, tt.recs(12, 2000), tc.parts)
			before := tt.rows(t)
			inputs := map[string]*log.Add{}
			for _, a := range tt.snapshot(t).Files() {
				inputs[a.Path] = a
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			opts := Options{TargetFileSize: avgFileSize(t, tt) * 6, Parallelism: 2, Allocator: mem}
			if len(tc.bloom) > 0 {
				opts.BackfillBloom = true
			}
			plan, m := runOptimize(t, tt, opts)
			mem.AssertSize(t, 0)
			// A bin of one file (one row group) is that row group copied whole.
			single := 0
			for _, pp := range plan.Partitions {
				for _, b := range pp.Bins {
					if len(b.Files) == 1 {
						single++
					}
				}
			}
			if m.NumMergedBins != plan.NumBins-single || m.NumCopiedBins != single || m.NumReencodedBins != 0 || m.NumMergedBins == 0 ||
				m.NumMergedBytes+m.NumCopiedBytes != plan.NumBytes {
				t.Fatalf("metrics %+v: want all %d bins (%d bytes) merged but the %d of one file", m, plan.NumBins, plan.NumBytes, single)
			}
			added := checkCompacted(t, tt, before, inputs, m)
			for _, pp := range plan.Partitions {
				for _, b := range pp.Bins {
					if len(b.Files) < 2 {
						continue
					}
					var want []string
					groups := 0
					for _, f := range b.Files {
						want = append(want, fileRows(t, tt, inputs[f.Path])...)
						groups += rowGroups(t, tt, inputs[f.Path])
					}
					found := false
					for _, a := range added {
						if slices.Equal(fileRows(t, tt, a), want) {
							found = true
							if n := rowGroups(t, tt, a); n >= groups {
								t.Errorf("%s: %d row groups, its inputs %d: nothing merged", a.Path, n, groups)
							}
						}
					}
					if !found {
						t.Fatalf("no added file holds the rows of bin %v in order", b.Files)
					}
				}
			}
			if len(tc.bloom) > 0 {
				indexes := checkBloomCoverage(t, tt, tc.bloom)
				checkIndexCoversCommit(t, tt, indexes, tc.bloom)
				for _, a := range added {
					checkNativeFilters(t, tt, a, tc.bloom)
				}
			}
		})
	}
}

// checkCompacted checks a compaction's table against the rows before it (O1), the
// files' statistics and the commit info, and returns the files it added (those not
// among inputs), by path.
func checkCompacted(t *testing.T, tt *testTable, before []string, inputs map[string]*log.Add, m *Metrics) map[string]*log.Add {
	t.Helper()
	if after := tt.rows(t); !slices.Equal(before, after) {
		t.Fatalf("O1 violated: %d rows before, %d after", len(before), len(after))
	}
	tt.checkStats(t)
	checkCommitInfo(t, tt, CurveNone, m)
	added := map[string]*log.Add{}
	for _, a := range tt.snapshot(t).Files() {
		if inputs[a.Path] == nil {
			added[a.Path] = a
		}
	}
	return added
}

// replaceAndCompact stores data in place of the table's file at path and runs the
// copying compaction (copyOpts), returning Execute's error.
func replaceAndCompact(t *testing.T, tt *testTable, path string, data []byte) error {
	t.Helper()
	ctx := context.Background()
	if err := tt.store.Delete(ctx, path); err != nil {
		t.Fatal(err)
	}
	if err := tt.store.Put(ctx, path, data); err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan(ctx, tt.snapshot(t), tt.store, copyOpts(tt, t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Execute(ctx, plan)
	return err
}
