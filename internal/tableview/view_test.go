package tableview_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/internal/datafile"
	"github.com/skiplake/skiplake/internal/goldentest"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// annotated is a Delta schema with column mapping annotations: physical names
// unlike the logical ones, ids, a nested struct (inside a list too) and a
// partition column.
const annotated = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a1"}},
 {"name":"Name","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b2"}},
 {"name":"st","type":{"type":"struct","fields":[
   {"name":"x","type":"integer","nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-d4"}},
   {"name":"y","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-e5"}}]},
  "nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-c3"}},
 {"name":"arr","type":{"type":"array","elementType":{"type":"struct","fields":[
   {"name":"q","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":8,"delta.columnMapping.physicalName":"col-h8"}}]},"containsNull":true},
  "nullable":true,"metadata":{"delta.columnMapping.id":7,"delta.columnMapping.physicalName":"col-g7"}},
 {"name":"part","type":"date","nullable":true,"metadata":{"delta.columnMapping.id":6,"delta.columnMapping.physicalName":"col-f6"}}]}`

var bg = context.Background()

func metadata(schema string, parts []string, conf map[string]string) log.Metadata {
	return log.Metadata{ID: "00000000-0000-4000-8000-000000000001", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: strings.Join(strings.Fields(schema), ""), PartitionColumns: parts, Configuration: conf}
}

func legacy(mode log.ColumnMapping) log.Protocol {
	if mode == log.ColumnMappingNone {
		return log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	}
	return log.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
}

// view resolves a table about to be created with md and p (a pending snapshot: the
// view does not need the table to exist).
func view(t *testing.T, md log.Metadata, p log.Protocol, domains ...log.DomainMetadata) (*tableview.View, error) {
	t.Helper()
	return tableview.New(log.New(storage.NewMemory()).NewTableSnapshot(md, p, domains...))
}

func mustView(t *testing.T, md log.Metadata, p log.Protocol, domains ...log.DomainMetadata) *tableview.View {
	t.Helper()
	v, err := view(t, md, p, domains...)
	require.NoError(t, err)
	return v
}

func names(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func strp(s string) *string { return &s }

// The view of each mapping mode: physical names and field ids where the mode says,
// the one logical→physical translation (nested and case-insensitive), partition
// columns with typed values, statistics columns in physical names, and the file
// settings carrying the files' physical schema.
func TestViewMappingModes(t *testing.T) {
	cases := []struct {
		mode           log.ColumnMapping
		physData       []string
		partPhys       string
		nested         []string // physical path of st.x
		listElem       string   // physical name of arr's element field q
		ids            bool     // the physical schema carries PARQUET:field_id
		statsColumns   []string // delta.dataSkippingStatsColumns "name,ST.x" translated
		readMappingKey bool     // the read schema carries physical names
	}{
		{log.ColumnMappingNone, []string{"id", "Name", "st", "arr"}, "part", []string{"st", "x"}, "q", false, []string{"name", "ST.x"}, false},
		{log.ColumnMappingName, []string{"col-a1", "col-b2", "col-c3", "col-g7"}, "col-f6", []string{"col-c3", "col-d4"}, "col-h8", true, []string{"`col-b2`", "`col-c3`.`col-d4`"}, true},
		{log.ColumnMappingID, []string{"col-a1", "col-b2", "col-c3", "col-g7"}, "col-f6", []string{"col-c3", "col-d4"}, "col-h8", true, []string{"`col-b2`", "`col-c3`.`col-d4`"}, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			conf := map[string]string{log.PropColumnMappingMode: string(tc.mode), log.PropDataSkippingStatsColumns: "name,ST.x",
				log.PropTargetFileSize: "1048576", log.PropParquetCompressionCodec: "snappy", log.PropBloomFilterColumns: "NAME"}
			v := mustView(t, metadata(annotated, []string{"part"}, conf), legacy(tc.mode))
			require.Equal(t, tc.mode, v.Mapping())
			require.EqualValues(t, -1, v.Version())
			require.Equal(t, []string{"id", "Name", "st", "arr", "part"}, names(v.Logical()))
			require.Equal(t, []string{"id", "Name", "st", "arr"}, names(v.DataSchema()))
			require.Equal(t, tc.physData, names(v.PhysicalDataSchema()))
			require.Equal(t, []int{0, 1, 2, 3}, v.DataIndices())
			_, hasID := v.Physical().Field(0).Metadata.GetValue(datafile.FieldIDKey)
			require.Equal(t, tc.ids, hasID)
			_, hasPhys := v.ReadSchema().Field(1).Metadata.GetValue(log.PhysicalNameKey)
			require.Equal(t, tc.readMappingKey, hasPhys)
			for _, f := range v.Logical().Fields() {
				require.Zero(t, f.Metadata.Len(), "the logical schema has no metadata")
			}

			lp, pp, ok := v.PhysicalPath([]string{"ST", "X"})
			require.True(t, ok)
			require.Equal(t, []string{"st", "x"}, lp, "the schema's spelling")
			require.Equal(t, tc.nested, pp)
			_, _, ok = v.PhysicalPath([]string{"st", "nope"})
			require.False(t, ok)
			_, _, ok = v.PhysicalPath([]string{"id", "x"})
			require.False(t, ok, "through structs only")
			elem := v.PhysicalDataSchema().Field(3).Type.(*arrow.ListType).Elem().(*arrow.StructType)
			require.Equal(t, tc.listElem, elem.Field(0).Name, "fields inside lists are mapped too")

			require.Len(t, v.Partitions(), 1)
			p := v.Partitions()[0]
			require.Equal(t, "part", p.Name)
			require.Equal(t, tc.partPhys, p.Physical)
			require.Equal(t, 4, p.Index)
			require.Equal(t, "date", p.DeltaType)
			require.Equal(t, arrow.FixedWidthTypes.Date32, p.Type)
			require.Equal(t, []string{tc.partPhys}, v.PartitionPhysicalNames())
			require.True(t, v.IsPartition("PART"))
			require.False(t, v.IsPartition("id"))

			a := &log.Add{Path: "f1", PartitionValues: map[string]*string{tc.partPhys: strp("2024-02-29")}}
			b := &log.Add{Path: "f2", PartitionValues: map[string]*string{tc.partPhys: strp("2024-03-01")}}
			null := &log.Add{Path: "f3", PartitionValues: map[string]*string{tc.partPhys: nil}}
			typed, err := v.PartitionValues(a)
			require.NoError(t, err)
			require.Equal(t, value.Date(19782), typed[tc.partPhys])
			typed, err = v.PartitionValues(null)
			require.NoError(t, err)
			require.True(t, typed[tc.partPhys].IsNull())
			require.NotEqual(t, v.PartitionKey(a), v.PartitionKey(b))
			require.NotEqual(t, v.PartitionKey(a), v.PartitionKey(null))
			require.Equal(t, v.PartitionKey(a), v.PartitionKeyOf(map[string]*string{tc.partPhys: strp("2024-02-29")}))
			_, err = v.PartitionValues(&log.Add{Path: "bad", PartitionValues: map[string]*string{tc.partPhys: strp("not a date")}})
			require.ErrorContains(t, err, `file bad: partition column "part" value "not a date"`)

			require.Equal(t, tc.statsColumns, v.StatsConfig().StatsColumns)
			blooms, err := v.BloomColumns()
			require.NoError(t, err)
			require.Equal(t, []string{"Name"}, blooms)
			require.EqualValues(t, 786432, v.SmallFileSize())

			spec, err := v.FileSpec(tableview.FileOptions{DataChange: true, RowGroupLimit: 64 << 10})
			require.NoError(t, err)
			require.Same(t, v.DataSchema(), spec.Schema)
			require.Same(t, v.PhysicalDataSchema(), spec.FileSchema)
			require.Equal(t, datafile.CodecSnappy, spec.Codec)
			require.EqualValues(t, 1<<20, spec.TargetFileSize)
			require.EqualValues(t, 64<<10, spec.RowGroupBytes, "the cap under RowGroupTarget(1 MiB) = 256 KiB")
			require.Equal(t, tc.statsColumns, spec.Stats.StatsColumns)
			require.Equal(t, []string{"Name"}, spec.BloomColumns)
			require.True(t, spec.DataChange)
			_, err = datafile.NewOutput(storage.NewMemory(), spec)
			require.NoError(t, err, "the spec is one the data-file layer takes")
		})
	}
}

// Clustering columns come resolved to logical and physical paths, and always get
// statistics in the files writers produce.
func TestViewClusteringColumns(t *testing.T) {
	p := log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{log.FeatureColumnMapping},
		WriterFeatures: []string{log.FeatureColumnMapping, log.FeatureDomainMetadata, log.FeatureClustering}}
	md := metadata(annotated, nil, map[string]string{log.PropColumnMappingMode: "name"})
	v := mustView(t, md, p, log.ClusteringDomain([][]string{{"col-c3", "col-d4"}, {"col-a1"}}))
	c, err := v.Clustering()
	require.NoError(t, err)
	require.Equal(t, [][]string{{"st", "x"}, {"id"}}, c.Columns)
	require.Equal(t, [][]string{{"col-c3", "col-d4"}, {"col-a1"}}, c.Physical)
	require.Equal(t, c.Physical, v.StatsConfig().AlwaysColumns)

	// A broken domain does not stop reading; it is reported to whoever clusters.
	v = mustView(t, md, p, log.DomainMetadata{Domain: log.DomainClustering, Configuration: `{"clusteringColumns":[["col-zz"]]}`})
	_, err = v.Clustering()
	require.ErrorIs(t, err, log.ErrInvalidClustering)
}

// The hidden row tracking columns travel after the data columns, without
// statistics, when a writer asks for them.
func TestViewRowTrackingFileSpec(t *testing.T) {
	p := log.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{log.FeatureDomainMetadata, log.FeatureRowTracking}}
	conf := map[string]string{log.PropEnableRowTracking: "true", log.PropMaterializedRowIDColumn: "_row_id",
		log.PropMaterializedRowCommitVersionColumn: "_row_ver", log.PropDataSkippingNumIndexedCols: "-1"}
	schema := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}},{"name":"b","type":"string","nullable":true,"metadata":{}}]}`
	v := mustView(t, metadata(schema, nil, conf), p)
	require.Len(t, v.RowTrackingFields(), 2)
	spec, err := v.FileSpec(tableview.FileOptions{RowTracking: true})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "_row_id", "_row_ver"}, names(spec.Schema))
	require.Equal(t, []string{"a", "b", "_row_id", "_row_ver"}, names(spec.FileSchema))
	require.Equal(t, 2, spec.Stats.NumIndexedCols, "statistics on the two table columns only")
	spec, err = v.FileSpec(tableview.FileOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, names(spec.Schema))
}

