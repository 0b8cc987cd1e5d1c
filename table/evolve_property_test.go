package table_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// The schema-evolution oracle: an in-memory model of a table — its columns (with
// stable identities, so renames and drops are followed) and its rows — that random
// sequences of appends with evolving schemas (MergeSchema, missing columns, sources
// of other types), overwrites, replaceWhere overwrites (partition and data
// predicates), MERGE with MergeSchema, and ALTER rename, drop, widen and add are
// applied to, alongside the real table. Every version is then read back by time
// travel and must equal the model's rows at that version exactly, under the
// model's schema.

// evoCol is a column of the model: a stable id, its current name and type.
type evoCol struct {
	id   int
	name string
	typ  string // int, long, double, string
}

// evoModel is the table's expected state.
type evoModel struct {
	cols   []evoCol
	part   int // the id of the partition column (-1: unpartitioned)
	rows   []map[int]any
	nextID int
	nextK  int64 // the next fresh key
}

func (m *evoModel) col(id int) *evoCol {
	for i := range m.cols {
		if m.cols[i].id == id {
			return &m.cols[i]
		}
	}
	return nil
}

// canonical renders the model's rows as sorted canonical JSON objects.
func (m *evoModel) canonical() []string {
	out := make([]string, 0, len(m.rows))
	for _, r := range m.rows {
		obj := map[string]any{}
		for _, c := range m.cols {
			obj[c.name] = canonValue(r[c.id])
		}
		b, _ := json.Marshal(obj)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

func (m *evoModel) schemaText() string {
	parts := make([]string, len(m.cols))
	for i, c := range m.cols {
		parts[i] = c.name + ":" + map[string]string{"int": "integer", "long": "long", "double": "double", "string": "string"}[c.typ]
	}
	return strings.Join(parts, ",")
}

// canonValue renders a value as canonical JSON does: numbers as shortest text.
func canonValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		return strconv.FormatFloat(float64(x), 'f', -1, 64)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		f, _ := x.Float64()
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return v
}

// evoRowsAt reads version ref of the table as sorted canonical JSON objects, and
// its schema as "name:type,...".
func evoRowsAt(t *testing.T, tb *table.Table, ref table.Ref) ([]string, string) {
	t.Helper()
	ctx := context.Background()
	snap, err := tb.Snapshot(ctx, ref)
	require.NoError(t, err)
	var schema []string
	for _, f := range snap.DeltaSchema().Fields {
		schema = append(schema, f.Name+":"+f.Type.TypeName())
	}
	sc, err := snap.Scan(ctx)
	require.NoError(t, err)
	tbl, err := sc.ReadAll(ctx)
	require.NoError(t, err)
	defer tbl.Release()
	out := []string{}
	tr := array.NewTableReader(tbl, 4096)
	defer tr.Release()
	for tr.Next() {
		js, err := tr.RecordBatch().MarshalJSON()
		require.NoError(t, err)
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		var rows []map[string]any
		require.NoError(t, dec.Decode(&rows))
		for _, r := range rows {
			for k, v := range r {
				r[k] = canonValue(v)
			}
			b, _ := json.Marshal(r)
			out = append(out, string(b))
		}
	}
	sort.Strings(out)
	return out, strings.Join(schema, ",")
}

// evoGen generates the operations.
type evoGen struct {
	t   *testing.T
	rng *rand.Rand
	m   *evoModel
	mem memory.Allocator
}

// arrowTypes a source column of model type typ may have (store assignment converts).
func (g *evoGen) sourceType(typ string) arrow.DataType {
	switch typ {
	case "int":
		return []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int16}[g.rng.IntN(3)]
	case "long":
		return []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32}[g.rng.IntN(2)]
	case "double":
		return []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32}[g.rng.IntN(2)]
	}
	return []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString}[g.rng.IntN(2)]
}

// value returns a random value of model type typ (small numbers, quarter steps:
// exact in every source type).
func (g *evoGen) value(typ string) any {
	if g.rng.IntN(8) == 0 {
		return nil
	}
	switch typ {
	case "int", "long":
		return int64(g.rng.IntN(200) - 100)
	case "double":
		return float64(g.rng.IntN(400)-200) / 4
	}
	return fmt.Sprintf("s%d", g.rng.IntN(50))
}

// srcCol is a column of a source batch.
type srcCol struct {
	name string
	typ  string // the model type its values have
	at   arrow.DataType
	id   int // model column id (new columns: the id they will get)
}

