package table

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/storage"
)

// This file holds the facade's small entry points that are not operations on a
// table: schema text parsing and comparing a snapshot's properties with the ones a
// create would set. Names that belong to the packages below (value kinds, skipping
// levels, curves, property keys, isolation levels, the engines' result types) are
// not repeated here: a program names them through their own packages (value,
// skipping, optimize, log, vacuum, workload), which the results of this package
// already use.

// RequestCounts reports the requests the table's storage has served since it was
// opened, and false when the storage does not count them (local directories).
func (t *Table) RequestCounts() (storage.RequestCounts, bool) { return storage.Requests(t.store) }

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
