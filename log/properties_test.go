package log

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiplake/skiplake/stats"
)

func TestParseTablePropertiesDefaults(t *testing.T) {
	p := ParseTableProperties(nil)
	if p.CheckpointInterval != 10 || p.TargetFileSize != 128<<20 || p.DeletedFileRetention != 7*24*time.Hour ||
		p.LogRetention != 30*24*time.Hour || p.DataSkippingNumIndexedCols != 32 || p.DataSkippingStringPrefixLength != 32 ||
		p.AppendOnly || p.EnableDeletionVectors || p.ColumnMappingMode != ColumnMappingNone ||
		p.CheckpointPolicy != CheckpointClassic || !p.CheckpointWriteStatsAsJSON || p.BloomFilterFPP != 0.01 ||
		len(p.Invalid) != 0 || len(p.Unknown) != 0 {
		t.Fatalf("defaults: %+v", p)
	}
	if !reflect.DeepEqual(p.StatsConfig(), stats.Config{NumIndexedCols: 32, StringPrefixLength: 32}) {
		t.Fatalf("default stats config %+v", p.StatsConfig())
	}
}

func TestParseTablePropertiesReadsCanonicalKeysOnly(t *testing.T) {
	p := ParseTableProperties(map[string]string{
		"delta.TargetFileSize":                          "1mb", // non-canonical: ignored, as Spark does
		"delta.appendonly":                              "true",
		"delta.checkpointInterval":                      "3",
		"delta.dataSkippingStatsColumns":                "a, `b.c`.d",
		"delta.dataSkippingNumIndexedCols":              "-1",
		"delta.deletedFileRetentionDuration":            "interval 2 weeks",
		"delta.constraints.positive":                    "id > 0",
		"delta.rowTracking.materializedRowIdColumnName": "_row-id-col-1",
		"skiplake.bloomFilter.columns":                  " id , s ",
		"owner":                                         "me",
	})
	if p.TargetFileSize != DefaultTargetFileSize || p.AppendOnly {
		t.Fatalf("non-canonical keys were read: target %d appendOnly %v", p.TargetFileSize, p.AppendOnly)
	}
	if p.MaterializedRowIDColumn != "_row-id-col-1" {
		t.Errorf("materialized row ID column %q", p.MaterializedRowIDColumn)
	}
	for _, k := range []string{"delta.TargetFileSize", "delta.appendonly", "owner"} {
		if _, ok := p.Unknown[k]; !ok {
			t.Errorf("%s not in Unknown: %v", k, p.Unknown)
		}
	}
	if p.CheckpointInterval != 3 || p.DeletedFileRetention != 14*24*time.Hour || p.DataSkippingNumIndexedCols != -1 ||
		!slices.Equal(p.DataSkippingStatsColumns, []string{"a", "`b.c`.d"}) || p.Constraints["positive"] != "id > 0" ||
		!slices.Equal(p.BloomFilterColumns, []string{"id", "s"}) {
		t.Fatalf("parsed %+v", p)
	}
	if p.StatsConfig().NumIndexedCols != stats.IndexAllColumns {
		t.Fatalf("-1 must map to IndexAllColumns, got %d", p.StatsConfig().NumIndexedCols)
	}
	if !p.IsSet(PropCheckpointInterval) || p.IsSet(PropTargetFileSize) {
		t.Fatal("IsSet")
	}
	if ParseTableProperties(map[string]string{PropDataSkippingNumIndexedCols: "0"}).StatsConfig().NumIndexedCols != stats.IndexNoColumns {
		t.Fatal("0 must map to IndexNoColumns")
	}
	// A prefix length of 0 (valid in Spark) means no string bounds; readers then treat
	// every string maximum as possibly cut.
	zero := ParseTableProperties(map[string]string{PropDataSkippingStringPrefixLength: "0"})
	if len(zero.Invalid) != 0 || zero.StatsConfig().StringPrefixLength != stats.NoStringBounds || zero.StringPrefixForReading() != 1 {
		t.Fatalf("prefix 0: %v %+v %d", zero.Invalid, zero.StatsConfig(), zero.StringPrefixForReading())
	}
}