// New refuses what it cannot resolve, naming the problem.
func TestViewValidation(t *testing.T) {
	field := func(name, typ, meta string) string {
		return `{"name":"` + name + `","type":` + typ + `,"nullable":true,"metadata":{` + meta + `}}`
	}
	schema := func(fields ...string) string { return `{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}` }
	phys := func(n string, id int) string {
		return `"delta.columnMapping.physicalName":"` + n + `","delta.columnMapping.id":` + string(rune('0'+id))
	}
	name := map[string]string{log.PropColumnMappingMode: "name"}
	id := map[string]string{log.PropColumnMappingMode: "id"}
	cases := []struct {
		name   string
		md     log.Metadata
		p      log.Protocol
		target error
		want   string
	}{
		{"physical name missing", metadata(schema(field("a", `"long"`, phys("c1", 1)), field("b", `"long"`, `"delta.columnMapping.id":2`)), nil, name),
			legacy(log.ColumnMappingName), tableview.ErrInvalidTable, `column "b" has no delta.columnMapping.physicalName`},
		{"nested physical name missing", metadata(schema(field("s", `{"type":"struct","fields":[`+field("x", `"long"`, "")+`]}`, phys("c1", 1))), nil, name),
			legacy(log.ColumnMappingName), tableview.ErrInvalidTable, `column "s.x" has no`},
		{"field id missing in id mode", metadata(schema(field("a", `"long"`, `"delta.columnMapping.physicalName":"c1"`)), nil, id),
			legacy(log.ColumnMappingID), tableview.ErrInvalidTable, `column "a" has no delta.columnMapping.id`},
		{"physical names collide", metadata(schema(field("a", `"long"`, phys("c1", 1)), field("b", `"long"`, phys("c1", 2))), nil, name),
			legacy(log.ColumnMappingName), tableview.ErrInvalidTable, `same physical name "c1"`},
		{"field ids collide across levels", metadata(schema(field("a", `"long"`, phys("c1", 1)), field("s", `{"type":"struct","fields":[`+field("x", `"long"`, phys("c3", 1))+`]}`, phys("c2", 2))), nil, id),
			legacy(log.ColumnMappingID), tableview.ErrInvalidTable, `same field id 1`},
		{"partition column missing", metadata(schema(field("a", `"long"`, "")), []string{"p"}, nil),
			legacy(log.ColumnMappingNone), tableview.ErrInvalidTable, `partition column "p" is not in the schema`},
		{"partition column nested", metadata(schema(field("s", `{"type":"struct","fields":[`+field("x", `"long"`, "")+`]}`, "")), []string{"s"}, nil),
			legacy(log.ColumnMappingNone), tableview.ErrInvalidTable, `partition column "s" is of type struct`},
		{"mapping mode invalid", metadata(schema(field("a", `"long"`, "")), nil, map[string]string{log.PropColumnMappingMode: "sideways"}),
			legacy(log.ColumnMappingName), log.ErrInvalidProperty, "delta.columnMapping.mode"},
		{"protocol unreadable", metadata(schema(field("a", `"long"`, "")), nil, nil),
			log.Protocol{MinReaderVersion: 99, MinWriterVersion: 2}, log.ErrUnsupportedFeature, "minReaderVersion=99"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := view(t, tc.md, tc.p)
			require.ErrorIs(t, err, tc.target)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Compare names every layout difference between two versions precisely, and none
// between two resolutions of the same metadata.
func TestCompareLayouts(t *testing.T) {
	base := metadata(annotated, []string{"part"}, map[string]string{log.PropColumnMappingMode: "name"})
	edit := func(from, to string) log.Metadata {
		md := base
		md.SchemaString = strings.Replace(base.SchemaString, from, to, 1)
		require.NotEqual(t, base.SchemaString, md.SchemaString, "edit %q", from)
		return md
	}
	a := mustView(t, base, legacy(log.ColumnMappingName))
	repartitioned, unmapped := base, base
	repartitioned.PartitionColumns = []string{"Name"}
	unmapped.Configuration = map[string]string{}
	cases := []struct {
		name string
		md   log.Metadata
		p    log.Protocol
		want []tableview.Difference
	}{
		{"same metadata", base, legacy(log.ColumnMappingName), nil},
		{"physical name", edit(`"col-b2"`, `"col-zz"`), legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffPhysical, Column: "Name", Detail: `physical name "col-b2", now "col-zz"`}}},
		{"nested field id", edit(`"delta.columnMapping.id":4`, `"delta.columnMapping.id":9`), legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffPhysical, Column: "st.x", Detail: "field id 4, now 9"}}},
		{"field in a list's struct", edit(`"col-h8"`, `"col-hh"`), legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffPhysical, Column: "arr.element.q", Detail: `physical name "col-h8", now "col-hh"`}}},
		{"type", edit(`"type":"integer"`, `"type":"long"`), legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffLogical, Column: "st.x", Detail: "type integer, now long"}}},
		{"nullability", edit(`"nullable":false`, `"nullable":true`), legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffLogical, Column: "id", Detail: "nullable false, now true"}}},
		{"added nested", edit(`{"name":"y"`, `{"name":"z","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":9,"delta.columnMapping.physicalName":"col-z9"}},{"name":"y"`), legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffLogical, Column: "st.z", Detail: "added"}}},
		{"partitioning", repartitioned, legacy(log.ColumnMappingName),
			[]tableview.Difference{{Kind: tableview.DiffPartitioning, Detail: "partitioned by [part], now by [Name]"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mustView(t, tc.md, tc.p)
			d := tableview.Compare(a, b)
			require.Equal(t, tableview.Diff(tc.want), d)
			if len(tc.want) == 0 {
				require.NoError(t, tableview.CheckLayout(a, b))
				return
			}
			err := tableview.CheckLayout(a, b)
			require.ErrorIs(t, err, tableview.ErrLayoutChanged)
			var le *tableview.LayoutError
			require.True(t, errors.As(err, &le))
			require.Equal(t, d, le.Diff)
			require.Contains(t, err.Error(), tc.want[0].String())
		})
	}
	t.Run("mapping mode", func(t *testing.T) {
		b := mustView(t, unmapped, legacy(log.ColumnMappingNone))
		d := tableview.Compare(a, b)
		require.Equal(t, tableview.Difference{Kind: tableview.DiffMapping, Detail: "column mapping mode name, now none"}, d[0])
		require.True(t, d.Has(tableview.DiffPhysical), "%v", d)
		require.False(t, d.Has(tableview.DiffLogical), "%v", d)
	})
	require.Empty(t, tableview.Compare(a, a))
}

