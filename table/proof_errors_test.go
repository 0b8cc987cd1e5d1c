package table_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// Bad input leaves nothing behind (no commit, no data file, no Bloom index) and the
// error names the problem: the column, both types, the position in a filter.

// proofCancelReader is a RecordReader that cancels a context once its first batch has
// been consumed and stored as a file (when Next is asked for the second batch and gate
// is closed), then keeps serving batches: the writer must notice the cancellation by
// itself and delete the file it already stored.
type proofCancelReader struct {
	recs     []arrow.RecordBatch
	i        int
	cancel   context.CancelFunc
	gate     <-chan struct{}
	timedOut bool
	cur      arrow.RecordBatch
}

func (r *proofCancelReader) Retain()                        {}
func (r *proofCancelReader) Release()                       {}
func (r *proofCancelReader) Schema() *arrow.Schema          { return r.recs[0].Schema() }
func (r *proofCancelReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *proofCancelReader) Record() arrow.RecordBatch      { return r.cur }
func (r *proofCancelReader) Err() error                     { return nil }
func (r *proofCancelReader) Next() bool {
	if r.i == 1 {
		select {
		case <-r.gate:
		case <-time.After(30 * time.Second):
			r.timedOut = true
		}
		r.cancel()
	}
	if r.i >= len(r.recs) {
		r.cur = nil
		return false
	}
	r.cur = r.recs[r.i]
	r.i++
	return true
}

// proofGateReader serves good batches, then waits until the writer reports a finished
// data file before serving the rest, so a failure in a later batch happens after
// files were stored and the writer's cleanup is really exercised.
type proofGateReader struct {
	recs     []arrow.RecordBatch
	i        int
	gateAt   int
	gate     <-chan struct{}
	timedOut bool
	cur      arrow.RecordBatch
}

func (r *proofGateReader) Retain()                        {}
func (r *proofGateReader) Release()                       {}
func (r *proofGateReader) Schema() *arrow.Schema          { return r.recs[0].Schema() }
func (r *proofGateReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *proofGateReader) Record() arrow.RecordBatch      { return r.cur }
func (r *proofGateReader) Err() error                     { return nil }
func (r *proofGateReader) Next() bool {
	if r.i == r.gateAt {
		select {
		case <-r.gate:
		case <-time.After(30 * time.Second):
			r.timedOut = true
		}
	}
	if r.i >= len(r.recs) {
		r.cur = nil
		return false
	}
	r.cur = r.recs[r.i]
	r.i++
	return true
}

// proofRequireUntouched checks that the table is still at version wantVersion and
// that the store holds nothing but the log.
func proofRequireUntouched(t *testing.T, tb *table.Table, st storage.Storage, wantVersion int64) {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != wantVersion {
		t.Errorf("table at version %d after a failed write, want %d", snap.Version(), wantVersion)
	}
	if objs := proofDataObjects(t, st); len(objs) > 0 {
		t.Errorf("failed write left %d object(s) behind: %v", len(objs), objs)
	}
}

func proofBatchOf(t *testing.T, schema *arrow.Schema, fill func(b *array.RecordBuilder)) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	return b.NewRecordBatch()
}

