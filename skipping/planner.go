package skipping

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/stats"
	"github.com/skiplake/skiplake/value"
)

// Level names the file-level pass of a Planner that decided a file.
type Level uint8

// The file levels, in the order the Planner applies them.
const (
	// NoLevel: no pass looked at the file (the plan has no predicate).
	NoLevel Level = iota
	// PartitionLevel: the file's partition values alone (exact on partition columns).
	PartitionLevel
	// StatsLevel: the file's min/max/nullCount statistics together with its
	// partition values.
	StatsLevel
	// BloomLevel: the file's Bloom filters (equality and IN only; they prove
	// CannotMatch or nothing).
	BloomLevel
)

// String names the level as reports print it.
func (l Level) String() string {
	switch l {
	case PartitionLevel:
		return "partition"
	case StatsLevel:
		return "stats"
	case BloomLevel:
		return "bloom"
	}
	return "none"
}

// PlanFile is what the Planner knows of one live data file of a snapshot.
type PlanFile struct {
	// Path is the file's path exactly as its add action states it (the key Bloom
	// index entries use).
	Path string
	// Size is the file size in bytes (for the byte counters of the report).
	Size int64
	// Stats are the file's typed statistics; nil when it has none or they could
	// not be parsed (the file then might match, S1), or when they are to be parsed
	// on demand from StatsJSON.
	Stats *stats.File
	// StatsJSON is the file's statistics JSON as its add action states it ("" when
	// it has none). With PlannerOptions.Stats set and Stats nil, the Planner parses
	// it on demand, only the columns a predicate reads; otherwise it is ignored.
	StatsJSON string
	// PartitionValues are the file's typed partition values keyed by physical
	// partition column name (value.Null() for NULL); nil for unpartitioned tables.
	PartitionValues map[string]value.Value
	// BloomTag is the value of the file's bloom.TagKey tag ("" when it has no
	// Bloom index).
	BloomTag string
}

// PlannerOptions configures NewPlanner. The zero value plans an unpartitioned table
// without column mapping and without Bloom filters.
type PlannerOptions struct {
	// Partitioned makes the Planner run the partition pass (and report it) even
	// when no file has partition values. Default false.
	Partitioned bool
	// Stats, when set, parses the StatsJSON of files given without Stats lazily:
	// a column's statistics are converted the first time a predicate reads it (for
	// every file at once) and a plan without a predicate parses nothing, so a
	// snapshot of many files costs only what its filters read. It must be the
	// parser of the physical schema. Default nil: StatsJSON is ignored.
	Stats *stats.Parser
	// Mapper translates predicate paths (logical) to the physical paths statistics
	// and partition values are keyed by; nil is the identity.
	Mapper PathMapper
	// Bloom loads the Bloom index files the files' tags name; nil disables the
	// Bloom pass.
	Bloom *bloom.Cache
}

// Planner decides, for every live file of one snapshot, whether a predicate cannot,
// might or must match its rows, and which pass (partition, stats, Bloom) decided it.
// It builds the columnar FileIndex once; Plan may then be called many times, from
// many goroutines.
//
// Invariants: S1 (a file is CannotMatch only with a proof from partition values,
// statistics or a Bloom filter that covers it, B1), S2 (MustMatch only when the
// partition values and statistics prove every physical row of the file matches,
// so every live row does: deletion vectors only remove rows). MustMatch is what
// DML may use to remove a whole file without reading it (D1) and what Count
// answers from the log.
type Planner struct {
	files []PlanFile
	index *FileIndex
	opts  PlannerOptions
}

// NewPlanner indexes files against the physical schema (the schema statistics are
// keyed by). files is kept, not copied: do not modify it afterwards.
func NewPlanner(files []PlanFile, physical *arrow.Schema, opts PlannerOptions) *Planner {
	// One pass over files collects what the index reads: statistics given typed
	// (nil when no file has any, as with PlannerOptions.Stats they usually are
	// not), JSON statistics and partition values.
	var st []*stats.File
	var js []string
	var pvs []map[string]value.Value
	for i, f := range files {
		if f.Stats != nil && st == nil {
			st = make([]*stats.File, len(files))
		}
		if st != nil {
			st[i] = f.Stats
		}
		if f.PartitionValues != nil && pvs == nil {
			pvs = make([]map[string]value.Value, len(files))
		}
		if pvs != nil {
			pvs[i] = f.PartitionValues
		}
		if opts.Stats != nil {
			if js == nil {
				js = make([]string, len(files))
			}
			js[i] = f.StatsJSON
		}
	}
	var io []FileIndexOption
	if pvs != nil {
		io = append(io, WithPartitionValues(pvs))
	}
	if opts.Stats == nil {
		if st == nil {
			st = make([]*stats.File, len(files))
		}
		return &Planner{files: files, index: NewFileIndex(st, physical, io...), opts: opts}
	}
	if js == nil {
		js = []string{}
	}
	return &Planner{files: files, index: NewLazyFileIndex(js, st, opts.Stats, physical, io...), opts: opts}
}