// Every golden table skiplake reads resolves (only the one with an unreadable
// protocol fails, naming it); the column-mapped one resolves to the physical names
// and field ids Spark wrote, which its data files' footers confirm, nested lists,
// maps and structs included — and a view with one physical name changed does not
// fit them.
func TestGoldenTablesResolve(t *testing.T) {
	dir := goldentest.Dir(t)
	var roots []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "_delta_log" {
			roots = append(roots, filepath.Dir(p))
			return filepath.SkipDir
		}
		return err
	}))
	require.NotEmpty(t, roots)
	resolved, mapped := 0, 0
	for _, root := range roots {
		rel, _ := filepath.Rel(dir, root)
		st, err := storage.NewLocal(root)
		require.NoError(t, err)
		snap, err := log.New(st).Snapshot(bg, -1)
		if err != nil {
			continue // not loadable as a snapshot at all (the log tests cover these)
		}
		v, err := tableview.New(snap)
		if strings.Contains(rel, "invalid-protocol") {
			require.ErrorIs(t, err, log.ErrUnsupportedFeature, rel)
			continue
		}
		require.NoError(t, err, rel)
		resolved++
		if v.Mapping() == log.ColumnMappingNone {
			continue
		}
		mapped++
		require.Equal(t, log.ColumnMappingName, v.Mapping(), rel)
		for i, f := range v.Delta().Fields {
			require.Equal(t, f.PhysicalName(), v.Physical().Field(i).Name, rel)
			require.True(t, strings.HasPrefix(f.PhysicalName(), "col-"), rel)
		}
		_, pp, ok := v.PhysicalPath([]string{"nested_struct", "aa"})
		require.True(t, ok)
		require.Len(t, pp, 2)
		require.True(t, strings.HasPrefix(pp[1], "col-"))
		require.NoError(t, tableview.VerifyFiles(bg, st, v, snap.Files()), rel)

		// One physical name changed: the same files no longer fit.
		md := snap.Metadata()
		phys := v.Delta().Fields[2].PhysicalName()
		md.SchemaString = strings.Replace(md.SchemaString, phys, "col-elsewhere", 1)
		other, err := tableview.New(log.New(st).NewTableSnapshot(md, snap.Protocol()))
		require.NoError(t, err)
		err = tableview.VerifyFiles(bg, st, other, snap.Files())
		require.ErrorIs(t, err, tableview.ErrLayoutChanged)
		require.ErrorContains(t, err, phys)
	}
	require.Positive(t, resolved)
	require.Equal(t, 1, mapped, "the column-mapped golden table")
	t.Logf("%d golden tables resolved, %d column-mapped", resolved, mapped)
}

