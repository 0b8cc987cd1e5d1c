package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/table"
)

// The Bloom index proof: a table of many small files with a random UUID column indexed
// by Bloom filters. A lookup of an existing key reads about 1 + fpp*(N-1) files, a
// lookup of an absent key about fpp*N (fewer when min/max statistics already exclude
// a file); no key is ever missed (no false negatives) and results are exact; a corrupt
// or missing index file only makes the files it covers be read (with a warning).
//
// Knob: SKIPLAKE_BLOOM_FILES (default 1000; 100 with -short). Files are written 100
// per commit (one index file per commit), one file per batch and partition value.

var proofBloomSchema = arrow.NewSchema([]arrow.Field{
	{Name: "uuid", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "g", Type: arrow.PrimitiveTypes.Int32},
}, nil)

const proofBloomFPP = 0.01

type proofBloomTable struct {
	st     storage.Storage
	tb     *table.Table
	keys   []string           // every distinct key
	rowsOf map[string][]int64 // key -> n of its rows (sorted)
	fileOf map[string]int     // key -> index of the file holding it
	index  []string           // file -> Bloom index path covering it
	lo, hi []string           // file -> smallest and largest key
	nFiles int
}

func proofRandomUUID(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuid.UUID(b).String()
}

func buildProofBloomTable(t *testing.T, rng *rand.Rand, nFiles, rowsPerFile int) *proofBloomTable {
	t.Helper()
	ctx := context.Background()
	st := storage.NewMemory()
	// Partitioned by g so that a commit's batches (one g value each) become exactly one
	// file each: the writer splits a write only by partition and at the target size.
	tb, err := table.Create(ctx, st, proofBloomSchema, table.CreateOptions{PartitionColumns: []string{"g"}, Properties: map[string]string{
		log.PropBloomFilterColumns: "uuid", log.PropBloomFilterFPP: fmt.Sprint(proofBloomFPP)}})
	if err != nil {
		t.Fatal(err)
	}
	bt := &proofBloomTable{st: st, tb: tb, rowsOf: map[string][]int64{}, fileOf: map[string]int{}, nFiles: nFiles}
	var n int64
	for written := 0; written < nFiles; {
		per := min(100, nFiles-written)
		recs := make([]arrow.RecordBatch, per)
		for f := range recs {
			b := array.NewRecordBuilder(memory.DefaultAllocator, proofBloomSchema)
			key := ""
			for r := 0; r < rowsPerFile; r++ {
				// Every fifth row repeats the previous key: some keys have two rows.
				if key == "" || r%5 != 4 {
					key = proofRandomUUID(rng)
					bt.keys = append(bt.keys, key)
					bt.fileOf[key] = written + f
				}
				if f := written + f; r == 0 {
					bt.lo, bt.hi = append(bt.lo, key), append(bt.hi, key)
				} else {
					bt.lo[f], bt.hi[f] = min(bt.lo[f], key), max(bt.hi[f], key)
				}
				b.Field(0).(*array.StringBuilder).Append(key)
				b.Field(1).(*array.Int64Builder).Append(n)
				b.Field(2).(*array.Int32Builder).Append(int32(f))
				bt.rowsOf[key] = append(bt.rowsOf[key], n)
				n++
			}
			recs[f] = b.NewRecordBatch()
			b.Release()
		}
		res, err := tb.WriteBatches(ctx, recs, table.WriteOptions{})
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesAdded != per {
			t.Fatalf("commit wrote %d files, want one per batch (%d)", res.FilesAdded, per)
		}
		written += per
	}
	snap, err := tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	// Which index covers each file (files are identified by their first key's n).
	byPath := proofFileIDs(t, st, snap, "n")
	bt.index = make([]string, nFiles)
	for _, a := range snap.Log().Files() {
		p, _ := a.DecodedPath()
		tag, err := bloom.DecodeTag(a.Tags[bloom.TagKey])
		if err != nil {
			t.Fatalf("%s: bloom tag: %v", p, err)
		}
		bt.index[int(byPath[p][0])/rowsPerFile] = tag.Path
	}
	return bt
}

// lookup scans for filter and returns the sorted n of the rows found, the files read
// and the time Scan (planning) took.
// snap nil scans the latest version.
func (bt *proofBloomTable) lookup(t *testing.T, filter string, snap *table.Snapshot) ([]int64, *table.ScanReport, time.Duration) {
	t.Helper()
	var src scanner = bt.tb
	if snap != nil {
		src = snap
	}
	ctx := context.Background()
	start := time.Now()
	sc, err := src.Scan(ctx, table.WithFilter(filter))
	plan := time.Since(start)
	if err != nil {
		t.Fatalf("scan %q: %v", filter, err)
	}
	rd, err := sc.Read(ctx)
	if err != nil {
		t.Fatalf("scan %q: %v", filter, err)
	}
	defer rd.Release()
	var ns []int64
	for rd.Next() {
		ns = append(ns, rd.RecordBatch().Column(1).(*array.Int64).Int64Values()...)
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("scan %q: %v", filter, err)
	}
	slices.Sort(ns)
	return ns, rd.Report(), plan
}

