package log

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/stats"
)

// Setting table properties follows Spark's DeltaConfigs (validateConfigurations):
//
//   - a delta.* key Delta knows, in any letter case, is validated and stored under
//     its canonical spelling, with its value normalised (booleans in lower case,
//     delta.targetFileSize in plain bytes, Go durations in interval syntax);
//   - an unknown delta.* key is refused (ErrUnknownProperty), as are internal keys
//     writers maintain (delta.columnMapping.maxColumnId);
//   - delta.constraints.* keys pass through unchanged;
//   - delta.feature.<name>=supported|enabled adds the feature to the protocol and is
//     not stored; delta.minReaderVersion / delta.minWriterVersion raise the protocol
//     and are not stored either;
//   - skiplake.* keys follow the same rule as delta.* keys: the known ones
//     (skiplake.bloomFilter.columns, skiplake.bloomFilter.fpp) are validated and
//     canonicalised, any other skiplake.* key is refused, so a typo cannot silently
//     do nothing;
//   - every other key (a user's own metadata) is stored as given.
//
// Only the keys being set are validated: existing configuration is never
// re-validated when a commit merely rewrites metaData (a Spark table may carry keys
// such as delta.rowTracking.* that no user may set).

// NormalizedProperties is a validated set of table properties (NormalizeProperties).
type NormalizedProperties struct {
	// Set maps canonical keys to canonical values: what is stored.
	Set map[string]string
	// Features lists the table features requested with delta.feature.<name>, by
	// their canonical names.
	Features []string
	// MinReaderVersion and MinWriterVersion are the protocol versions requested
	// with delta.minReaderVersion / delta.minWriterVersion (0 when not given).
	MinReaderVersion, MinWriterVersion int
}

