package tableview_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
)

// identityRules returns rules with one identity column "rid" at index 1.
func identityRules(id log.Identity) *tableview.WriteRules {
	return &tableview.WriteRules{Identity: []*tableview.IdentityColumn{{Name: "rid", Index: 1, Identity: id}}}
}

// TestIdentityAssigner: values start at Start (or one Step past the high-water
// mark), go Step by Step across calls, fail instead of overflowing bigint, and
// Marks reports the last value handed out. The oracle is a plain loop.
func TestIdentityAssigner(t *testing.T) {
	for _, tc := range []struct {
		name       string
		id         log.Identity
		takes      []int
		overflowAt int // index into the concatenated values where Take fails; -1: none
	}{
		{"from start", log.Identity{Start: 1, Step: 1}, []int{3, 2}, -1},
		{"after the mark", log.Identity{Start: 1, Step: 5, HighWaterMark: 40, HasHighWaterMark: true}, []int{1, 4}, -1},
		{"descending", log.Identity{Start: -3, Step: -2}, []int{2, 2}, -1},
		{"overflow", log.Identity{Start: math.MaxInt64 - 2, Step: 1}, []int{2, 2}, 3},
		{"mark at max", log.Identity{Start: 1, Step: 1, HighWaterMark: math.MaxInt64, HasHighWaterMark: true}, []int{1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tableview.NewIdentityAssigner(identityRules(tc.id))
			next, ok := tc.id.Start, true
			if tc.id.HasHighWaterMark {
				next = tc.id.HighWaterMark + tc.id.Step
				ok = (next > tc.id.HighWaterMark) == (tc.id.Step > 0)
			}
			seen, last, failed := 0, int64(0), false
			for _, n := range tc.takes {
				got, err := a.Take("rid", n)
				var want []int64
				overflow := false
				for i := 0; i < n; i++ {
					if !ok {
						overflow = true
						break
					}
					want = append(want, next)
					s := next + tc.id.Step
					ok = (s > next) == (tc.id.Step > 0)
					next = s
				}
				if overflow {
					require.ErrorIs(t, err, tableview.ErrIdentityColumn)
					require.ErrorIs(t, err, tableview.ErrInvalidArgument)
					require.Equal(t, tc.overflowAt, seen+len(want))
					failed = true
					break
				}
				require.NoError(t, err)
				require.Equal(t, want, got)
				seen += n
				last = want[len(want)-1]
			}
			require.Equal(t, tc.overflowAt >= 0, failed)
			if seen > 0 && !failed { // a failed Take fails its write: no mark is committed
				require.Equal(t, map[string]int64{"rid": last}, a.Marks())
			}
		})
	}
	require.Nil(t, tableview.NewIdentityAssigner(&tableview.WriteRules{}))
	require.Nil(t, (*tableview.IdentityAssigner)(nil).Marks())
}

// TestCompleteInsert: a missing identity column takes the next values; an explicit
// value for a GENERATED ALWAYS identity column is refused; an UPDATE assigning it
// is refused; InsertOptional marks the identity column.
func TestCompleteInsert(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "rid", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rules := identityRules(log.Identity{Start: 10, Step: 10})
	require.Equal(t, []bool{false, true}, tableview.InsertOptional(rules, schema))
	require.Nil(t, tableview.InsertOptional(&tableview.WriteRules{}, schema))

	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(`[{"id": 1, "rid": null}, {"id": 2, "rid": null}]`))
	require.NoError(t, err)
	defer rec.Release()
	ids := tableview.NewIdentityAssigner(rules)
	out, err := tableview.CompleteInsert(context.Background(), rules, ids, rec, []int{1}, mem)
	require.NoError(t, err)
	require.Equal(t, []int64{10, 20}, out.Column(1).(*array.Int64).Int64Values())
	out.Release()

	_, err = tableview.CompleteInsert(context.Background(), rules, ids, rec, nil, mem)
	require.ErrorIs(t, err, tableview.ErrIdentityColumn)
	require.Contains(t, err.Error(), "GENERATED ALWAYS")

	require.ErrorIs(t, tableview.CheckIdentityUpdate(rules, []string{"RID"}), tableview.ErrIdentityColumn)
	require.NoError(t, tableview.CheckIdentityUpdate(rules, []string{"id"}))
	require.NoError(t, tableview.CheckIdentityUpdate(nil, []string{"rid"}))
}
