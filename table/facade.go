package table

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/expr"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/optimize"
	"github.com/skiplake/skiplake/skipping"
	"github.com/skiplake/skiplake/storage"
	"github.com/skiplake/skiplake/value"
	"github.com/skiplake/skiplake/workload"
)

// This file re-exports, deliberately, the names of other skiplake packages that a
// program using this package needs to read its results and build its inputs, so
// that such a program (the skiplake CLI among them) imports table and nothing else
// of skiplake. The aliases are the same types, not copies: values convert freely.
// The engines' result types (OptimizePlan, OptimizeMetrics, VacuumResult,
// RetentionTooShortError) are re-exported in reexport.go.

// Curve is the space-filling curve (or none) an OPTIMIZE plan clusters with.
type Curve = optimize.Curve

// The curves of OptimizePlan.Curve.
const (
	// CurveNone: compaction only, rows keep their order.
	CurveNone = optimize.CurveNone
	// CurveZOrder: Z-order (bit interleaving) over the columns' ranks.
	CurveZOrder = optimize.CurveZOrder
	// CurveHilbert: Hilbert curve over the columns' ranks.
	CurveHilbert = optimize.CurveHilbert
	// CurveLinear: lexicographic sort (the baseline).
	CurveLinear = optimize.CurveLinear
	// CurveWorkload: files laid out by a tree of cuts learned from a workload
	// (OptimizeOptions.Layout "workload").
	CurveWorkload = optimize.CurveWorkload
)

// Workload is a set of weighted filters, as OptimizeOptions.Workload and the
// advisor (package advise) take it.
type Workload = workload.Workload

// ParseWorkloadFile reads a workload file: one filter per line in the expr grammar,
// optionally prefixed by "WEIGHT:"; the error names the file and line of a filter
// that does not parse.
func ParseWorkloadFile(path string) (*Workload, error) { return workload.ParseFile(path) }

// PropDeletedFileRetentionDuration is the table property holding the retention
// period Vacuum keeps by default (7 days unless set).
const PropDeletedFileRetentionDuration = log.PropDeletedFileRetentionDuration

// PropMaxDeletedRowsRatio is the table property holding the share of a file's rows
// its deletion vector may mark deleted before OPTIMIZE and Maintain purge the file
// (rewrite it without them); default 0.05.
const PropMaxDeletedRowsRatio = log.PropMaxDeletedRowsRatio

// Setting is the effective value of one table property skiplake interprets
// (log.Setting): its canonical key, its value in canonical form, whether that value
// is the default, and why a stored value is invalid. Description.Settings lists
// them.
type Setting = log.Setting

// The isolation levels of DMLOptions.IsolationLevel (Delta's names).
const (
	// Serializable: a concurrent append conflicts with a transaction that read the
	// rows it adds to (the default).
	Serializable = log.Serializable
	// WriteSerializable: like Serializable, but concurrent blind appends never
	// conflict.
	WriteSerializable = log.WriteSerializable
)

// LevelStats is one skipping level's figures in a ScanReport: units total,
// skipped, kept and proven to match, and the stored bytes of those units.
type LevelStats = skipping.LevelStats

// The units a LevelStats counts (LevelStats.Unit).
const (
	// UnitFiles: the partition, stats, bloom and metadata levels count files.
	UnitFiles = skipping.UnitFiles
	// UnitRowGroups: the row-group level counts Parquet row groups.
	UnitRowGroups = skipping.UnitRowGroups
	// UnitRows: the page level counts rows (its byte figures are not measured).
	UnitRows = skipping.UnitRows
)

// Value is a typed scalar, as ColumnStats carries a file's min and max.
type Value = value.Value

// ValueKind is a Value's type (Value.Kind).
type ValueKind = value.Kind

// The kinds a caller formatting ColumnStats bounds tells apart.
const (
	// KindString: a string; Value.AsString gives it unquoted.
	KindString = value.KindString
	// KindDate: days since the epoch.
	KindDate = value.KindDate
	// KindTimestamp: microseconds since the epoch, UTC-adjusted.
	KindTimestamp = value.KindTimestamp
	// KindTimestampNTZ: microseconds since the epoch, without a time zone.
	KindTimestampNTZ = value.KindTimestampNTZ
)

// RequestCounts is how many requests an object store has served (RequestCounts).
type RequestCounts = storage.RequestCounts

// RequestCounts reports the requests the table's storage has served since it was
// opened, and false when the storage does not count them (local directories).
func (t *Table) RequestCounts() (RequestCounts, bool) { return storage.Requests(t.store) }

// CheckFilter parses a filter (the expr grammar) without binding it to a table,
// so a program can refuse one that does not parse before it opens anything. The
// error says where the text stops making sense; unknown columns and types are found
// when a scan binds the filter.
func CheckFilter(filter string) error {
	_, err := expr.Parse(filter)
	return err
}

// ParseDate parses a date as a filter literal takes it ("2026-01-31") into days
// since the Unix epoch.
func ParseDate(s string) (int64, error) { return expr.ParseDate(s) }

// ParseTimestamp parses a timestamp as a filter literal takes it ("2026-01-31
// 12:00:00", optionally with a zone or offset) into microseconds since the Unix
// epoch; hasZone says whether the text named a zone or offset.
func ParseTimestamp(s string) (micros int64, hasZone bool, err error) { return expr.ParseTimestamp(s) }

