package table

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/internal/partition"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// fileMeta is what planning knows about each live file of a snapshot: its typed
// statistics and partition values. It is computed once per Snapshot (lazily, the
// first time a filter needs it) and shared by every scan of that snapshot.
type fileMeta struct {
	once   sync.Once
	err    error
	stats  []*stats.File            // nil entry: no (usable) statistics
	parts  []map[string]value.Value // physical partition column -> value
	index  *skipping.FileIndex      // columnar form of stats + partition values
	bloom  *bloom.Cache             // Bloom index files, loaded lazily
	mapper skipping.PathMapper      // logical -> physical column paths
}

func (s *Snapshot) meta(store interface {
	Get(ctx context.Context, path string) ([]byte, error)
}) (*fileMeta, error) {
	m := &s.fm
	m.once.Do(func() {
		files := s.log.Files()
		parser := stats.NewParser(s.physical, stats.ParseOptions{StringPrefixLength: s.log.Properties().StringPrefixForReading()})
		m.stats = make([]*stats.File, len(files))
		m.parts = make([]map[string]value.Value, len(files))
		for i, a := range files {
			if a.Stats != "" {
				if f, err := parser.Parse(a.Stats); err == nil {
					m.stats[i] = f
				}
				// Unparseable statistics mean "might match" (S1), not a failed read.
			}
			pv, err := s.partitionValues(a)
			if err != nil {
				m.err = err
				return
			}
			m.parts[i] = pv
		}
		m.index = skipping.NewFileIndex(m.stats, s.physical, skipping.WithPartitionValues(m.parts))
		m.mapper = pathMapper(s.logical, s.physical)
		m.bloom = bloom.NewCache(store.Get, bloom.CacheOptions{})
	})
	return m, m.err
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
		lf, pf := logical.Fields(), physical.Fields()
		out := make([]string, 0, len(path))
		for _, name := range path {
			idx := -1
			for i, f := range lf {
				if f.Name == name || (idx < 0 && strings.EqualFold(f.Name, name)) {
					idx = i
				}
			}
			if idx < 0 {
				return nil, false
			}
			out = append(out, pf[idx].Name)
			ls, ok1 := lf[idx].Type.(*arrow.StructType)
			ps, ok2 := pf[idx].Type.(*arrow.StructType)
			if ok1 && ok2 {
				lf, pf = ls.Fields(), ps.Fields()
			} else {
				lf, pf = nil, nil
			}
		}
		return out, true
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

// plan lists the files to read: every live file, minus those the partition values,
// the statistics or the Bloom filters prove cannot hold a matching row (S1).
func (s *Scan) plan(ctx context.Context) error {
	files := s.snap.log.Files()
	tasks := make([]*fileTask, len(files))
	for i, a := range files {
		p, err := a.DecodedPath()
		if err != nil {
			return fmt.Errorf("table: version %d: file %q: %w", s.snap.Version(), a.Path, err)
		}
		tasks[i] = &fileTask{add: a, path: p, recheck: s.recheck != nil}
	}
	s.report.Files = skipping.LevelStats{Level: "files"}
	var meta *fileMeta
	needMeta := s.table != nil || len(s.snap.log.PartitionColumns()) > 0
	if needMeta {
		m, err := s.snap.meta(s.t.store)
		if err != nil {
			return err
		}
		meta = m
		for i, t := range tasks {
			t.partVals = meta.parts[i]
		}
	}
	if s.table == nil {
		for _, t := range tasks {
			s.report.Files.Add(skipping.MightMatch, t.add.Size)
		}
		s.tasks = tasks
		return nil
	}

	// Partition level: exact on partition columns, "might" for everything else.
	alive := make([]bool, len(tasks))
	for i := range alive {
		alive[i] = true
	}
	if len(s.snap.log.PartitionColumns()) > 0 {
		lv := skipping.LevelStats{Level: "partition"}
		for i, t := range tasks {
			v := skipping.EvaluateFile(s.table, nil, meta.parts[i], meta.mapper)
			lv.Add(v, t.add.Size)
			if v == skipping.CannotMatch {
				alive[i] = false
			}
		}
		s.report.Levels = append(s.report.Levels, lv)
	}

	// Stats level (partition values included so mixed predicates are decided whole).
	verdicts := make([]skipping.Verdict, len(tasks))
	if err := meta.index.EvaluateMapped(s.table, meta.mapper, verdicts); err != nil {
		return err
	}
	lv := skipping.LevelStats{Level: "stats"}
	for i, t := range tasks {
		if !alive[i] {
			continue
		}
		lv.Add(verdicts[i], t.add.Size)
		switch verdicts[i] {
		case skipping.CannotMatch:
			alive[i] = false
		case skipping.MustMatch:
			// Every physical row matches, so every live row does (a deletion vector
			// only removes rows): no recheck (S2).
			t.recheck = false
		}
	}
	s.report.Levels = append(s.report.Levels, lv)

	// Bloom level: only for predicates with equality/IN on covered columns.
	if cols := bloomProbeColumns(s.table.Root()); len(cols) > 0 {
		blv := skipping.LevelStats{Level: "bloom"}
		var refs []bloom.FileRef
		var idx []int
		for i, t := range tasks {
			if alive[i] && t.recheck && t.add.Tags[bloom.TagKey] != "" {
				refs = append(refs, bloom.FileRef{Path: t.add.Path, Tag: t.add.Tags[bloom.TagKey]})
				idx = append(idx, i)
			}
		}
		if len(refs) > 0 {
			filters := map[string][]*bloom.Filter{}
			for _, c := range cols {
				phys, ok := mapPath(meta.mapper, []string{c})
				if !ok {
					continue
				}
				fs, warns, err := meta.bloom.Filters(ctx, refs, phys[0])
				if err != nil {
					return err
				}
				reportBloomWarnings(s.report, warns)
				filters[c] = fs
			}
			for k, i := range idx {
				v := skipping.MightMatch
				if bloomCannotMatch(s.table.Root(), func(col string) *bloom.Filter {
					if fs := filters[col]; fs != nil {
						return fs[k]
					}
					return nil
				}) {
					v = skipping.CannotMatch
					alive[i] = false
				}
				blv.Add(v, tasks[i].add.Size)
			}
			s.report.Levels = append(s.report.Levels, blv)
		}
	}

	for i, t := range tasks {
		v := skipping.MightMatch
		switch {
		case !alive[i]:
			v = skipping.CannotMatch
		case !t.recheck:
			v = skipping.MustMatch
		}
		s.report.Files.Add(v, t.add.Size)
		if alive[i] {
			s.tasks = append(s.tasks, t)
		}
	}
	return nil
}

// bloomProbeColumns lists the top-level columns the predicate compares for equality
// (=, <=>, IN) in positions where a Bloom filter can prove CannotMatch.
func bloomProbeColumns(p expr.Pred) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(p expr.Pred)
	walk = func(p expr.Pred) {
		switch x := p.(type) {
		case *expr.CmpPred:
			if (x.Op == expr.OpEq || x.Op == expr.OpNullSafeEq) && len(x.Col.Path) == 1 && !seen[x.Col.Path[0]] {
				seen[x.Col.Path[0]] = true
				out = append(out, x.Col.Path[0])
			}
		case *expr.InPred:
			if !x.Negated && len(x.Col.Path) == 1 && !seen[x.Col.Path[0]] {
				seen[x.Col.Path[0]] = true
				out = append(out, x.Col.Path[0])
			}
		case *expr.AndPred:
			for _, t := range x.Terms {
				walk(t)
			}
		case *expr.OrPred:
			for _, t := range x.Terms {
				walk(t)
			}
		}
	}
	walk(p)
	return out
}

