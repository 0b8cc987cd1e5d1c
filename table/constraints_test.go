package table_test

// Write rules (issue 30): CHECK constraints, generated and identity columns on a
// table whose first commit is built as Delta Spark writes one (PROTOCOL.md "CHECK
// Constraints", "Generated Columns", "Identity Columns": legacy writer version 6,
// delta.constraints.<name> in the configuration, delta.generationExpression and
// delta.identity.* in the field metadata).

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// rulesSchema is the table's schema: key and amount are plain, gen is GENERATED
// ALWAYS AS (amount + 1), rid is GENERATED ALWAYS AS IDENTITY (START WITH 100
// INCREMENT BY 10).
const rulesSchema = `{"type":"struct","fields":[` +
	`{"name":"key","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"gen","type":"long","nullable":true,"metadata":{"delta.generationExpression":"amount + 1"}},` +
	`{"name":"rid","type":"long","nullable":true,"metadata":{"delta.identity.start":100,"delta.identity.step":10,"delta.identity.allowExplicitInsert":false}}]}`

// rulesTable writes version 0 of a table with rulesSchema, the given CHECK
// constraints (name → expression) and protocol reader 1 / writer 6, as Spark's
// CREATE TABLE does, and opens it.
func rulesTable(t testing.TB, schema string, constraints map[string]string) (*table.Table, string) {
	t.Helper()
	dir := t.TempDir()
	conf := map[string]string{}
	for k, v := range constraints {
		conf["delta.constraints."+k] = v
	}
	lines := []any{
		map[string]any{"commitInfo": map[string]any{"timestamp": 1700000000000, "operation": "CREATE TABLE", "operationParameters": map[string]any{}}},
		map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 6}},
		map[string]any{"metaData": map[string]any{"id": "7d1f0b0e-2c55-4a39-9a51-6b2f3f4b5a10", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
			"schemaString": schema, "partitionColumns": []string{}, "configuration": conf, "createdTime": 1700000000000}},
	}
	var b strings.Builder
	for _, l := range lines {
		js, err := json.Marshal(l)
		require.NoError(t, err)
		b.Write(js)
		b.WriteByte('\n')
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)), []byte(b.String()), 0o644))
	tb, err := table.OpenURL(context.Background(), dir)
	require.NoError(t, err)
	return tb, dir
}

// longBatch builds a batch of int64 columns (nil: NULL).
func longBatch(names []string, rows [][]*int64) arrow.RecordBatch {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, r := range rows {
		for c, v := range r {
			fb := b.Field(c).(*array.Int64Builder)
			if v == nil {
				fb.AppendNull()
			} else {
				fb.Append(*v)
			}
		}
	}
	return b.NewRecordBatch()
}

func appendLongs(t *testing.T, tb *table.Table, names []string, rows ...[]*int64) error {
	t.Helper()
	rec := longBatch(names, rows)
	defer rec.Release()
	_, err := tb.WriteBatches(context.Background(), []arrow.RecordBatch{rec}, table.WriteOptions{})
	return err
}

// rowsOf reads every row as "key|amount|gen|rid", sorted.
func rowsOf(t *testing.T, tb *table.Table) []string {
	t.Helper()
	tbl, err := tb.ReadAll(context.Background())
	require.NoError(t, err)
	defer tbl.Release()
	var out []string
	tr := array.NewTableReader(tbl, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, rowString(rec, i))
		}
	}
	sort.Strings(out)
	return out
}

func version(t *testing.T, tb *table.Table) int64 {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	return snap.Version()
}

// highWaterMark returns rid's delta.identity.highWaterMark at the latest version.
func highWaterMark(t *testing.T, tb *table.Table) (int64, bool) {
	t.Helper()
	snap, err := tb.Snapshot(context.Background(), table.Latest())
	require.NoError(t, err)
	s, err := log.ParseSchema(snap.Log().Metadata().SchemaString)
	require.NoError(t, err)
	id, ok, err := log.FieldIdentity(s.Field("rid"))
	require.NoError(t, err)
	require.True(t, ok)
	return id.HighWaterMark, id.HasHighWaterMark
}

