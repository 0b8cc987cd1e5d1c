package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/table"
	"github.com/skiplake/skiplake/value"
)

const microsPerDay = int64(86_400_000_000)

// generatedPartitionTable creates a table (id bigint, ts TSTYPE, and the partition
// columns y = YEAR(ts), m = MONTH(ts), dd = DAY(ts), d = CAST(ts AS DATE)) and
// appends rows with the given timestamps (nil: NULL) in two commits, ids 0, 1, ...
func generatedPartitionTable(t *testing.T, tsType string, ts []*int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	schema, rules, err := table.ParseSchemaRules("id bigint, ts " + tsType + ", y int GENERATED ALWAYS AS (YEAR(ts)), " +
		"m int GENERATED ALWAYS AS (month(ts)), dd int GENERATED ALWAYS AS (dayofmonth(ts)), d date GENERATED ALWAYS AS (CAST(ts AS DATE))")
	require.NoError(t, err)
	tb, err := table.CreateURL(ctx, t.TempDir(), schema, table.CreateOptions{ColumnRules: rules, PartitionColumns: []string{"y", "m", "dd", "d"}})
	require.NoError(t, err)
	tsField := schema.Field(1)
	in := arrow.NewSchema([]arrow.Field{schema.Field(0), tsField}, nil)
	half := len(ts) / 2
	for _, part := range [][2]int{{0, half}, {half, len(ts)}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, in)
		for i := part[0]; i < part[1]; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			tb := b.Field(1).(*array.TimestampBuilder)
			if ts[i] == nil {
				tb.AppendNull()
			} else {
				tb.Append(arrow.Timestamp(*ts[i]))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
		rec.Release()
		require.NoError(t, err)
	}
	return tb
}

// idsMatching reads the ids of the rows filter selects (sorted) and the scan report.
func idsMatching(t *testing.T, tb *table.Table, filter expr.Expr) ([]int64, *table.ScanReport, int64) {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	sc, err := snap.Scan(ctx, table.WithPredicate(filter), table.WithColumns("id"))
	require.NoError(t, err)
	rdr, err := sc.Read(ctx)
	require.NoError(t, err)
	defer rdr.Release()
	var ids []int64
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.Int64)
		ids = append(ids, col.Int64Values()...)
	}
	require.NoError(t, rdr.Err())
	slices.Sort(ids)
	n, _, err := sc.Count(ctx)
	require.NoError(t, err)
	return ids, sc.Report(), n
}

// partitionSkipped returns how many files the partition pass skipped.
func partitionSkipped(rep *table.ScanReport) int64 {
	for _, l := range rep.Levels {
		if l.Level == skipping.PartitionLevel.String() {
			return l.Skipped
		}
	}
	return 0
}