// Stats returns the typed statistics of file i: PlanFile.Stats, else (with
// PlannerOptions.Stats) its StatsJSON parsed whole now, for showing a few files'
// statistics; nil when it has none or they do not parse.
func (p *Planner) Stats(i int) *stats.File {
	f := p.files[i]
	if f.Stats != nil || p.opts.Stats == nil || f.StatsJSON == "" {
		return f.Stats
	}
	st, err := p.opts.Stats.Parse(f.StatsJSON)
	if err != nil {
		return nil
	}
	return st
}

// Len returns the number of files planned.
func (p *Planner) Len() int { return len(p.files) }

// File returns file i as given to NewPlanner.
func (p *Planner) File(i int) PlanFile { return p.files[i] }

// FileVerdict is the Planner's decision for one file.
type FileVerdict struct {
	// Verdict is CannotMatch (skip the file), MightMatch (read it and recheck the
	// predicate) or MustMatch (every live row matches: read it without recheck, or
	// answer from metadata).
	Verdict Verdict
	// Level is the pass that decided the verdict: for CannotMatch the pass that
	// proved it, for MustMatch the stats pass, for MightMatch the last pass that
	// looked at the file (NoLevel without a predicate).
	Level Level
	// Reason says why, in words (what `skiplake files` prints).
	Reason string
}

// The reasons a FileVerdict gives.
const (
	ReasonNoFilter         = "no filter"
	ReasonMustMatch        = "statistics prove every row matches"
	ReasonNoStats          = "no statistics"
	ReasonStatsOverlap     = "statistics overlap the filter"
	ReasonPartitionExclude = "partition values exclude the filter"
	ReasonStatsExclude     = "statistics exclude the filter"
	ReasonBloomExclude     = "Bloom filters reject every value the filter compares with"
)

// FilePlan is the outcome of Planner.Plan.
type FilePlan struct {
	// Files holds one verdict per planned file, in the Planner's file order.
	Files []FileVerdict
	// Levels counts what each pass decided, in the order applied: "partition"
	// (partitioned tables), "stats", "bloom" (only when some file was probed).
	// The stats pass counts the files the partition pass kept; the Bloom pass the
	// files the stats pass kept that needed a recheck and carry a Bloom tag. Empty
	// without a predicate.
	Levels []LevelStats
	// Summary ("files") counts every file once with its final verdict.
	Summary LevelStats
	// Warnings name unusable Bloom index files (one line per index file and
	// column); the files they cover were kept, so results stay exact (B1).
	Warnings []string
}

// Kept returns the indices of the files to read (verdict not CannotMatch), in order.
func (fp *FilePlan) Kept() []int {
	var out []int
	for i, f := range fp.Files {
		if f.Verdict != CannotMatch {
			out = append(out, i)
		}
	}
	return out
}

// Plan decides pred for every file. pred is bound to the table's logical schema; a
// nil pred keeps every file as MightMatch with reason ReasonNoFilter. The error is
// non-nil only when ctx ends while Bloom index files load.
func (p *Planner) Plan(ctx context.Context, pred *expr.Bound) (*FilePlan, error) {
	n := len(p.files)
	out := &FilePlan{Files: make([]FileVerdict, n), Summary: LevelStats{Level: "files", Unit: UnitFiles}}
	if pred == nil {
		for i, f := range p.files {
			out.Files[i] = FileVerdict{Verdict: MightMatch, Level: NoLevel, Reason: ReasonNoFilter}
			out.Summary.Add(MightMatch, f.Size)
		}
		return out, nil
	}
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}

	// Partition pass: exact on partition columns, MightMatch for every other leaf.
	if p.opts.Partitioned {
		lv := LevelStats{Level: PartitionLevel.String(), Unit: UnitFiles}
		for i, f := range p.files {
			v := EvaluateFile(pred, nil, f.PartitionValues, p.opts.Mapper)
			lv.Add(v, f.Size)
			if v == CannotMatch {
				alive[i] = false
				out.Files[i] = FileVerdict{Verdict: CannotMatch, Level: PartitionLevel, Reason: ReasonPartitionExclude}
			}
		}
		out.Levels = append(out.Levels, lv)
	}

	// Stats pass, partition values included so mixed predicates are decided whole.
	verdicts := make([]Verdict, n)
	if err := p.index.EvaluateMapped(pred, p.opts.Mapper, verdicts); err != nil {
		return nil, err
	}
	lv := LevelStats{Level: StatsLevel.String(), Unit: UnitFiles}
	for i, f := range p.files {
		if !alive[i] {
			continue
		}
		v := verdicts[i]
		lv.Add(v, f.Size)
		fv := FileVerdict{Verdict: v, Level: StatsLevel}
		switch {
		case v == CannotMatch:
			alive[i] = false
			fv.Reason = ReasonStatsExclude
		case v == MustMatch:
			fv.Reason = ReasonMustMatch
		case f.Stats == nil && !p.index.hasStats(i):
			fv.Reason = ReasonNoStats
		default:
			fv.Reason = ReasonStatsOverlap
		}
		out.Files[i] = fv
	}
	out.Levels = append(out.Levels, lv)

	// Bloom pass: files that still need a recheck, for equality/IN on covered columns.
	if err := p.bloomPass(ctx, pred, alive, out); err != nil {
		return nil, err
	}
	for i, f := range p.files {
		out.Summary.Add(out.Files[i].Verdict, f.Size)
	}
	return out, nil
}

