package interop

import (
	"net/url"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
)

// mixedTable is a table written by skiplake for differential tests.
type mixedTable struct {
	dir    string
	tbl    *table.Table
	schema *arrow.Schema
	parts  []string
	latest int64
}

// writeMixedTable creates a table of mixedSchema in dir, partitioned by parts, and
// commits: append, append (small files, so several per partition), overwrite, append.
// props are extra table properties.
func writeMixedTable(t *testing.T, dir string, parts []string, seed uint64, rows int, props map[string]string) *mixedTable {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := mixedSchema()
	tbl, err := table.CreateURL(bg, dir, schema, table.CreateOptions{PartitionColumns: parts, Properties: props})
	require.NoError(t, err, "create table partitioned by %v", parts)
	g := newGen(seed)
	steps := []struct {
		overwrite bool
		rows      int
		target    int64
	}{
		{false, rows, 0},
		{false, rows, 16 << 10},
		{true, rows, 0},
		{false, rows / 2, 32 << 10},
	}
	var latest int64
	for i, st := range steps {
		rec := g.mixedBatch(t, mem, st.rows)
		res, err := tbl.WriteBatches(bg, []arrow.RecordBatch{rec}, table.WriteOptions{Overwrite: st.overwrite, TargetFileSize: st.target, Allocator: mem})
		rec.Release()
		require.NoError(t, err, "write step %d (overwrite %v)", i, st.overwrite)
		latest = res.Version
	}
	return &mixedTable{dir: dir, tbl: tbl, schema: schema, parts: parts, latest: latest}
}

var partitionings = []struct {
	name  string
	parts []string
}{
	{"unpartitioned", nil},
	{"one string partition column with special characters and NULL", []string{"p_str"}},
	{"two partition columns int and date with NULL", []string{"p_int", "p_date"}},
}

// TestLogReplayMatchesDuckDB has DuckDB replay the JSON log on its own (read_json,
// newest add/remove per path wins), read the live files with read_parquet and attach
// partition values from the add actions; the rows must equal skiplake's ReadAll at
// every version (time travel included), as unordered multisets.
func TestLogReplayMatchesDuckDB(t *testing.T) {
	rows := rowsKnob(t, 1200)
	for i, pc := range partitionings {
		t.Run(pc.name, func(t *testing.T) {
			mt := writeMixedTable(t, t.TempDir(), pc.parts, seedKnob(t, uint64(100+i)), rows, nil)
			db := openDuck(t)
			for v := int64(0); v <= mt.latest; v++ {
				files := duckReplay(t, db, mt.dir, v)

				snap, err := mt.tbl.Snapshot(bg, table.AtVersion(v))
				require.NoError(t, err)
				var ourPaths, duckPaths []string
				for _, a := range snap.Log().Files() {
					p, err := url.PathUnescape(a.Path)
					require.NoError(t, err, "add.path %q", a.Path)
					ourPaths = append(ourPaths, p)
				}
				for _, f := range files {
					duckPaths = append(duckPaths, f.Path)
				}
				sort.Strings(ourPaths)
				sort.Strings(duckPaths)
				require.Equal(t, ourPaths, duckPaths, "version %d: live files of skiplake's snapshot vs DuckDB's replay", v)

				snapV, err := mt.tbl.Snapshot(bg, table.AtVersion(v))
				require.NoError(t, err, "snapshot at version %d", v)
				sc, err := snapV.Scan(bg)
				require.NoError(t, err, "scan at version %d", v)
				tab, err := sc.ReadAll(bg)
				require.NoError(t, err, "ReadAll at version %d", v)
				ours := arrowRows(t, tab)
				tab.Release()
				theirs := duckRows(t, db, duckTableSQL(t, mt.dir, mt.schema, mt.parts, files), mt.schema)
				if err := sameMultiset(ours, theirs, 5); err != nil {
					t.Fatalf("version %d: %v", v, err)
				}
				if v == mt.latest && len(ours) == 0 {
					t.Fatalf("version %d: no rows at all; the test would prove nothing", v)
				}
			}
		})
	}
}