var keyAmount = []string{"key", "amount"}

func TestWriteRulesAppend(t *testing.T) {
	tb, _ := rulesTable(t, rulesSchema, map[string]string{"pos": "amount > 0"})

	// Generated and identity columns absent: computed and assigned; the high-water
	// mark is committed with the rows.
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(1), ip(5)}, []*int64{ip(2), ip(7)}))
	require.Equal(t, []string{"1|5|6|100", "2|7|8|110"}, rowsOf(t, tb))
	hwm, ok := highWaterMark(t, tb)
	require.True(t, ok)
	require.Equal(t, int64(110), hwm)
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(3), ip(1)}))
	require.Contains(t, rowsOf(t, tb), "3|1|2|120")
	hwm, _ = highWaterMark(t, tb)
	require.Equal(t, int64(120), hwm)
	v := version(t, tb)

	cases := []struct {
		name  string
		cols  []string
		rows  [][]*int64
		is    error
		parts []string
	}{
		{"check false", keyAmount, [][]*int64{{ip(4), ip(3)}, {ip(5), ip(-1)}}, table.ErrConstraintViolated,
			[]string{"CHECK constraint pos", "(amount > 0)", "amount : -1"}},
		{"check null", keyAmount, [][]*int64{{ip(4), nil}}, table.ErrConstraintViolated,
			[]string{"CHECK constraint pos", "amount : NULL"}},
		{"generated mismatch", []string{"key", "amount", "gen"}, [][]*int64{{ip(4), ip(3), ip(4)}, {ip(5), ip(3), ip(9)}}, table.ErrConstraintViolated,
			[]string{"generated column gen", "amount + 1", "gen is 9, the expression gives 4"}},
		{"explicit always identity", []string{"key", "amount", "rid"}, [][]*int64{{ip(4), ip(3), ip(1)}}, table.ErrIdentityColumn,
			[]string{"rid", "GENERATED ALWAYS AS IDENTITY"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := appendLongs(t, tb, c.cols, c.rows...)
			require.ErrorIs(t, err, c.is)
			for _, p := range c.parts {
				require.Contains(t, err.Error(), p)
			}
			require.Equal(t, v, version(t, tb), "nothing committed")
		})
	}
	// A generated value given and right is accepted.
	require.NoError(t, appendLongs(t, tb, []string{"key", "amount", "gen"}, []*int64{ip(9), ip(3), ip(4)}))
	require.Contains(t, rowsOf(t, tb), "9|3|4|130")
}

// TestWriteRulesAllOrNothing: random batches in which some rows violate the
// constraint commit nothing; the others commit every row (oracle: the rows).
func TestWriteRulesAllOrNothing(t *testing.T) {
	tb, _ := rulesTable(t, rulesSchema, map[string]string{"range": "amount BETWEEN 0 AND 1000 AND key IS NOT NULL"})
	rng := rand.New(rand.NewPCG(3, 30))
	var want []string
	next := int64(100)
	for round := 0; round < 12; round++ {
		n := 1 + rng.IntN(50)
		var rows [][]*int64
		var bad bool
		var expect []string
		for i := 0; i < n; i++ {
			k, a := ip(int64(round*100+i)), ip(rng.Int64N(1100))
			if rng.IntN(40) == 0 {
				k = nil
			}
			if k == nil || *a > 1000 {
				bad = true
			}
			rows = append(rows, []*int64{k, a})
			if k != nil {
				expect = append(expect, fmt.Sprintf("%d|%d|%d|%d", *k, *a, *a+1, next+int64(10*i)))
			}
		}
		before := version(t, tb)
		err := appendLongs(t, tb, keyAmount, rows...)
		if bad {
			require.ErrorIs(t, err, table.ErrConstraintViolated, "round %d", round)
			require.Equal(t, before, version(t, tb))
			continue
		}
		require.NoError(t, err, "round %d", round)
		want = append(want, expect...)
		next += int64(10 * n)
	}
	sort.Strings(want)
	require.Equal(t, want, rowsOf(t, tb))
}