func (p *Planner) bloomPass(ctx context.Context, pred *expr.Bound, alive []bool, out *FilePlan) error {
	cols := BloomProbeColumns(pred)
	if len(cols) == 0 || p.opts.Bloom == nil {
		return nil
	}
	var refs []bloom.FileRef
	var idx []int
	for i, f := range p.files {
		if alive[i] && out.Files[i].Verdict == MightMatch && f.BloomTag != "" {
			refs = append(refs, bloom.FileRef{Path: f.Path, Tag: f.BloomTag})
			idx = append(idx, i)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	filters := map[string][]*bloom.Filter{}
	var warns []bloom.Warning
	for _, c := range cols {
		phys, ok := p.opts.Mapper.resolve([]string{c})
		if !ok {
			continue
		}
		fs, w, err := p.opts.Bloom.Filters(ctx, refs, phys[0])
		if err != nil {
			return err
		}
		warns = append(warns, w...)
		filters[c] = fs
	}
	out.Warnings = append(out.Warnings, groupBloomWarnings(warns)...)
	lv := LevelStats{Level: BloomLevel.String(), Unit: UnitFiles}
	for k, i := range idx {
		v := MightMatch
		if BloomCannotMatch(pred, func(col string) *bloom.Filter {
			if fs := filters[col]; fs != nil {
				return fs[k]
			}
			return nil
		}) {
			v = CannotMatch
			alive[i] = false
			out.Files[i] = FileVerdict{Verdict: CannotMatch, Level: BloomLevel, Reason: ReasonBloomExclude}
		} else {
			out.Files[i].Level = BloomLevel
		}
		lv.Add(v, p.files[i].Size)
	}
	out.Levels = append(out.Levels, lv)
	return nil
}

// BloomProbeColumns lists the top-level columns pred compares for equality (=, <=>,
// IN) in positions where a Bloom filter can prove CannotMatch, in first-use order.
func BloomProbeColumns(pred *expr.Bound) []string {
	if pred == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(path []string) {
		if len(path) == 1 && !seen[path[0]] {
			seen[path[0]] = true
			out = append(out, path[0])
		}
	}
	var walk func(p expr.Pred)
	walk = func(p expr.Pred) {
		switch x := p.(type) {
		case *expr.CmpPred:
			if x.Op == expr.OpEq || x.Op == expr.OpNullSafeEq {
				add(x.Col.Path)
			}
		case *expr.InPred:
			if !x.Negated {
				add(x.Col.Path)
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
	walk(pred.Root())
	return out
}

// BloomCannotMatch reports whether Bloom filters prove that no row satisfies pred:
// an equality or IN whose values the column's filter rejects, an AND with such a
// term, or an OR all of whose terms are such. filterFor returns a column's filter
// for the file, or nil when the file is not covered for it (invariant B1: such a
// term proves nothing). NULL literals, NOT, and every other leaf prove nothing.
func BloomCannotMatch(pred *expr.Bound, filterFor func(column string) *bloom.Filter) bool {
	if pred == nil {
		return false
	}
	return bloomProof(pred.Root(), func(path []string, vals []value.Value) bool {
		if len(path) != 1 {
			return false
		}
		f := filterFor(path[0])
		if f == nil {
			return false
		}
		if len(vals) == 1 {
			return !f.MightContain(vals[0])
		}
		return !bloom.ProbeAny(f, vals)
	})
}

// bloomProof is the proof shape every Bloom level shares: rejects(path, values)
// says whether the unit's filter for the column proves that no row equals any of
// the values (an equality has one value; NULL literals never reach it).
func bloomProof(p expr.Pred, rejects func(path []string, vals []value.Value) bool) bool {
	switch x := p.(type) {
	case *expr.ConstPred:
		return !x.Value
	case *expr.CmpPred:
		if x.Op != expr.OpEq && x.Op != expr.OpNullSafeEq || x.Value.IsNull() {
			return false
		}
		return rejects(x.Col.Path, []value.Value{x.Value})
	case *expr.InPred:
		if x.Negated {
			return false
		}
		return rejects(x.Col.Path, x.Values)
	case *expr.AndPred:
		for _, t := range x.Terms {
			if bloomProof(t, rejects) {
				return true
			}
		}
		return false
	case *expr.OrPred:
		for _, t := range x.Terms {
			if !bloomProof(t, rejects) {
				return false
			}
		}
		return len(x.Terms) > 0
	}
	return false
}

// groupBloomWarnings renders one line per unusable index file and column (not one
// per data file it covers).
func groupBloomWarnings(warns []bloom.Warning) []string {
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
	out := make([]string, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if g.n == 1 {
			out = append(out, g.first.String())
			continue
		}
		out = append(out, fmt.Sprintf("%s (and %d more files covered by the same index)", g.first.String(), g.n-1))
	}
	return out
}
