package log

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/skiplake/skiplake/stats"
)

// System-controlled metadata domains this package understands (PROTOCOL.md "Domain
// Metadata": names starting with "delta." are reserved for the features that define
// them; a writer must preserve every domain and may change only those it knows).
const (
	// DomainClustering holds the clustering columns of a clustered table (feature
	// clustering): {"clusteringColumns": [["a"], ["b","c"]]}.
	DomainClustering = "delta.clustering"
	// DomainLiquid is the clustering domain of tables written by Databricks' preview
	// of liquid clustering (feature liquid): {"clusteringColumns":
	// [{"physicalName": ["a"]}], "domainName": "delta.liquid"}. It is read, and kept
	// as it is; this package never writes it.
	DomainLiquid = "delta.liquid"
	// DomainRowTracking holds the row ID high-water mark of a table with row
	// tracking (feature rowTracking): {"rowIdHighWaterMark": N}. Transactions
	// maintain it (see Transaction.Commit); callers never set it.
	DomainRowTracking = "delta.rowTracking"
)

// ClusteringProviderLiquid is the clusteringProvider OPTIMIZE writes on the files it
// clusters by a clustered table's clustering columns: Delta's liquid clustering
// implementation, whose name Spark and Databricks write and recognise.
const ClusteringProviderLiquid = "liquid"

// MaxClusteringColumns is the largest number of clustering columns a table may have
// (Delta's limit for liquid clustering).
const MaxClusteringColumns = 4

// ErrInvalidClustering reports clustering columns that cannot be used (unknown,
// nested in an array or map, of a type without statistics, on a partitioned table,
// too many, given twice) or a clustering domain that does not parse.
var ErrInvalidClustering = errors.New("log: invalid clustering")

// Clustering describes how a clustered table is clustered (Snapshot.Clustering).
type Clustering struct {
	// Domain is the domain the columns were read from: DomainClustering, or
	// DomainLiquid for tables of Databricks' liquid preview ("" when the table has
	// the feature but no domain yet, which means no clustering columns).
	Domain string
	// Feature is the table feature that makes the table clustered: FeatureClustering
	// or FeatureLiquid.
	Feature string
	// Columns are the clustering columns as logical column paths (a nested column
	// b.c is ["b", "c"]), in clustering order. Empty after CLUSTER BY NONE.
	Columns [][]string
	// Physical are the same columns as the domain stores them (physical names
	// under column mapping).
	Physical [][]string
}

// Names returns the clustering columns as dotted names ("b.c"), in order.
func (c *Clustering) Names() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.Columns))
	for i, p := range c.Columns {
		out[i] = strings.Join(p, ".")
	}
	return out
}

// IsClustered reports whether protocol p makes a table clustered: its writer
// features list clustering (or Databricks' preview feature liquid).
func IsClustered(p Protocol) bool {
	return p.MinWriterVersion >= 7 && (contains(p.WriterFeatures, FeatureClustering) || contains(p.WriterFeatures, FeatureLiquid))
}

