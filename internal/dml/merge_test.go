package dml

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
)

// kvSchema is the schema of the merge tests' table and source: a nullable bigint
// key k and a bigint payload v.
var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// kv is a row of kvSchema (nil k: NULL).
type kv struct {
	k *int64
	v int64
}

func kvBatch(mem memory.Allocator, rows []kv) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, kvSchema)
	defer b.Release()
	for _, r := range rows {
		if r.k == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(*r.k)
		}
		b.Field(1).(*array.Int64Builder).Append(r.v)
	}
	return b.NewRecordBatch()
}

func kvRows(rec arrow.RecordBatch) []kv {
	k := rec.Column(0).(*array.Int64)
	v := rec.Column(1).(*array.Int64)
	out := make([]kv, rec.NumRows())
	for i := range out {
		if !k.IsNull(i) {
			x := k.Value(i)
			out[i].k = &x
		}
		out[i].v = v.Value(i)
	}
	return out
}

func (r kv) String() string {
	if r.k == nil {
		return fmt.Sprintf("(NULL,%d)", r.v)
	}
	return fmt.Sprintf("(%d,%d)", *r.k, r.v)
}

// fakeFile is a target file: it records what a Merger updates and deletes.
type fakeFile struct {
	path    string
	mu      sync.Mutex
	updated []string // the new rows
	deleted map[int64]int
}

