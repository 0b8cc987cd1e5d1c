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

// Writer features this package writes correctly. columnMapping is refused
// for writes (the conservative choice: physical names in data files are the
// table layer's job and not implemented yet), as are changeDataFeed,
// generated/identity columns, rowTracking, clustering and v2Checkpoint.
// invariants and checkConstraints are accepted only when unused (see CheckWritable).
var supportedWriter = []string{
	FeatureAppendOnly, FeatureInvariants, FeatureCheckConstraints, FeatureTimestampNTZ,
	FeatureDomainMetadata, FeatureDeletionVectors, FeatureVacuumProtocolCheck,
}

// vacuumSafe lists the writer features of tables whose files VACUUM understands: with
// any of them every file of the table is still named by add and remove actions (data
// files, deletion vectors) or lives under _delta_log/ (checkpoints, sidecars) or in
// hidden directories VACUUM never enters (_change_data/). A feature outside this list
// may keep files VACUUM would take for garbage (icebergCompatV1/V2 write Iceberg
// metadata beside the data; unknown features may do anything), so VACUUM refuses it.
var vacuumSafe = []string{
	FeatureAppendOnly, FeatureInvariants, FeatureCheckConstraints, FeatureChangeDataFeed,
	FeatureGeneratedColumns, FeatureColumnMapping, FeatureIdentityColumns, FeatureDeletionVectors,
	FeatureRowTracking, FeatureTimestampNTZ, FeatureDomainMetadata, FeatureV2Checkpoint,
	FeatureClustering, FeatureLiquid, FeatureVacuumProtocolCheck, FeatureTypeWidening,
	FeatureTypeWideningPreview, FeatureInCommitTimestamp, FeatureVariantType,
	FeatureCheckpointProtection, FeatureCollations, FeatureAllowColumnDefaults,
}

// CheckVacuumable returns an *UnsupportedFeatureError (Reader false) when VACUUM must
// not run on a table with protocol p: the table must be readable (L4), its writer
// version at most 7, and every writer feature one whose files VACUUM understands.
//
// This is the writer protocol check that Delta Spark's VACUUM has made since
// delta-io/delta#2558 and that the vacuumProtocolCheck feature demands of every client
// (PROTOCOL.md, "Vacuum Protocol Check": VACUUM checks both reader and writer
// features). It is done whether or not the table lists vacuumProtocolCheck, so a
// table with a feature this package does not know is never vacuumed.
func CheckVacuumable(p Protocol) error {
	var bad []string
	if err := CheckReadable(p); err != nil {
		bad = append(bad, err.(*UnsupportedFeatureError).Features...)
	}
	if p.MinWriterVersion > MaxWriterVersion || p.MinWriterVersion < 1 {
		bad = append(bad, "minWriterVersion="+strconv.Itoa(p.MinWriterVersion))
	}
	for _, f := range WriterFeatures(p) {
		if !contains(vacuumSafe, f) && !contains(bad, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return &UnsupportedFeatureError{Features: bad, Reader: false}
	}
	return nil
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
// supported, invariants only when no column carries delta.invariants, check
// constraints only when no delta.constraints.* property is set, and column
// mapping mode none.
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
	if ColumnMappingMode(md.Configuration) != ColumnMappingNone && !contains(bad, FeatureColumnMapping) {
		bad = append(bad, FeatureColumnMapping)
	}
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
			var cols []string
			collectInvariants(s, "", &cols)
			if len(cols) > 0 {
				bad = append(bad, FeatureInvariants+" ("+strings.Join(cols, ", ")+")")
			}
		}
	}
	if len(bad) > 0 {
		return &UnsupportedFeatureError{Features: bad, Reader: false}
	}
	return nil
}

func collectInvariants(s *StructType, path string, out *[]string) {
	for _, f := range s.Fields {
		fp := joinPath(path, f.Name)
		if _, ok := f.Metadata["delta.invariants"]; ok {
			*out = append(*out, fp)
		}
		if sub, ok := f.Type.(*StructType); ok {
			collectInvariants(sub, fp, out)
		}
	}
}
