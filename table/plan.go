package table

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// fileMeta is what planning knows about the live files of a snapshot: their typed
// statistics and partition values, indexed by skipping's Planner. It is built once
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
	m := &s.fm
	m.once.Do(func() {
		files := s.log.Files()
		parser := stats.NewParser(s.physical, stats.ParseOptions{StringPrefixLength: s.log.Properties().StringPrefixForReading()})
		pf := make([]skipping.PlanFile, len(files))
		m.parts = make([]map[string]value.Value, len(files))
		// The files of one partition share one typed map (read-only): a table has
		// far fewer partitions than files, so each partition's values are parsed
		// and stored once.
		var partCols []string // physical names, as partitionValues reads them
		for i, f := range s.logical.Fields() {
			if s.isPartition(f.Name) {
				partCols = append(partCols, s.physicalName(i))
			}
		}
		typed := map[string]map[string]value.Value{}
		var key []byte
		for i, a := range files {
			pf[i] = skipping.PlanFile{Path: a.Path, Size: a.Size, BloomTag: a.Tags[bloom.TagKey]}
			if a.Stats != "" {
				if f, err := parser.Parse(a.Stats); err == nil {
					pf[i].Stats = f
				}
				// Unparseable statistics mean "might match" (S1), not a failed read.
			}
			key = partitionKeyOf(key[:0], a, partCols)
			pv, ok := typed[string(key)]
			if !ok {
				var err error
				if pv, err = s.partitionValues(a); err != nil {
					m.err = err
					return
				}
				typed[string(key)] = pv
			}
			m.parts[i] = pv
			pf[i].PartitionValues = pv
		}
		m.mapper = pathMapper(s.logical, s.physical)
		m.planner = skipping.NewPlanner(pf, s.physical, skipping.PlannerOptions{
			Partitioned: len(s.log.PartitionColumns()) > 0,
			Mapper:      m.mapper,
			Bloom:       bloom.NewCache(s.store.Get, bloom.CacheOptions{}),
		})
	})
	return m, m.err
}

// partitionKeyOf appends to dst a key that two files share exactly when their raw
// values of the partition columns cols (physical names) are the same: each value length-
// prefixed, NULL (absent or empty, as log.Add.PartitionValue reads it) marked apart.
func partitionKeyOf(dst []byte, a *log.Add, cols []string) []byte {
	for _, c := range cols {
		v, isNull := a.PartitionValue(c)
		if isNull {
			dst = append(dst, 'N')
			continue
		}
		dst = strconv.AppendInt(append(dst, 'V'), int64(len(v)), 10)
		dst = append(append(dst, ':'), v...)
	}
	return dst
}

// partitionValues types a file's partition values by the schema (keys are physical names).
func (s *Snapshot) partitionValues(a *log.Add) (map[string]value.Value, error) {
	if len(s.log.PartitionColumns()) == 0 {
		return nil, nil
	}
	out := make(map[string]value.Value, len(s.log.PartitionColumns()))
	for i, f := range s.logical.Fields() {
		if !s.isPartition(f.Name) {
			continue
		}
		phys := s.physicalName(i)
		raw, isNull := a.PartitionValue(phys)
		v, err := partition.Parse(raw, !isNull, f.Type)
		if err != nil {
			return nil, fmt.Errorf("table: version %d: file %s: partition column %q value %q: %w", s.Version(), a.Path, f.Name, raw, err)
		}
		out[phys] = v
	}
	return out, nil
}

// pathMapper translates logical column paths to physical ones by walking the two
// schemas (which have the same shape; only names differ under column mapping).
func pathMapper(logical, physical *arrow.Schema) skipping.PathMapper {
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
		_, out, ok := walkColumn(logical, physical, path)
		return out, ok
	}
}

// walkColumn finds a column path in logical (each name exactly, else
// case-insensitively) and returns its logical spelling and its physical path.
func walkColumn(logical, physical *arrow.Schema, path []string) (lp, pp []string, ok bool) {
	lf, pf := logical.Fields(), physical.Fields()
	for _, name := range path {
		idx := -1
		for i, f := range lf {
			if f.Name == name || (idx < 0 && strings.EqualFold(f.Name, name)) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, nil, false
		}
		lp = append(lp, lf[idx].Name)
		pp = append(pp, pf[idx].Name)
		ls, ok1 := lf[idx].Type.(*arrow.StructType)
		ps, ok2 := pf[idx].Type.(*arrow.StructType)
		if ok1 && ok2 {
			lf, pf = ls.Fields(), ps.Fields()
		} else {
			lf, pf = nil, nil
		}
	}
	return lp, pp, true
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
