package datafile

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// emptyFooter is the footer of an empty file of schema written with default
// WriterOptions: what the re-encoding export's footer holds besides row groups.
func emptyFooter(t *testing.T, schema *arrow.Schema) (*Reader, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, schema, WriterOptions{})
	require.NoError(t, err)
	_, err = w.Close()
	require.NoError(t, err)
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), ReadOptions{})
	require.NoError(t, err)
	return r, buf.Bytes()
}

// requireExportFooter checks that the export's schema, column orders and key-value
// metadata are those of a re-encoded export of schema, and that pqarrow reads it
// with schema's names and types.
func requireExportFooter(t *testing.T, data []byte, schema *arrow.Schema) {
	t.Helper()
	probe, _ := emptyFooter(t, schema)
	defer probe.Close()
	r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{})
	require.NoError(t, err)
	defer r.Close()
	got, want := r.Metadata(), probe.Metadata()
	require.Equal(t, want.FileMetaData.Schema, got.FileMetaData.Schema)
	require.Equal(t, want.FileMetaData.ColumnOrders, got.FileMetaData.ColumnOrders)
	require.Equal(t, kvMap(want.KeyValueMetadata()), kvMap(got.KeyValueMetadata()))
	for rg := range got.NumRowGroups() {
		for c := range got.Schema.NumColumns() {
			cc, err := got.RowGroup(rg).ColumnChunk(c)
			require.NoError(t, err)
			require.Equal(t, []string(want.Schema.Column(c).ColumnPath()), []string(cc.PathInSchema()), "row group %d column %d", rg, c)
		}
	}
	pr, err := file.NewParquetReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	as, err := fr.Schema()
	require.NoError(t, err)
	require.Equal(t, len(schema.Fields()), len(as.Fields()))
	for i, f := range schema.Fields() {
		require.Equal(t, f.Name, as.Field(i).Name)
		require.True(t, arrow.TypeEqual(f.Type, as.Field(i).Type), "%s: %s, not %s", f.Name, as.Field(i).Type, f.Type)
		if k := as.Field(i).Metadata.FindKey("PARQUET:field_id"); k >= 0 {
			require.Equal(t, "-1", as.Field(i).Metadata.Values()[k], "field id on %s", f.Name)
		}
	}
}

// An export holds exactly the sources' rows in order, their pages unchanged, under
// the re-encoded export's schema and metadata; its page indexes (shifted) and
// native Bloom filters work; nothing is stored.
func TestExportCopiesRowGroups(t *testing.T) {
	for _, tc := range copyCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			store := storage.NewMemory()
			spec := tc.spec(mem)
			fx := writeSources(t, store, spec, tc.rows)
			out, err := NewOutput(store, spec)
			require.NoError(t, err)
			before := objects(t, store)
			var progress []int
			var buf bytes.Buffer
			res, err := out.Export(bg, &buf, fx.sources, ExportOptions{Schema: lineSchema, MinRowGroupRows: 1, BufferBytes: 4096,
				Progress: func(i int) { progress = append(progress, i) }})
			require.NoError(t, err)
			data := buf.Bytes()
			require.Equal(t, before, objects(t, store), "Export stored something")
			require.Empty(t, out.Adds())
			require.Equal(t, []int{0, 1, 2}[:len(tc.rows)], progress)
			want := fx.allRows()
			require.Equal(t, int64(len(want)), res.Rows)
			require.Equal(t, int64(len(data)), res.Bytes)
			require.Equal(t, want, readRows(t, data, lineSchema, nil), "datafile reader")
			require.Equal(t, want, pqarrowRows(t, data), "plain pqarrow")
			requireExportFooter(t, data, lineSchema)

			r, err := Open(bytes.NewReader(data), int64(len(data)), ReadOptions{BatchSize: 700})
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, res.RowGroups, r.NumRowGroups())
			checkPagesUnchanged(t, store, fx.sources, r, data)
			checkRangesMatchFullReads(t, r)
			if len(tc.bloom) > 0 {
				checkNativeBloom(t, r, data, tc.bloom)
			}
		})
	}
}

