package interop

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/table"
)

var checkpointName = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)

// TestCheckpointReadableByDuckDB writes tables with delta.checkpointInterval=2 (so
// commits trigger checkpoints) and then an explicit Checkpoint. DuckDB must read each
// classic checkpoint with read_parquet; its add rows (paths and partition values)
// must equal the live files of skiplake's snapshot at that version, with exactly one
// protocol and one metaData row, no remove for a live path; _last_checkpoint must be
// valid JSON (for Go and for DuckDB's read_json) naming the newest checkpoint, with a
// size equal to the checkpoint's row count.
func TestCheckpointReadableByDuckDB(t *testing.T) {
	rows := rowsKnob(t, 600)
	for i, pc := range partitionings {
		t.Run(pc.name, func(t *testing.T) {
			mt := writeMixedTable(t, t.TempDir(), pc.parts, seedKnob(t, uint64(300+i)), rows,
				map[string]string{"delta.checkpointInterval": "2"})
			db := openDuck(t)

			explicit, err := mt.tbl.Checkpoint(bg)
			require.NoError(t, err)
			require.Equal(t, mt.latest, explicit, "Checkpoint checkpoints the latest version")

			logDir := filepath.Join(mt.dir, "_delta_log")
			ents, err := os.ReadDir(logDir)
			require.NoError(t, err)
			var versions []int64
			for _, e := range ents {
				if m := checkpointName.FindStringSubmatch(e.Name()); m != nil {
					v, _ := strconv.ParseInt(m[1], 10, 64)
					versions = append(versions, v)
				}
			}
			sort.Slice(versions, func(a, b int) bool { return versions[a] < versions[b] })
			require.Contains(t, versions, explicit, "explicit checkpoint file")
			require.GreaterOrEqual(t, len(versions), 2, "delta.checkpointInterval=2 over %d commits should have checkpointed before the explicit call: %v", mt.latest, versions)

			for _, v := range versions {
				cp := filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", v))
				snap, err := mt.tbl.Snapshot(bg, table.AtVersion(v))
				require.NoError(t, err)
				want := map[string]string{}
				for _, a := range snap.Log().Files() {
					pv, err := json.Marshal(a.PartitionValues)
					require.NoError(t, err)
					want[a.Path] = string(pv)
				}

				got := map[string]string{}
				q := `SELECT add.path, CAST(to_json(add.partitionValues) AS VARCHAR), add.size, add.stats
				      FROM read_parquet(` + sqlString(cp) + `) WHERE add IS NOT NULL`
				rs, err := db.Query(q)
				require.NoError(t, err, "duckdb reading checkpoint %s", cp)
				for rs.Next() {
					var p, pv string
					var size int64
					var stats *string
					require.NoError(t, rs.Scan(&p, &pv, &size, &stats))
					require.Positive(t, size, "checkpoint %d: add %s size", v, p)
					require.NotNil(t, stats, "checkpoint %d: add %s has no stats", v, p)
					got[p] = normalisePV(t, pv)
				}
				require.NoError(t, rs.Err())
				rs.Close()
				for p, pv := range want {
					want[p] = normalisePV(t, pv)
				}
				require.Equal(t, want, got, "checkpoint %d: add rows (path -> partitionValues) vs skiplake snapshot", v)

				var nProto, nMeta, nLiveRemoved, total int64
				require.NoError(t, db.QueryRow(`SELECT count(protocol), count(metaData), count(*) FROM read_parquet(`+sqlString(cp)+`)`).
					Scan(&nProto, &nMeta, &total))
				require.Equal(t, int64(1), nProto, "checkpoint %d: protocol rows", v)
				require.Equal(t, int64(1), nMeta, "checkpoint %d: metaData rows", v)
				require.NoError(t, db.QueryRow(`SELECT count(*) FROM read_parquet(`+sqlString(cp)+`) r
					JOIN read_parquet(`+sqlString(cp)+`) a ON r.remove.path = a.add.path`).Scan(&nLiveRemoved))
				require.Zero(t, nLiveRemoved, "checkpoint %d: a path is both added and removed", v)
				var minReader, minWriter int64
				require.NoError(t, db.QueryRow(`SELECT protocol.minReaderVersion, protocol.minWriterVersion FROM read_parquet(`+sqlString(cp)+`) WHERE protocol IS NOT NULL`).
					Scan(&minReader, &minWriter))
				proto := snap.Log().Protocol()
				require.Equal(t, int64(proto.MinReaderVersion), minReader, "checkpoint %d: protocol.minReaderVersion", v)
				require.Equal(t, int64(proto.MinWriterVersion), minWriter, "checkpoint %d: protocol.minWriterVersion", v)

				if v == versions[len(versions)-1] {
					checkLastCheckpoint(t, db, logDir, v, total)
				}
			}

			// Reads that start from the checkpoint see what DuckDB's JSON replay sees.
			tab, err := mt.tbl.ReadAll(bg)
			require.NoError(t, err)
			ours := arrowRows(t, tab)
			tab.Release()
			theirs := duckRows(t, db, duckTableSQL(t, mt.dir, mt.schema, mt.parts, duckReplay(t, db, mt.dir, -1)), mt.schema)
			require.NoError(t, sameMultiset(ours, theirs, 5), "rows read through the checkpoint")
		})
	}
}

// normalisePV re-encodes a partitionValues JSON object canonically (sorted keys).
func normalisePV(t *testing.T, s string) string {
	t.Helper()
	if s == "" || s == "null" {
		return "{}"
	}
	var m map[string]*string
	require.NoError(t, json.Unmarshal([]byte(s), &m), "partitionValues %s", s)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// checkLastCheckpoint validates _last_checkpoint with Go's strict JSON decoder and
// with DuckDB's read_json: it names version and its size is the checkpoint's row count.
func checkLastCheckpoint(t *testing.T, db *sql.DB, logDir string, version, rows int64) {
	t.Helper()
	lc := filepath.Join(logDir, "_last_checkpoint")
	b, err := os.ReadFile(lc)
	require.NoError(t, err, "_last_checkpoint must exist after a checkpoint")
	var doc struct {
		Version *int64 `json:"version"`
		Size    *int64 `json:"size"`
		Parts   *int64 `json:"parts"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&doc), "_last_checkpoint %s", b)
	require.False(t, dec.More(), "_last_checkpoint holds one JSON object: %s", b)
	require.NotNil(t, doc.Version, "_last_checkpoint.version: %s", b)
	require.Equal(t, version, *doc.Version, "_last_checkpoint.version")
	require.NotNil(t, doc.Size, "_last_checkpoint.size: %s", b)
	require.Equal(t, rows, *doc.Size, "_last_checkpoint.size vs rows DuckDB read from the checkpoint")
	require.Nil(t, doc.Parts, "a classic single-file checkpoint has no parts")

	var dv, ds int64
	require.NoError(t, db.QueryRow(`SELECT version, size FROM read_json(`+sqlString(lc)+`, format = 'newline_delimited')`).Scan(&dv, &ds),
		"duckdb read_json of _last_checkpoint")
	require.Equal(t, version, dv, "_last_checkpoint.version through DuckDB")
	require.Equal(t, rows, ds, "_last_checkpoint.size through DuckDB")
}