func (f *fakeFile) Updated(_ context.Context, rec arrow.RecordBatch, old []int, pos []int64, out arrow.RecordBatch) error {
	if len(old) != len(pos) || int(out.NumRows()) != len(pos) {
		return fmt.Errorf("Updated: %d old rows, %d positions, %d new rows", len(old), len(pos), out.NumRows())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range kvRows(out) {
		f.updated = append(f.updated, r.String())
	}
	return nil
}

func (f *fakeFile) Deleted(pos []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range pos {
		f.deleted[p]++
	}
}

func (f *fakeFile) Key() string  { return f.path }
func (f *fakeFile) Path() string { return f.path }

// rowSink collects the rows written to it.
type rowSink struct {
	mu   sync.Mutex
	rows []string
}

func (s *rowSink) Start(context.Context) error { return nil }
func (s *rowSink) Write(_ context.Context, rec arrow.RecordBatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range kvRows(rec) {
		s.rows = append(s.rows, r.String())
	}
	return nil
}
func (s *rowSink) Finish(context.Context) ([]*log.Add, error) { return nil, nil }
func (s *rowSink) Discard()                                   {}
func (s *rowSink) Rows() int64                                { return int64(len(s.rows)) }
func (s *rowSink) FilesEstimate() int                         { return 0 }

func readKVSource(t *testing.T, mem memory.Allocator, rows []kv, budget int64) *Source {
	t.Helper()
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(rows); lo += 50 {
		recs = append(recs, kvBatch(mem, rows[lo:min(lo+50, len(rows))]))
	}
	rdr, err := array.NewRecordReader(kvSchema, recs)
	require.NoError(t, err)
	for _, r := range recs {
		r.Release()
	}
	defer rdr.Release()
	plan := func(*arrow.Schema) (*arrow.Schema, bool, error) { return kvSchema, true, nil }
	src, err := ReadSource(context.Background(), rdr, []string{"k"}, plan, budget, t.TempDir(), mem)
	require.NoError(t, err)
	return src
}

// runMerge merges src into the target files (each a list of rows) with spec, pass
// by pass, the files of a pass on goroutines of their own, as package table does.
func runMerge(t *testing.T, mem memory.Allocator, spec MergeSpec, src *Source, files [][]kv) ([]*fakeFile, *Merger, error) {
	t.Helper()
	ctx := context.Background()
	m, err := NewMerger(spec, src)
	if err != nil {
		return nil, nil, err
	}
	passes, err := src.Passes(ctx)
	require.NoError(t, err)
	fakes := make([]*fakeFile, len(files))
	for i := range files {
		fakes[i] = &fakeFile{path: fmt.Sprintf("part-%d.parquet", i), deleted: map[int64]int{}}
	}
	for _, units := range passes {
		p, err := m.LoadPass(ctx, units)
		require.NoError(t, err)
		errs := make([]error, len(files))
		var wg sync.WaitGroup
		for i, rows := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := kvBatch(mem, rows)
				defer rec.Release()
				pos := make([]int64, len(rows))
				for j := range pos {
					pos[j] = int64(j)
				}
				errs[i] = m.Batch(ctx, p, fakes[i], LiveBatch{Rec: rec, Pos: pos})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			p.Release()
			return nil, nil, err
		}
		err = m.Insert(ctx, p)
		p.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	return fakes, m, nil
}

func ptr(x int64) *int64 { return &x }

// TestMergerAgainstOracle merges random sources into random target files with
// every kind of clause, over budgets that make one pass and many, and compares
// every target row's fate (updated to what, deleted, kept), the inserted rows and
// the counters with a brute-force evaluation of the clauses.
func TestMergerAgainstOracle(t *testing.T) {
	for _, budget := range []int64{DefaultSourceMemory, 4 << 10, 1 << 10} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("budget=%d/seed=%d", budget, seed), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
				defer mem.AssertSize(t, 0)
				rng := rand.New(rand.NewPCG(seed, uint64(budget)))
				key := func() *int64 {
					if rng.IntN(15) == 0 {
						return nil
					}
					return ptr(int64(rng.IntN(300)))
				}
				// Unique source keys (NULL keys may repeat: they match nothing).
				var source []kv
				used := map[int64]bool{}
				for range 400 {
					r := kv{k: key(), v: int64(rng.IntN(200) - 50)}
					if r.k != nil && used[*r.k] {
						continue
					}
					if r.k != nil {
						used[*r.k] = true
					}
					source = append(source, r)
				}
				var files [][]kv
				for range 5 {
					var rows []kv
					for range 80 {
						rows = append(rows, kv{k: key(), v: int64(rng.IntN(200) - 100)})
					}
					files = append(files, rows)
				}
				src := readKVSource(t, mem, source, budget)
				defer src.Release()
				sink := &rowSink{}
				spec := MergeSpec{
					Logical: kvSchema, Keys: []string{"k"},
					Matched: []Clause{
						{Action: ActUpdate, Condition: "source.v > v"},
						{Action: ActUpdate, Condition: "v > 40", Set: "v = source.v + v"},
						{Action: ActDelete},
					},
					NotMatched:  []Clause{{Action: ActInsert, Condition: "v >= 0"}},
					BySource:    []Clause{{Action: ActDelete, Condition: "v < 0"}, {Action: ActUpdate, Set: "v = v + 1000"}},
					SourceAlias: "source", TargetAlias: "target",
					Sink: sink, Mem: mem,
				}
				fakes, m, err := runMerge(t, mem, spec, src, files)
				require.NoError(t, err)
				require.Equal(t, []string{"k", "v"}, m.ReadColumns(), "an update reads every column")

				// The oracle.
				bySrc := map[int64]int64{}
				for _, r := range source {
					if r.k != nil {
						bySrc[*r.k] = r.v
					}
				}
				var want MergeCounts
				matchedSrc := map[int64]bool{}
				for i, rows := range files {
					var wantUpd []string
					wantDel := map[int64]int{}
					for pos, r := range rows {
						sv, ok := int64(0), false
						if r.k != nil {
							sv, ok = bySrc[*r.k]
						}
						switch {
						case ok && sv > r.v:
							matchedSrc[*r.k] = true
							wantUpd = append(wantUpd, kv{k: r.k, v: sv}.String())
							want.MatchedUpdated++
						case ok && r.v > 40:
							matchedSrc[*r.k] = true
							wantUpd = append(wantUpd, kv{k: r.k, v: sv + r.v}.String())
							want.MatchedUpdated++
						case ok:
							matchedSrc[*r.k] = true
							wantDel[int64(pos)] = 1
							want.MatchedDeleted++
							continue
						case r.v < 0:
							wantDel[int64(pos)] = 1
							want.BySourceDeleted++
							continue
						default:
							wantUpd = append(wantUpd, kv{k: r.k, v: r.v + 1000}.String())
							want.BySourceUpdated++
						}
						wantDel[int64(pos)] = 1
					}
					sort.Strings(wantUpd)
					sort.Strings(fakes[i].updated)
					require.Equal(t, wantUpd, fakes[i].updated, "file %d updated rows", i)
					require.Equal(t, wantDel, fakes[i].deleted, "file %d deleted positions (each once)", i)
				}
				var wantIns []string
				for _, r := range source {
					if (r.k == nil || !matchedSrc[*r.k]) && r.v >= 0 {
						wantIns = append(wantIns, r.String())
						want.Inserted++
					}
				}
				sort.Strings(wantIns)
				sort.Strings(sink.rows)
				require.Equal(t, wantIns, sink.rows, "inserted rows")
				require.Equal(t, want, m.Counts())
			})
		}
	}
}

