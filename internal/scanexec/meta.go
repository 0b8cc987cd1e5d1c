package scanexec

import (
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
)

// Meta is what planning knows about the live files of a snapshot: their
// statistics (parsed by the Planner per column, when a filter first reads it) and
// typed partition values, indexed by skipping's Planner. It is built once per
// snapshot (lazily, by the first Load) and shared by every scan of that snapshot.
// The zero value is ready to Load; a Meta is safe for concurrent use.
type Meta struct {
	once sync.Once
	err  error
	// Parts holds each file's typed partition values (physical partition column ->
	// value), by index in the snapshot's files; the files of one partition share
	// one read-only map.
	Parts []map[string]value.Value
	// Planner decides the snapshot's files.
	Planner *skipping.Planner
	// Mapper translates logical column paths to physical ones (nil: the identity).
	Mapper skipping.PathMapper
}

// Load builds m from the snapshot's live files, its resolved view and its storage
// (Bloom index files are read from it when a filter probes them) the first time it
// is called, and returns m and the error of that build on every call.
func (m *Meta) Load(files []*log.Add, v *tableview.View, store storage.Storage) (*Meta, error) {
	m.once.Do(func() {
		parser := v.StatsParser()
		pf := make([]skipping.PlanFile, len(files))
		m.Parts = make([]map[string]value.Value, len(files))
		// The files are converted in ranges, one goroutine each (a million files
		// took a tenth of a second on the loading goroutine); the error reported
		// is the first file's in file order, as a single pass would report.
		errs := make([]error, loadWorkers(len(files)))
		eachRange(len(files), len(errs), func(w, lo, hi int) {
			errs[w] = loadRange(pf, m.Parts, files, lo, hi, v)
		})
		for _, err := range errs {
			if err != nil {
				m.err = err
				return
			}
		}
		m.Mapper = MapperOf(v)
		m.Planner = skipping.NewPlanner(pf, v.Physical(), skipping.PlannerOptions{
			Partitioned: len(v.Partitions()) > 0,
			Stats:       parser,
			Mapper:      m.Mapper,
			Bloom:       bloom.NewCache(store.Get, bloom.CacheOptions{}),
		})
	})
	return m, m.err
}

// loadMinRange is the fewest files Load converts on a goroutine of its own.
const loadMinRange = 1 << 16

// loadWorkers is how many goroutines Load converts n files on.
func loadWorkers(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/loadMinRange))
}

// eachRange splits [0, n) into workers consecutive ranges and runs fn on each, on
// goroutines of their own when there are several, and waits for them.
func eachRange(n, workers int, fn func(w, lo, hi int)) {
	if workers <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { fn(w, n*w/workers, n*(w+1)/workers) })
	}
	wg.Wait()
}

// loadRange fills pf and parts for files[lo:hi] and returns the error of the first
// of them whose partition values do not parse. The files of one partition within
// the range share one typed map (read-only): a table has far fewer partitions than
// files, so each partition's values are parsed and stored once per range.
func loadRange(pf []skipping.PlanFile, parts []map[string]value.Value, files []*log.Add, lo, hi int, v *tableview.View) error {
	typed := map[string]map[string]value.Value{}
	for i := lo; i < hi; i++ {
		a := files[i]
		// Statistics stay JSON until a filter reads a column: the planner then
		// converts that column alone (skipping.PlannerOptions.Stats).
		pf[i] = skipping.PlanFile{Path: a.Path, Size: a.Size, BloomTag: a.Tags[bloom.TagKey], StatsJSON: a.Stats}
		key := v.PartitionKey(a)
		pv, ok := typed[key]
		if !ok {
			var err error
			if pv, err = v.PartitionValues(a); err != nil {
				return err
			}
			typed[key] = pv
		}
		parts[i] = pv
		pf[i].PartitionValues = pv
	}
	return nil
}

// MapperOf translates logical column paths to physical ones by walking the two
// schemas of v (which have the same shape; only names differ under column mapping).
// It is nil (the identity) when the names are the same and no column is nested.
func MapperOf(v *tableview.View) skipping.PathMapper {
	logical, physical := v.Logical(), v.Physical()
	same := true
	for i := range logical.Fields() {
		if logical.Field(i).Name != physical.Field(i).Name {
			same = false
		}
	}
	if same && !hasNested(logical.Fields()) {
		return nil
	}
	return func(path []string) ([]string, bool) {
		_, out, ok := v.PhysicalPath(path)
		return out, ok
	}
}

func hasNested(fields []arrow.Field) bool {
	for _, f := range fields {
		if _, ok := f.Type.(*arrow.StructType); ok {
			return true
		}
	}
	return false
}

// MapPath is m(path), or path itself for a nil (identity) mapper.
func MapPath(m skipping.PathMapper, path []string) ([]string, bool) {
	if m == nil {
		return path, true
	}
	return m(path)
}
