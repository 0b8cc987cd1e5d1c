package scanexec

import (
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"

	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// metaView resolves a table partitioned by a date column p with a long column x.
func metaView(t *testing.T) *tableview.View {
	t.Helper()
	schema := `{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"p","type":"date","nullable":true,"metadata":{}}]}`
	md := log.Metadata{ID: "00000000-0000-4000-8000-000000000001", Format: log.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: schema, PartitionColumns: []string{"p"}, Configuration: map[string]string{}}
	v, err := tableview.New(log.New(storage.NewMemory()).NewTableSnapshot(md, log.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMetaLoadRanges checks Meta.Load over ranges of files on several goroutines
// against the files one by one: each file's plan entry and typed partition values,
// and, when partition values of several files do not parse, the error of the first
// of them in file order.
func TestMetaLoadRanges(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	v := metaView(t)
	n := 3*loadMinRange + 17
	if loadWorkers(n) < 2 {
		t.Fatalf("%d files load on %d goroutine(s): the test needs several", n, loadWorkers(n))
	}
	mk := func(bad ...int) []*log.Add {
		files := make([]*log.Add, n)
		for i := range files {
			day := fmt.Sprintf("2021-%02d-%02d", 1+i%12, 1+i%28)
			for _, b := range bad {
				if i == b {
					day = fmt.Sprintf("not-a-date-%d", i)
				}
			}
			files[i] = &log.Add{Path: fmt.Sprintf("p=%s/f%d.parquet", day, i), Size: int64(i),
				PartitionValues: map[string]*string{"p": &day}, Stats: fmt.Sprintf(`{"numRecords":%d}`, i),
				Tags: map[string]string{"t": "v"}}
		}
		return files
	}
	files := mk()
	m, err := new(Meta).Load(files, v, storage.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range files {
		want, err := v.PartitionValues(a)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(m.Parts[i], want, func(x, y value.Value) bool { return x.String() == y.String() }) {
			t.Fatalf("file %d: partition values %v, want %v", i, m.Parts[i], want)
		}
		f := m.Planner.File(i)
		if f.Path != a.Path || f.Size != a.Size || f.StatsJSON != a.Stats || len(f.PartitionValues) != 1 {
			t.Fatalf("file %d: plan file %+v from add %+v", i, f, a)
		}
	}
	// Unparsable values in the second and third ranges: the second range's is reported.
	first, later := loadMinRange+loadMinRange/2, 2*loadMinRange+loadMinRange/2
	files = mk(later, first)
	_, err = new(Meta).Load(files, v, storage.NewMemory())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("not-a-date-%d", first)) {
		t.Fatalf("error %v, want the one of file %d", err, first)
	}
}
