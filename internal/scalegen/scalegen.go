// Package scalegen builds the log of a large synthetic Delta table — a checkpoint of
// N add actions with statistics (and partition values, when partitioned) followed by
// a few small commits — for the many-files benchmarks of log, table and the CLI. It
// writes no data files: snapshot loading and planning never open them. The
// checkpoint is written by package log's own checkpoint writer, so building a table
// exercises (and lets a benchmark measure) checkpoint writing too.
//
// Invariants: the tables are deterministic (file i's path, partition value and
// statistics are functions of i alone), so two builds of the same Options have the
// same snapshot; every file is live at the latest version except the ones the trailing
// commits remove, and Expected reports exactly how many files that is. It is used by
// tests and benchmarks only.
package scalegen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// Days is the number of distinct day values (partitions, when partitioned).
const Days = 1000

// Filter keeps one week of days and, within it, the files whose amount reaches above
// 900 (about a fifth of them): on a partitioned table the partition pass and the
// statistics pass both decide files, on an unpartitioned one the statistics of day
// and amount do.
const Filter = "day >= DATE '2021-03-01' AND day < DATE '2021-03-08' AND amount > 900"

// EnvFiles is the environment variable that sets the file count of the scale tests and
// benchmarks (see FilesFromEnv).
const EnvFiles = "SKIPLAKE_SCALE_FILES"

// FilesFromEnv returns the file counts listed (comma-separated) in SKIPLAKE_SCALE_FILES,
// or def when the variable is unset. A malformed entry is an error naming it.
func FilesFromEnv(def ...int) ([]int, error) {
	s := os.Getenv(EnvFiles)
	if s == "" {
		return def, nil
	}
	var out []int
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != ',' {
			continue
		}
		n, err := strconv.Atoi(s[start:i])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("scalegen: %s entry %q: want a positive integer", EnvFiles, s[start:i])
		}
		out = append(out, n)
		start = i + 1
	}
	return out, nil
}

// Options describes a table.
type Options struct {
	// Files is the number of add actions in the checkpoint.
	Files int
	// Partitioned makes day a partition column; otherwise day is a data column with
	// statistics like the others.
	Partitioned bool
	// Commits is the number of small commits after the checkpoint (each adds one file
	// and removes one of the checkpoint's); at most 8, so that no automatic checkpoint
	// (every 10 versions by default) follows them.
	Commits int
	// Batch is the number of adds per commit before the checkpoint (default 250,000):
	// it bounds the size of one JSON commit while the table is built.
	Batch int
}

// Schema is the tables' schema as Spark-JSON: id long, amount double, note string,
// day date.
const Schema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"note","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"day","type":"date","nullable":false,"metadata":{}}]}`

var day0 = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

// File returns the add action of file i of a table with the given partitioning.
func File(i int, partitioned bool) *log.Add {
	day := day0.AddDate(0, 0, i%Days).Format(time.DateOnly)
	lo := int64(i/Days) * 1000
	amount := i * 7919 % 977 // spread over the days
	a := &log.Add{
		Size: 8 << 20, ModificationTime: 1_700_000_000_000, DataChange: true,
	}
	if partitioned {
		a.Path = fmt.Sprintf("day=%s/part-%05d-00000000-0000-4000-8000-%012d.c000.zstd.parquet", day, i/Days, i)
		a.PartitionValues = map[string]*string{"day": &day}
		a.Stats = fmt.Sprintf(`{"numRecords":1000,"minValues":{"id":%d,"amount":%d.5,"note":"n%07d"},`+
			`"maxValues":{"id":%d,"amount":%d.5,"note":"n%07d"},"nullCount":{"id":0,"amount":0,"note":3}}`,
			lo, amount, i, lo+999, amount+100, i+50)
	} else {
		a.Path = fmt.Sprintf("part-%05d-00000000-0000-4000-8000-%012d.c000.zstd.parquet", i/Days, i)
		a.PartitionValues = map[string]*string{}
		a.Stats = fmt.Sprintf(`{"numRecords":1000,"minValues":{"id":%d,"amount":%d.5,"note":"n%07d","day":"%s"},`+
			`"maxValues":{"id":%d,"amount":%d.5,"note":"n%07d","day":"%s"},"nullCount":{"id":0,"amount":0,"note":3,"day":0}}`,
			lo, amount, i, day, lo+999, amount+100, i+50, day)
	}
	return a
}

// Expected is the number of live files of the table o builds.
func Expected(o Options) int { return o.Files }

// CheckpointVersion is the version of the checkpoint of the table o builds.
func CheckpointVersion(o Options) int64 {
	batch := o.batch()
	return int64((o.Files + batch - 1) / batch)
}

func (o Options) batch() int {
	if o.Batch > 0 {
		return o.Batch
	}
	return 250_000
}