// NormalizeProperties validates the given properties key by key (see the rules
// above) and returns them in canonical form. Every problem is reported at once:
// the error joins one *PropertyError per bad key (errors.Is matches
// ErrInvalidProperty, ErrUnknownProperty or ErrUnsupportedFeature). Checks that
// need the table (schema, protocol, other properties) are ApplyPropertyChange's.
func NormalizeProperties(props map[string]string) (*NormalizedProperties, error) {
	out := &NormalizedProperties{Set: map[string]string{}}
	var errs []error
	bad := func(k, v, reason string, sentinel error) {
		errs = append(errs, &PropertyError{Key: k, Value: v, Reason: reason, Err: sentinel})
	}
	given := map[string]string{} // canonical key -> key as given, to catch duplicates
	for _, k := range sortedKeys(props) {
		v := props[k]
		lower := strings.ToLower(strings.TrimSpace(k))
		canon, value := "", v
		switch {
		case k == "":
			bad(k, v, "empty key", ErrInvalidProperty)
			continue
		case strings.HasPrefix(lower, PrefixConstraints):
			if len(lower) == len(PrefixConstraints) {
				bad(k, v, "a CHECK constraint needs a name (delta.constraints.<name>)", ErrInvalidProperty)
				continue
			}
			canon = k
		case strings.HasPrefix(lower, PrefixFeature):
			name, ok := canonicalFeature(k[len(PrefixFeature):])
			if !ok {
				bad(k, v, "unknown table feature "+strconv.Quote(k[len(PrefixFeature):]), ErrUnsupportedFeature)
				continue
			}
			if s := strings.ToLower(strings.TrimSpace(v)); s != "supported" && s != "enabled" {
				bad(k, v, "want supported or enabled (a feature cannot be removed by a property)", ErrInvalidProperty)
				continue
			}
			if !contains(out.Features, name) {
				out.Features = append(out.Features, name)
			}
			continue
		case lower == strings.ToLower(PropMinReaderVersion) || lower == strings.ToLower(PropMinWriterVersion):
			reader := lower == strings.ToLower(PropMinReaderVersion)
			n, err := strconv.Atoi(strings.TrimSpace(v))
			switch {
			case err != nil || n < 1 || (reader && n > MaxReaderVersion) || (!reader && n > MaxWriterVersion):
				max := MaxWriterVersion
				if reader {
					max = MaxReaderVersion
				}
				bad(k, v, fmt.Sprintf("want a protocol version from 1 to %d", max), ErrInvalidProperty)
			case reader:
				out.MinReaderVersion = n
			default:
				out.MinWriterVersion = n
			}
			continue
		case strings.HasPrefix(lower, "delta.universalformat.config."):
			canon = lower // Spark keeps these in lower case
		case strings.HasPrefix(lower, "delta.") || strings.HasPrefix(lower, "skiplake."):
			d, ok := propDefs[lower]
			if !ok {
				bad(k, v, "not a table property Delta or skiplake knows (check the spelling); unknown delta.* and skiplake.* keys are refused", ErrUnknownProperty)
				continue
			}
			if d.internal {
				bad(k, v, "internal property maintained by writers; it cannot be set", ErrInvalidProperty)
				continue
			}
			scratch := defaultTableProperties()
			cv, err := d.parse(scratch, v)
			if err != nil {
				bad(d.key, v, err.Error(), ErrInvalidProperty)
				continue
			}
			canon, value = d.key, cv
		default:
			canon = k
		}
		if prev, dup := given[canon]; dup {
			bad(k, v, fmt.Sprintf("given twice (also as %q)", prev), ErrInvalidProperty)
			continue
		}
		given[canon] = k
		out.Set[canon] = value
	}
	sort.Strings(out.Features)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// PropertyChange is a change of table properties (ApplyPropertyChange).
type PropertyChange struct {
	// Set holds properties to set (validated and canonicalised as NormalizeProperties says).
	Set map[string]string
	// Unset names properties to remove; a known key may be given in any letter case.
	Unset []string
	// IfExists makes unsetting a key the table does not have a no-op instead of an
	// error (UNSET TBLPROPERTIES IF EXISTS).
	IfExists bool
}

// PrepareCreate returns the protocol and metadata a new table starts with: md (its
// schema and partition columns; any configuration in it is replaced) with props
// validated and stored (see NormalizeProperties), column mapping assigned when
// props select mode name or id (physical names col-<uuid>, ids from 1), and the
// smallest protocol that supports the features the schema and properties need:
// reader 1 / writer 2 when the legacy protocol covers them, else table features
// (reader 3 when a reader feature is needed) listing exactly those features.
// Nothing is written.
func PrepareCreate(md Metadata, props map[string]string) (Protocol, Metadata, error) {
	md.Configuration = map[string]string{}
	return applyProperties(Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, md, PropertyChange{Set: props}, true)
}

// ApplyPropertyChange validates change against a table with protocol p and
// metadata md and returns the protocol and metadata to commit (ALTER TABLE SET /
// UNSET TBLPROPERTIES). Only the keys being set are validated, with the checks
// that need the table: delta.dataSkippingStatsColumns must name existing,
// non-partition columns of types that have statistics (no duplicates);
// skiplake.bloomFilter.columns existing top-level non-partition primitive columns;
// delta.logRetentionDuration must not be below delta.deletedFileRetentionDuration;
// delta.columnMapping.mode may only change from none to name (as in Spark), which
// assigns ids and physical names (the current names, so existing files stay
// readable). When the result needs a table feature the protocol lacks, the
// protocol is upgraded (UpgradeProtocol); a feature skiplake cannot write
// (change data feed, row tracking, CHECK constraints, ...) is refused with an
// error naming the property. Nothing is written.
func ApplyPropertyChange(p Protocol, md Metadata, change PropertyChange) (Protocol, Metadata, error) {
	return applyProperties(p, md, change, false)
}

func applyProperties(p Protocol, md Metadata, change PropertyChange, creating bool) (Protocol, Metadata, error) {
	norm, err := NormalizeProperties(change.Set)
	if err != nil {
		return p, md, err
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return p, md, err
	}
	old := ParseTableProperties(md.Configuration)
	conf := make(map[string]string, len(md.Configuration)+len(norm.Set))
	for k, v := range md.Configuration {
		conf[k] = v
	}
	var errs []error
	bad := func(k, v, reason string, sentinel error) {
		errs = append(errs, &PropertyError{Key: k, Value: v, Reason: reason, Err: sentinel})
	}
	for _, k := range change.Unset {
		key := k
		if c, ok := CanonicalPropertyKey(k); ok {
			key = c
			if d := propDefs[strings.ToLower(k)]; d.internal {
				bad(k, "", "internal property maintained by writers; it cannot be unset", ErrInvalidProperty)
				continue
			}
		}
		lower := strings.ToLower(k)
		switch {
		case strings.HasPrefix(lower, PrefixFeature):
			bad(k, "", "table features cannot be removed by unsetting a property", ErrInvalidProperty)
			continue
		case lower == strings.ToLower(PropMinReaderVersion) || lower == strings.ToLower(PropMinWriterVersion):
			bad(k, "", "protocol versions are not stored properties and cannot be unset", ErrInvalidProperty)
			continue
		case key == PropColumnMappingMode && old.ColumnMappingMode != ColumnMappingNone:
			bad(k, "", "column mapping cannot be turned off (its files are written with physical names)", ErrInvalidProperty)
			continue
		}
		if _, ok := conf[key]; !ok {
			if _, ok := conf[k]; ok {
				key = k // a stored non-canonical spelling, removed as given
			} else {
				if !change.IfExists {
					bad(k, "", "not set on the table", ErrInvalidProperty)
				}
				continue
			}
		}
		delete(conf, key)
	}
	for k, v := range norm.Set {
		// A stored spelling of the same key in another letter case is replaced.
		if _, known := CanonicalPropertyKey(k); known {
			for old := range conf {
				if old != k && strings.EqualFold(old, k) {
					delete(conf, old)
				}
			}
		}
		conf[k] = v
	}
	next := ParseTableProperties(conf)
	errs = append(errs, checkSetProperties(norm.Set, next, schema, md.PartitionColumns)...)
	if v, ok := norm.Set[PropBloomFilterColumns]; ok {
		conf[PropBloomFilterColumns] = v // in the schema's spelling now
	}

	// Column mapping: only none -> name on an existing table; any mode at creation.
	if _, ok := norm.Set[PropColumnMappingMode]; ok && next.ColumnMappingMode != old.ColumnMappingMode {
		switch {
		case creating:
			maxID := int64(0)
			assignColumnMapping(schema, true, &maxID)
			conf[PropColumnMappingMaxColumnID] = strconv.FormatInt(maxID, 10)
		case old.ColumnMappingMode == ColumnMappingNone && next.ColumnMappingMode == ColumnMappingName:
			maxID := old.ColumnMappingMaxColumnID
			assignColumnMapping(schema, false, &maxID)
			conf[PropColumnMappingMaxColumnID] = strconv.FormatInt(maxID, 10)
		default:
			bad(PropColumnMappingMode, norm.Set[PropColumnMappingMode], fmt.Sprintf("changing column mapping mode from %s to %s is not supported (only none to name, as in Delta Spark)", old.ColumnMappingMode, next.ColumnMappingMode), ErrInvalidProperty)
		}
		md.SchemaString = schema.JSON()
	}
	// Enabling row tracking assigns the hidden materialized columns' names (kept
	// when the table has them already: they must never change).
	if next.EnableRowTracking && !old.EnableRowTracking {
		id, ver := materializedColumnNames()
		if next.MaterializedRowIDColumn == "" {
			conf[PropMaterializedRowIDColumn] = id
		}
		if next.MaterializedRowCommitVersionColumn == "" {
			conf[PropMaterializedRowCommitVersionColumn] = ver
		}
		if err := checkRowTrackingEnablement(ParseTableProperties(conf), schema); err != nil {
			bad(PropEnableRowTracking, "true", err.Error(), ErrInvalidProperty)
		}
	}
	if len(errs) > 0 {
		return p, md, errors.Join(errs...)
	}
	md.Configuration = conf
	np, err := protocolAfter(p, md, schema, norm, creating)
	if err != nil {
		return p, md, err
	}
	return np, md, nil
}

// protocolAfter returns the protocol a table with metadata md (schema parsed)
// needs after a change: p upgraded (or, when creating, a new protocol) so that it
// supports every feature the properties and schema make active plus those norm
// requests; it fails when skiplake could not write the result.
func protocolAfter(p Protocol, md Metadata, schema *StructType, norm *NormalizedProperties, creating bool) (Protocol, error) {
	needs, err := featureNeeds(ParseTableProperties(md.Configuration), schema)
	if err != nil {
		return p, err
	}
	np, err := upgradeFor(p, needs, norm, creating)
	if err != nil {
		return p, err
	}
	if err := CheckWritable(np, md); err != nil {
		return p, fmt.Errorf("log: the table would not be writable: %w", err)
	}
	return np, nil
}

// checkSetProperties runs the checks of the keys being set that need the table.
func checkSetProperties(set map[string]string, next *TableProperties, schema *StructType, partitions []string) []error {
	var errs []error
	bad := func(k, reason string) {
		errs = append(errs, &PropertyError{Key: k, Value: set[k], Reason: reason, Err: ErrInvalidProperty})
	}
	if _, ok := set[PropDataSkippingStatsColumns]; ok {
		if err := validateStatsColumns(next.DataSkippingStatsColumns, schema, partitions); err != nil {
			bad(PropDataSkippingStatsColumns, err.Error())
		}
	}
	if _, ok := set[PropBloomFilterColumns]; ok {
		cols, err := resolveBloomColumns(next.BloomFilterColumns, schema, partitions)
		if err != nil {
			bad(PropBloomFilterColumns, err.Error())
		} else {
			set[PropBloomFilterColumns] = strings.Join(cols, ",")
		}
	}
	_, setLog := set[PropLogRetentionDuration]
	_, setDel := set[PropDeletedFileRetentionDuration]
	if (setLog || setDel) && next.LogRetention < next.DeletedFileRetention {
		k := PropDeletedFileRetentionDuration
		if setLog {
			k = PropLogRetentionDuration
		}
		bad(k, fmt.Sprintf("%s (%s) must be at least %s (%s): removed files must stay in the log as long as VACUUM keeps them",
			PropLogRetentionDuration, next.LogRetention, PropDeletedFileRetentionDuration, next.DeletedFileRetention))
	}
	return errs
}

// validateStatsColumns applies Spark's rules for delta.dataSkippingStatsColumns:
// every entry names an existing column (case-insensitively, dotted paths into
// structs), not a partition column, whose type has statistics (numbers, date,
// timestamps, string; a struct selects its leaves, which must all qualify); no
// column may be named twice.
func validateStatsColumns(cols []string, schema *StructType, partitions []string) error {
	seen := map[string]bool{}
	for _, c := range cols {
		parts, err := stats.ParseColumnPath(c)
		if err != nil {
			return err
		}
		for _, pc := range partitions {
			if strings.EqualFold(pc, parts[0]) && len(parts) == 1 {
				return fmt.Errorf("column %q is a partition column (partition columns get no statistics)", c)
			}
		}
		var f *StructField
		st := schema
		var path []string
		for _, part := range parts {
			if st == nil {
				return fmt.Errorf("column %q: %q is not a struct", c, strings.Join(path, "."))
			}
			if f = st.FieldFold(part); f == nil {
				return fmt.Errorf("column %q does not exist (columns: %s)", c, strings.Join(fieldNames(st), ", "))
			}
			path = append(path, f.Name)
			st, _ = f.Type.(*StructType)
		}
		var leaves []string
		if err := statsEligible(f.Type, strings.Join(path, "."), &leaves); err != nil {
			return err
		}
		for _, l := range leaves {
			k := strings.ToLower(l)
			if seen[k] {
				return fmt.Errorf("column %q is named more than once", l)
			}
			seen[k] = true
		}
	}
	return nil
}

func statsEligible(t DataType, path string, leaves *[]string) error {
	switch v := t.(type) {
	case *StructType:
		for _, f := range v.Fields {
			if err := statsEligible(f.Type, path+"."+f.Name, leaves); err != nil {
				return err
			}
		}
		return nil
	case *DecimalType:
		*leaves = append(*leaves, path)
		return nil
	case *PrimitiveType:
		switch v.Name {
		case TypeByte, TypeShort, TypeInteger, TypeLong, TypeFloat, TypeDouble, TypeDate, TypeTimestamp, TypeTimestampNTZ, TypeString:
			*leaves = append(*leaves, path)
			return nil
		}
	}
	return fmt.Errorf("column %q has type %s, which has no statistics for data skipping", path, DisplayType(t))
}

func fieldNames(s *StructType) []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// resolveBloomColumns checks skiplake.bloomFilter.columns against the data columns
// and returns them in the schema's spelling, without duplicates.
func resolveBloomColumns(cols []string, schema *StructType, partitions []string) ([]string, error) {
	logical, err := ToArrow(schema, ArrowOptions{})
	if err != nil {
		return nil, err
	}
	var data []arrow.Field
	for _, f := range logical.Fields() {
		part := false
		for _, pc := range partitions {
			part = part || strings.EqualFold(pc, f.Name)
		}
		if !part {
			data = append(data, f)
		}
	}
	for _, c := range cols {
		for _, pc := range partitions {
			if strings.EqualFold(pc, c) {
				return nil, fmt.Errorf("column %q is a partition column (every file of a partition holds one value already)", c)
			}
		}
	}
	return bloom.ResolveColumns(arrow.NewSchema(data, nil), cols)
}

// assignColumnMapping gives every field of s (nested ones too) a column id above
// *maxID and a physical name: a fresh "col-<uuid>" for new tables, the field's
// current name when an existing table turns column mapping on (its files were
// written with those names).
func assignColumnMapping(s *StructType, fresh bool, maxID *int64) {
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Metadata == nil {
			f.Metadata = map[string]any{}
		}
		*maxID++
		f.Metadata[FieldIDKey] = *maxID
		if fresh {
			f.Metadata[PhysicalNameKey] = "col-" + uuid.NewString()
		} else {
			f.Metadata[PhysicalNameKey] = f.Name
		}
		forEachStruct(f.Type, func(st *StructType) { assignColumnMapping(st, fresh, maxID) })
	}
}

