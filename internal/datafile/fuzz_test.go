package datafile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/goldentest"
)

// goldenSeedFiles returns the smallest data file (at most 256 KiB) of every golden
// table, written by Spark, Databricks, delta-rs and others: the Parquet dialects the
// reader must survive damaged versions of. None when the tables are absent (and
// SKIPLAKE_GOLDEN is unset).
func goldenSeedFiles(f *testing.F) [][]byte {
	dir, why, fatal := goldentest.Lookup()
	if dir == "" {
		if fatal {
			f.Fatal(why)
		}
		f.Log(why)
		return nil
	}
	smallest := map[string]string{} // table root → file
	size := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() || !strings.HasSuffix(p, ".parquet") || strings.Contains(rel, "_delta_log") ||
			strings.Contains(rel, "expected") || strings.Contains(rel, "_change_data") {
			return nil
		}
		parts := strings.SplitN(rel, string(filepath.Separator), 3)
		if len(parts) < 3 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		key := parts[0] + "/" + parts[1]
		if n := info.Size(); n <= 256<<10 && (smallest[key] == "" || n < size[key]) {
			smallest[key], size[key] = p, n
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	keys := make([]string, 0, len(smallest))
	for k := range smallest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out [][]byte
	for _, k := range keys {
		data, err := os.ReadFile(smallest[k])
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// damagedSeeds returns data and the damages storage and copying do to it: cut off
// footers, a wrong trailing magic, a footer length past the start, and bytes
// overwritten in the middle (pages) and near the end (footer, page index).
func damagedSeeds(data []byte) [][]byte {
	n := len(data)
	set := func(at int, b ...byte) []byte {
		out := bytes.Clone(data)
		if at >= 0 && at+len(b) <= n {
			copy(out[at:], b)
		}
		return out
	}
	out := [][]byte{data, data[:n/2], data[:max(0, n-9)]}
	if n >= 12 {
		out = append(out,
			set(n-4, 'P', 'A', 'R', '2'),
			set(n-8, 0xff, 0xff, 0xff, 0x7f),
			set(n/2, bytes.Repeat([]byte{0xa5}, 16)...),
			set(n-40, 0xff, 0x7f, 0x80, 0x00),
			set(4, bytes.Repeat([]byte{0xff}, 8)...),
		)
	}
	return out
}

// FuzzOpenRead feeds arbitrary bytes to Open, Read and ReadRanges: they must return
// rows or an error wrapping ErrCorruptData, never panic or allocate what the input
// claims without holding it (a panic inside arrow-go's decoders is contained; a
// fatal out-of-memory is not, and is a finding). Seeded with a file of every type
// this package writes, the smallest data file of each golden table (Spark, Databricks,
// delta-rs writers), and damaged versions of each, so a plain `go test` runs all of
// them; `go test -fuzz FuzzOpenRead ./internal/datafile` explores from there.
func FuzzOpenRead(f *testing.F) {
	rec := allTypesBatch(f, memory.DefaultAllocator, 8, 0)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, rec.Schema(), WriterOptions{Codec: CodecUncompressed})
	if err != nil {
		f.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		f.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		f.Fatal(err)
	}
	rec.Release()
	seeds := append([][]byte{buf.Bytes(), []byte("PAR1\x00\x00\x00\x00PAR1")}, goldenSeedFiles(f)...)
	for _, s := range seeds {
		for _, d := range damagedSeeds(s) {
			f.Add(d)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{Name: "fuzz.parquet", BatchSize: 100})
		if err != nil {
			requireCorrupt(t, err)
			return
		}
		defer r.Close()
		want := r.Schema()
		var rows int64
		err = r.Read(t.Context(), want, nil, func(b arrow.RecordBatch, _ int64) error {
			rows += b.NumRows()
			return nil
		})
		if err != nil {
			requireCorrupt(t, err)
		} else if rows != r.NumRows() {
			t.Fatalf("read %d rows of %d", rows, r.NumRows())
		}
		if r.NumRowGroups() == 0 {
			return
		}
		n := r.Metadata().RowGroup(0).NumRows()
		if n < 4 {
			return
		}
		ranges := []RowRange{{Start: 1, End: n / 2}, {Start: n/2 + 1, End: n}}
		if err := r.ReadRanges(t.Context(), want, 0, ranges, func(arrow.RecordBatch, int64) error { return nil }); err != nil {
			requireCorrupt(t, err)
		}
	})
}

// requireCorrupt fails unless err reports a corrupt file that it names.
func requireCorrupt(t *testing.T, err error) {
	t.Helper()
	var ce *CorruptError
	if !errors.Is(err, ErrCorruptData) || !errors.As(err, &ce) || ce.File != "fuzz.parquet" {
		var cerr *ColumnError
		if errors.As(err, &cerr) {
			return // a value the file holds that the Arrow schema it declares cannot take
		}
		t.Fatalf("error is not a named ErrCorruptData: %v", err)
	}
}