// TestDMLIsolationLevel: DML commits at Serializable exactly when the table sets
// delta.isolationLevel under its canonical key (with any value), else at
// WriteSerializable.
func TestDMLIsolationLevel(t *testing.T) {
	for _, c := range []struct {
		name string
		conf map[string]string
		want string
	}{
		{"unset", nil, WriteSerializable},
		{"other keys only", map[string]string{PropAppendOnly: "false", "owner": "me"}, WriteSerializable},
		{"Serializable", map[string]string{PropIsolationLevel: "Serializable"}, Serializable},
		{"Serializable with spaces", map[string]string{PropIsolationLevel: " Serializable "}, Serializable},
		{"invalid value is the stricter level", map[string]string{PropIsolationLevel: "WriteSerializable"}, Serializable},
		{"non-canonical key is ignored", map[string]string{"delta.IsolationLevel": "Serializable"}, WriteSerializable},
	} {
		p := ParseTableProperties(c.conf)
		if got := p.DMLIsolationLevel(); got != c.want {
			t.Errorf("%s: DMLIsolationLevel() = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestParseTablePropertiesInvalidValues(t *testing.T) {
	p := ParseTableProperties(map[string]string{
		PropTargetFileSize:                 "huge",
		PropDeletedFileRetentionDuration:   "garbage",
		PropCheckpointInterval:             "0",
		PropDataSkippingStringPrefixLength: "-3",
		PropAppendOnly:                     "yes",
	})
	if len(p.Invalid) != 5 {
		t.Fatalf("invalid %v", p.Invalid)
	}
	// The fields keep their defaults...
	if p.TargetFileSize != DefaultTargetFileSize || p.CheckpointInterval != 10 || p.DeletedFileRetention != DefaultDeletedFileRetention {
		t.Fatalf("fields %+v", p)
	}
	// ...and operations that depend on one see an error naming it.
	err := p.Err(PropTargetFileSize, PropCheckpointPolicy)
	var pe *PropertyError
	if !errors.Is(err, ErrInvalidProperty) || !errors.As(err, &pe) || pe.Key != PropTargetFileSize || !strings.Contains(err.Error(), `"huge"`) {
		t.Fatalf("Err = %v", err)
	}
	if p.Err(PropCheckpointPolicy) != nil {
		t.Fatal("valid (absent) key reported")
	}
	if p.StringPrefixForReading() != 1 {
		t.Fatalf("invalid prefix length must read as 1 (every max may be cut), got %d", p.StringPrefixForReading())
	}
}

func TestLegacyChangeDataCaptureKey(t *testing.T) {
	if !ParseTableProperties(map[string]string{"delta.enableChangeDataCapture": "true"}).EnableChangeDataFeed {
		t.Fatal("legacy key not read")
	}
	if ParseTableProperties(map[string]string{"delta.enableChangeDataCapture": "true", PropEnableChangeDataFeed: "false"}).EnableChangeDataFeed {
		t.Fatal("the canonical key must win over the legacy one")
	}
}

func TestNormalizeProperties(t *testing.T) {
	got, err := NormalizeProperties(map[string]string{
		"DELTA.TARGETFILESIZE":                   "1mb",
		"delta.appendonly":                       "TRUE",
		"Delta.DeletedFileRetentionDuration":     "168h",
		"delta.logRetentionDuration":             "interval 60 days",
		"delta.constraints.Positive":             "id > 0",
		"delta.feature.deletionvectors":          "supported",
		"delta.feature.v2Checkpoint":             "Enabled",
		"delta.minWriterVersion":                 "3",
		"SKIPLAKE.BLOOMFILTER.FPP":               "0.001",
		"owner":                                  "data-team",
		"delta.universalFormat.config.iceberg.X": "y",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"delta.targetFileSize":                   "1048576",
		"delta.appendOnly":                       "true",
		"delta.deletedFileRetentionDuration":     "interval 7 days",
		"delta.logRetentionDuration":             "interval 60 days",
		"delta.constraints.Positive":             "id > 0",
		"skiplake.bloomFilter.fpp":               "0.001",
		"owner":                                  "data-team",
		"delta.universalformat.config.iceberg.x": "y",
	}
	if !reflect.DeepEqual(got.Set, want) {
		t.Fatalf("set %v\nwant %v", got.Set, want)
	}
	if !slices.Equal(got.Features, []string{"deletionVectors", "v2Checkpoint"}) || got.MinWriterVersion != 3 || got.MinReaderVersion != 0 {
		t.Fatalf("features %v versions %d/%d", got.Features, got.MinReaderVersion, got.MinWriterVersion)
	}
}

func TestNormalizePropertiesRefuses(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  error
		msg   string
	}{
		{"unknown delta key", map[string]string{"delta.targetFileSizee": "1mb"}, ErrUnknownProperty, "delta.targetFileSizee"},
		{"unknown skiplake key", map[string]string{"skiplake.bloomFilter.column": "id"}, ErrUnknownProperty, "skiplake.bloomFilter.column"},
		{"internal key", map[string]string{"delta.columnMapping.maxColumnId": "7"}, ErrInvalidProperty, "internal"},
		{"garbage retention", map[string]string{"delta.deletedFileRetentionDuration": "garbage"}, ErrInvalidProperty, "calendar interval"},
		{"months are not an interval Delta accepts", map[string]string{"delta.logRetentionDuration": "interval 1 month"}, ErrInvalidProperty, "months"},
		{"bad boolean", map[string]string{"delta.appendOnly": "yes"}, ErrInvalidProperty, "true or false"},
		{"bad size", map[string]string{"delta.targetFileSize": "1.5mb"}, ErrInvalidProperty, "positive size"},
		{"zero checkpoint interval", map[string]string{"delta.checkpointInterval": "0"}, ErrInvalidProperty, "positive integer"},
		{"num indexed cols below -1", map[string]string{"delta.dataSkippingNumIndexedCols": "-2"}, ErrInvalidProperty, "at least -1"},
		{"unknown checkpoint policy", map[string]string{"delta.checkpointPolicy": "v3"}, ErrInvalidProperty, "classic or v2"},
		{"unknown column mapping mode", map[string]string{"delta.columnMapping.mode": "position"}, ErrInvalidProperty, "none, name or id"},
		{"unknown feature", map[string]string{"delta.feature.teleportation": "supported"}, ErrUnsupportedFeature, "teleportation"},
		{"feature value", map[string]string{"delta.feature.deletionVectors": "disabled"}, ErrInvalidProperty, "supported or enabled"},
		{"reader version", map[string]string{"delta.minReaderVersion": "4"}, ErrInvalidProperty, "1 to 3"},
		{"same key twice", map[string]string{"delta.appendOnly": "true", "DELTA.APPENDONLY": "false"}, ErrInvalidProperty, "given twice"},
		{"fpp out of range", map[string]string{"skiplake.bloomFilter.fpp": "0.9"}, ErrInvalidProperty, "false-positive rate"},
		{"isolation level", map[string]string{"delta.isolationLevel": "SnapshotIsolation"}, ErrInvalidProperty, "Serializable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NormalizeProperties(c.props)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.want, c.msg)
			}
		})
	}
	// Every problem is reported at once.
	_, err := NormalizeProperties(map[string]string{"delta.appendOnly": "maybe", "delta.nope": "1", PropTargetFileSize: "-1"})
	if !errors.Is(err, ErrInvalidProperty) {
		t.Errorf("got %v, want ErrInvalidProperty", err)
	}
	for _, k := range []string{"delta.appendOnly", "delta.nope", PropTargetFileSize} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
}

const propsSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"flag","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"b","type":"binary","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
	`{"name":"p","type":"string","nullable":true,"metadata":{}}]}`

func propsMetadata() Metadata {
	return Metadata{ID: "x", SchemaString: propsSchema, PartitionColumns: []string{"p"}, Configuration: map[string]string{}}
}

var legacy12 = Protocol{MinReaderVersion: 1, MinWriterVersion: 2}

func TestPrepareCreateProtocols(t *testing.T) {
	ntz := strings.Replace(propsSchema, `"type":"long"`, `"type":"timestamp_ntz"`, 1)
	cases := []struct {
		name   string
		schema string
		props  map[string]string
		want   Protocol
	}{
		{"no feature: reader 1 / writer 2", propsSchema, nil, legacy12},
		{"append-only is implied by writer 2", propsSchema, map[string]string{"delta.appendOnly": "true"}, legacy12},
		{"deletion vectors: exactly that feature, as Spark creates it", propsSchema, map[string]string{"delta.enableDeletionVectors": "true"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}},
		{"timestamp_ntz column", ntz, nil,
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz"}}},
		{"append-only with deletion vectors lists both", propsSchema, map[string]string{"delta.appendOnly": "true", "delta.enableDeletionVectors": "true"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"appendOnly", "deletionVectors"}}},
		{"a writer-only feature keeps reader 1", propsSchema, map[string]string{"delta.feature.domainMetadata": "supported"},
			Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"domainMetadata"}}},
		{"v2 checkpoints", propsSchema, map[string]string{"delta.checkpointPolicy": "v2"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md := propsMetadata()
			md.SchemaString = c.schema
			p, _, err := PrepareCreate(md, c.props)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, c.want) {
				t.Fatalf("protocol %+v, want %+v", p, c.want)
			}
		})
	}
}

