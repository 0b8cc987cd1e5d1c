package log

import (
	"sort"
	"strconv"
	"strings"
)

// Reader and writer protocol versions this package understands.
const (
	// MaxReaderVersion is the highest minReaderVersion this package reads.
	MaxReaderVersion = 3
	// MaxWriterVersion is the highest minWriterVersion this package writes.
	MaxWriterVersion = 7
)

// Table feature names.
const (
	FeatureAppendOnly            = "appendOnly"
	FeatureInvariants            = "invariants"
	FeatureCheckConstraints      = "checkConstraints"
	FeatureChangeDataFeed        = "changeDataFeed"
	FeatureGeneratedColumns      = "generatedColumns"
	FeatureColumnMapping         = "columnMapping"
	FeatureIdentityColumns       = "identityColumns"
	FeatureDeletionVectors       = "deletionVectors"
	FeatureRowTracking           = "rowTracking"
	FeatureTimestampNTZ          = "timestampNtz"
	FeatureDomainMetadata        = "domainMetadata"
	FeatureV2Checkpoint          = "v2Checkpoint"
	FeatureIcebergCompatV1       = "icebergCompatV1"
	FeatureIcebergCompatV2       = "icebergCompatV2"
	FeatureClustering            = "clustering"
	FeatureLiquid                = "liquid"
	FeatureVacuumProtocolCheck   = "vacuumProtocolCheck"
	FeatureTypeWidening          = "typeWidening"
	FeatureTypeWideningPreview   = "typeWidening-preview"
	FeatureInCommitTimestamp     = "inCommitTimestamp"
	FeatureVariantType           = "variantType"
	FeatureCheckpointProtection  = "checkpointProtection"
	FeatureCollations            = "collations-preview"
	FeatureAllowColumnDefaults   = "allowColumnDefaults"
	FeatureDeletionVectorsLegacy = "deletionVectors-legacy"
)

var supportedReader = []string{
	FeatureColumnMapping, FeatureDeletionVectors, FeatureTimestampNTZ, FeatureTypeWidening,
	FeatureTypeWideningPreview, FeatureV2Checkpoint, FeatureVacuumProtocolCheck,
}

// Writer features this package writes correctly. columnMapping is written by
// the data-file layer (physical names, field ids). invariants, checkConstraints,
// changeDataFeed, generatedColumns and identityColumns are accepted only when
// unused (see CheckWritable): legacy writer versions 4-6 imply them for every table,
// used or not. rowTracking, clustering and v2Checkpoint are refused.
var supportedWriter = []string{
	FeatureAppendOnly, FeatureInvariants, FeatureCheckConstraints, FeatureTimestampNTZ,
	FeatureDomainMetadata, FeatureDeletionVectors, FeatureVacuumProtocolCheck,
	FeatureColumnMapping, FeatureChangeDataFeed, FeatureGeneratedColumns, FeatureIdentityColumns,
}

// SupportedReaderFeatures returns the reader features this package's readers accept.
func SupportedReaderFeatures() []string { return append([]string(nil), supportedReader...) }