func TestProofBloomLookups(t *testing.T) {
	def := 1000
	if testing.Short() {
		def = 100
	}
	nFiles := proofEnvInt(t, "SKIPLAKE_BLOOM_FILES", def)
	lookups := 200
	if testing.Short() {
		lookups = 50
	}
	rng := rand.New(rand.NewPCG(21, 22))
	start := time.Now()
	bt := buildProofBloomTable(t, rng, nFiles, 20)
	t.Logf("%d files, %d keys, %d index files, built in %v", nFiles, len(bt.keys), len(slices.Compact(slices.Sorted(slices.Values(bt.index)))), time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	snap, err := bt.tb.Snapshot(ctx, table.Latest())
	if err != nil {
		t.Fatal(err)
	}
	quote := func(s string) string { return "'" + s + "'" }

	// Existing keys: found exactly (no false negatives), about 1 + fpp*(N-1) files read.
	var existRead, absentRead, bloomSkipped int64
	var existPlan, absentPlan time.Duration
	for i := 0; i < lookups; i++ {
		key := bt.keys[rng.IntN(len(bt.keys))]
		got, rep, plan := bt.lookup(t, "uuid = "+quote(key), snap)
		existPlan += plan
		if !slices.Equal(got, bt.rowsOf[key]) {
			t.Fatalf("lookup of existing key %s: rows %v, want %v (report %+v)", key, got, bt.rowsOf[key], rep.Levels)
		}
		if rep.Files.Kept < 1 {
			t.Fatalf("lookup of %s read no file", key)
		}
		existRead += rep.Files.Kept
		bloomSkipped += rep.Level("bloom").Skipped
		if len(rep.Warnings) > 0 {
			t.Errorf("healthy index produced warnings: %v", rep.Warnings)
		}
	}
	for i := 0; i < lookups; i++ {
		key := proofRandomUUID(rng)
		got, rep, plan := bt.lookup(t, "uuid = "+quote(key), snap)
		absentPlan += plan
		if len(got) != 0 {
			t.Fatalf("lookup of absent key %s returned %v", key, got)
		}
		absentRead += rep.Files.Kept
	}
	meanExist := float64(existRead) / float64(lookups)
	meanAbsent := float64(absentRead) / float64(lookups)
	wantExist := 1 + proofBloomFPP*float64(nFiles-1)
	wantAbsent := proofBloomFPP * float64(nFiles)
	t.Logf("existing keys: %.2f files read per lookup (expected about %.2f at fpp %.2f before stats pruning); planning %v per lookup",
		meanExist, wantExist, proofBloomFPP, (existPlan / time.Duration(lookups)).Round(time.Microsecond))
	t.Logf("absent keys:   %.2f files read per lookup (expected about %.2f); planning %v per lookup",
		meanAbsent, wantAbsent, (absentPlan / time.Duration(lookups)).Round(time.Microsecond))
	// Generous bounds: three times the expected false positives plus two files. With
	// N=1000 the standard error of the mean over 200 lookups is about 0.2 files.
	if meanExist > 1+3*proofBloomFPP*float64(nFiles-1)+2 {
		t.Errorf("existing keys read %.2f files per lookup; expected about %.2f", meanExist, wantExist)
	}
	if meanAbsent > 3*wantAbsent+2 {
		t.Errorf("absent keys read %.2f files per lookup; expected about %.2f", meanAbsent, wantAbsent)
	}
	if bloomSkipped == 0 {
		t.Errorf("the bloom level never skipped a file")
	}

	t.Run("IN lists find every listed key exactly", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			var lits []string
			var want []int64
			for j := 0; j < 1+rng.IntN(4); j++ {
				k := bt.keys[rng.IntN(len(bt.keys))]
				if !slices.Contains(lits, quote(k)) {
					lits = append(lits, quote(k))
					want = append(want, bt.rowsOf[k]...)
				}
			}
			lits = append(lits, quote(proofRandomUUID(rng)))
			slices.Sort(want)
			filter := "uuid IN (" + strings.Join(lits, ", ") + ")"
			got, rep, _ := bt.lookup(t, filter, snap)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: rows %v, want %v", filter, got, want)
			}
			if limit := float64(len(lits)) * (1 + 3*proofBloomFPP*float64(nFiles) + 2); float64(rep.Files.Kept) > limit {
				t.Errorf("%s read %d files", filter, rep.Files.Kept)
			}
		}
	})

	t.Run("OR of equalities and AND with another column", func(t *testing.T) {
		k1, k2 := bt.keys[0], bt.keys[len(bt.keys)-1]
		want := append(append([]int64(nil), bt.rowsOf[k1]...), bt.rowsOf[k2]...)
		slices.Sort(want)
		got, rep, _ := bt.lookup(t, fmt.Sprintf("uuid = %s OR uuid = %s", quote(k1), quote(k2)), snap)
		if !slices.Equal(got, want) {
			t.Errorf("OR: rows %v, want %v", got, want)
		}
		if rep.Level("bloom").Skipped == 0 {
			t.Errorf("OR of equalities skipped nothing by Bloom: %+v", rep.Levels)
		}
		n0 := bt.rowsOf[k1][0]
		got, _, _ = bt.lookup(t, fmt.Sprintf("uuid = %s AND n = %d", quote(k1), n0), snap)
		if !slices.Equal(got, []int64{n0}) {
			t.Errorf("AND: rows %v, want [%d]", got, n0)
		}
	})

	// Damaged indexes: one overwritten with garbage, one deleted. Fresh snapshots (no
	// cached filters). The files they cover are read; results stay exact.
	indexes := slices.Compact(slices.Sorted(slices.Values(bt.index)))
	if len(indexes) < 3 {
		t.Logf("only %d index files: damaged-index checks need 3 (use more files)", len(indexes))
		return
	}
	corrupt, missing := indexes[0], indexes[1]
	if err := bt.st.Put(ctx, corrupt, []byte("this is not a bloom index")); err != nil {
		t.Fatal(err)
	}
	if err := bt.st.Delete(ctx, missing); err != nil {
		t.Fatal(err)
	}
	// A Table keeps the snapshot (and the filters it loaded) while the log has not
	// moved: index files are immutable, so damage done behind its back is seen only
	// by a Table opened afresh, as a new process would.
	fresh, err := table.Open(ctx, bt.st)
	if err != nil {
		t.Fatal(err)
	}
	bt.tb = fresh
	for _, c := range []struct{ name, index string }{{"corrupt index", corrupt}, {"missing index", missing}, {"healthy index", indexes[2]}} {
		t.Run(c.name, func(t *testing.T) {
			var key string
			for _, k := range bt.keys {
				if bt.index[bt.fileOf[k]] == c.index {
					key = k
					break
				}
			}
			got, rep, _ := bt.lookup(t, "uuid = "+quote(key), nil)
			if !slices.Equal(got, bt.rowsOf[key]) {
				t.Fatalf("rows %v, want %v", got, bt.rowsOf[key])
			}
			// Every file of the two damaged indexes loses its filter; those whose key
			// range holds the probe cannot be excluded by min/max statistics either
			// (truncated bounds are only wider), so each must be read, and the report
			// must name both damaged index files.
			mustRead := 0
			for f := range bt.nFiles {
				if (bt.index[f] == corrupt || bt.index[f] == missing) && bt.lo[f] <= key && key <= bt.hi[f] {
					mustRead++
				}
			}
			if mustRead == 0 {
				t.Fatalf("no damaged file's key range holds %s: the check is vacuous", key)
			}
			// Warnings are grouped per unusable index file (one line each).
			if rep.Files.Kept < int64(mustRead) {
				t.Errorf("%d files read, but %d files lost their Bloom filter and hold the key in their range",
					rep.Files.Kept, mustRead)
			}
			if len(rep.Warnings) == 0 {
				t.Errorf("no warning about the damaged index files")
			}
			joined := strings.Join(rep.Warnings, "\n")
			for _, idx := range []string{corrupt, missing} {
				if !strings.Contains(joined, idx) {
					t.Errorf("warnings do not name %s: %.300s", idx, joined)
				}
			}
			t.Logf("%s: %d files read, %d warnings", c.name, rep.Files.Kept, len(rep.Warnings))
		})
	}
	t.Run("absent key with damaged indexes", func(t *testing.T) {
		got, rep, _ := bt.lookup(t, "uuid = "+quote(proofRandomUUID(rng)), nil)
		if len(got) != 0 {
			t.Errorf("absent key returned %v", got)
		}
		if rep.Files.Kept == 0 {
			t.Errorf("files whose index is damaged were skipped")
		}
	})
}
