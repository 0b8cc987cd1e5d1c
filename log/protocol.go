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

// knownFeatures are the table feature names of PROTOCOL.md ("Valid Feature Names in
// Table Features"; and those Delta
// Spark writes), for delta.feature.<name> properties.
var knownFeatures = []string{
	FeatureAppendOnly, FeatureInvariants, FeatureCheckConstraints, FeatureChangeDataFeed,
	FeatureGeneratedColumns, FeatureColumnMapping, FeatureIdentityColumns, FeatureDeletionVectors,
	FeatureRowTracking, FeatureTimestampNTZ, FeatureDomainMetadata, FeatureV2Checkpoint,
	FeatureIcebergCompatV1, FeatureIcebergCompatV2, FeatureClustering, FeatureVacuumProtocolCheck,
	FeatureTypeWidening, FeatureTypeWideningPreview, FeatureInCommitTimestamp, FeatureVariantType,
	FeatureCheckpointProtection, FeatureAllowColumnDefaults, "variantShredding", "catalogManaged",
}

// readerWriterFeatures are the features listed in both readerFeatures and
// writerFeatures (PROTOCOL.md "Valid Feature Names in Table Features"); every other
// feature is a writer feature only.
var readerWriterFeatures = []string{
	FeatureColumnMapping, FeatureDeletionVectors, FeatureTimestampNTZ, FeatureV2Checkpoint,
	FeatureVacuumProtocolCheck, FeatureTypeWidening, FeatureTypeWideningPreview, FeatureVariantType,
	"variantShredding", "catalogManaged",
}

// IsReaderWriterFeature reports whether feature must be listed in readerFeatures
// as well as writerFeatures.
func IsReaderWriterFeature(feature string) bool { return contains(readerWriterFeatures, feature) }

var supportedReader = []string{
	FeatureColumnMapping, FeatureDeletionVectors, FeatureTimestampNTZ, FeatureTypeWidening,
	FeatureTypeWideningPreview, FeatureV2Checkpoint, FeatureVacuumProtocolCheck,
}

// Writer features this package's commits honour. columnMapping is accepted at
// this level (commits keep the schema's ids and physical names; ADD COLUMN assigns
// new ones) and the data-file layer writes the physical names and field ids.
// v2Checkpoint tables get v2 checkpoints. rowTracking is written (Transaction
// assigns row IDs, see rowtracking.go), as is clustering (and Databricks' preview
// feature liquid, whose domain is kept as is). typeWidening is written (ALTER
// records delta.typeChanges; schema changes keep it; files are written with the
// current types and readers widen older ones); its preview feature, whose changes
// also record the table version, is not. changeDataFeed and generated/identity
// columns are refused (but see legacyUnused). invariants and checkConstraints are
// accepted only when unused (see CheckWritable).
var supportedWriter = []string{
	FeatureAppendOnly, FeatureInvariants, FeatureCheckConstraints, FeatureTimestampNTZ,
	FeatureDomainMetadata, FeatureDeletionVectors, FeatureVacuumProtocolCheck,
	FeatureColumnMapping, FeatureV2Checkpoint,
	FeatureRowTracking, FeatureClustering, FeatureLiquid, FeatureTypeWidening,
}

// requiredFeatures are the features a feature depends on: supporting it supports
// them too (Delta Spark's requiredFeatures). Row tracking keeps its high-water mark
// and clustering its columns in domain metadata.
var requiredFeatures = map[string][]string{
	FeatureRowTracking: {FeatureDomainMetadata},
	FeatureClustering:  {FeatureDomainMetadata},
}

