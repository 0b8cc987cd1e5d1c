package log

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseClusteringDomain(t *testing.T) {
	cases := []struct {
		name, config string
		want         [][]string
		bad          bool
	}{
		{"name parts (Delta Spark)", `{"clusteringColumns":[["a"],["b","c"]]}`, [][]string{{"a"}, {"b", "c"}}, false},
		{"flat strings (PROTOCOL.md example, Clustered Table)", `{"clusteringColumns":["col-1", "col-2"]}`, [][]string{{"col-1"}, {"col-2"}}, false},
		{"liquid preview objects", `{"clusteringColumns":[{"physicalName":["id"]}],"domainName":"delta.liquid"}`, [][]string{{"id"}}, false},
		{"none", `{"clusteringColumns":[]}`, [][]string{}, false},
		{"empty configuration", ``, nil, false},
		{"not JSON", `{`, nil, true},
		{"number entry", `{"clusteringColumns":[1]}`, nil, true},
		{"empty parts", `{"clusteringColumns":[[]]}`, nil, true},
		{"empty name", `{"clusteringColumns":[[""]]}`, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseClusteringDomain(c.config)
			if c.bad {
				if !errors.Is(err, ErrInvalidClustering) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v %v, want %v", got, err, c.want)
			}
		})
	}
	// What ClusteringDomain writes parses back.
	d := ClusteringDomain([][]string{{"a"}, {"b", "c"}})
	if d.Domain != DomainClustering || d.Configuration != `{"clusteringColumns":[["a"],["b","c"]]}` {
		t.Fatalf("domain %+v", d)
	}
	if ClusteringDomain(nil).Configuration != `{"clusteringColumns":[]}` {
		t.Fatal("CLUSTER BY NONE must be an empty list")
	}
}

const clusterSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"flag","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
	`{"name":"a.b","type":"integer","nullable":true,"metadata":{}}]}`

func TestResolveClusteringColumns(t *testing.T) {
	md := Metadata{ID: "x", SchemaString: clusterSchema, Configuration: map[string]string{}}
	lp, pp, err := ResolveClusteringColumns(md, []string{"ID", "st.X", "`a.b`"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"id"}, {"st", "x"}, {"a.b"}}
	if !reflect.DeepEqual(lp, want) || !reflect.DeepEqual(pp, want) {
		t.Fatalf("logical %v physical %v", lp, pp)
	}
	bad := []struct {
		name string
		md   func(Metadata) Metadata
		cols []string
		msg  string
	}{
		{"unknown column", nil, []string{"nope"}, "does not exist"},
		{"boolean has no min/max", nil, []string{"flag"}, "boolean"},
		{"struct", nil, []string{"st"}, "struct"},
		{"twice", nil, []string{"id", "ID"}, "twice"},
		{"too many", nil, []string{"id", "s", "st.x", "`a.b`", "id"}, "at most 4"},
		{"partitioned", func(m Metadata) Metadata { m.PartitionColumns = []string{"s"}; return m }, []string{"id"}, "exclusive"},
		{"no statistics", func(m Metadata) Metadata {
			m.Configuration = map[string]string{PropDataSkippingNumIndexedCols: "1"}
			return m
		}, []string{"s"}, "no statistics"},
		{"not among the stats columns", func(m Metadata) Metadata {
			m.Configuration = map[string]string{PropDataSkippingStatsColumns: "id"}
			return m
		}, []string{"s"}, "no statistics"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			m := md
			if c.md != nil {
				m = c.md(m)
			}
			_, _, err := ResolveClusteringColumns(m, c.cols)
			if !errors.Is(err, ErrInvalidClustering) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %q", err, c.msg)
			}
		})
	}
	// A struct in delta.dataSkippingStatsColumns covers its fields.
	m := md
	m.Configuration = map[string]string{PropDataSkippingStatsColumns: "st"}
	if _, _, err := ResolveClusteringColumns(m, []string{"st.x"}); err != nil {
		t.Fatal(err)
	}
}