func TestProofBadWritesLeaveNothing(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	good := func(t *testing.T, k0 int64) arrow.RecordBatch {
		return proofBatchOf(t, schema, func(b *array.RecordBuilder) {
			for i := int64(0); i < 50; i++ {
				b.Field(0).(*array.Int64Builder).Append(k0 + i)
				b.Field(1).(*array.StringBuilder).Append("value")
				b.Field(2).(*array.Int32Builder).Append(int32(i % 3))
			}
		})
	}
	cases := []struct {
		name string
		// bad returns the offending batch. Three good batches go first and are
		// stored as files (TargetFileSize 1) before it is served, so the failed
		// write must also delete what it already stored.
		bad     func(t *testing.T) []arrow.RecordBatch
		wantErr error
		wantMsg []string
	}{
		{
			name: "type mismatch names the column and both types",
			bad: func(t *testing.T) []arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{
					{Name: "k", Type: arrow.BinaryTypes.String},
					{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
					{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				}, nil)
				return []arrow.RecordBatch{proofBatchOf(t, s, func(b *array.RecordBuilder) {
					b.Field(0).(*array.StringBuilder).Append("1")
					b.Field(1).(*array.StringBuilder).Append("x")
					b.Field(2).(*array.Int32Builder).Append(0)
				})}
			},
			wantErr: table.ErrSchemaMismatch,
			wantMsg: []string{`"k"`, "table has bigint, data has string"},
		},
		{
			name: "a value that does not fit names the column, both types and the row",
			bad: func(t *testing.T) []arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{
					{Name: "k", Type: arrow.PrimitiveTypes.Int64},
					{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
					{Name: "part", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				}, nil)
				return []arrow.RecordBatch{proofBatchOf(t, s, func(b *array.RecordBuilder) {
					b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
					b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
					b.Field(2).(*array.Int64Builder).AppendValues([]int64{3, 1 << 40}, nil)
				})}
			},
			wantErr: table.ErrValueDoesNotFit,
			wantMsg: []string{`"part"`, "1099511627776 (bigint)", "does not fit int", "row "},
		},
		{
			name: "a missing NOT NULL column is named",
			bad: func(t *testing.T) []arrow.RecordBatch {
				s := arrow.NewSchema([]arrow.Field{
					{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
					{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				}, nil)
				return []arrow.RecordBatch{proofBatchOf(t, s, func(b *array.RecordBuilder) {
					b.Field(0).(*array.StringBuilder).Append("x")
					b.Field(1).(*array.Int32Builder).Append(0)
				})}
			},
			wantErr: table.ErrNullInNonNullable,
			wantMsg: []string{`"k"`, "missing"},
		},
		{
			name: "extra column is named",
			bad: func(t *testing.T) []arrow.RecordBatch {
				s := arrow.NewSchema(append(append([]arrow.Field(nil), schema.Fields()...),
					arrow.Field{Name: "surplus", Type: arrow.PrimitiveTypes.Int8, Nullable: true}), nil)
				return []arrow.RecordBatch{proofBatchOf(t, s, func(b *array.RecordBuilder) {
					b.Field(0).(*array.Int64Builder).Append(1)
					b.Field(1).(*array.StringBuilder).Append("x")
					b.Field(2).(*array.Int32Builder).Append(0)
					b.Field(3).(*array.Int8Builder).Append(7)
				})}
			},
			wantErr: table.ErrSchemaMismatch,
			wantMsg: []string{`"surplus"`},
		},
		{
			name: "NULL in NOT NULL column is named",
			bad: func(t *testing.T) []arrow.RecordBatch {
				ns := arrow.NewSchema([]arrow.Field{
					{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
					{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
					{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				}, nil)
				return []arrow.RecordBatch{proofBatchOf(t, ns, func(b *array.RecordBuilder) {
					b.Field(0).(*array.Int64Builder).Append(1)
					b.Field(0).AppendNull()
					b.Field(1).(*array.StringBuilder).Append("x")
					b.Field(1).(*array.StringBuilder).Append("y")
					b.Field(2).(*array.Int32Builder).Append(0)
					b.Field(2).(*array.Int32Builder).Append(1)
				})}
			},
			wantErr: table.ErrNullInNonNullable,
			wantMsg: []string{`"k"`, "NOT NULL"},
		},
	}
	for _, tc := range cases {
		for _, bloomCol := range []string{"", "v"} {
			name := tc.name
			if bloomCol != "" {
				name += " with Bloom index"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				st := storage.NewMemory()
				props := map[string]string{}
				if bloomCol != "" {
					props[log.PropBloomFilterColumns] = bloomCol
				}
				tb, err := table.Create(ctx, st, schema, table.CreateOptions{PartitionColumns: []string{"part"}, Properties: props})
				if err != nil {
					t.Fatal(err)
				}
				recs := []arrow.RecordBatch{good(t, 0), good(t, 100), good(t, 200)}
				recs = append(recs, tc.bad(t)...)
				defer func() {
					for _, r := range recs {
						r.Release()
					}
				}()
				gate := make(chan struct{})
				var once sync.Once
				var filesDone atomic.Int64
				rdr := &proofGateReader{recs: recs, gateAt: 3, gate: gate}
				_, err = tb.Write(ctx, rdr, table.WriteOptions{TargetFileSize: 1, Progress: func(p table.Progress) {
					if p.Phase == "write" {
						filesDone.Add(1)
						once.Do(func() { close(gate) })
					}
				}})
				if rdr.timedOut || filesDone.Load() == 0 {
					t.Errorf("no data file was stored before the bad batch: cleanup not exercised")
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %v, want %v", err, tc.wantErr)
				}
				for _, m := range tc.wantMsg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not mention %s", err, m)
					}
				}
				if !strings.HasPrefix(err.Error(), "table: ") {
					t.Errorf("error %q is not prefixed with the package name", err)
				}
				proofRequireUntouched(t, tb, st, 0)
				// The table still takes good data afterwards.
				ok := good(t, 0)
				defer ok.Release()
				if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{ok}, table.WriteOptions{}); err != nil {
					t.Fatalf("good write after a failed one: %v", err)
				}
			})
		}
	}
}

func TestProofCancelledWriteLeavesNothing(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			st := storage.NewMemory()
			tb, err := table.Create(context.Background(), st, schema, table.CreateOptions{
				PartitionColumns: []string{"part"}, Properties: map[string]string{log.PropBloomFilterColumns: "v"}})
			if err != nil {
				t.Fatal(err)
			}
			var recs []arrow.RecordBatch
			for i := 0; i < 40; i++ {
				recs = append(recs, proofBatchOf(t, schema, func(b *array.RecordBuilder) {
					for j := 0; j < 200; j++ {
						b.Field(0).(*array.Int64Builder).Append(int64(i*1000 + j))
						b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", j%50))
						b.Field(2).(*array.Int32Builder).Append(int32(j % 4))
					}
				}))
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gate := make(chan struct{})
			var once sync.Once
			rdr := &proofCancelReader{recs: recs, cancel: cancel, gate: gate}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			res, err := tb.Write(ctx, rdr, table.WriteOptions{TargetFileSize: 1, Parallelism: par, Allocator: mem, Progress: func(p table.Progress) {
				if p.Phase == "write" {
					once.Do(func() { close(gate) })
				}
			}})
			if rdr.timedOut {
				t.Errorf("no file was stored from the first batch: cleanup not exercised")
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled write: got result %+v, error %v; want context.Canceled", res, err)
			}
			if rdr.i >= len(recs) {
				t.Errorf("the writer consumed all %d batches after cancellation", len(recs))
			}
			mem.AssertSize(t, 0) // a cancelled write releases every Arrow buffer it allocated
			proofRequireUntouched(t, tb, st, 0)
		})
	}
}