// ParseClusteringDomain parses the configuration of a clustering domain. Three
// forms of the entries of "clusteringColumns" are read: a list of name parts
// (["b","c"], what Delta Spark writes), a plain string (PROTOCOL.md's example in
// "Clustered Table": one
// top-level name, which may itself contain dots) and an object {"physicalName":
// [...]} (the liquid preview). An empty configuration means no columns; more than
// MaxClusteringColumns is an error naming the limit.
func ParseClusteringDomain(config string) ([][]string, error) {
	if strings.TrimSpace(config) == "" {
		return nil, nil
	}
	var raw struct {
		ClusteringColumns []json.RawMessage `json:"clusteringColumns"`
	}
	if err := json.Unmarshal([]byte(config), &raw); err != nil {
		return nil, fmt.Errorf("%w: clustering domain %q: %v", ErrInvalidClustering, config, err)
	}
	if n := len(raw.ClusteringColumns); n > MaxClusteringColumns {
		// Delta's limit, which every writer keeps: more comes from a damaged or
		// foreign log, and would leave the clustering keys less than a bit per column.
		return nil, fmt.Errorf("%w: the clustering domain names %d columns; a table has at most %d (MaxClusteringColumns, Delta's limit)",
			ErrInvalidClustering, n, MaxClusteringColumns)
	}
	out := make([][]string, 0, len(raw.ClusteringColumns))
	for i, e := range raw.ClusteringColumns {
		e = bytes.TrimSpace(e)
		var parts []string
		switch {
		case len(e) > 0 && e[0] == '"':
			var s string
			if err := json.Unmarshal(e, &s); err != nil {
				return nil, fmt.Errorf("%w: clustering column %d: %v", ErrInvalidClustering, i, err)
			}
			parts = []string{s}
		case len(e) > 0 && e[0] == '[':
			if err := json.Unmarshal(e, &parts); err != nil {
				return nil, fmt.Errorf("%w: clustering column %d: %v", ErrInvalidClustering, i, err)
			}
		case len(e) > 0 && e[0] == '{':
			var o struct {
				PhysicalName []string `json:"physicalName"`
			}
			if err := json.Unmarshal(e, &o); err != nil {
				return nil, fmt.Errorf("%w: clustering column %d: %v", ErrInvalidClustering, i, err)
			}
			parts = o.PhysicalName
		default:
			return nil, fmt.Errorf("%w: clustering column %d: %s is not a name, a list of name parts or an object", ErrInvalidClustering, i, e)
		}
		if len(parts) == 0 {
			return nil, fmt.Errorf("%w: clustering column %d is empty", ErrInvalidClustering, i)
		}
		for _, p := range parts {
			if p == "" {
				return nil, fmt.Errorf("%w: clustering column %d has an empty name part", ErrInvalidClustering, i)
			}
		}
		out = append(out, parts)
	}
	return out, nil
}

// ClusteringDomain returns the domainMetadata action that records physical as the
// clustering columns of a table with the clustering feature, in Delta Spark's form
// {"clusteringColumns":[["a"],["b","c"]]}.
func ClusteringDomain(physical [][]string) DomainMetadata {
	cols := physical
	if cols == nil {
		cols = [][]string{}
	}
	b, _ := json.Marshal(struct {
		ClusteringColumns [][]string `json:"clusteringColumns"`
	}{cols})
	return DomainMetadata{Domain: DomainClustering, Configuration: string(b)}
}

// Domain returns the live domain metadata named domain, and whether there is one.
func (s *Snapshot) Domain(domain string) (DomainMetadata, bool) {
	i := sort.Search(len(s.domains), func(i int) bool { return s.domains[i].Domain >= domain })
	if i < len(s.domains) && s.domains[i].Domain == domain {
		return s.domains[i], true
	}
	return DomainMetadata{}, false
}

// Clustering returns how the table is clustered, or nil when it is not a clustered
// table (IsClustered false). Physical names stored under column mapping are
// translated back to the logical columns; a domain that does not parse, or names a
// column the schema does not have, is an error wrapping ErrInvalidClustering.
func (s *Snapshot) Clustering() (*Clustering, error) {
	return clusteringOf(s.protocol, s.metadata, s.Properties().ColumnMappingMode != ColumnMappingNone, s.Domain)
}

// clusteringOf is Clustering of a table with protocol p and metadata md, whose
// column mapping is on when mapped, reading domains with domain.
func clusteringOf(p Protocol, md Metadata, mapped bool, domain func(string) (DomainMetadata, bool)) (*Clustering, error) {
	if !IsClustered(p) {
		return nil, nil
	}
	c := &Clustering{Feature: FeatureClustering}
	name := DomainClustering
	if !contains(p.WriterFeatures, FeatureClustering) {
		c.Feature, name = FeatureLiquid, DomainLiquid
	}
	d, ok := domain(name)
	if !ok {
		return c, nil
	}
	c.Domain = name
	phys, err := ParseClusteringDomain(d.Configuration)
	if err != nil {
		return nil, err
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return nil, err
	}
	for _, ph := range phys {
		logical, err := resolveStoredColumn(schema, ph, mapped)
		if err != nil {
			return nil, fmt.Errorf("%w: domain %s: %v", ErrInvalidClustering, name, err)
		}
		c.Columns = append(c.Columns, logical)
		c.Physical = append(c.Physical, ph)
	}
	return c, nil
}