// Pruning through generation expressions never drops a matching row: random
// timestamps (NULLs, midnights and a microsecond either side, dates before 1970 and
// before year 1) and random filters on ts (comparisons, BETWEEN, IN, IS [NOT] NULL,
// NOT, AND, OR) read exactly the rows a brute-force evaluation of the filter selects,
// for timestamp and timestamp_ntz sources.
func TestGeneratedPartitionPruningProperty(t *testing.T) {
	for _, tsType := range []string{"timestamp", "timestamp_ntz"} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed=%d", tsType, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 30))
				days := []int64{
					value.DaysFromCivil(2024, 2, 28), value.DaysFromCivil(2024, 2, 29), value.DaysFromCivil(2024, 3, 1),
					value.DaysFromCivil(2023, 12, 31), value.DaysFromCivil(2024, 1, 1), -1, 0,
					value.DaysFromCivil(-1, 12, 31), value.DaysFromCivil(0, 1, 1), value.DaysFromCivil(1969, 1, 1),
				}
				within := []int64{0, 1, microsPerDay - 1, microsPerDay / 2, 3_600_000_000 * 23}
				pick := func() int64 {
					d := days[r.IntN(len(days))]
					off := within[r.IntN(len(within))]
					if r.IntN(4) == 0 {
						off = r.Int64N(microsPerDay)
					}
					return d*microsPerDay + off
				}
				n := 60
				ts := make([]*int64, n)
				for i := range ts {
					if r.IntN(8) != 0 {
						v := pick()
						ts[i] = &v
					}
				}
				tb := generatedPartitionTable(t, tsType, ts)
				lit := func() expr.Expr {
					v := pick()
					switch r.IntN(4) {
					case 0:
						v += []int64{-1, 1, -microsPerDay, microsPerDay, -18 * 3_600_000_000}[r.IntN(5)]
					case 1:
						v = value.FloorDiv(v, microsPerDay) * microsPerDay // a midnight
					}
					if tsType == "timestamp" {
						return expr.Lit(value.Timestamp(v))
					}
					return expr.Lit(value.TimestampNTZ(v))
				}
				col := expr.Col("ts")
				var leaf func() expr.Expr
				leaf = func() expr.Expr {
					switch r.IntN(10) {
					case 0:
						return expr.Between(col, lit(), lit())
					case 1:
						return expr.In(col, lit(), lit(), lit())
					case 2:
						return expr.IsNull(col)
					case 3:
						return expr.IsNotNull(col)
					case 4:
						return expr.Not(leaf())
					default:
						ops := []expr.Op{expr.OpEq, expr.OpNe, expr.OpLt, expr.OpLe, expr.OpGt, expr.OpGe}
						return expr.Compare(ops[r.IntN(len(ops))], col, lit())
					}
				}
				var filter func(depth int) expr.Expr
				filter = func(depth int) expr.Expr {
					if depth == 0 || r.IntN(3) == 0 {
						return leaf()
					}
					if r.IntN(2) == 0 {
						return expr.And(filter(depth-1), filter(depth-1))
					}
					return expr.Or(filter(depth-1), filter(depth-1))
				}
				rounds := 60
				if testing.Short() {
					rounds = 15
				}
				var pruned int64
				for range rounds {
					f := filter(2)
					b, err := expr.Bind(f, arrow.NewSchema([]arrow.Field{{Name: "ts", Type: tsArrowType(tsType), Nullable: true}}, nil))
					require.NoError(t, err)
					var want []int64
					for i, v := range ts {
						x := value.Null()
						if v != nil {
							x = value.Timestamp(*v)
							if tsType == "timestamp_ntz" {
								x = value.TimestampNTZ(*v)
							}
						}
						if b.EvaluateRow([]value.Value{x}) {
							want = append(want, int64(i))
						}
					}
					got, rep, count := idsMatching(t, tb, f)
					require.Equal(t, want, got, "filter %s", f)
					require.Equal(t, int64(len(want)), count, "count of %s", f)
					pruned += partitionSkipped(rep)
				}
				require.Positive(t, pruned, "the partition pass pruned nothing in %d filters", rounds)
			})
		}
	}
}