// batch builds a source batch of the rows (values by column id) with the columns.
func (g *evoGen) batch(cols []srcCol, rows []map[int]any) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.at, Nullable: true}
	}
	b := array.NewRecordBuilder(g.mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, r := range rows {
		for i, c := range cols {
			v := r[c.id]
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.Int16Builder:
				x.Append(int16(toFloat(v)))
			case *array.Int32Builder:
				x.Append(int32(toFloat(v)))
			case *array.Int64Builder:
				x.Append(int64(toFloat(v)))
			case *array.Float32Builder:
				x.Append(float32(toFloat(v)))
			case *array.Float64Builder:
				x.Append(toFloat(v))
			case *array.StringBuilder:
				x.Append(v.(string))
			case *array.LargeStringBuilder:
				x.Append(v.(string))
			default:
				g.t.Fatalf("builder %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

// sourceColumns picks the columns of a write: the key and the partition column
// always, each other column with probability 3/4, in shuffled order, with a
// source type each; and (when evolve) one new column the model lacks.
func (g *evoGen) sourceColumns(evolve bool) []srcCol {
	var cols []srcCol
	for _, c := range g.m.cols {
		if c.id != 0 && c.id != g.m.part && g.rng.IntN(4) == 0 {
			continue
		}
		cols = append(cols, srcCol{name: g.spell(c.name), typ: c.typ, at: g.sourceType(c.typ), id: c.id})
	}
	if evolve {
		typ := []string{"int", "long", "double", "string"}[g.rng.IntN(4)]
		id := g.m.nextID
		at := map[string]arrow.DataType{"int": arrow.PrimitiveTypes.Int32, "long": arrow.PrimitiveTypes.Int64, "double": arrow.PrimitiveTypes.Float64, "string": arrow.BinaryTypes.String}[typ]
		cols = append(cols, srcCol{name: fmt.Sprintf("n%d", id), typ: typ, at: at, id: id})
	}
	g.rng.Shuffle(len(cols), func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
	return cols
}

// spell returns name in a random letter case (columns match case-insensitively).
func (g *evoGen) spell(name string) string {
	if g.rng.IntN(4) == 0 {
		return strings.ToUpper(name)
	}
	return name
}

// rowsFor generates n rows for cols with fresh keys (or keys from keys when given)
// and partition values from parts.
func (g *evoGen) rowsFor(cols []srcCol, n int, keys []int64, parts []int64) []map[int]any {
	rows := make([]map[int]any, n)
	for i := range rows {
		r := map[int]any{}
		for _, c := range cols {
			switch c.id {
			case 0:
				if keys != nil {
					r[0] = keys[i]
				} else {
					r[0] = g.m.nextK
					g.m.nextK++
				}
			case g.m.part:
				r[c.id] = parts[g.rng.IntN(len(parts))]
			default:
				r[c.id] = g.value(c.typ)
			}
		}
		rows[i] = r
	}
	return rows
}

// adopt adds the new columns of a write with MergeSchema to the model (at the end,
// in source order) and returns the rows as the model stores them.
func (g *evoGen) adopt(cols []srcCol, rows []map[int]any) []map[int]any {
	for _, c := range cols {
		if g.m.col(c.id) == nil {
			g.m.cols = append(g.m.cols, evoCol{id: c.id, name: c.name, typ: c.typ})
			g.m.nextID++
		}
	}
	out := make([]map[int]any, len(rows))
	for i, r := range rows {
		o := map[int]any{}
		for _, c := range g.m.cols {
			o[c.id] = widenValue(r[c.id], c.typ)
		}
		out[i] = o
	}
	return out
}

// widenValue is v as a value of model type typ.
func widenValue(v any, typ string) any {
	if v == nil {
		return nil
	}
	if typ == "double" {
		return toFloat(v)
	}
	return v
}

// TestEvolutionOracle runs random sequences of schema-changing writes and ALTERs
// against the model; every version must read back (time travel) exactly as the
// model says. Seeds: SKIPLAKE_EVOLVE_SEEDS (default 6).
func TestEvolutionOracle(t *testing.T) {
	seeds := proofEnvInt(t, "SKIPLAKE_EVOLVE_SEEDS", 6)
	steps := 14
	if testing.Short() {
		seeds, steps = min(seeds, 3), 10
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runEvolutionOracle(t, uint64(seed), steps) })
	}
}

func runEvolutionOracle(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	props := map[string]string{}
	if seed%2 == 0 {
		props[log.PropEnableDeletionVectors] = "true"
	}
	if seed%3 == 0 {
		props[log.PropColumnMappingMode] = "name"
	}
	partitioned := seed%3 != 1
	m := &evoModel{cols: []evoCol{{0, "k", "long"}, {1, "p", "int"}, {2, "a", "int"}, {3, "s", "string"}, {4, "d", "double"}}, part: 1, nextID: 5}
	var parts []string
	if partitioned {
		parts = []string{"p"}
	} else {
		m.part = -1
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "p", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	st := storage.NewMemory()
	tb, err := table.Create(ctx, st, schema, table.CreateOptions{PartitionColumns: parts, Properties: props})
	require.NoError(t, err)
	g := &evoGen{t: t, rng: rng, m: m, mem: mem}
	partVals := []int64{1, 2, 3}
	type state struct {
		rows   []string
		schema string
	}
	want := map[int64]state{0: {m.canonical(), m.schemaText()}}
	write := func(cols []srcCol, rows []map[int]any, opts table.WriteOptions) *table.WriteResult {
		rec := g.batch(cols, rows)
		defer rec.Release()
		opts.TargetFileSize = 1 << 10 // several files
		opts.Allocator = mem
		res, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, opts)
		require.NoError(t, err, "seed %d", seed)
		return res
	}
	var trace []string
	for step := 0; step < steps; step++ {
		op := rng.IntN(10)
		var version int64
		switch {
		case op <= 2 || len(m.rows) == 0: // append, evolving the schema sometimes
			evolve := rng.IntN(2) == 0
			cols := g.sourceColumns(evolve)
			rows := g.rowsFor(cols, 20+rng.IntN(40), nil, partVals)
			res := write(cols, rows, table.WriteOptions{MergeSchema: evolve})
			m.rows = append(m.rows, g.adopt(cols, rows)...)
			version = res.Version
			trace = append(trace, fmt.Sprintf("append(evolve=%v)", evolve))
		case op == 3: // overwrite everything
			cols := g.sourceColumns(false)
			rows := g.rowsFor(cols, 10+rng.IntN(20), nil, partVals)
			res := write(cols, rows, table.WriteOptions{Overwrite: true})
			m.rows = g.adopt(cols, rows)
			version = res.Version
			trace = append(trace, "overwrite")
		case op == 4: // replaceWhere on the partition column, or on the key
			cols := g.sourceColumns(rng.IntN(3) == 0)
			var pred string
			var rows []map[int]any
			var keep func(r map[int]any) bool
			if m.part >= 0 && rng.IntN(2) == 0 {
				pv := partVals[rng.IntN(len(partVals))]
				pred = fmt.Sprintf("%s = %d", m.col(m.part).name, pv)
				rows = g.rowsFor(cols, 5+rng.IntN(10), nil, []int64{pv})
				keep = func(r map[int]any) bool { return r[m.part] == nil || toFloat(r[m.part]) != float64(pv) }
			} else {
				lo := int64(rng.IntN(int(max(m.nextK, 1))))
				hi := lo + int64(1+rng.IntN(30))
				pred = fmt.Sprintf("%s >= %d AND %s < %d", m.col(0).name, lo, m.col(0).name, hi)
				n := min(int(hi-lo), 5+rng.IntN(10))
				keys := make([]int64, n)
				for i := range keys {
					keys[i] = lo + int64(i)
				}
				rows = g.rowsFor(cols, n, keys, partVals)
				m.nextK = max(m.nextK, hi)
				keep = func(r map[int]any) bool { k := r[0].(int64); return k < lo || k >= hi }
			}
			evolve := false
			for _, c := range cols {
				evolve = evolve || m.col(c.id) == nil
			}
			res := write(cols, rows, table.WriteOptions{Overwrite: true, ReplaceWhere: pred, MergeSchema: evolve})
			var kept []map[int]any
			for _, r := range m.rows {
				if keep(r) {
					kept = append(kept, r)
				}
			}
			m.rows = kept
			m.rows = append(m.adoptKeep(g, cols), g.adopt(cols, rows)...)
			version = res.Version
			trace = append(trace, "replaceWhere "+pred)
		case op == 5: // MERGE (upsert) with MergeSchema: some keys exist, some are new
			cols := g.sourceColumns(rng.IntN(2) == 0)
			var keys []int64
			seen := map[int64]bool{}
			for i := 0; i < 8 && len(m.rows) > 0; i++ {
				k := m.rows[rng.IntN(len(m.rows))][0].(int64)
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
			for i := 0; i < 5; i++ {
				keys = append(keys, m.nextK)
				m.nextK++
			}
			rows := g.rowsFor(cols, len(keys), keys, partVals)
			rec := g.batch(cols, rows)
			rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
			require.NoError(t, err)
			opts := table.Upsert(m.col(0).name)
			opts.MergeSchema = true
			opts.Allocator = mem
			res, err := tb.Merge(ctx, rdr, opts)
			rdr.Release()
			rec.Release()
			require.NoError(t, err, "seed %d", seed)
			inSource := map[int]bool{}
			for _, c := range cols {
				inSource[c.id] = true
			}
			g.adopt(cols, nil)
			byKey := map[int64]map[int]any{}
			for _, r := range rows {
				byKey[r[0].(int64)] = r
			}
			for _, r := range m.rows {
				if s, ok := byKey[r[0].(int64)]; ok {
					for _, c := range m.cols {
						if inSource[c.id] {
							r[c.id] = widenValue(s[c.id], c.typ)
						}
					}
					delete(byKey, r[0].(int64))
				}
			}
			for _, k := range keys {
				if s, ok := byKey[k]; ok {
					o := map[int]any{}
					for _, c := range m.cols {
						o[c.id] = widenValue(s[c.id], c.typ)
					}
					m.rows = append(m.rows, o)
				}
			}
			version = res.Version
			trace = append(trace, "merge")
		case op == 6: // rename a column other than the key
			c := &m.cols[1+rng.IntN(len(m.cols)-1)]
			newName := fmt.Sprintf("r%d_%s", step, c.name)
			res, err := tb.Alter(ctx, table.AlterOptions{RenameColumn: &table.ColumnRename{Column: g.spell(c.name), NewName: newName}})
			require.NoError(t, err, "seed %d", seed)
			trace = append(trace, "rename "+c.name+" to "+newName)
			c.name = newName
			version = res.Version
		case op == 7: // drop a column other than the key and the partition column
			var cands []int
			for i, c := range m.cols {
				if c.id != 0 && c.id != m.part {
					cands = append(cands, i)
				}
			}
			if len(cands) == 0 {
				continue
			}
			i := cands[rng.IntN(len(cands))]
			res, err := tb.Alter(ctx, table.AlterOptions{DropColumns: []string{m.cols[i].name}})
			require.NoError(t, err, "seed %d", seed)
			trace = append(trace, "drop "+m.cols[i].name)
			id := m.cols[i].id
			m.cols = append(m.cols[:i], m.cols[i+1:]...)
			for _, r := range m.rows {
				delete(r, id)
			}
			version = res.Version
		case op == 8: // widen an int column (the partition column too)
			var cands []int
			for i, c := range m.cols {
				if c.typ == "int" {
					cands = append(cands, i)
				}
			}
			if len(cands) == 0 {
				continue
			}
			c := &m.cols[cands[rng.IntN(len(cands))]]
			to := []string{"long", "double"}[rng.IntN(2)]
			res, err := tb.Alter(ctx, table.AlterOptions{ChangeType: &table.ColumnType{Column: c.name, Type: map[string]string{"long": "bigint", "double": "double"}[to]}})
			require.NoError(t, err, "seed %d", seed)
			trace = append(trace, "widen "+c.name+" to "+to)
			c.typ = to
			for _, r := range m.rows {
				r[c.id] = widenValue(r[c.id], to)
			}
			version = res.Version
		default: // add a column
			name := fmt.Sprintf("x%d", m.nextID)
			res, err := tb.Alter(ctx, table.AlterOptions{AddColumns: []table.NewColumn{mustColumn(t, name+" string")}})
			require.NoError(t, err, "seed %d", seed)
			m.cols = append(m.cols, evoCol{id: m.nextID, name: name, typ: "string"})
			m.nextID++
			trace = append(trace, "add "+name)
			version = res.Version
		}
		want[version] = state{m.canonical(), m.schemaText()}
		got, schemaText := evoRowsAt(t, tb, table.Latest())
		require.Equal(t, want[version].schema, schemaText, "seed %d after %s", seed, strings.Join(trace, "; "))
		require.Equal(t, want[version].rows, got, "seed %d after %s", seed, strings.Join(trace, "; "))
	}
	// Time travel: every version reads as it was.
	for v, w := range want {
		got, schemaText := evoRowsAt(t, tb, table.AtVersion(v))
		require.Equal(t, w.schema, schemaText, "seed %d version %d", seed, v)
		require.Equal(t, w.rows, got, "seed %d version %d (%s)", seed, v, strings.Join(trace, "; "))
	}
}

// adoptKeep returns the model's rows with the columns of a replaceWhere source the
// model lacks added as NULL (the write adds them; rows outside the predicate keep
// NULL there).
func (m *evoModel) adoptKeep(g *evoGen, cols []srcCol) []map[int]any {
	for _, c := range cols {
		if m.col(c.id) == nil {
			m.cols = append(m.cols, evoCol{id: c.id, name: c.name, typ: c.typ})
			m.nextID++
		}
	}
	return m.rows
}