// Files of a column-mapped table (physical names, field ids) export under the
// logical names, without field ids, as the re-encoded export does.
func TestExportColumnMappedFiles(t *testing.T) {
	ds, err := log.ParseSchema(mappedDelta)
	require.NoError(t, err)
	logical, err := log.ToArrow(ds, log.ArrowOptions{})
	require.NoError(t, err)
	mem := memory.NewGoAllocator()
	for _, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		t.Run(string(mode), func(t *testing.T) {
			store := storage.NewMemory()
			out, err := NewOutput(store, Spec{Schema: logical, FileSchema: mappedFileSchema(t, ds, mode), Allocator: mem, RowGroupBytes: 16 << 10})
			require.NoError(t, err)
			sources, want := mappedSources(t, mem, logical, out)
			var buf bytes.Buffer
			_, err = out.Export(bg, &buf, sources, ExportOptions{Schema: logical, MinRowGroupRows: 1})
			require.NoError(t, err)
			data := buf.Bytes()
			requireExportFooter(t, data, logical)
			require.Equal(t, want, readRows(t, data, logical, nil))
			require.Equal(t, want, pqarrowRows(t, data))
		})
	}
}

// What Export refuses it refuses before writing anything: the rule is named and w
// holds no byte.
func TestExportRefusesWhatItCannotCopy(t *testing.T) {
	mem := memory.NewGoAllocator()
	base := Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: mem}
	// The same columns, one of another type: the footer cannot be swapped.
	otherType := arrow.NewSchema(append(append([]arrow.Field(nil), lineSchema.Fields()[:1]...),
		append([]arrow.Field{{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, lineSchema.Fields()[2:]...)...), nil)
	cases := []struct {
		name    string
		write   func(*testing.T, *storage.Memory) *stitchFixture
		schema  *arrow.Schema
		opts    ExportOptions
		rule    StitchRule
		corrupt bool
	}{
		{name: "export schema of another type", schema: otherType, rule: RuleSchema},
		{name: "another writer", write: func(t *testing.T, st *storage.Memory) *stitchFixture { return writePqarrow(t, st, base) }, rule: RuleWriter},
		{name: "no page index", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			return writeWith(t, st, base, WriterOptions{TargetRowGroupBytes: 48 << 10, DisablePageIndex: true})
		}, rule: RulePageIndex},
		// 10,000 rows in row groups of 48 KiB: on average far below the defaults.
		{name: "small row groups, default rule", rule: RuleRowGroupSize},
		{name: "small row groups", opts: ExportOptions{MinRowGroupRows: 1 << 20, MinRowGroupBytes: 1 << 30}, rule: RuleRowGroupSize},
		// By the log alone, no footer read: the files are gone from storage.
		{name: "small files by the log", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			fx := writeSources(t, st, base, []int{5000, 5000})
			for _, src := range fx.sources {
				require.NoError(t, st.Delete(bg, src.Path))
			}
			return fx
		}, rule: RuleRowGroupSize},
		// Without the log's row counts, by the footers.
		{name: "small row groups by the footers", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			fx := writeSources(t, st, base, []int{5000, 5000})
			fx.sources[0].Stats = nil
			return fx
		}, rule: RuleRowGroupSize},
		{name: "rows disagree with the log", write: func(t *testing.T, st *storage.Memory) *stitchFixture {
			fx := writeSources(t, st, base, []int{5000, 5000})
			fx.sources[1].Stats.NumRecords++
			return fx
		}, opts: ExportOptions{MinRowGroupRows: 1}, corrupt: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemory()
			fx := writeSources(t, store, base, []int{5000, 5000})
			if tc.write != nil {
				store = storage.NewMemory()
				fx = tc.write(t, store)
			}
			out, err := NewOutput(store, base)
			require.NoError(t, err)
			opts := tc.opts
			opts.Schema = lineSchema
			if tc.schema != nil {
				opts.Schema = tc.schema
				opts.MinRowGroupRows = 1
			}
			if tc.rule != RuleRowGroupSize && opts.MinRowGroupRows == 0 {
				opts.MinRowGroupRows = 1
			}
			var buf bytes.Buffer
			_, err = out.Export(bg, &buf, fx.sources, opts)
			require.Zero(t, buf.Len(), "wrote before refusing")
			if tc.corrupt {
				require.ErrorIs(t, err, ErrCorruptData)
				require.Contains(t, err.Error(), fx.sources[1].Path)
				return
			}
			var ne *NotStitchableError
			require.ErrorAs(t, err, &ne)
			require.Equal(t, tc.rule, ne.Rule, "%v", err)
		})
	}
}

// A cancelled export returns the context's error.
func TestExportCancelled(t *testing.T) {
	store := storage.NewMemory()
	spec := Spec{Schema: lineSchema, RowGroupBytes: 48 << 10, Allocator: memory.NewGoAllocator()}
	fx := writeSources(t, store, spec, []int{5000, 5000})
	out, err := NewOutput(store, spec)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	calls := 0
	_, err = out.Export(ctx, &bytes.Buffer{}, fx.sources, ExportOptions{Schema: lineSchema, MinRowGroupRows: 1,
		Progress: func(int) { calls++; cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, calls, "copying went on after the cancel")
}