// Build writes the log of the table o describes into store, which must be empty:
// version 0 creates the table, versions 1..k add the files in batches, a checkpoint of
// version k is written with log.Checkpoint, the JSON commits it covers are deleted (a
// reader of the latest version reads the checkpoint, as on a large table), and
// o.Commits small commits follow.
func Build(ctx context.Context, store storage.Storage, o Options) error {
	if o.Files < 1 || o.Commits < 0 || o.Commits > 8 || o.Commits > o.Files {
		return fmt.Errorf("scalegen: options %+v: want Files >= 1 and 0 <= Commits <= min(8, Files)", o)
	}
	if _, err := store.Stat(ctx, log.CommitPath(0)); err == nil {
		return fmt.Errorf("scalegen: %s exists: the store must be empty", log.CommitPath(0))
	} else if !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("scalegen: %w", err)
	}
	l := log.New(store)
	md := log.Metadata{
		ID: "00000000-0000-4000-8000-5ca1e0000000", Format: log.Format{Provider: "parquet"},
		SchemaString: Schema, PartitionColumns: []string{},
		// No automatic checkpoint while the files are added: Build writes one itself.
		Configuration: map[string]string{log.PropCheckpointInterval: "1000000"},
		CreatedTime:   new(int64),
	}
	if o.Partitioned {
		md.PartitionColumns = []string{"day"}
	}
	if _, err := l.Create(ctx, md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, log.CommitInfo{}); err != nil {
		return fmt.Errorf("scalegen: create: %w", err)
	}
	batch := o.batch()
	for start := 0; start < o.Files; start += batch {
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			return fmt.Errorf("scalegen: %w", err)
		}
		adds := make([]*log.Add, 0, min(batch, o.Files-start))
		for i := start; i < start+cap(adds); i++ {
			adds = append(adds, File(i, o.Partitioned))
		}
		tx := snap.NewTransaction(log.TxnOptions{})
		tx.Add(adds...)
		if _, err := tx.Commit(ctx, log.CommitInfo{Operation: "WRITE"}); err != nil {
			return fmt.Errorf("scalegen: adding files %d..: %w", start, err)
		}
	}
	snap, err := l.Snapshot(ctx, -1)
	if err != nil {
		return fmt.Errorf("scalegen: %w", err)
	}
	if err := l.Checkpoint(ctx, snap); err != nil {
		return fmt.Errorf("scalegen: %w", err)
	}
	for v := int64(1); v <= snap.Version(); v++ {
		if err := store.Delete(ctx, log.CommitPath(v)); err != nil {
			return fmt.Errorf("scalegen: %w", err)
		}
	}
	for c := 0; c < o.Commits; c++ {
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			return fmt.Errorf("scalegen: %w", err)
		}
		gone := File(c, o.Partitioned)
		tx := snap.NewTransaction(log.TxnOptions{})
		tx.Remove(gone.RemoveAction(1_700_000_100_000+int64(c), true))
		tx.Add(File(o.Files+c, o.Partitioned))
		if _, err := tx.Commit(ctx, log.CommitInfo{Operation: "WRITE"}); err != nil {
			return fmt.Errorf("scalegen: commit %d after the checkpoint: %w", c, err)
		}
	}
	return nil
}

// EnvDir is the environment variable naming a directory where the scale tables are
// kept between runs (see Case.Open).
const EnvDir = "SKIPLAKE_SCALE_DIR"

// Case is one scale table of the tests and benchmarks: Name is "files=N" or
// "part-files=N" (partitioned), the directory name it is kept under.
type Case struct {
	Name    string
	Options Options
}

// Cases returns, for every file count of FilesFromEnv(def), the unpartitioned and the
// partitioned table, each a checkpoint plus 3 commits.
func Cases(def int) ([]Case, error) {
	counts, err := FilesFromEnv(def)
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, n := range counts {
		for _, part := range []bool{false, true} {
			name := fmt.Sprintf("files=%d", n)
			if part {
				name = "part-" + name
			}
			out = append(out, Case{Name: name, Options: Options{Files: n, Partitioned: part, Commits: 3}})
		}
	}
	return out, nil
}

// Open returns the directory of c's table and a store on it, building the table first
// unless it exists: under $SKIPLAKE_SCALE_DIR when that is set (kept between runs),
// else under tmp.
func (c Case) Open(ctx context.Context, tmp string) (string, storage.Storage, error) {
	dir := tmp
	if keep := os.Getenv(EnvDir); keep != "" {
		dir = keep
	}
	dir = filepath.Join(dir, c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("scalegen: %w", err)
	}
	store, err := storage.NewLocal(dir)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil {
		if err := Build(ctx, store, c.Options); err != nil {
			return "", nil, err
		}
	}
	return dir, store, nil
}