// resolveStoredColumn maps a stored clustering column (physical name parts when
// mapped, else logical ones) to its logical path. A single stored part that is not
// a top-level name but a dotted path into structs is read as that path.
func resolveStoredColumn(schema *StructType, parts []string, mapped bool) ([]string, error) {
	find := func(st *StructType, part string) *StructField {
		for i := range st.Fields {
			f := &st.Fields[i]
			if mapped && f.PhysicalName() == part || !mapped && f.Name == part {
				return f
			}
		}
		return nil
	}
	walk := func(parts []string) ([]string, bool) {
		st := schema
		var out []string
		for i, part := range parts {
			if st == nil {
				return nil, false
			}
			f := find(st, part)
			if f == nil {
				return nil, false
			}
			out = append(out, f.Name)
			if i < len(parts)-1 {
				st, _ = f.Type.(*StructType)
			}
		}
		return out, true
	}
	if out, ok := walk(parts); ok {
		return out, nil
	}
	if len(parts) == 1 && strings.Contains(parts[0], ".") {
		if out, ok := walk(strings.Split(parts[0], ".")); ok {
			return out, nil
		}
	}
	return nil, fmt.Errorf("clustering column %q is not in the schema", strings.Join(parts, "."))
}

// ResolveClusteringColumns checks clustering columns given by the user (dotted names
// "a" or "b.c", matched case-insensitively; back-quote a name that contains dots)
// against a table's metadata and returns their logical paths (the schema's
// spelling) and the physical paths a clustering domain stores. Delta's rules: at
// most MaxClusteringColumns, none twice, not on a partitioned table, each a column
// reached through structs only, of a type with min/max statistics (numbers, date,
// timestamp, timestamp_ntz, string), and among the columns that get statistics under
// the table's data-skipping properties (so every writer, Spark's too, collects
// statistics for it). An empty list (CLUSTER BY NONE) is valid.
func ResolveClusteringColumns(md Metadata, cols []string) (logical, physical [][]string, err error) {
	if len(md.PartitionColumns) > 0 && len(cols) > 0 {
		return nil, nil, fmt.Errorf("%w: the table is partitioned by %s; clustering and partitioning are exclusive",
			ErrInvalidClustering, strings.Join(md.PartitionColumns, ", "))
	}
	if len(cols) > MaxClusteringColumns {
		return nil, nil, fmt.Errorf("%w: %d clustering columns (at most %d)", ErrInvalidClustering, len(cols), MaxClusteringColumns)
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return nil, nil, err
	}
	props := ParseTableProperties(md.Configuration)
	mapped := props.ColumnMappingMode != ColumnMappingNone
	seen := map[string]bool{}
	for _, c := range cols {
		parts, err := stats.ParseColumnPath(c)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: clustering column %q: %v", ErrInvalidClustering, c, err)
		}
		st := schema
		var lp, pp []string
		var f *StructField
		for i, part := range parts {
			if st == nil {
				return nil, nil, fmt.Errorf("%w: clustering column %q: %q is not a struct (a clustering column is reached through structs only, never inside an array or map)", ErrInvalidClustering, c, strings.Join(lp, "."))
			}
			if f = st.FieldFold(part); f == nil {
				return nil, nil, fmt.Errorf("%w: clustering column %q does not exist (columns: %s)", ErrInvalidClustering, c, strings.Join(fieldNames(st), ", "))
			}
			lp = append(lp, f.Name)
			pp = append(pp, f.PhysicalName())
			if i < len(parts)-1 {
				st, _ = f.Type.(*StructType)
			}
		}
		var leaves []string
		if _, isStruct := f.Type.(*StructType); isStruct {
			return nil, nil, fmt.Errorf("%w: clustering column %q is a struct; cluster by one of its fields", ErrInvalidClustering, c)
		}
		if err := statsEligible(f.Type, strings.Join(lp, "."), &leaves); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalidClustering, err)
		}
		k := strings.ToLower(strings.Join(lp, "\x00"))
		if seen[k] {
			return nil, nil, fmt.Errorf("%w: clustering column %q is given twice", ErrInvalidClustering, c)
		}
		seen[k] = true
		if !statsCover(props, schema, lp) {
			return nil, nil, fmt.Errorf("%w: clustering column %q gets no statistics under the table's %s/%s; clustering needs them (add it to %s or raise %s)",
				ErrInvalidClustering, c, PropDataSkippingNumIndexedCols, PropDataSkippingStatsColumns, PropDataSkippingStatsColumns, PropDataSkippingNumIndexedCols)
		}
		logical = append(logical, lp)
		if !mapped {
			pp = lp
		}
		physical = append(physical, pp)
	}
	return logical, physical, nil
}