// forEachStruct calls fn for the struct types directly inside t (t itself, or the
// element, key and value types of arrays and maps, recursively).
func forEachStruct(t DataType, fn func(*StructType)) {
	switch v := t.(type) {
	case *StructType:
		fn(v)
	case *ArrayType:
		forEachStruct(v.ElementType, fn)
	case *MapType:
		forEachStruct(v.KeyType, fn)
		forEachStruct(v.ValueType, fn)
	}
}

// featureNeed is a table feature a table's properties or schema require.
type featureNeed struct {
	feature    string
	key, value string // the property that needs it ("" when the schema does)
	cause      string // the schema element that needs it
}

// featureNeeds lists the features the properties and schema make active, and
// refuses those skiplake cannot honour as a writer, naming the cause.
func featureNeeds(p *TableProperties, schema *StructType) ([]featureNeed, error) {
	var needs []featureNeed
	need := func(on bool, f, key, value string) {
		if on {
			needs = append(needs, featureNeed{feature: f, key: key, value: value})
		}
	}
	need(p.AppendOnly, FeatureAppendOnly, PropAppendOnly, "true")
	need(p.EnableDeletionVectors, FeatureDeletionVectors, PropEnableDeletionVectors, "true")
	need(p.ColumnMappingMode != ColumnMappingNone, FeatureColumnMapping, PropColumnMappingMode, string(p.ColumnMappingMode))
	need(p.CheckpointPolicy == CheckpointV2, FeatureV2Checkpoint, PropCheckpointPolicy, "v2")
	need(p.EnableChangeDataFeed, FeatureChangeDataFeed, PropEnableChangeDataFeed, "true")
	need(p.EnableRowTracking, FeatureRowTracking, PropEnableRowTracking, "true")
	need(p.EnableInCommitTimestamps, FeatureInCommitTimestamp, PropEnableInCommitTimestamps, "true")
	need(p.EnableTypeWidening, FeatureTypeWidening, PropEnableTypeWidening, "true")
	need(p.EnableIcebergCompatV1, FeatureIcebergCompatV1, PropEnableIcebergCompatV1, "true")
	need(p.EnableIcebergCompatV2, FeatureIcebergCompatV2, PropEnableIcebergCompatV2, "true")
	need(p.EnableVariantShredding, "variantShredding", PropEnableVariantShredding, "true")
	need(len(p.UniversalFormats) > 0, FeatureIcebergCompatV2, PropUniversalFormatEnabledFormats, strings.Join(p.UniversalFormats, ","))
	names := make([]string, 0, len(p.Constraints))
	for n := range p.Constraints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		need(true, FeatureCheckConstraints, PrefixConstraints+n, p.Constraints[n])
	}
	if schema != nil {
		if hasType(schema, TypeTimestampNTZ) {
			needs = append(needs, featureNeed{feature: FeatureTimestampNTZ, cause: "a timestamp_ntz column"})
		}
		var inv []string
		collectInvariants(schema, "", &inv)
		if len(inv) > 0 {
			needs = append(needs, featureNeed{feature: FeatureInvariants, cause: "column invariants on " + strings.Join(inv, ", ")})
		}
	}
	var errs []error
	for _, n := range needs {
		if contains(supportedWriter, n.feature) && n.feature != FeatureCheckConstraints && n.feature != FeatureInvariants {
			continue
		}
		why, ok := unwritableWhy[n.feature]
		if !ok {
			why = "skiplake cannot write tables with this feature"
		}
		if n.key != "" {
			errs = append(errs, &PropertyError{Key: n.key, Value: n.value, Reason: "needs table feature " + n.feature + ": " + why, Err: ErrUnsupportedFeature})
		} else {
			errs = append(errs, fmt.Errorf("log: %s needs table feature %s: %s: %w", n.cause, n.feature, why, ErrUnsupportedFeature))
		}
	}
	return needs, errors.Join(errs...)
}