func tsArrowType(tsType string) arrow.DataType {
	if tsType == "timestamp" {
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	return &arrow.TimestampType{Unit: arrow.Microsecond}
}

// Filters on the source column prune the partitions of the generated partition
// columns, by the rule each function allows (explain's partition level counts
// them), and a filter the rules cannot map prunes nothing at that level.
func TestGeneratedPartitionPruningPlan(t *testing.T) {
	// One row per day from 2024-01-01 to 2024-01-10 at 12:00 (one file each).
	var ts []*int64
	for i := range int64(10) {
		v := (value.DaysFromCivil(2024, 1, 1)+i)*microsPerDay + microsPerDay/2
		ts = append(ts, &v)
	}
	for _, c := range []struct {
		tsType, filter string
		skipped        int64
	}{
		// timestamp_ntz: no zone, exact day bounds.
		{"timestamp_ntz", "ts >= '2024-01-05 10:00:00'", 4},
		{"timestamp_ntz", "ts < '2024-01-03 00:00:00'", 7}, // d <= 2024-01-03, as Spark maps <
		{"timestamp_ntz", "ts = '2024-01-07 12:00:00'", 9},
		{"timestamp_ntz", "ts BETWEEN '2024-01-02 00:00:00' AND '2024-01-04 23:59:59'", 7},
		{"timestamp_ntz", "ts IN ('2024-01-02 12:00:00', '2024-01-09 01:00:00')", 8},
		{"timestamp_ntz", "ts > '2024-01-08 00:00:00' OR ts < '2024-01-02 00:00:00'", 5},
		{"timestamp_ntz", "ts IS NULL", 10},
		// timestamp: the bounds widen by a day (another writer's session time zone).
		{"timestamp", "ts >= '2024-01-05 10:00:00'", 3},
		{"timestamp", "ts = '2024-01-07 12:00:00'", 7},
		// Nothing to map: <> and a filter on another column.
		{"timestamp_ntz", "ts <> '2024-01-07 12:00:00'", 0},
		{"timestamp_ntz", "id > 3", 0},
		{"timestamp_ntz", "ts >= '2024-01-05 10:00:00' OR id = 1", 0},
	} {
		t.Run(c.tsType+"/"+c.filter, func(t *testing.T) {
			tb := generatedPartitionTable(t, c.tsType, ts)
			f, err := expr.Parse(c.filter)
			require.NoError(t, err)
			_, rep, _ := idsMatching(t, tb, f)
			require.Equal(t, c.skipped, partitionSkipped(rep))
		})
	}
}

// A table Spark wrote with a session time zone other than UTC holds the local date of
// ts in d = CAST(ts AS DATE). skiplake evaluates in UTC; pruning must still read every
// matching row, which the day of slack for timestamp sources ensures. The table is
// written by skiplake with d a plain column holding the +14:00 date, then turned into a
// generated column by a metaData commit, as Spark's log would have it.
func TestGeneratedPartitionPruningOtherTimeZone(t *testing.T) {
	ctx := context.Background()
	schema, _, err := table.ParseSchemaRules("id bigint, ts timestamp, d date")
	require.NoError(t, err)
	tb, err := table.CreateURL(ctx, t.TempDir(), schema, table.CreateOptions{PartitionColumns: []string{"d"}})
	require.NoError(t, err)
	const zone = 14 * 3_600_000_000
	var ts []int64
	for day := range int64(4) {
		for _, off := range []int64{0, 1, 9 * 3_600_000_000, 10*3_600_000_000 - 1, 10 * 3_600_000_000, 12 * 3_600_000_000, microsPerDay - 1} {
			ts = append(ts, (value.DaysFromCivil(2024, 1, 1)+day)*microsPerDay+off)
		}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i, v := range ts {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
		b.Field(2).(*array.Date32Builder).Append(arrow.Date32(value.FloorDiv(v+zone, microsPerDay)))
	}
	rec := b.NewRecordBatch()
	b.Release()
	_, err = tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
	rec.Release()
	require.NoError(t, err)

	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	md := snap.Log().Metadata()
	st, err := log.ParseSchema(md.SchemaString)
	require.NoError(t, err)
	st.Field("d").Metadata = map[string]any{log.GenerationExpressionKey: "CAST(ts AS DATE)"}
	md.SchemaString = st.JSON()
	txn := snap.Log().NewTransaction(log.TxnOptions{})
	txn.SetMetadata(md)
	txn.SetProtocol(log.Protocol{MinReaderVersion: 1, MinWriterVersion: 4})
	_, err = txn.Commit(ctx, log.CommitInfo{Operation: "CHANGE COLUMN"})
	require.NoError(t, err)

	tsType := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	var pruned int64
	for _, lit := range ts {
		for _, op := range []expr.Op{expr.OpEq, expr.OpLt, expr.OpLe, expr.OpGt, expr.OpGe} {
			f := expr.Compare(op, expr.Col("ts"), expr.Lit(value.Timestamp(lit)))
			bound, err := expr.Bind(f, arrow.NewSchema([]arrow.Field{{Name: "ts", Type: tsType, Nullable: true}}, nil))
			require.NoError(t, err)
			var want []int64
			for i, v := range ts {
				if bound.EvaluateRow([]value.Value{value.Timestamp(v)}) {
					want = append(want, int64(i))
				}
			}
			got, rep, _ := idsMatching(t, tb, f)
			require.Equal(t, want, got, "filter %s", f)
			pruned += partitionSkipped(rep)
		}
	}
	require.Positive(t, pruned)
}
