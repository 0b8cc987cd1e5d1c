package table_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// TestChangesReadCostFollowsChangeFiles: reading the changes of an UPDATE that
// touched 1% of a table's rows reads about the bytes of that commit's change data
// files, not the table's — the rows of a version with cdc actions come from those
// files alone (PROTOCOL.md "Reader Requirements for AddCDCFile"), even though the
// commit also removed and added data files (copy-on-write rewrites every file that
// held an updated row, here all of them; with deletion vectors it adds a vector to
// each). The bytes are those the change read itself requested (its Reader's report:
// planning, the commit, footers and data), against the sizes of the files on disk.
//
// Size knob: SKIPLAKE_CDF_COST_ROWS (default 200,000; 40,000 under -short); the
// table is written as 20 appends. SKIPLAKE_CDF_COST_DIR keeps the tables there (for
// measuring `skiplake changes` on them, see BENCHMARKS.md).
func TestChangesReadCostFollowsChangeFiles(t *testing.T) {
	rows := proofEnvInt(t, "SKIPLAKE_CDF_COST_ROWS", 200_000)
	if testing.Short() && os.Getenv("SKIPLAKE_CDF_COST_ROWS") == "" {
		rows = 40_000
	}
	root := os.Getenv("SKIPLAKE_CDF_COST_DIR")
	if root == "" {
		root = t.TempDir()
	}
	for _, dvOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dvOn), func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(root, fmt.Sprintf("cdf-cost-%d-dv=%v", rows, dvOn))
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			props := map[string]string{log.PropEnableChangeDataFeed: "true"}
			if dvOn {
				props[log.PropEnableDeletionVectors] = "true"
			}
			tb, err := table.CreateURL(ctx, dir, dmlSchema, table.CreateOptions{Properties: props})
			if err != nil {
				t.Fatal(err)
			}
			const appends = 20
			per := (rows + appends - 1) / appends
			for start := 0; start < rows; start += per {
				batch := make([]dmlRow, 0, per)
				for id := start; id < min(start+per, rows); id++ {
					batch = append(batch, dmlRow{id: int64(id), grp: sp([]string{"north", "south", "east", "west"}[id%4]),
						qty: ip(int64(id % 100)), note: sp(fmt.Sprintf("order %d of customer %d", id, id*31%100_003))})
				}
				rec := dmlBatch(batch)
				_, err := tb.WriteBatches(ctx, []arrow.RecordBatch{rec}, table.WriteOptions{})
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			res, err := tb.Update(ctx, "qty = 0", table.UpdateOptions{Set: "qty = qty + 1, note = 'corrected'"})
			if err != nil {
				t.Fatal(err)
			}
			v := res.Version
			updated := int64((rows + 99) / 100)

			snap, err := tb.Snapshot(ctx, table.AtVersion(v))
			if err != nil {
				t.Fatal(err)
			}
			var tableBytes int64
			for _, a := range snap.Log().Files() {
				tableBytes += a.Size
			}
			cdcBytes, cdcFiles := dirBytes(t, filepath.Join(dir, "_change_data"))
			if cdcFiles == 0 {
				t.Fatal("the UPDATE wrote no change data file")
			}

			// A reader opening the table afresh, on storage that counts its requests.
			local, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			paths := &bytesByPath{Storage: local, n: map[string]int64{}}
			reader, err := table.Open(ctx, storage.NewCounting(paths))
			if err != nil {
				t.Fatal(err)
			}
			paths.reset() // what opening the table read is not the change read's
			rd, err := reader.Changes(ctx, table.AtVersion(v), table.AtVersion(v))
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			kinds := map[string]int64{}
			for rd.Next() {
				rec := rd.RecordBatch()
				n += rec.NumRows()
				col := rec.Column(int(rec.Schema().FieldIndices(log.ChangeTypeColumn)[0]))
				for i := 0; i < col.Len(); i++ {
					// Cloned: the string shares the batch's buffer, which the reader
					// reuses for the next batch.
					kinds[strings.Clone(col.ValueStr(i))]++
				}
			}
			if err := rd.Err(); err != nil {
				t.Fatal(err)
			}
			rep := rd.Report()
			rd.Release()
			if n != 2*updated || kinds[table.ChangeUpdatePreimage] != updated || kinds[table.ChangeUpdatePostimage] != updated {
				t.Fatalf("read %d change rows %v, want %d pre- and %d postimages", n, kinds, updated, updated)
			}
			if rep.Requests == nil {
				t.Fatal("the change read's report counts no request")
			}
			read := rep.Requests.BytesRead
			cdcRead, logRead, otherRead := paths.split()
			t.Logf("version %d: %d rows, table %d bytes in %d live files; change files %d bytes in %d files; "+
				"change read %d bytes in %d GETs (%.2f× the change files, %.4f× the table): %d of change files, %d of the log, %d of anything else",
				v, rows, tableBytes, snap.Log().NumFiles(), cdcBytes, cdcFiles, read, rep.Requests.GET,
				float64(read)/float64(cdcBytes), float64(read)/float64(tableBytes), cdcRead, logRead, otherRead)
			if otherRead != 0 {
				t.Fatalf("the change read read %d bytes of data or deletion vector files; the changes are all in the change files", otherRead)
			}
			if cdcRead < cdcBytes/2 || cdcRead > cdcBytes+cdcBytes/4 {
				t.Fatalf("the change read read %d bytes of change files; they are %d bytes", cdcRead, cdcBytes)
			}
			// Planning reads the log (the commit, the snapshot at the version): a cost
			// that follows the number of commits, not the table's rows.
			if cdcRead+logRead != read {
				t.Fatalf("the change read's report counts %d bytes, the store saw %d", read, cdcRead+logRead)
			}
		})
	}
}

// dirBytes sums the sizes of the Parquet files under dir.
func dirBytes(t testing.TB, dir string) (bytes int64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			bytes += fi.Size()
			files++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, files
}

// bytesByPath is storage that tallies the bytes read from each object, to tell a
// change read's reads of change files, log files and anything else apart.
type bytesByPath struct {
	storage.Storage
	mu sync.Mutex
	n  map[string]int64
}

func (b *bytesByPath) add(p string, n int) {
	b.mu.Lock()
	b.n[p] += int64(n)
	b.mu.Unlock()
}

func (b *bytesByPath) Get(ctx context.Context, p string) ([]byte, error) {
	data, err := b.Storage.Get(ctx, p)
	b.add(p, len(data))
	return data, err
}

func (b *bytesByPath) Open(ctx context.Context, p string) (storage.File, error) {
	f, err := b.Storage.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return &bytesByPathFile{File: f, b: b, p: p}, nil
}

func (b *bytesByPath) reset() {
	b.mu.Lock()
	clear(b.n)
	b.mu.Unlock()
}

// split sums the bytes read from change data files, from the log, and from
// everything else.
func (b *bytesByPath) split() (cdc, logBytes, other int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for p, n := range b.n {
		switch {
		case strings.HasPrefix(p, "_change_data/"):
			cdc += n
		case strings.HasPrefix(p, "_delta_log/"):
			logBytes += n
		default:
			other += n
		}
	}
	return cdc, logBytes, other
}

type bytesByPathFile struct {
	storage.File
	b *bytesByPath
	p string
}

func (f *bytesByPathFile) ReadAt(buf []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(buf, off)
	f.b.add(f.p, n)
	return n, err
}