// SupportedWriterFeatures returns the writer features this package can write.
func SupportedWriterFeatures() []string { return append([]string(nil), supportedWriter...) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CheckReadable returns an *UnsupportedFeatureError (Reader true) when p
// needs a reader version above 3 or a reader feature this package does not
// implement (L4). Legacy reader version 2 implies columnMapping, which is supported.
func CheckReadable(p Protocol) error {
	var bad []string
	if p.MinReaderVersion > MaxReaderVersion || p.MinReaderVersion < 1 {
		bad = append(bad, "minReaderVersion="+strconv.Itoa(p.MinReaderVersion))
	}
	if p.MinReaderVersion == 3 {
		for _, f := range p.ReaderFeatures {
			if !contains(supportedReader, f) {
				bad = append(bad, f)
			}
		}
	}
	if len(bad) > 0 {
		return &UnsupportedFeatureError{Features: bad, Reader: true}
	}
	return nil
}

// WriterFeatures returns the writer features p enables: the explicit list
// for writer version 7, else the features implied by the legacy version
// (2: appendOnly, invariants; 3: +checkConstraints; 4: +changeDataFeed,
// generatedColumns; 5: +columnMapping; 6: +identityColumns). Reader features
// of reader version 3 are included (a writer must implement them too).
func WriterFeatures(p Protocol) []string {
	var out []string
	if p.MinWriterVersion >= 7 {
		out = append(out, p.WriterFeatures...)
	} else {
		legacy := [][]string{
			2: {FeatureAppendOnly, FeatureInvariants},
			3: {FeatureCheckConstraints},
			4: {FeatureChangeDataFeed, FeatureGeneratedColumns},
			5: {FeatureColumnMapping},
			6: {FeatureIdentityColumns},
		}
		for v := 2; v <= p.MinWriterVersion && v < len(legacy); v++ {
			out = append(out, legacy[v]...)
		}
	}
	if p.MinReaderVersion == 3 {
		for _, f := range p.ReaderFeatures {
			if !contains(out, f) {
				out = append(out, f)
			}
		}
	} else if p.MinReaderVersion == 2 && !contains(out, FeatureColumnMapping) {
		out = append(out, FeatureColumnMapping)
	}
	return out
}

// CheckWritable returns an *UnsupportedFeatureError (Reader false) when this
// package cannot write a table with protocol p and metadata md (L4): the
// table must be readable, the writer version at most 7, every writer feature
// supported, and the features supported only when unused: invariants
// when no column carries delta.invariants, check constraints when no
// delta.constraints.* property is set, change data feed when
// delta.enableChangeDataFeed is not true, generated columns when no column has
// delta.generationExpression, identity columns when no column has delta.identity.*
// metadata. Column mapping (none, name or id) is writable.
func CheckWritable(p Protocol, md Metadata) error {
	if err := CheckReadable(p); err != nil {
		ue := err.(*UnsupportedFeatureError)
		return &UnsupportedFeatureError{Features: ue.Features, Reader: false}
	}
	var bad []string
	if p.MinWriterVersion > MaxWriterVersion || p.MinWriterVersion < 1 {
		bad = append(bad, "minWriterVersion="+strconv.Itoa(p.MinWriterVersion))
	}
	for _, f := range WriterFeatures(p) {
		if !contains(supportedWriter, f) && !contains(bad, f) {
			bad = append(bad, f)
		}
	}
	// Properties that need features we do not write, whatever the protocol says.
	if strings.EqualFold(md.Configuration["delta.enableChangeDataFeed"], "true") && !contains(bad, FeatureChangeDataFeed) {
		bad = append(bad, FeatureChangeDataFeed)
	}
	if strings.EqualFold(md.Configuration["delta.enableRowTracking"], "true") && !contains(bad, FeatureRowTracking) {
		bad = append(bad, FeatureRowTracking)
	}
	var keys []string
	for k := range md.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		bad = append(bad, FeatureCheckConstraints+" ("+strings.Join(keys, ", ")+")")
	}
	if md.SchemaString != "" {
		if s, err := ParseSchema(md.SchemaString); err == nil {
			for _, u := range []struct{ feature, key string }{
				{FeatureInvariants, "delta.invariants"},
				{FeatureGeneratedColumns, "delta.generationExpression"},
				{FeatureIdentityColumns, "delta.identity."},
			} {
				var cols []string
				collectMetadata(s, "", u.key, &cols)
				if len(cols) > 0 {
					bad = append(bad, u.feature+" ("+strings.Join(cols, ", ")+")")
				}
			}
		}
	}
	if len(bad) > 0 {
		return &UnsupportedFeatureError{Features: bad, Reader: false}
	}
	return nil
}

// collectMetadata appends the paths of the columns (nested struct fields included)
// whose metadata has key, or, for a key ending in '.', a key with that prefix.
func collectMetadata(s *StructType, path, key string, out *[]string) {
	for _, f := range s.Fields {
		fp := joinPath(path, f.Name)
		for k := range f.Metadata {
			if k == key || (strings.HasSuffix(key, ".") && strings.HasPrefix(k, key)) {
				*out = append(*out, fp)
				break
			}
		}
		if sub, ok := f.Type.(*StructType); ok {
			collectMetadata(sub, fp, key, out)
		}
	}
}
