package interop

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
)

// TestDeletionVectorsReadByDuckDB: tables changed by skiplake's DELETE, UPDATE and MERGE
// with deletion vectors are read by an independent reader. DuckDB replays the JSON log
// itself, keyed by (path, deletion vector) as PROTOCOL.md "Action Reconciliation"
// reconciles files; this test decodes each deletion vector from its file with its own
// code (z85 path, the
// big-endian size, magic and CRC-32 framing) and the RoaringBitmap library's portable
// 64-bit deserializer; DuckDB reads the live files with read_parquet's
// file_row_number and drops the deleted positions. The rows must equal skiplake's
// ReadAll at every version. (DuckDB's delta extension cannot be installed offline.)
func TestDeletionVectorsReadByDuckDB(t *testing.T) {
	rows := rowsKnob(t, 1200)
	for i, pc := range partitionings {
		t.Run(pc.name, func(t *testing.T) {
			mt := writeMixedTable(t, t.TempDir(), pc.parts, seedKnob(t, uint64(300+i)), rows, map[string]string{"delta.enableDeletionVectors": "true"})
			head := runDMLSequence(t, mt, seedKnob(t, uint64(900+i)), rows/4)
			withDV := 0
			for _, a := range head.Log().Files() {
				if a.DeletionVector != nil {
					withDV++
				}
			}
			require.Positive(t, withDV, "no live file has a deletion vector; the test would prove nothing")

			db := openDuck(t)
			for v := mt.latest; v <= head.Version(); v++ {
				files := duckReplayDV(t, db, mt.dir, v)
				snap, err := mt.tbl.Snapshot(bg, table.AtVersion(v))
				require.NoError(t, err)
				require.Len(t, files, snap.Log().NumFiles(), "version %d: live files", v)
				sc, err := snap.Scan(bg)
				require.NoError(t, err)
				tab, err := sc.ReadAll(bg)
				require.NoError(t, err)
				ours := arrowRows(t, tab)
				tab.Release()
				theirs := duckRows(t, db, duckDVTableSQL(t, mt.dir, mt.schema, mt.parts, files), mt.schema)
				if err := sameMultiset(ours, theirs, 5); err != nil {
					t.Fatalf("version %d: %v", v, err)
				}
			}
		})
	}
}

// runDMLSequence applies the DML sequence both DuckDB cross-checks replay: a DELETE,
// an UPDATE of most rows, a second DELETE (which grows existing deletion vectors on a
// table with them), and an upsert MERGE of mergeRows generated rows (seed). It returns
// the snapshot after the MERGE.
func runDMLSequence(t *testing.T, mt *mixedTable, seed uint64, mergeRows int) *table.Snapshot {
	t.Helper()
	_, err := mt.tbl.Delete(bg, "i32 > 0 AND i32 < 1000000", table.DMLOptions{})
	require.NoError(t, err)
	_, err = mt.tbl.Update(bg, "f64 > 0", table.UpdateOptions{Set: "i64 = 7, s = 'updated'"})
	require.NoError(t, err)
	_, err = mt.tbl.Delete(bg, "i16 < 0", table.DMLOptions{})
	require.NoError(t, err)
	src := newGen(seed).mixedBatch(t, memory.DefaultAllocator, mergeRows)
	rdr, err := array.NewRecordReader(mt.schema, []arrow.RecordBatch{src})
	require.NoError(t, err)
	_, err = mt.tbl.Merge(bg, rdr, table.Upsert("id"))
	rdr.Release()
	src.Release()
	require.NoError(t, err)
	head, err := mt.tbl.Snapshot(bg, table.Latest())
	require.NoError(t, err)
	return head
}

// duckDVType is a deletion vector descriptor as DuckDB's read_json columns spell it.
const duckDVType = `STRUCT(storageType VARCHAR, pathOrInlineDv VARCHAR, "offset" BIGINT, sizeInBytes BIGINT, cardinality BIGINT)`

// dvFile is a live file with its deletion vector, as DuckDB's replay found it.
type dvFile struct {
	liveFile
	storageType, pathOrInline string
	offset, sizeInBytes       int64
	cardinality               int64
	hasDV                     bool
}