func TestWriteRulesUpdate(t *testing.T) {
	ctx := context.Background()
	tb, _ := rulesTable(t, rulesSchema, map[string]string{"pos": "amount > 0"})
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(1), ip(5)}, []*int64{ip(2), ip(7)}))
	v := version(t, tb)

	_, err := tb.Update(ctx, "key = 1", table.UpdateOptions{Set: "amount = amount - 6"})
	require.ErrorIs(t, err, table.ErrConstraintViolated)
	require.Contains(t, err.Error(), "amount : -1")
	_, err = tb.Update(ctx, "key = 1", table.UpdateOptions{Set: "rid = 1"})
	require.ErrorIs(t, err, table.ErrIdentityColumn)
	_, err = tb.Update(ctx, "key = 1", table.UpdateOptions{Set: "gen = 0"})
	require.ErrorIs(t, err, table.ErrConstraintViolated)
	require.Equal(t, v, version(t, tb))

	// The generated column follows the updated amount; rid is kept.
	_, err = tb.Update(ctx, "key = 1", table.UpdateOptions{Set: "amount = amount + 10"})
	require.NoError(t, err)
	require.Equal(t, []string{"1|15|16|100", "2|7|8|110"}, rowsOf(t, tb))
	// DELETE rewrites rows without changing them.
	_, err = tb.Delete(ctx, "key = 2", table.DMLOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"1|15|16|100"}, rowsOf(t, tb))
}

func TestWriteRulesMerge(t *testing.T) {
	ctx := context.Background()
	tb, _ := rulesTable(t, rulesSchema, map[string]string{"pos": "amount > 0"})
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(1), ip(5)}, []*int64{ip(2), ip(7)}))
	merge := func(opts table.MergeOptions, rows ...[]*int64) error {
		rec := longBatch(keyAmount, rows)
		defer rec.Release()
		rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
		require.NoError(t, err)
		defer rdr.Release()
		_, err = tb.Merge(ctx, rdr, opts)
		return err
	}
	// Upsert: the update recomputes gen and keeps rid; the insert gets both.
	require.NoError(t, merge(table.Upsert("key"), []*int64{ip(2), ip(70)}, []*int64{ip(3), ip(9)}))
	require.Equal(t, []string{"1|5|6|100", "2|70|71|110", "3|9|10|120"}, rowsOf(t, tb))
	hwm, _ := highWaterMark(t, tb)
	require.Equal(t, int64(120), hwm)
	v := version(t, tb)

	// A violating insert, a violating SET update: nothing committed.
	err := merge(table.Upsert("key"), []*int64{ip(4), ip(-4)})
	require.ErrorIs(t, err, table.ErrConstraintViolated)
	require.Contains(t, err.Error(), "amount : -4")
	err = merge(table.MergeOptions{On: []string{"key"}, WhenMatched: []table.MergeClause{{Action: table.MergeUpdate, Set: "amount = 0 - target.amount"}}}, []*int64{ip(1), ip(0)})
	require.ErrorIs(t, err, table.ErrConstraintViolated)
	err = merge(table.MergeOptions{On: []string{"key"}, WhenMatched: []table.MergeClause{{Action: table.MergeUpdate, Set: "rid = 5"}}}, []*int64{ip(1), ip(0)})
	require.ErrorIs(t, err, table.ErrIdentityColumn)
	require.Equal(t, v, version(t, tb))

	// A SET update that leaves gen out recomputes it.
	require.NoError(t, merge(table.MergeOptions{On: []string{"key"}, WhenMatched: []table.MergeClause{{Action: table.MergeUpdate, Set: "amount = source.amount"}}}, []*int64{ip(1), ip(50)}))
	require.Equal(t, []string{"1|50|51|100", "2|70|71|110", "3|9|10|120"}, rowsOf(t, tb))
}