func TestPrepareCreateRefuses(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  error
		msg   string
	}{
		{"stats column that does not exist", map[string]string{"delta.dataSkippingStatsColumns": "nosuch"}, ErrInvalidProperty, `"nosuch" does not exist`},
		{"stats column of a type without statistics", map[string]string{"delta.dataSkippingStatsColumns": "flag"}, ErrInvalidProperty, "boolean"},
		{"stats struct with an ineligible leaf", map[string]string{"delta.dataSkippingStatsColumns": "st"}, ErrInvalidProperty, "st.b"},
		{"stats column named twice", map[string]string{"delta.dataSkippingStatsColumns": "id, ID"}, ErrInvalidProperty, "more than once"},
		{"stats on a partition column", map[string]string{"delta.dataSkippingStatsColumns": "p"}, ErrInvalidProperty, "partition column"},
		{"stats path through a non-struct", map[string]string{"delta.dataSkippingStatsColumns": "id.x"}, ErrInvalidProperty, "not a struct"},
		{"bloom column that does not exist", map[string]string{"skiplake.bloomFilter.columns": "zz"}, ErrInvalidProperty, `"zz"`},
		{"bloom on a partition column", map[string]string{"skiplake.bloomFilter.columns": "p"}, ErrInvalidProperty, "partition column"},
		{"bloom on a struct", map[string]string{"skiplake.bloomFilter.columns": "st"}, ErrInvalidProperty, "primitive"},
		{"log retention below file retention", map[string]string{"delta.deletedFileRetentionDuration": "interval 60 days"}, ErrInvalidProperty, "delta.logRetentionDuration"},
		{"row tracking while suspended", map[string]string{"delta.enableRowTracking": "true", "delta.rowTrackingSuspended": "true"}, ErrInvalidProperty, "suspended"},
		{"check constraints as properties", map[string]string{"delta.constraints.pos": "id > 0"}, ErrInvalidProperty, "ADD CONSTRAINT"},
		{"in-commit timestamps", map[string]string{"delta.enableInCommitTimestamps": "true"}, ErrUnsupportedFeature, "inCommitTimestamp"},
		{"a feature skiplake cannot write", map[string]string{"delta.feature.icebergCompatV1": "supported"}, ErrUnsupportedFeature, "icebergCompatV1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := PrepareCreate(propsMetadata(), c.props)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.want, c.msg)
			}
		})
	}
}