// duckReplayDV replays the log up to maxVersion with DuckDB: files keyed by path and
// deletion-vector id, newest action per key wins.
func duckReplayDV(t testing.TB, db *sql.DB, dir string, maxVersion int64) []dvFile {
	t.Helper()
	glob := filepath.Join(dir, "_delta_log", "*.json")
	q := `
WITH log AS (
  SELECT add, remove, CAST(regexp_extract(filename, '(\d+)\.json$', 1) AS BIGINT) AS v
  FROM read_json(` + sqlString(glob) + `, format = 'newline_delimited', union_by_name = true, filename = true,
       columns = {'add': 'STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, stats VARCHAR, deletionVector ` + duckDVType + `)',
                  'remove': 'STRUCT(path VARCHAR, deletionVector ` + duckDVType + `)'})
),
acts AS (
  SELECT v, add.path AS path, add.deletionVector AS dv, true AS is_add, CAST(to_json(add.partitionValues) AS VARCHAR) AS pv, add.size AS size
  FROM log WHERE add IS NOT NULL
  UNION ALL
  SELECT v, remove.path, remove.deletionVector, false, NULL, NULL FROM log WHERE remove IS NOT NULL
),
keyed AS (
  SELECT *, coalesce(dv.storageType || dv.pathOrInlineDv || '@' || coalesce(CAST(dv."offset" AS VARCHAR), ''), '') AS dvid FROM acts
),
latest AS (
  SELECT * FROM keyed WHERE v <= ?
  QUALIFY row_number() OVER (PARTITION BY path, dvid ORDER BY v DESC, is_add ASC) = 1
)
SELECT path, pv, size, dv.storageType, dv.pathOrInlineDv, dv."offset", dv.sizeInBytes, dv.cardinality FROM latest WHERE is_add ORDER BY path`
	rs, err := db.Query(q, maxVersion)
	require.NoError(t, err, "duckdb log replay")
	defer rs.Close()
	var out []dvFile
	for rs.Next() {
		var path, pv string
		var size int64
		var st, pid sql.NullString
		var off, sz, card sql.NullInt64
		require.NoError(t, rs.Scan(&path, &pv, &size, &st, &pid, &off, &sz, &card))
		dec, err := url.PathUnescape(path)
		require.NoError(t, err)
		f := dvFile{liveFile: liveFile{Path: dec, Size: size}}
		require.NoError(t, json.Unmarshal([]byte(pv), &f.PartitionValues))
		if st.Valid {
			f.hasDV, f.storageType, f.pathOrInline = true, st.String, pid.String
			f.offset, f.sizeInBytes, f.cardinality = off.Int64, sz.Int64, card.Int64
		}
		out = append(out, f)
	}
	require.NoError(t, rs.Err())
	return out
}

// duckDVTableSQL is duckTableSQL with each file's deleted rows dropped by position.
func duckDVTableSQL(t testing.TB, dir string, schema *arrow.Schema, partCols []string, files []dvFile) string {
	t.Helper()
	var parts []string
	for _, f := range files {
		q := duckTableSQL(t, dir, schema, partCols, []liveFile{f.liveFile})
		if !f.hasDV {
			parts = append(parts, q)
			continue
		}
		del := decodeDV(t, dir, f)
		pos := make([]string, 0, len(del))
		for _, p := range del {
			pos = append(pos, strconv.FormatUint(p, 10))
		}
		q = strings.Replace(q, "hive_partitioning = false)", "hive_partitioning = false, file_row_number = true)", 1)
		q = strings.Replace(q, "SELECT ", "SELECT file_row_number, ", 1)
		parts = append(parts, "SELECT * EXCLUDE (file_row_number) FROM ("+q+") WHERE NOT list_contains(["+strings.Join(pos, ",")+"]::UBIGINT[], file_row_number::UBIGINT)")
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// decodeDV reads a deletion vector with this test's own decoder (PROTOCOL.md,
// "Deletion Vector Format"), independent of skiplake's.
func decodeDV(t testing.TB, dir string, f dvFile) []uint64 {
	t.Helper()
	require.Equal(t, "u", f.storageType, "skiplake writes deletion vectors to files by UUID")
	p := f.pathOrInline
	require.GreaterOrEqual(t, len(p), 20)
	id := z85Decode(t, p[len(p)-20:])
	u := fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	name := "deletion_vector_" + u + ".bin"
	if prefix := p[:len(p)-20]; prefix != "" {
		name = prefix + "/" + name
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	require.Equal(t, byte(1), data[0], "format version")
	at := f.offset
	size := int64(binary.BigEndian.Uint32(data[at:]))
	require.Equal(t, f.sizeInBytes, size, "sizeInBytes")
	body := data[at+4 : at+4+size]
	require.Equal(t, uint32(1681511377), binary.LittleEndian.Uint32(body), "magic")
	require.Equal(t, binary.BigEndian.Uint32(data[at+4+size:]), crc32.ChecksumIEEE(body), "checksum")
	bm := roaring64.New()
	n, err := bm.ReadFrom(bytes.NewReader(body[4:]))
	require.NoError(t, err)
	require.EqualValues(t, len(body)-4, n, "bitmap bytes consumed exactly")
	require.EqualValues(t, f.cardinality, bm.GetCardinality(), "cardinality")
	return bm.ToArray()
}

// z85Decode decodes Z85 (ZeroMQ RFC 32) text into bytes.
func z85Decode(t testing.TB, s string) []byte {
	t.Helper()
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
	require.Zero(t, len(s)%5)
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint32
		for _, c := range s[i : i+5] {
			k := strings.IndexRune(alphabet, c)
			require.GreaterOrEqual(t, k, 0, "z85 character %q", c)
			v = v*85 + uint32(k)
		}
		out = binary.BigEndian.AppendUint32(out, v)
	}
	return out
}