// unwritableWhy says why skiplake refuses to turn on a feature it cannot honour.
var unwritableWhy = map[string]string{
	FeatureChangeDataFeed:    "skiplake does not write the change data feed (its DELETE, UPDATE and MERGE would not record _change_data files, so change readers would miss changes)",
	FeatureCheckConstraints:  "skiplake cannot evaluate CHECK constraints, so it could not enforce them on writes",
	FeatureInvariants:        "skiplake cannot evaluate column invariants, so it could not enforce them on writes",
	FeatureInCommitTimestamp: "skiplake does not write in-commit timestamps yet",
	FeatureIcebergCompatV1:   "skiplake does not keep Iceberg metadata",
	FeatureIcebergCompatV2:   "skiplake does not keep Iceberg metadata",
}

func hasType(s *StructType, name string) bool {
	var walk func(t DataType) bool
	walk = func(t DataType) bool {
		switch v := t.(type) {
		case *PrimitiveType:
			return v.Name == name
		case *StructType:
			for _, f := range v.Fields {
				if walk(f.Type) {
					return true
				}
			}
		case *ArrayType:
			return walk(v.ElementType)
		case *MapType:
			return walk(v.KeyType) || walk(v.ValueType)
		}
		return false
	}
	return walk(s)
}

// upgradeFor returns the protocol that supports every need, the explicitly
// requested features and versions.
func upgradeFor(p Protocol, needs []featureNeed, norm *NormalizedProperties, creating bool) (Protocol, error) {
	var features []string
	for _, n := range needs {
		if !contains(features, n.feature) {
			features = append(features, n.feature)
		}
	}
	for _, f := range norm.Features {
		if !contains(features, f) {
			features = append(features, f)
		}
	}
	if creating {
		return NewProtocol(norm.MinReaderVersion, norm.MinWriterVersion, features...)
	}
	return UpgradeProtocol(p, norm.MinReaderVersion, norm.MinWriterVersion, features...)
}

// canonicalFeature matches a table feature name case-insensitively.
func canonicalFeature(name string) (string, bool) {
	for _, f := range knownFeatures {
		if strings.EqualFold(f, name) {
			return f, true
		}
	}
	return "", false
}