// withRequired returns features followed by the features they require that are
// not listed yet.
func withRequired(features []string) []string {
	out := append([]string(nil), features...)
	for i := 0; i < len(out); i++ {
		for _, r := range requiredFeatures[out[i]] {
			if !contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// legacyUnused are the features legacy writer versions 4-6 imply for every table,
// used or not, which a write honours by their not being used: no change data feed
// enabled, no generation expression, no identity column (CheckWritable checks). So a
// table Spark created at reader 2 / writer 5 for column mapping is writable. Listed
// explicitly by a writer-7 table, they still need supportedWriter.
var legacyUnused = []string{FeatureChangeDataFeed, FeatureGeneratedColumns, FeatureIdentityColumns}

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
		out = legacyWriterFeatures(p.MinWriterVersion)
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

// legacyWriterFeatures returns the features a legacy writer version implies
// (2: appendOnly, invariants; 3: +checkConstraints; 4: +changeDataFeed,
// generatedColumns; 5: +columnMapping; 6: +identityColumns).
func legacyWriterFeatures(version int) []string {
	legacy := [][]string{
		2: {FeatureAppendOnly, FeatureInvariants},
		3: {FeatureCheckConstraints},
		4: {FeatureChangeDataFeed, FeatureGeneratedColumns},
		5: {FeatureColumnMapping},
		6: {FeatureIdentityColumns},
	}
	var out []string
	for v := 2; v <= version && v < len(legacy); v++ {
		out = append(out, legacy[v]...)
	}
	return out
}

// legacyReaderFeatures returns the reader features a legacy reader version
// implies (2: columnMapping).
func legacyReaderFeatures(version int) []string {
	if version >= 2 {
		return []string{FeatureColumnMapping}
	}
	return nil
}

// Supports reports whether protocol p supports feature: listed (or implied by a
// legacy version) on the writer side, and for reader-writer features on the
// reader side too.
func (p Protocol) Supports(feature string) bool {
	var writer, reader []string
	if p.MinWriterVersion >= 7 {
		writer = p.WriterFeatures
	} else {
		writer = legacyWriterFeatures(p.MinWriterVersion)
	}
	if !contains(writer, feature) {
		return false
	}
	if !IsReaderWriterFeature(feature) {
		return true
	}
	if p.MinReaderVersion >= 3 {
		reader = p.ReaderFeatures
	} else {
		reader = legacyReaderFeatures(p.MinReaderVersion)
	}
	return contains(reader, feature)
}

// NewProtocol returns the protocol of a new table that supports features (and at
// least the requested versions; 0 means none): reader 1 / writer 2 — readable by
// every Delta reader — when no feature beyond what the legacy versions imply is
// needed, else table features listing exactly the features (writer 7, and reader
// 3 with the reader-writer features among them), as Delta Spark creates tables.
// Unknown feature names are an error wrapping ErrUnsupportedFeature.
func NewProtocol(minReader, minWriter int, features ...string) (Protocol, error) {
	return upgradeProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, minReader, minWriter, true, features)
}

// UpgradeProtocol returns p raised to support features and at least the
// requested versions (0 means none), or p itself when it already does. A legacy
// protocol stays legacy when a higher legacy version covers the request (only
// versions asked for with minReader/minWriter); otherwise it moves to table
// features (PROTOCOL.md "Table Features for New and Existing Tables"): writer 7
// listing every feature the legacy writer version implied — a writer must assume
// they were used — plus the new ones, and reader 3 listing the legacy reader's
// implied features plus the new reader-writer ones when any is needed. Features
// are never removed. Unknown feature names are an error wrapping
// ErrUnsupportedFeature.
func UpgradeProtocol(p Protocol, minReader, minWriter int, features ...string) (Protocol, error) {
	return upgradeProtocol(p, minReader, minWriter, false, features)
}

func upgradeProtocol(p Protocol, minReader, minWriter int, creating bool, features []string) (Protocol, error) {
	features = withRequired(features)
	for _, f := range features {
		if !contains(knownFeatures, f) {
			return p, &UnsupportedFeatureError{Features: []string{f}}
		}
	}
	if minReader == 3 && minWriter < 7 {
		minWriter = 7 // reader 3 needs writer 7
	}
	// A legacy protocol stays legacy when legacy versions cover everything.
	if p.MinWriterVersion < 7 && minWriter < 7 && minReader < 3 {
		cand := Protocol{MinReaderVersion: max(p.MinReaderVersion, minReader), MinWriterVersion: max(p.MinWriterVersion, minWriter)}
		ok := true
		for _, f := range features {
			ok = ok && cand.Supports(f)
		}
		if ok {
			return cand, nil
		}
	}
	var writer, reader []string
	switch {
	case p.MinWriterVersion >= 7:
		writer = append(writer, p.WriterFeatures...)
	case !creating:
		writer = legacyWriterFeatures(p.MinWriterVersion)
	}
	switch {
	case p.MinReaderVersion >= 3:
		reader = append(reader, p.ReaderFeatures...)
	case !creating:
		reader = legacyReaderFeatures(p.MinReaderVersion)
	}
	// Versions asked for explicitly imply their legacy features.
	if minWriter < 7 {
		features = append(legacyWriterFeatures(minWriter), features...)
	}
	if minReader < 3 {
		features = append(legacyReaderFeatures(minReader), features...)
	}
	changed := p.MinWriterVersion < 7 || (minReader == 3 && p.MinReaderVersion < 3)
	for _, f := range features {
		if !contains(writer, f) {
			writer = append(writer, f)
			changed = true
		}
		if IsReaderWriterFeature(f) && !contains(reader, f) {
			reader = append(reader, f)
			changed = true
		}
	}
	if !changed {
		return p, nil
	}
	out := Protocol{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: 7, WriterFeatures: writer}
	if creating {
		out.MinReaderVersion = 1
	}
	if len(reader) > 0 || minReader == 3 || p.MinReaderVersion >= 3 {
		out.MinReaderVersion = 3
		out.ReaderFeatures = reader
		if out.ReaderFeatures == nil {
			out.ReaderFeatures = []string{}
		}
	}
	return out, nil
}

// CheckWritable returns an *UnsupportedFeatureError (Reader false) when this
// package cannot write a table with protocol p and metadata md (L4): the
// table must be readable, the writer version at most 7, every writer feature
// supported (the legacyUnused ones implied by writer versions 4-6 included), and
// features used only where they are supported: no column carrying delta.invariants,
// no delta.constraints.* property, delta.enableChangeDataFeed off, no column with
// delta.generationExpression or delta.identity.* metadata.
func CheckWritable(p Protocol, md Metadata) error {
	return checkWritable(p, md, ParseTableProperties(md.Configuration))
}

// CheckWritable is CheckWritable of the snapshot's protocol and metadata, with the
// properties it parsed once (P1).
func (s *Snapshot) CheckWritable() error {
	return checkWritable(s.protocol, s.metadata, s.Properties())
}

// checkWritable is CheckWritable with md's properties parsed (props).
func checkWritable(p Protocol, md Metadata, props *TableProperties) error {
	if err := CheckReadable(p); err != nil {
		ue := err.(*UnsupportedFeatureError)
		return &UnsupportedFeatureError{Features: ue.Features, Reader: false}
	}
	var bad []string
	if p.MinWriterVersion > MaxWriterVersion || p.MinWriterVersion < 1 {
		bad = append(bad, "minWriterVersion="+strconv.Itoa(p.MinWriterVersion))
	}
	for _, f := range WriterFeatures(p) {
		if p.MinWriterVersion < 7 && contains(legacyUnused, f) {
			continue // refused below if used
		}
		if !contains(supportedWriter, f) && !contains(bad, f) {
			bad = append(bad, f)
		}
	}
	// Properties that need features we do not write, whatever the protocol says.
	if props.EnableChangeDataFeed && !contains(bad, FeatureChangeDataFeed) {
		bad = append(bad, FeatureChangeDataFeed)
	}
	var keys []string
	for name := range props.Constraints {
		keys = append(keys, PrefixConstraints+name)
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

// collectInvariants appends the paths of the columns that carry delta.invariants.
func collectInvariants(s *StructType, path string, out *[]string) {
	collectMetadata(s, path, "delta.invariants", out)
}