func TestClusteringUnderColumnMapping(t *testing.T) {
	md := Metadata{ID: "x", SchemaString: clusterSchema}
	p, md, err := PrepareCreate(md, map[string]string{PropColumnMappingMode: "name"})
	if err != nil {
		t.Fatal(err)
	}
	lp, pp, err := ResolveClusteringColumns(md, []string{"st.x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pp[0][0], "col-") || !strings.HasPrefix(pp[0][1], "col-") || !reflect.DeepEqual(lp, [][]string{{"st", "x"}}) {
		t.Fatalf("logical %v physical %v", lp, pp)
	}
	p, err = UpgradeProtocol(p, 0, 0, FeatureClustering)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(p.WriterFeatures, FeatureDomainMetadata) {
		t.Fatalf("clustering must bring domainMetadata: %+v", p)
	}
	d := ClusteringDomain(pp)
	c, err := clusteringOf(p, md, ColumnMappingMode(md.Configuration) != ColumnMappingNone, func(string) (DomainMetadata, bool) { return d, true })
	if err != nil || !reflect.DeepEqual(c.Columns, lp) || !reflect.DeepEqual(c.Physical, pp) || c.Feature != FeatureClustering {
		t.Fatalf("clustering %+v %v", c, err)
	}
	if c.Names()[0] != "st.x" {
		t.Fatalf("names %v", c.Names())
	}
}

func TestClusteringOfSparkLiquidTable(t *testing.T) {
	dir := filepath.Join(goldenDir(t), "delta-rs", "table_with_liquid_clustering", "delta")
	snap, err := New(localStore(t, dir)).Snapshot(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := snap.Clustering()
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.Feature != FeatureLiquid || c.Domain != DomainLiquid || !reflect.DeepEqual(c.Columns, [][]string{{"id"}}) {
		t.Fatalf("clustering %+v", c)
	}
	if hwm, err := snap.RowIDHighWaterMark(); err != nil || hwm != 9 {
		t.Fatalf("high-water mark %d %v", hwm, err)
	}
	checkRowIDs(t, snap)
	if err := CheckWritable(snap.Protocol(), snap.Metadata()); err != nil {
		t.Fatalf("the Spark-clustered table must be writable: %v", err)
	}
	missing, n := snap.ClusteringColumnsLackingStats(c.Physical, 0)
	if n != 0 || len(missing) != 0 {
		t.Fatalf("files lacking stats %v %d", missing, n)
	}
}

func TestClusteringColumnsLackingStats(t *testing.T) {
	ctx := context.Background()
	l := New(memStore())
	md := testMetadata()
	adds := []*Add{
		{Path: "full", Size: 1, DataChange: true, Stats: `{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0,"part":0}}`},
		{Path: "nullsonly", Size: 1, DataChange: true, Stats: `{"numRecords":2,"nullCount":{"id":2}}`},
		{Path: "countonly", Size: 1, DataChange: true, Stats: `{"numRecords":2}`},
		{Path: "none", Size: 1, DataChange: true},
	}
	if _, err := l.Create(ctx, md, Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, adds, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, _ := l.Snapshot(ctx, -1)
	got, n := snap.ClusteringColumnsLackingStats([][]string{{"id"}}, 1)
	if n != 2 || !reflect.DeepEqual(got, []string{"countonly"}) {
		t.Fatalf("got %v %d", got, n)
	}
	got, n = snap.ClusteringColumnsLackingStats([][]string{{"part"}}, 0)
	if n != 3 || !reflect.DeepEqual(got, []string{"countonly", "none", "nullsonly"}) {
		t.Fatalf("got %v %d", got, n)
	}
}

// FuzzParseClusteringDomain: any configuration either parses into non-empty name
// parts that ClusteringDomain writes back and parses again identically, or fails
// with ErrInvalidClustering; nothing panics.
func FuzzParseClusteringDomain(f *testing.F) {
	for _, s := range []string{
		`{"clusteringColumns":[["a"],["b","c"]]}`, `{"clusteringColumns":["col-1"]}`,
		`{"clusteringColumns":[{"physicalName":["id"]}],"domainName":"delta.liquid"}`,
		`{"clusteringColumns":[]}`, ``, `{`, `{"clusteringColumns":[1]}`, `{"clusteringColumns":[[""]]}`,
		`{"rowIdHighWaterMark":9}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, config string) {
		cols, err := ParseClusteringDomain(config)
		if err != nil {
			if !errors.Is(err, ErrInvalidClustering) {
				t.Fatalf("error %v does not wrap ErrInvalidClustering", err)
			}
			return
		}
		for _, c := range cols {
			if len(c) == 0 {
				t.Fatal("empty column")
			}
			for _, p := range c {
				if p == "" {
					t.Fatal("empty name part")
				}
			}
		}
		again, err := ParseClusteringDomain(ClusteringDomain(cols).Configuration)
		if err != nil || len(again) != len(cols) || (len(cols) > 0 && !reflect.DeepEqual(again, cols)) {
			t.Fatalf("round trip of %v: %v %v", cols, again, err)
		}
		// The high-water mark parser never panics on the same input either.
		_, _ = parseHighWaterMark(config)
	})
}
