package interop

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// TestChangeDataReadByDuckDB: the change data feed skiplake writes (DELETE, UPDATE,
// MERGE on tables with delta.enableChangeDataFeed=true, copy-on-write and with
// deletion vectors, unpartitioned and partitioned) is read by an independent
// reader. For every DML version DuckDB reads that commit's JSON itself and, per
// PROTOCOL.md "Change Data Files" and "Reader Requirements for AddCDCFile":
//
//   - when the commit has cdc actions, the changes are the rows of those
//     _change_data/*.parquet files alone, read with read_parquet: the table's data
//     columns and _change_type come from the file (the protocol puts _change_type in
//     the file), partition columns from the cdc action's partitionValues;
//   - otherwise they are derived from the commit's add and remove actions with
//     dataChange=true: a new file's live rows are inserts, a removed file's live rows
//     deletes, and a file re-added with a larger deletion vector contributes the rows
//     the new vector deletes and the old did not, as deletes (vectors decoded by this
//     package's own decoder, rows located by DuckDB's file_row_number).
//
// DuckDB's rows must equal Table.Changes for the same version (minus
// _commit_version and _commit_timestamp, which only the log's reader knows). The
// test also checks that every change data file's columns are exactly the table's
// non-partition columns plus _change_type, and that both kinds of version occur.
func TestChangeDataReadByDuckDB(t *testing.T) {
	rows := rowsKnob(t, 800)
	for i, pc := range partitionings {
		for _, dvOn := range []bool{false, true} {
			name := fmt.Sprintf("%s/dv=%v", pc.name, dvOn)
			t.Run(name, func(t *testing.T) {
				props := map[string]string{"delta.enableChangeDataFeed": "true"}
				if dvOn {
					props["delta.enableDeletionVectors"] = "true"
				}
				mt := writeMixedTable(t, t.TempDir(), pc.parts, seedKnob(t, uint64(500+i)), rows, props)
				head := runDMLSequence(t, mt, seedKnob(t, uint64(700+i)), rows/4)

				fields := append(append([]arrow.Field(nil), mt.schema.Fields()...), arrow.Field{Name: log.ChangeTypeColumn, Type: arrow.BinaryTypes.String})
				outSchema := arrow.NewSchema(fields, nil)
				var names []string
				for _, f := range fields {
					names = append(names, f.Name)
				}
				db := openDuck(t)
				fromCDC, derived := 0, 0
				for v := mt.latest + 1; v <= head.Version(); v++ {
					cr, err := mt.tbl.Changes(bg, table.AtVersion(v), table.AtVersion(v), table.WithColumns(names...))
					require.NoError(t, err, "version %d", v)
					ours := scanRows(t, cr.RecordReader())
					cr.Release()
					q, usedCDC := duckChangesSQL(t, db, mt, v)
					if usedCDC {
						fromCDC++
					} else {
						derived++
					}
					theirs := duckRows(t, db, q, outSchema)
					require.NotEmpty(t, ours, "version %d has no changes; the comparison would prove nothing", v)
					if err := sameMultiset(ours, theirs, 5); err != nil {
						t.Fatalf("version %d (from cdc files: %v): %v", v, usedCDC, err)
					}
				}
				require.Positive(t, fromCDC, "no version had change data files")
				if dvOn {
					require.Positive(t, derived, "no deletion-vector version derived its changes from add/remove actions")
				}
			})
		}
	}
}

// commitAction is one add, remove or cdc action of a commit as DuckDB read it.
type commitAction struct {
	kind string // add, remove, cdc
	dvFile
	dataChange bool
}

// duckCommit reads the add, remove and cdc actions of commit v with DuckDB.
func duckCommit(t testing.TB, db *sql.DB, dir string, v int64) []commitAction {
	t.Helper()
	path := filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v))
	file := `STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, dataChange BOOLEAN, deletionVector ` + duckDVType + `)`
	q := `
WITH log AS (
  SELECT add, remove, cdc FROM read_json(` + sqlString(path) + `, format = 'newline_delimited', union_by_name = true,
       columns = {'add': '` + file + `', 'remove': '` + file + `', 'cdc': '` + file + `'})
),
acts AS (
  SELECT 'add' AS kind, add AS a FROM log WHERE add IS NOT NULL
  UNION ALL SELECT 'remove', remove FROM log WHERE remove IS NOT NULL
  UNION ALL SELECT 'cdc', cdc FROM log WHERE cdc IS NOT NULL
)
SELECT kind, a.path, CAST(to_json(a.partitionValues) AS VARCHAR), coalesce(a.size, 0), coalesce(a.dataChange, false),
       a.deletionVector.storageType, a.deletionVector.pathOrInlineDv, a.deletionVector."offset",
       a.deletionVector.sizeInBytes, a.deletionVector.cardinality FROM acts`
	rs, err := db.Query(q)
	require.NoError(t, err, "duckdb: read commit %d", v)
	defer rs.Close()
	var out []commitAction
	for rs.Next() {
		var kind, path string
		var pv sql.NullString
		var size int64
		var dc bool
		var st, pid sql.NullString
		var off, sz, card sql.NullInt64
		require.NoError(t, rs.Scan(&kind, &path, &pv, &size, &dc, &st, &pid, &off, &sz, &card))
		dec, err := url.PathUnescape(path)
		require.NoError(t, err)
		a := commitAction{kind: kind, dataChange: dc}
		a.Path, a.Size = dec, size
		if pv.Valid && pv.String != "null" {
			require.NoError(t, json.Unmarshal([]byte(pv.String), &a.PartitionValues))
		}
		if st.Valid {
			a.hasDV, a.storageType, a.pathOrInline = true, st.String, pid.String
			a.offset, a.sizeInBytes, a.cardinality = off.Int64, sz.Int64, card.Int64
		}
		out = append(out, a)
	}
	require.NoError(t, rs.Err())
	return out
}