// writeFiles writes one data file of rows (JSON, DataSchema's names) through v's file
// settings with the given partition values, as a table writer would.
func writeFiles(t *testing.T, st storage.Storage, v *tableview.View, rows string, part map[string]*string) []*log.Add {
	t.Helper()
	spec, err := v.FileSpec(tableview.FileOptions{DataChange: true})
	require.NoError(t, err)
	out, err := datafile.NewOutput(st, spec)
	require.NoError(t, err)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, v.DataSchema(), strings.NewReader(rows))
	require.NoError(t, err)
	defer rec.Release()
	f, err := out.Create(bg, datafile.FileOptions{PartitionValues: part})
	require.NoError(t, err)
	require.NoError(t, f.Write(rec))
	add, err := f.Close(bg)
	require.NoError(t, err)
	return []*log.Add{add}
}

// VerifyFiles reads the files' footers: names and field ids at every
// level, nested ones included, and the partition value keys.
func TestVerifyFilesFooters(t *testing.T) {
	rows := `[{"id":1,"Name":"a","st":{"x":1,"y":"q"},"arr":[{"q":5}]},{"id":2,"Name":null,"st":null,"arr":null}]`
	part := map[string]*string{"col-f6": strp("2024-01-01")}
	for _, mode := range []log.ColumnMapping{log.ColumnMappingName, log.ColumnMappingID} {
		t.Run(string(mode), func(t *testing.T) {
			st := storage.NewMemory()
			conf := map[string]string{log.PropColumnMappingMode: string(mode)}
			v := mustView(t, metadata(annotated, []string{"part"}, conf), legacy(mode))
			adds := writeFiles(t, st, v, rows, part)
			require.NoError(t, tableview.VerifyFiles(bg, st, v, adds))

			renamed := mustView(t, metadata(strings.Replace(annotated, "col-e5", "col-ee", 1), []string{"part"}, conf), legacy(mode))
			err := tableview.VerifyFiles(bg, st, renamed, adds)
			require.ErrorIs(t, err, tableview.ErrLayoutChanged)
			require.ErrorContains(t, err, `column "st.col-e5" is not a column of the table's layout`)

			renumbered := mustView(t, metadata(strings.Replace(annotated, `"delta.columnMapping.id":8`, `"delta.columnMapping.id":9`, 1), []string{"part"}, conf), legacy(mode))
			err = tableview.VerifyFiles(bg, st, renumbered, adds)
			// Both modes write the column ids as field ids (PROTOCOL.md "Writer
			// Requirements for Column Mapping"), so both check them.
			require.ErrorContains(t, err, `column "arr.element.q" has field id 8, the table's is 9`)

			repartitioned := mustView(t, metadata(strings.Replace(annotated, "col-f6", "col-ff", 1), []string{"part"}, conf), legacy(mode))
			err = tableview.VerifyFiles(bg, st, repartitioned, adds)
			require.ErrorContains(t, err, "partition values keyed by [col-f6], the table's partition columns are [col-ff]")
		})
	}
}