func TestPrepareCreateValidColumns(t *testing.T) {
	_, md, err := PrepareCreate(propsMetadata(), map[string]string{
		"delta.dataSkippingStatsColumns": "ID, st.A, s",
		"skiplake.bloomFilter.columns":   "S, id",
	})
	if err != nil {
		t.Fatal(err)
	}
	if md.Configuration[PropBloomFilterColumns] != "s,id" {
		t.Fatalf("bloom columns stored as %q, want the schema's spelling", md.Configuration[PropBloomFilterColumns])
	}
}

func TestPrepareCreateColumnMapping(t *testing.T) {
	for _, mode := range []string{"name", "id"} {
		_, md, err := PrepareCreate(propsMetadata(), map[string]string{"delta.columnMapping.mode": strings.ToUpper(mode)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := md.Schema()
		if err != nil {
			t.Fatal(err)
		}
		ids := map[int64]bool{}
		var walk func(st *StructType)
		walk = func(st *StructType) {
			for i := range st.Fields {
				f := &st.Fields[i]
				id, ok := f.FieldID()
				if !ok || ids[id] || !strings.HasPrefix(f.PhysicalName(), "col-") {
					t.Fatalf("field %s: id %d (%v), physical %q", f.Name, id, ok, f.PhysicalName())
				}
				ids[id] = true
				if sub, ok := f.Type.(*StructType); ok {
					walk(sub)
				}
			}
		}
		walk(s)
		if md.Configuration[PropColumnMappingMode] != mode || md.Configuration[PropColumnMappingMaxColumnID] != "7" {
			t.Fatalf("configuration %v", md.Configuration)
		}
	}
}

func TestApplyPropertyChangeUpgradesLegacyProtocol(t *testing.T) {
	cases := []struct {
		name string
		p    Protocol
		set  map[string]string
		want Protocol
	}{
		{"deletion vectors on 1/2 list the legacy features", legacy12, map[string]string{"delta.enableDeletionVectors": "true"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"appendOnly", "invariants", "deletionVectors"}}},
		{"v2 checkpoints on 1/2, as Spark's golden table", legacy12, map[string]string{"delta.checkpointPolicy": "v2"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"appendOnly", "invariants", "v2Checkpoint"}}},
		{"append-only on 1/2 needs nothing", legacy12, map[string]string{"delta.appendOnly": "true"}, legacy12},
		{"append-only on table features adds the feature", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}},
			map[string]string{"delta.appendOnly": "true"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "appendOnly"}}},
		{"column mapping on 1/2", legacy12, map[string]string{"delta.columnMapping.mode": "name"},
			Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping"}, WriterFeatures: []string{"appendOnly", "invariants", "columnMapping"}}},
		{"an explicit legacy version stays legacy", legacy12, map[string]string{"delta.minWriterVersion": "3"}, Protocol{MinReaderVersion: 1, MinWriterVersion: 3}},
		{"a writer feature on 1/2 keeps reader 1", legacy12, map[string]string{"delta.feature.domainMetadata": "supported"},
			Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "invariants", "domainMetadata"}}},
		{"a plain property changes nothing", legacy12, map[string]string{"delta.checkpointInterval": "5"}, legacy12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, md, err := ApplyPropertyChange(c.p, propsMetadata(), PropertyChange{Set: c.set})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, c.want) {
				t.Fatalf("protocol %+v, want %+v", p, c.want)
			}
			if err := CheckWritable(p, md); err != nil {
				t.Fatalf("result not writable: %v", err)
			}
			for k := range md.Configuration {
				if strings.HasPrefix(k, PrefixFeature) || k == PropMinWriterVersion {
					t.Fatalf("%s stored in the configuration", k)
				}
			}
		})
	}
}