func TestAlterConstraint(t *testing.T) {
	ctx := context.Background()
	tb, _ := rulesTable(t, rulesSchema, nil)
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(1), ip(5)}, []*int64{ip(2), ip(7)}))
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(3), ip(500)}))
	v := version(t, tb)

	// Live rows violate it: refused naming the row, nothing committed.
	_, err := tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "small", Expr: "amount < 100"}})
	require.ErrorIs(t, err, table.ErrConstraintViolated)
	require.Contains(t, err.Error(), "CHECK constraint small (amount < 100) violated by row with values: amount : 500")
	// Does not parse; uses a function skiplake lacks.
	_, err = tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "bad", Expr: "amount >"}})
	require.ErrorIs(t, err, table.ErrWriteRules)
	_, err = tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "bad", Expr: "sha2(amount, 256) <> ''"}})
	require.ErrorIs(t, err, table.ErrWriteRules)
	require.Contains(t, err.Error(), "sha2")
	require.Equal(t, v, version(t, tb))

	// Holds: the files whose statistics prove it (minimum amounts 5 and 500) are not
	// read.
	res, err := tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "Pos", Expr: "amount >= 5"}})
	require.NoError(t, err)
	require.Equal(t, "ADD CONSTRAINT", res.Operation)
	require.Equal(t, int64(2), res.FilesSkipped, "both files' minimum amount is at least 5")
	require.Equal(t, int64(0), res.FilesChecked)
	// Enforced from then on.
	err = appendLongs(t, tb, keyAmount, []*int64{ip(9), ip(4)})
	require.ErrorIs(t, err, table.ErrConstraintViolated)
	require.Contains(t, err.Error(), "CHECK constraint pos", "names are stored in lower case, as Spark stores them")
	// A second constraint needs a read of the files its statistics do not prove.
	res, err = tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "cap", Expr: "amount < 100 OR key = 3"}})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.FilesChecked+res.FilesSkipped, "two files considered")
	require.GreaterOrEqual(t, res.FilesSkipped, int64(1), "the file of amounts 5 and 7 is proven")
	// Same name again: refused.
	_, err = tb.Alter(ctx, table.AlterOptions{AddConstraint: &table.CheckConstraint{Name: "pos", Expr: "amount > 0"}})
	require.ErrorIs(t, err, log.ErrConstraintExists)

	// Drop: gone, the write passes; a missing name is an error unless IfExists.
	_, err = tb.Alter(ctx, table.AlterOptions{DropConstraint: "POS"})
	require.NoError(t, err)
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(9), ip(4)}))
	_, err = tb.Alter(ctx, table.AlterOptions{DropConstraint: "pos"})
	require.ErrorIs(t, err, log.ErrConstraintNotFound)
	_, err = tb.Alter(ctx, table.AlterOptions{DropConstraint: "pos", IfExists: true})
	require.NoError(t, err)
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cap": "amount < 100 OR key = 3"}, log.CheckConstraints(snap.Log().Metadata()))
	require.Equal(t, 6, snap.Log().Protocol().MinWriterVersion, "the protocol is unchanged")
}

// TestWriteRulesUnevaluable: a constraint whose expression skiplake cannot evaluate
// exactly as Spark refuses writes that add rows, naming the function; OPTIMIZE (rows
// unchanged) still works.
func TestWriteRulesUnevaluable(t *testing.T) {
	ctx := context.Background()
	tb, dir := rulesTable(t, rulesSchema, nil)
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(1), ip(5)}))
	require.NoError(t, appendLongs(t, tb, keyAmount, []*int64{ip(2), ip(6)}))
	// Spark added the constraint (a commit with the configuration changed).
	snap, err := tb.Snapshot(ctx, table.Latest())
	require.NoError(t, err)
	md := snap.Log().Metadata()
	md.Configuration = map[string]string{"delta.constraints.h": "sha2(cast(amount as string), 256) <> ''"}
	mdJSON, err := json.Marshal(map[string]any{"metaData": md})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", snap.Version()+1)), append(mdJSON, '\n'), 0o644))

	err = appendLongs(t, tb, keyAmount, []*int64{ip(3), ip(7)})
	require.ErrorIs(t, err, table.ErrWriteRules)
	require.Contains(t, err.Error(), "sha2")
	_, err = tb.Update(ctx, "key = 1", table.UpdateOptions{Set: "amount = 1"})
	require.ErrorIs(t, err, table.ErrWriteRules)
	// DELETE keeps rows unchanged: not refused, not re-checked.
	_, err = tb.Delete(ctx, "key = 99", table.DMLOptions{})
	require.NoError(t, err)
	res, err := tb.Optimize(ctx, table.OptimizeOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.Metrics)
	require.Equal(t, 2, res.Metrics.NumRemovedFiles)
	require.Equal(t, []string{"1|5|6|100", "2|6|7|110"}, rowsOf(t, tb))
}