func TestProofBadFiltersNameTheProblem(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), simpleSchema(), table.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := simpleBatch(simpleSchema(), []int64{1, 2}, []string{"a", "b"})
	defer rec.Release()
	if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("unknown column lists candidates", func(t *testing.T) {
		for _, run := range []struct {
			name string
			do   func(filter string) error
		}{
			{"Scan", func(f string) error { _, err := tb.Scan(ctx, table.WithFilter(f)); return err }},
			{"Count", func(f string) error { _, _, err := tb.Count(ctx, table.WithFilter(f)); return err }},
		} {
			err := run.do("kk = 1 AND v = 'a'")
			var uc *expr.UnknownColumnError
			if !errors.As(err, &uc) {
				t.Fatalf("%s: got %v, want *expr.UnknownColumnError", run.name, err)
			}
			if !errors.Is(err, expr.ErrUnknownColumn) {
				t.Errorf("%s: %v does not wrap expr.ErrUnknownColumn", run.name, err)
			}
			if uc.Column != "kk" || !strings.Contains(err.Error(), "kk") {
				t.Errorf("%s: error %q (column %q) does not name kk", run.name, err, uc.Column)
			}
			if !proofContains(uc.Candidates, "k") || !strings.Contains(err.Error(), "k") {
				t.Errorf("%s: candidates %v of %q do not include k", run.name, uc.Candidates, err)
			}
		}
	})
	t.Run("unknown projected column lists the columns", func(t *testing.T) {
		_, err := tb.Scan(ctx, table.WithColumns("k", "nope"))
		if !errors.Is(err, table.ErrUnknownColumn) {
			t.Fatalf("got %v, want table.ErrUnknownColumn", err)
		}
		if !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "k, v") {
			t.Errorf("error %q should name nope and list the columns", err)
		}
	})
	t.Run("parse errors give the position", func(t *testing.T) {
		cases := []struct {
			filter string
			pos    int
		}{
			{"k >= AND v = 'x'", 6},
			{"k = 1 AND (v = 'x'", 19},
			{"v LIKE 'unterminated", 8},
			{"k IN (1, 2,)", 12},
		}
		for _, c := range cases {
			_, err := tb.Scan(ctx, table.WithFilter(c.filter))
			var pe *expr.ParseError
			if !errors.As(err, &pe) {
				t.Errorf("%q: got %v, want *expr.ParseError", c.filter, err)
				continue
			}
			if pe.Pos != c.pos {
				t.Errorf("%q: error at %d (%v), want position %d", c.filter, pe.Pos, err, c.pos)
			}
			if !strings.HasPrefix(err.Error(), "expr: at ") {
				t.Errorf("%q: message %q does not start with the position", c.filter, err)
			}
		}
	})
	t.Run("type errors name the column", func(t *testing.T) {
		_, err := tb.Scan(ctx, table.WithFilter("k = 'not a number'"))
		if err == nil || !strings.Contains(err.Error(), "k") {
			t.Fatalf("comparing a long column with a string: got %v, want an error naming k", err)
		}
		var te *expr.TypeError
		if !errors.As(err, &te) {
			t.Errorf("got %T %v, want *expr.TypeError", err, err)
		}
	})
}

func proofContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