func TestApplyPropertyChangeColumnMappingTransitions(t *testing.T) {
	p, md, err := ApplyPropertyChange(legacy12, propsMetadata(), PropertyChange{Set: map[string]string{"delta.columnMapping.mode": "name"}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := md.Schema()
	// Existing columns keep their names as physical names: the files already written stay readable.
	for _, f := range s.Fields {
		if f.PhysicalName() != f.Name {
			t.Fatalf("field %s got physical name %q", f.Name, f.PhysicalName())
		}
	}
	if md.Configuration[PropColumnMappingMaxColumnID] != "7" {
		t.Fatalf("maxColumnId %q", md.Configuration[PropColumnMappingMaxColumnID])
	}
	for _, bad := range []map[string]string{{"delta.columnMapping.mode": "none"}, {"delta.columnMapping.mode": "id"}} {
		if _, _, err := ApplyPropertyChange(p, md, PropertyChange{Set: bad}); !errors.Is(err, ErrInvalidProperty) || !strings.Contains(err.Error(), "only none to name") {
			t.Fatalf("%v: err = %v", bad, err)
		}
	}
	if _, _, err := ApplyPropertyChange(p, md, PropertyChange{Unset: []string{"delta.columnmapping.mode"}}); !errors.Is(err, ErrInvalidProperty) {
		t.Fatalf("unset column mapping: err = %v", err)
	}
	if _, _, err := ApplyPropertyChange(legacy12, propsMetadata(), PropertyChange{Set: map[string]string{"delta.columnMapping.mode": "id"}}); !errors.Is(err, ErrInvalidProperty) {
		t.Fatalf("none to id on an existing table: err = %v", err)
	}
}

func TestApplyPropertyChangeKeepsExistingConfiguration(t *testing.T) {
	md := propsMetadata()
	// What a Spark table may carry, and an invalid value from another writer: setting
	// another key re-validates neither.
	md.Configuration = map[string]string{
		"delta.rowTracking.materializedRowIdColumnName": "_row-id-col-1",
		"delta.checkpointInterval":                      "often",
		"delta.TargetFileSize":                          "1mb",
	}
	_, out, err := ApplyPropertyChange(legacy12, md, PropertyChange{Set: map[string]string{"delta.targetfilesize": "2mb"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"delta.rowTracking.materializedRowIdColumnName": "_row-id-col-1",
		"delta.checkpointInterval":                      "often",
		"delta.targetFileSize":                          "2097152", // the old spelling is replaced
	}
	if !reflect.DeepEqual(out.Configuration, want) {
		t.Fatalf("configuration %v, want %v", out.Configuration, want)
	}
	if len(md.Configuration) != 3 || md.Configuration["delta.TargetFileSize"] != "1mb" {
		t.Fatal("the input metadata was modified")
	}
	// The invalid value is fixed by setting it, or removed by unsetting it.
	_, out, err = ApplyPropertyChange(legacy12, md, PropertyChange{Unset: []string{"DELTA.CHECKPOINTINTERVAL", "delta.TargetFileSize"}})
	if err != nil || len(out.Configuration) != 1 {
		t.Fatalf("unset: %v %v", out.Configuration, err)
	}
}

func TestApplyPropertyChangeUnset(t *testing.T) {
	md := propsMetadata()
	md.Configuration = map[string]string{"delta.appendOnly": "true", "owner": "me"}
	if _, _, err := ApplyPropertyChange(legacy12, md, PropertyChange{Unset: []string{"delta.checkpointInterval"}}); !errors.Is(err, ErrInvalidProperty) || !strings.Contains(err.Error(), "not set") {
		t.Fatalf("unset of an absent key: %v", err)
	}
	_, out, err := ApplyPropertyChange(legacy12, md, PropertyChange{Unset: []string{"delta.checkpointInterval", "DELTA.APPENDONLY"}, IfExists: true})
	if err != nil || !reflect.DeepEqual(out.Configuration, map[string]string{"owner": "me"}) {
		t.Fatalf("unset if exists: %v %v", out.Configuration, err)
	}
	for _, k := range []string{"delta.feature.appendOnly", "delta.minReaderVersion", "delta.columnMapping.maxColumnId"} {
		if _, _, err := ApplyPropertyChange(legacy12, md, PropertyChange{Unset: []string{k}, IfExists: true}); !errors.Is(err, ErrInvalidProperty) {
			t.Errorf("unset %s: %v", k, err)
		}
	}
}

func TestUpgradeProtocolIsMonotonic(t *testing.T) {
	p := Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
	got, err := UpgradeProtocol(p, 0, 0, FeatureDeletionVectors)
	if err != nil {
		t.Fatal(err)
	}
	want := Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{"columnMapping", "deletionVectors"},
		WriterFeatures: []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping", "deletionVectors"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Every feature the old protocol supported is still supported.
	for _, f := range knownFeatures {
		if p.Supports(f) && !got.Supports(f) {
			t.Errorf("feature %s lost", f)
		}
	}
	// Nothing to do: the protocol is returned as it is.
	same, err := UpgradeProtocol(got, 0, 0, FeatureColumnMapping)
	if err != nil || !reflect.DeepEqual(same, got) {
		t.Fatalf("no-op upgrade changed %+v to %+v (%v)", got, same, err)
	}
	if _, err := UpgradeProtocol(p, 0, 0, "warpDrive"); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("unknown feature: %v", err)
	}
}

func TestAppendOnlyCheckReadsTheTypedValue(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cfg  map[string]string
		want bool // refused
	}{
		{map[string]string{"delta.appendOnly": "true"}, true},
		{map[string]string{"delta.appendOnly": "TRUE"}, true}, // Spark's toBoolean ignores case
		{map[string]string{"delta.appendOnly": "nope"}, true}, // unparseable: may be append-only
		{map[string]string{"delta.appendonly": "true"}, false},
		{map[string]string{"delta.appendOnly": "false"}, false},
	} {
		l := New(memStore())
		createTable(t, l, c.cfg, "a.parquet")
		snap, err := l.Snapshot(ctx, -1)
		if err != nil {
			t.Fatal(err)
		}
		txn := snap.NewTransaction(TxnOptions{})
		txn.Remove(&Remove{Path: "a.parquet", DataChange: true})
		_, err = txn.Commit(ctx, CommitInfo{Operation: "DELETE"})
		if refused := errors.Is(err, ErrInvalidTransaction); refused != c.want {
			t.Errorf("%v: err = %v, want refused=%v", c.cfg, err, c.want)
		}
	}
}

func TestV2CheckpointWrittenAndRead(t *testing.T) {
	ctx := context.Background()
	st := memStore()
	l := New(st)
	md := testMetadata()
	p, md, err := PrepareCreate(md, map[string]string{"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Create(ctx, md, p, []*Add{newAdd("a.parquet", 5)}, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, _ := l.Snapshot(ctx, -1)
	txn := snap.NewTransaction(TxnOptions{})
	now := time.Now().UnixMilli()
	txn.Remove(&Remove{Path: "a.parquet", DataChange: true, DeletionTimestamp: &now, Stats: statsJSON(5)})
	txn.Add(newAdd("b.parquet", 7))
	txn.SetTxn("app", 3)
	if _, err := txn.Commit(ctx, CommitInfo{}); err != nil {
		t.Fatal(err)
	}
	snap, _ = l.Snapshot(ctx, -1)
	txn = snap.NewTransaction(TxnOptions{})
	txn.Add(newAdd("c.parquet", 1))
	v, err := txn.Commit(ctx, CommitInfo{})
	if err != nil || v != 2 || txn.CheckpointErr() != nil {
		t.Fatalf("commit %d: %v, checkpoint: %v", v, err, txn.CheckpointErr())
	}
	objs, err := st.List(ctx, "_delta_log/", "")
	if err != nil {
		t.Fatal(err)
	}
	var cp string
	for _, o := range objs {
		if strings.HasPrefix(o.Path, "_delta_log/00000000000000000002.checkpoint.") && strings.HasSuffix(o.Path, ".json") {
			cp = o.Path
		}
		if strings.HasSuffix(o.Path, ".checkpoint.parquet") {
			t.Fatalf("classic checkpoint %s written for a v2Checkpoint table", o.Path)
		}
	}
	if cp == "" {
		t.Fatalf("no v2 checkpoint in %v", objs)
	}
	data, _ := st.Get(ctx, cp)
	acts, err := ParseCommit(cp, strings.NewReader(string(data)))
	if err != nil || acts[0].CheckpointMetadata == nil || acts[0].CheckpointMetadata.Version != 2 {
		t.Fatalf("first action %+v, %v", acts, err)
	}
	// Drop the commits the checkpoint covers: a fresh reader must rebuild the
	// snapshot from the checkpoint alone.
	for _, c := range []string{CommitPath(0), CommitPath(1), CommitPath(2)} {
		if err := st.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := New(st).Snapshot(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got.CheckpointVersion() != 2 || got.NumFiles() != 2 || got.Files()[0].Path != "b.parquet" || len(got.Tombstones()) != 1 {
		t.Fatalf("from checkpoint: cp %d, files %v, tombstones %v", got.CheckpointVersion(), got.Files(), got.Tombstones())
	}
	if tv, ok := got.TxnVersion("app"); !ok || tv != 3 || !got.Protocol().Supports(FeatureV2Checkpoint) {
		t.Fatalf("txn %d %v, protocol %+v", tv, ok, got.Protocol())
	}
}

// FuzzNormalizeProperties checks that whatever is accepted is stored canonically:
// normalising the result again changes nothing, and parsing it finds no invalid
// value. Whatever is refused is refused with a classified error.
func FuzzNormalizeProperties(f *testing.F) {
	for _, kv := range [][2]string{
		{"DELTA.TARGETFILESIZE", "1mb"}, {"delta.appendOnly", "TRUE"}, {"delta.deletedFileRetentionDuration", "168h"},
		{"delta.logRetentionDuration", "interval 1 day 2 hours"}, {"delta.dataSkippingStatsColumns", "a, `b.c`.d"},
		{"delta.feature.deletionVectors", "supported"}, {"skiplake.bloomFilter.fpp", "1e-3"}, {"owner", "x"},
		{"delta.constraints.c", "a > 0"}, {"delta.checkpointInterval", "+7"}, {"delta.nope", "1"},
	} {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		n, err := NormalizeProperties(map[string]string{k: v})
		if err != nil {
			if !errors.Is(err, ErrInvalidProperty) && !errors.Is(err, ErrUnknownProperty) && !errors.Is(err, ErrUnsupportedFeature) {
				t.Fatalf("%q=%q: unclassified error %v", k, v, err)
			}
			return
		}
		again, err := NormalizeProperties(n.Set)
		if err != nil || !reflect.DeepEqual(again.Set, n.Set) {
			t.Fatalf("%q=%q: normalised %v, again %v, %v", k, v, n.Set, again, err)
		}
		if p := ParseTableProperties(n.Set); len(p.Invalid) != 0 {
			t.Fatalf("%q=%q: stored %v parses with problems %v", k, v, n.Set, p.Invalid)
		}
	})
}

// BenchmarkParseTableProperties measures the once-per-snapshot parse of a
// configuration as Spark tables carry it.
func BenchmarkParseTableProperties(b *testing.B) {
	conf := map[string]string{
		"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "20", "delta.targetFileSize": "134217728",
		"delta.deletedFileRetentionDuration": "interval 7 days", "delta.logRetentionDuration": "interval 30 days",
		"delta.dataSkippingStatsColumns": "a,b,c", "delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "12",
		"delta.rowTracking.materializedRowIdColumnName": "_row-id", "skiplake.bloomFilter.columns": "id",
	}
	b.ReportAllocs()
	for b.Loop() {
		if p := ParseTableProperties(conf); len(p.Invalid) != 0 {
			b.Fatal(p.Invalid)
		}
	}
}