// statsCover reports whether the data-skipping properties select the leaf column
// path (logical names) for statistics: listed in delta.dataSkippingStatsColumns
// (itself or a struct around it), or among the first delta.dataSkippingNumIndexedCols
// leaves in schema order.
func statsCover(props *TableProperties, schema *StructType, path []string) bool {
	if len(props.DataSkippingStatsColumns) > 0 {
		for _, ref := range props.DataSkippingStatsColumns {
			parts, err := stats.ParseColumnPath(ref)
			if err != nil || len(parts) > len(path) {
				continue
			}
			ok := true
			for i := range parts {
				ok = ok && strings.EqualFold(parts[i], path[i])
			}
			if ok {
				return true
			}
		}
		return false
	}
	n := props.DataSkippingNumIndexedCols
	if n < 0 {
		return true
	}
	want := strings.ToLower(strings.Join(path, "\x00"))
	for i, leaf := range leafPaths(schema, nil) {
		if i >= n {
			return false
		}
		if strings.ToLower(strings.Join(leaf, "\x00")) == want {
			return true
		}
	}
	return false
}

// leafPaths lists the leaf columns in schema order as statistics count them: struct
// fields recurse, every other type (arrays and maps too) is one leaf.
func leafPaths(s *StructType, prefix []string) [][]string {
	var out [][]string
	for _, f := range s.Fields {
		p := append(append([]string(nil), prefix...), f.Name)
		if st, ok := f.Type.(*StructType); ok {
			out = append(out, leafPaths(st, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// ClusteringColumnsLackingStats returns the live files (paths, at most limit; all
// when limit <= 0) whose statistics do not cover every one of the clustering columns
// cols (physical paths, as statistics name them: ResolveClusteringColumns's physical
// result): PROTOCOL.md ("Writer Requirements for Clustered Table") requires every
// file of a clustered table to have statistics for a column before it becomes a
// clustering column. A column is covered when the
// file's stats carry its nullCount, or min and max. It also returns how many files
// lack them in all.
func (s *Snapshot) ClusteringColumnsLackingStats(cols [][]string, limit int) ([]string, int) {
	if len(cols) == 0 || len(s.files) == 0 {
		return nil, 0
	}
	var out []string
	n := 0
	for _, a := range s.files {
		if !statsHaveColumns(a.Stats, cols) {
			n++
			if limit <= 0 || len(out) < limit {
				out = append(out, a.Path)
			}
		}
	}
	return out, n
}

// statsHaveColumns reports whether a stats JSON string covers every column path.
func statsHaveColumns(statsJSON string, cols [][]string) bool {
	if statsJSON == "" {
		return false
	}
	var st struct {
		MinValues map[string]any `json:"minValues"`
		MaxValues map[string]any `json:"maxValues"`
		NullCount map[string]any `json:"nullCount"`
	}
	if err := json.Unmarshal([]byte(statsJSON), &st); err != nil {
		return false
	}
	has := func(m map[string]any, path []string) bool {
		var cur any = m
		for _, p := range path {
			mm, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = mm[p]; !ok {
				return false
			}
		}
		return true
	}
	for _, c := range cols {
		if !has(st.NullCount, c) && !(has(st.MinValues, c) && has(st.MaxValues, c)) {
			return false
		}
	}
	return true
}

// StatsConfig returns the statistics configuration writers use for the table: the
// data-skipping properties (TableProperties.StatsConfig) plus, on a clustered table,
// the clustering columns, which always get statistics (PROTOCOL.md "Clustered
// Table"). A clustering domain that does not parse adds nothing here; operations
// that cluster report it.
func (s *Snapshot) StatsConfig() stats.Config {
	cfg := s.Properties().StatsConfig()
	if c, err := s.Clustering(); err == nil && c != nil {
		cfg.AlwaysColumns = c.Physical
	}
	return cfg
}

// RemoveDomainMetadata removes a domain in this transaction: a domainMetadata
// tombstone (removed=true) carrying the domain's current configuration as its
// pre-image, as PROTOCOL.md ("Domain Metadata") asks. A domain the snapshot does not
// have is an error
// wrapping ErrInvalidTransaction; system-controlled domains are refused at commit
// like any other change of them.
func (t *Transaction) RemoveDomainMetadata(domain string) error {
	d, ok := t.snap.Domain(domain)
	if !ok {
		return fmt.Errorf("log: remove domain %q: not in version %d: %w", domain, t.snap.version, ErrInvalidTransaction)
	}
	d.Removed = true
	t.SetDomainMetadata(d)
	return nil
}