// bloomCannotMatch reports whether the filters prove that no row satisfies p: an
// equality or IN whose values the column's filter rejects, an AND with such a term,
// or an OR all of whose terms are such. Anything else proves nothing (B1: a column
// without a filter for this file is never skipped).
func bloomCannotMatch(p expr.Pred, filterFor func(col string) *bloom.Filter) bool {
	switch x := p.(type) {
	case *expr.ConstPred:
		return !x.Value
	case *expr.CmpPred:
		if x.Op != expr.OpEq && x.Op != expr.OpNullSafeEq || len(x.Col.Path) != 1 || x.Value.IsNull() {
			return false
		}
		f := filterFor(x.Col.Path[0])
		return f != nil && !f.MightContain(x.Value)
	case *expr.InPred:
		if x.Negated || len(x.Col.Path) != 1 {
			return false
		}
		f := filterFor(x.Col.Path[0])
		return f != nil && !bloom.ProbeAny(f, x.Values)
	case *expr.AndPred:
		for _, t := range x.Terms {
			if bloomCannotMatch(t, filterFor) {
				return true
			}
		}
		return false
	case *expr.OrPred:
		for _, t := range x.Terms {
			if !bloomCannotMatch(t, filterFor) {
				return false
			}
		}
		return len(x.Terms) > 0
	}
	return false
}

func mapPath(m skipping.PathMapper, path []string) ([]string, bool) {
	if m == nil {
		return path, true
	}
	return m(path)
}

// reportBloomWarnings adds one warning per unusable index file (not one per data
// file): the files it covers are read, so results stay exact (B1).
func reportBloomWarnings(r *ScanReport, warns []bloom.Warning) {
	type group struct {
		first bloom.Warning
		n     int
	}
	var order []string
	groups := map[string]*group{}
	for _, w := range warns {
		key := w.IndexPath + "\x00" + w.Column
		g := groups[key]
		if g == nil {
			g = &group{first: w}
			groups[key] = g
			order = append(order, key)
		}
		g.n++
	}
	for _, k := range order {
		g := groups[k]
		if g.n == 1 {
			r.warn(g.first.String())
			continue
		}
		r.warn(fmt.Sprintf("%s (and %d more files covered by the same index)", g.first.String(), g.n-1))
	}
}
