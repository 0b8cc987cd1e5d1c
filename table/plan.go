package table

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/value"
)

// fileMeta is what planning knows about the live files of a snapshot: their
// statistics (parsed by the Planner per column, when a filter first reads it) and
// typed partition values, indexed by skipping's Planner. It is built once
// per Snapshot (lazily, the first time a scan needs it) and shared by every scan of
// that snapshot.
type fileMeta struct {
	once    sync.Once
	err     error
	parts   []map[string]value.Value // physical partition column -> value
	planner *skipping.Planner
	mapper  skipping.PathMapper // logical -> physical column paths
}

func (s *Snapshot) meta() (*fileMeta, error) {
	m := s.fm
	m.once.Do(func() {
		files := s.log.Files()
		parser := s.view.StatsParser()
		pf := make([]skipping.PlanFile, len(files))
		m.parts = make([]map[string]value.Value, len(files))
		// The files of one partition share one typed map (read-only): a table has
		// far fewer partitions than files, so each partition's values are parsed
		// and stored once.
		typed := map[string]map[string]value.Value{}
		for i, a := range files {
			// Statistics stay JSON until a filter reads a column: the planner then
			// converts that column alone (skipping.PlannerOptions.Stats).
			pf[i] = skipping.PlanFile{Path: a.Path, Size: a.Size, BloomTag: a.Tags[bloom.TagKey], StatsJSON: a.Stats}
			key := s.view.PartitionKey(a)
			pv, ok := typed[key]
			if !ok {
				var err error
				if pv, err = s.view.PartitionValues(a); err != nil {
					m.err = err
					return
				}
				typed[key] = pv
			}
			m.parts[i] = pv
			pf[i].PartitionValues = pv
		}
		m.mapper = pathMapper(s.view)
		m.planner = skipping.NewPlanner(pf, s.view.Physical(), skipping.PlannerOptions{
			Partitioned: len(s.log.PartitionColumns()) > 0,
			Stats:       parser,
			Mapper:      m.mapper,
			Bloom:       bloom.NewCache(s.store.Get, bloom.CacheOptions{}),
		})
	})
	return m, m.err
}

// pathMapper translates logical column paths to physical ones by walking the two
// schemas (which have the same shape; only names differ under column mapping).
func pathMapper(v *tableview.View) skipping.PathMapper {
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

func mapPath(m skipping.PathMapper, path []string) ([]string, bool) {
	if m == nil {
		return path, true
	}
	return m(path)
}