// ParseSchema parses a table schema written either as Delta's JSON schema (text
// starting with "{") or as a DDL column list ("id bigint, ts timestamp, tags
// array<string>"), into the Arrow schema Create and the writers take. A column with
// a write rule (GENERATED ALWAYS AS (expr), GENERATED ... AS IDENTITY, or such field
// metadata in a JSON schema) is refused: only a table being created takes them (see
// ParseSchemaRules).
func ParseSchema(text string) (*arrow.Schema, error) {
	schema, rules, err := ParseSchemaRules(text)
	if err != nil {
		return nil, err
	}
	if len(rules) > 0 {
		return nil, fmt.Errorf("%w: schema: column %q has a generation expression, identity or invariant: only a table being created takes them",
			ErrInvalidArgument, rules[0].Column)
	}
	return schema, nil
}

// ParseSchemaRules is ParseSchema for a table being created: it also returns the
// write rules of the top-level columns (for CreateOptions.ColumnRules), from the
// DDL's column clauses — GENERATED ALWAYS AS (expr), GENERATED ALWAYS|BY DEFAULT AS
// IDENTITY [(START WITH n INCREMENT BY m)], the forms describe prints — or from a
// JSON schema's field metadata (delta.generationExpression, delta.identity.*,
// delta.invariants). The expressions are checked when the table is created.
func ParseSchemaRules(text string) (*arrow.Schema, []ColumnRule, error) {
	var (
		st  *log.StructType
		err error
	)
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
		st, err = log.ParseSchema(t)
	} else {
		st, err = log.ParseDDLSchema(text)
	}
	if err != nil {
		return nil, nil, err
	}
	rules, err := fieldRules(st)
	if err != nil {
		return nil, nil, err
	}
	schema, err := log.ToArrow(st, log.ArrowOptions{})
	if err != nil {
		return nil, nil, err
	}
	return schema, rules, nil
}

// fieldRules reads the write rules of st's top-level fields from their metadata.
func fieldRules(st *log.StructType) ([]ColumnRule, error) {
	var out []ColumnRule
	for i := range st.Fields {
		f := &st.Fields[i]
		r := ColumnRule{Column: f.Name}
		if raw, ok := f.Metadata[log.InvariantsKey]; ok {
			text, err := log.Invariant(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
			}
			r.Invariant = text
		}
		if raw, ok := f.Metadata[log.GenerationExpressionKey]; ok {
			g, isString := raw.(string)
			if !isString {
				return nil, fmt.Errorf("%w: column %q: %s is not a string", ErrInvalidArgument, f.Name, log.GenerationExpressionKey)
			}
			r.Generated = g
		}
		id, ok, err := log.FieldIdentity(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		if ok {
			if id.HasHighWaterMark {
				return nil, fmt.Errorf("%w: column %q: %s: a new table has no high-water mark", ErrInvalidArgument, f.Name, log.IdentityHighWaterMarkKey)
			}
			r.Identity = &IdentityInfo{Start: id.Start, Step: id.Step, Always: !id.AllowExplicitInsert}
		}
		if r.Invariant != "" || r.Generated != "" || r.Identity != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// DisplayType names an Arrow type by the Delta type it holds, as Spark SQL spells
// types for people (bigint, int, string, decimal(10,2), timestamp, timestamp_ntz,
// array<int>, struct<a:int,b:string>): the names describe shows and --schema takes.
// See value.DisplayType.
func DisplayType(t arrow.DataType) string { return value.DisplayType(t) }

// PropertyDifferences compares properties as CreateOptions.Properties takes them
// with what the snapshot's table has: each entry names a property whose value
// differs (or is unset), a table feature it would add, or a protocol it would raise.
// None means creating the table with these properties would have given this one's
// settings. Properties that do not validate give the error CreateOptions.Properties
// would (one per bad key, naming it; errors.Is matches log.ErrInvalidProperty,
// log.ErrUnknownProperty or log.ErrUnsupportedFeature).
func (s *Snapshot) PropertyDifferences(props map[string]string) ([]string, error) {
	if len(props) == 0 {
		return nil, nil
	}
	norm, err := log.NormalizeProperties(props)
	if err != nil {
		return nil, err
	}
	conf := s.Configuration()
	var differ []string
	for _, k := range slices.Sorted(maps.Keys(norm.Set)) {
		if have, ok := conf[k]; !ok || have != norm.Set[k] {
			had := "no value"
			if ok {
				had = have
			}
			differ = append(differ, fmt.Sprintf("%s=%s (the table has %s)", k, norm.Set[k], had))
		}
	}
	proto := s.log.Protocol()
	features := log.WriterFeatures(proto)
	for _, f := range norm.Features {
		if !slices.Contains(features, f) {
			differ = append(differ, fmt.Sprintf("delta.feature.%s=supported (the table does not have the feature)", f))
		}
	}
	if norm.MinReaderVersion > proto.MinReaderVersion || norm.MinWriterVersion > proto.MinWriterVersion {
		differ = append(differ, fmt.Sprintf("protocol reader %d, writer %d (the table has reader %d, writer %d)",
			norm.MinReaderVersion, norm.MinWriterVersion, proto.MinReaderVersion, proto.MinWriterVersion))
	}
	return differ, nil
}