// duckChangesSQL builds the DuckDB query of version v's changes (see
// TestChangeDataReadByDuckDB) and says whether they came from cdc files.
func duckChangesSQL(t testing.TB, db *sql.DB, mt *mixedTable, v int64) (string, bool) {
	t.Helper()
	acts := duckCommit(t, db, mt.dir, v)
	isPart := map[string]bool{}
	for _, p := range mt.parts {
		isPart[p] = true
	}
	var parts []string
	for _, a := range acts {
		if a.kind != "cdc" {
			continue
		}
		require.True(t, strings.HasPrefix(a.Path, "_change_data/"), "cdc path %s is not under _change_data/", a.Path)
		require.False(t, a.dataChange, "cdc action %s: dataChange must be false (PROTOCOL.md \"Change Data Files\")", a.Path)
		checkChangeFileColumns(t, db, mt, a.Path, isPart)
		q := duckTableSQL(t, mt.dir, mt.schema, mt.parts, []liveFile{a.liveFile})
		q = strings.Replace(q, "SELECT ", "SELECT "+sqlIdent(log.ChangeTypeColumn)+", ", 1)
		parts = append(parts, "SELECT * EXCLUDE ("+sqlIdent(log.ChangeTypeColumn)+"), "+sqlIdent(log.ChangeTypeColumn)+" FROM ("+q+")")
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\nUNION ALL\n"), true
	}
	// Derived from add and remove actions: files re-added in the same commit (a
	// deletion vector changed) pair up by path.
	removed := map[string]commitAction{}
	for _, a := range acts {
		if a.kind == "remove" && a.dataChange {
			removed[a.Path] = a
		}
	}
	before := map[string]dvFile{} // the removed files as the previous version had them
	for _, f := range duckReplayDV(t, db, mt.dir, v-1) {
		before[f.Path] = f
	}
	rowsOf := func(f dvFile, keep string, typ string) string {
		q := duckTableSQL(t, mt.dir, mt.schema, mt.parts, []liveFile{f.liveFile})
		q = strings.Replace(q, "hive_partitioning = false)", "hive_partitioning = false, file_row_number = true)", 1)
		q = strings.Replace(q, "SELECT ", "SELECT file_row_number, ", 1)
		return "SELECT * EXCLUDE (file_row_number), " + sqlString(typ) + " FROM (" + q + ") WHERE " + keep
	}
	notIn := func(pos []uint64) string {
		s := make([]string, len(pos))
		for i, p := range pos {
			s[i] = strconv.FormatUint(p, 10)
		}
		return "NOT list_contains([" + strings.Join(s, ",") + "]::UBIGINT[], file_row_number::UBIGINT)"
	}
	deleted := func(f dvFile) []uint64 {
		if !f.hasDV {
			return nil
		}
		return decodeDV(t, mt.dir, f)
	}
	for _, a := range acts {
		if a.kind != "add" || !a.dataChange {
			continue
		}
		_, replaced := removed[a.Path]
		if !replaced {
			parts = append(parts, rowsOf(a.dvFile, notIn(deleted(a.dvFile)), table.ChangeInsert))
			continue
		}
		delete(removed, a.Path)
		old, ok := before[a.Path]
		require.True(t, ok, "version %d removes %s, which version %d did not have", v, a.Path, v-1)
		was, now := map[uint64]bool{}, map[uint64]bool{}
		for _, p := range deleted(old) {
			was[p] = true
		}
		for _, p := range deleted(a.dvFile) {
			now[p] = true
		}
		var gone, back []uint64
		for p := range now {
			if !was[p] {
				gone = append(gone, p)
			}
		}
		for p := range was {
			if !now[p] {
				back = append(back, p)
			}
		}
		parts = append(parts, rowsOf(a.dvFile, "NOT ("+notIn(gone)+")", table.ChangeDelete))
		parts = append(parts, rowsOf(a.dvFile, "NOT ("+notIn(back)+")", table.ChangeInsert))
	}
	for path := range removed {
		old, ok := before[path]
		require.True(t, ok, "version %d removes %s, which version %d did not have", v, path, v-1)
		parts = append(parts, rowsOf(old, notIn(deleted(old)), table.ChangeDelete))
	}
	return strings.Join(parts, "\nUNION ALL\n"), false
}

// checkChangeFileColumns: a change data file holds the table's non-partition
// columns (by name, in any order) and _change_type, nothing else, as DuckDB's
// DESCRIBE of the Parquet file shows.
func checkChangeFileColumns(t testing.TB, db *sql.DB, mt *mixedTable, path string, isPart map[string]bool) {
	t.Helper()
	rs, err := db.Query("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(" + sqlString(filepath.Join(mt.dir, filepath.FromSlash(path))) + ", hive_partitioning = false))")
	require.NoError(t, err)
	defer rs.Close()
	got := map[string]string{}
	for rs.Next() {
		var n, typ string
		require.NoError(t, rs.Scan(&n, &typ))
		got[n] = typ
	}
	require.NoError(t, rs.Err())
	want := map[string]bool{log.ChangeTypeColumn: true}
	for _, f := range mt.schema.Fields() {
		if !isPart[f.Name] {
			want[f.Name] = true
		}
	}
	for n := range want {
		require.Contains(t, got, n, "change data file %s lacks column %s", path, n)
	}
	for n := range got {
		require.True(t, want[n], "change data file %s has column %s, which is not a data column or _change_type", path, n)
	}
	require.Equal(t, "VARCHAR", got[log.ChangeTypeColumn], "%s: _change_type type", path)
}