// The questions that need protocol and properties together.
func TestViewFeatures(t *testing.T) {
	schema := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}`
	dv := log.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{log.FeatureDeletionVectors}, WriterFeatures: []string{log.FeatureDeletionVectors}}
	rt := log.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{log.FeatureDomainMetadata, log.FeatureRowTracking}}
	cases := []struct {
		name        string
		p           log.Protocol
		conf        map[string]string
		dv, rowIDs  bool
		writableErr error
	}{
		{"plain", legacy(log.ColumnMappingNone), nil, false, false, nil},
		{"DV property without the feature", legacy(log.ColumnMappingNone), map[string]string{log.PropEnableDeletionVectors: "true"}, false, false, nil},
		{"DV feature without the property", dv, nil, false, false, nil},
		{"deletion vectors", dv, map[string]string{log.PropEnableDeletionVectors: "true"}, true, false, nil},
		{"row tracking supported only", rt, nil, false, false, nil},
		{"row tracking enabled", rt, map[string]string{log.PropEnableRowTracking: "true"}, false, true, nil},
		{"row tracking suspended", rt, map[string]string{log.PropEnableRowTracking: "true", log.PropRowTrackingSuspended: "true"}, false, false, nil},
		{"change data feed property without the feature", legacy(log.ColumnMappingNone), map[string]string{log.PropEnableChangeDataFeed: "true"}, false, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := mustView(t, metadata(schema, nil, tc.conf), tc.p)
			require.Equal(t, tc.dv, v.WritesDeletionVectors())
			require.Equal(t, tc.rowIDs, v.KeepsStableRowIDs())
			require.False(t, v.WritesChangeData(), "no case has the changeDataFeed writer feature")
			if tc.writableErr == nil {
				require.NoError(t, v.CheckWritable())
			} else {
				require.ErrorIs(t, v.CheckWritable(), tc.writableErr)
			}
		})
	}
}