// TestMergerCardinality: a target row matched by several source rows is an error
// naming the key and the file unless the only WHEN MATCHED clause is an
// unconditional delete.
func TestMergerCardinality(t *testing.T) {
	source := []kv{{k: ptr(1), v: 1}, {k: ptr(1), v: 2}, {k: ptr(2), v: 3}}
	files := [][]kv{{{k: ptr(1), v: 0}, {k: ptr(3), v: 0}}}
	for _, tc := range []struct {
		name    string
		matched []Clause
		wantErr string
	}{
		{"update", []Clause{{Action: ActUpdate}}, "2 source rows match the target row with key (k=1) in part-0.parquet"},
		{"conditional delete", []Clause{{Action: ActDelete, Condition: "v = 0"}}, "2 source rows match"},
		{"delete then update", []Clause{{Action: ActDelete, Condition: "v = 0"}, {Action: ActUpdate}}, "2 source rows match"},
		{"unconditional delete", []Clause{{Action: ActDelete}}, ""},
		{"no matched clause", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			src := readKVSource(t, mem, source, DefaultSourceMemory)
			defer src.Release()
			spec := MergeSpec{Logical: kvSchema, Keys: []string{"k"}, Matched: tc.matched,
				NotMatched:  []Clause{{Action: ActInsert}},
				SourceAlias: "source", TargetAlias: "target", Sink: &rowSink{}, Mem: mem}
			fakes, m, err := runMerge(t, mem, spec, src, files)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrMergeCardinality)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if len(tc.matched) > 0 {
				require.Equal(t, map[int64]int{0: 1}, fakes[0].deleted)
			}
			require.Equal(t, MergeCounts{MatchedDeleted: int64(len(tc.matched)), Inserted: 1}, m.Counts())
		})
	}
}

// TestNewMergerRefuses: aliases that are column names, an INSERT * that leaves a
// NOT NULL column empty and clauses that do not bind are refused, naming the clause.
func TestNewMergerRefuses(t *testing.T) {
	notNull := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "w", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	for _, tc := range []struct {
		name    string
		spec    MergeSpec
		wantErr string
	}{
		{"alias is a column", MergeSpec{Logical: kvSchema, SourceAlias: "V", TargetAlias: "target", Matched: []Clause{{Action: ActDelete}}},
			`table column "v" has the name of the alias "V"`},
		{"insert cannot fill NOT NULL", MergeSpec{Logical: notNull, SourceAlias: "source", TargetAlias: "target", NotMatched: []Clause{{Action: ActInsert}}},
			`the source has no column "w", which is NOT NULL`},
		{"condition does not bind", MergeSpec{Logical: kvSchema, SourceAlias: "source", TargetAlias: "target", Matched: []Clause{{Action: ActDelete, Condition: "nope > 1"}}},
			"nope"},
		{"set assigns an alias", MergeSpec{Logical: kvSchema, SourceAlias: "source", TargetAlias: "target", Matched: []Clause{{Action: ActUpdate, Set: "source = 1"}}},
			`MERGE WHEN MATCHED clause 1 SET: "source" is an alias, not a table column`},
		{"by-source condition sees no source", MergeSpec{Logical: kvSchema, SourceAlias: "source", TargetAlias: "target", BySource: []Clause{{Action: ActDelete, Condition: "source.v > 1"}}},
			"MERGE WHEN NOT MATCHED BY SOURCE clause 1 condition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			src := readKVSource(t, mem, []kv{{k: ptr(1), v: 1}}, DefaultSourceMemory)
			defer src.Release()
			tc.spec.Keys, tc.spec.Mem = []string{"k"}, mem
			_, err := NewMerger(tc.spec, src)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
