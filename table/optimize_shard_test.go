package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// commitRemoves returns commit v's operation and the paths it removed.
func commitRemoves(t *testing.T, st storage.Storage, v int64) (op string, removed []string) {
	t.Helper()
	for _, a := range commitActions(t, st, v) {
		switch {
		case a.Remove != nil:
			removed = append(removed, a.Remove.Path)
		case a.CommitInfo != nil:
			op = a.CommitInfo.Operation
		}
	}
	return op, removed
}

// TestOptimizeShardsShareOneRun: four shards of one OPTIMIZE plan, run at the same
// time while appends commit, together do exactly what one unsharded run would: every
// commit lands, the versions have no gap, no file is rewritten twice, every file of
// the plan is rewritten once, and the table reads the original rows plus the
// appended ones.
func TestOptimizeShardsShareOneRun(t *testing.T) {
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			ctx := context.Background()
			st := storage.NewMemory()
			copts := table.CreateOptions{Properties: map[string]string{"delta.targetFileSize": "6kb"}}
			if partitioned {
				copts.PartitionColumns = []string{"s"}
			}
			tb, err := table.Create(ctx, st, layoutSchema(), copts)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(5, 6))
			for i := 0; i < 40; i++ {
				rec := budgetBatch(r, 20+r.IntN(60), partitioned)
				_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				require.NoError(t, err)
				rec.Release()
			}
			snap, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			v0 := snap.Version()
			want := readAllRows(t, tb)

			whole, err := tb.Optimize(ctx, table.OptimizeOptions{DryRun: true, PlanAt: table.AtVersion(v0)})
			require.NoError(t, err)
			require.GreaterOrEqual(t, whole.Plan.NumBins, 4, "enough bins for four shards")
			planned := map[string]bool{}
			for _, pp := range whole.Plan.Partitions {
				for _, b := range pp.Bins {
					for _, f := range b.Files {
						planned[f.Path] = true
					}
				}
			}

			const shards = 4
			var wg sync.WaitGroup
			errs := make([]error, shards+1)
			bins := make([]int, shards)
			for k := 0; k < shards; k++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := tb.Optimize(ctx, table.OptimizeOptions{PlanAt: table.AtVersion(v0), Shard: k, Shards: shards, Parallelism: 1})
					errs[k] = err
					if err == nil {
						bins[k] = res.Plan.NumBins
					}
				}()
			}
			var appended []arrow.RecordBatch
			for i := 0; i < 5; i++ {
				appended = append(appended, budgetBatch(r, 30, partitioned))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, rec := range appended {
					if _, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
						errs[shards] = err
						return
					}
				}
			}()
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "worker %d", i)
			}
			total := 0
			for _, n := range bins {
				total += n
			}
			require.Equal(t, whole.Plan.NumBins, total, "every bin belongs to one shard")

			end, err := tb.Snapshot(ctx, table.Latest())
			require.NoError(t, err)
			removedBy := map[string]int64{}
			optimizes := 0
			for v := v0 + 1; v <= end.Version(); v++ {
				op, removed := commitRemoves(t, st, v) // fails on a gap
				if op == "OPTIMIZE" {
					optimizes++
				}
				for _, p := range removed {
					prev, twice := removedBy[p]
					require.False(t, twice, "%s removed by versions %d and %d", p, prev, v)
					require.True(t, planned[p], "version %d removed %s, which the plan did not name", v, p)
					removedBy[p] = v
				}
			}
			require.Len(t, removedBy, len(planned), "every planned file rewritten once")
			require.Equal(t, whole.Plan.NumBins, optimizes, "one commit per bin")
			wantAll := append(append([]string(nil), want...), tableRows(t, appended...)...)
			sort.Strings(wantAll)
			require.Equal(t, wantAll, readAllRows(t, tb))
			for _, rec := range appended {
				rec.Release()
			}
		})
	}
}

// TestOptimizeShardOptions: a shard needs a fixed plan version and a valid number.
func TestOptimizeShardOptions(t *testing.T) {
	ctx := context.Background()
	tb, err := table.Create(ctx, storage.NewMemory(), layoutSchema(), table.CreateOptions{})
	require.NoError(t, err)
	for _, o := range []table.OptimizeOptions{
		{Shard: 0, Shards: 2},                             // no PlanAt
		{Shard: 2, Shards: 2, PlanAt: table.AtVersion(0)}, // out of range
		{Shard: 1, Shards: 0, PlanAt: table.AtVersion(0)}, // shard without shards
		{Shard: -1, Shards: 2, PlanAt: table.AtVersion(0)},
	} {
		_, err := tb.Optimize(ctx, o)
		require.ErrorIs(t, err, table.ErrInvalidArgument, "%+v", o)
	}
}