// TestIdentityConcurrentAppends: appends racing on one table each either commit with
// identity values past the high-water mark they read or fail with a conflict
// (Delta Spark's rule: two commits that both advanced the high-water mark
// conflict); no value is ever given to two rows, and the values of one append
// increase in its input order.
func TestIdentityConcurrentAppends(t *testing.T) {
	tb, dir := rulesTable(t, rulesSchema, nil)
	const writers, rows = 6, 20
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			other, err := table.OpenURL(context.Background(), dir)
			if err != nil {
				errs <- err
				return
			}
			var in [][]*int64
			for i := 0; i < rows; i++ {
				in = append(in, []*int64{ip(int64(w*1000 + i)), ip(1)})
			}
			errs <- appendLongs(t, other, keyAmount, in...)
		}(w)
	}
	committed := 0
	for w := 0; w < writers; w++ {
		err := <-errs
		if err == nil {
			committed++
			continue
		}
		var ce *log.ConflictError
		require.ErrorAs(t, err, &ce, "a failed append fails with a conflict")
	}
	require.GreaterOrEqual(t, committed, 1)
	got := rowsOf(t, tb)
	require.Len(t, got, committed*rows)
	seen := map[string]bool{}
	byWriter := map[string][]int64{}
	for _, r := range got {
		parts := strings.Split(r, "|")
		require.False(t, seen[parts[3]], "identity value %s given twice", parts[3])
		seen[parts[3]] = true
		var key, rid int64
		fmt.Sscan(parts[0], &key)
		fmt.Sscan(parts[3], &rid)
		w := fmt.Sprint(key / 1000)
		byWriter[w] = append(byWriter[w], key%1000*1_000_000+rid)
	}
	for _, vals := range byWriter {
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		for i := 1; i < len(vals); i++ {
			require.Greater(t, vals[i]%1_000_000, vals[i-1]%1_000_000, "values increase with the input order")
		}
	}
	hwm, _ := highWaterMark(t, tb)
	require.Equal(t, int64(100+10*(committed*rows-1)), hwm)
}

// BenchmarkAppendConstraint measures what a two-clause CHECK constraint adds to an
// append (issue 30: at most 10% of the append's CPU): the same rows appended to a
// table without and with `amount > 0 AND key IS NOT NULL`.
func BenchmarkAppendConstraint(b *testing.B) {
	const schema = `{"type":"struct","fields":[` +
		`{"name":"key","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"amount","type":"long","nullable":true,"metadata":{}}]}`
	rows := make([][]*int64, 200_000)
	for i := range rows {
		rows[i] = []*int64{ip(int64(i)), ip(int64(i%1000 + 1))}
	}
	rec := longBatch(keyAmount, rows)
	defer rec.Release()
	for _, c := range []struct {
		name        string
		constraints map[string]string
	}{
		{"none", nil},
		{"two-clause", map[string]string{"pos": "amount > 0 AND key IS NOT NULL"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tb, _ := rulesTable(b, schema, c.constraints)
			b.ResetTimer()
			for b.Loop() {
				if _, err := tb.WriteBatches(context.Background(), []arrow.RecordBatch{rec}, table.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
