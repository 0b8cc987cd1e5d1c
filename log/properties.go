package log

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skiplake/skiplake/bloom"
	"github.com/skiplake/skiplake/stats"
)

// Table property keys, in their canonical spelling (Spark's DeltaConfigs, the
// protocol's "Table Properties", and skiplake's own keys). Reads use these exact
// keys; when properties are set, any letter case of a known key is accepted and
// stored under the canonical spelling (see NormalizeProperties).
const (
	PropAppendOnly                         = "delta.appendOnly"
	PropAutoOptimize                       = "delta.autoOptimize"
	PropAutoOptimizeAutoCompact            = "delta.autoOptimize.autoCompact"
	PropAutoOptimizeOptimizeWrite          = "delta.autoOptimize.optimizeWrite"
	PropCheckpointInterval                 = "delta.checkpointInterval"
	PropCheckpointPolicy                   = "delta.checkpointPolicy"
	PropCheckpointRetentionDuration        = "delta.checkpointRetentionDuration"
	PropCheckpointWriteStatsAsJSON         = "delta.checkpoint.writeStatsAsJson"
	PropCheckpointWriteStatsAsStruct       = "delta.checkpoint.writeStatsAsStruct"
	PropColumnMappingMode                  = ColumnMappingModeKey
	PropColumnMappingMaxColumnID           = "delta.columnMapping.maxColumnId"
	PropDataSkippingNumIndexedCols         = "delta.dataSkippingNumIndexedCols"
	PropDataSkippingStatsColumns           = "delta.dataSkippingStatsColumns"
	PropDataSkippingStringPrefixLength     = "delta.dataSkippingStringPrefixLength"
	PropDeletedFileRetentionDuration       = "delta.deletedFileRetentionDuration"
	PropEnableChangeDataFeed               = "delta.enableChangeDataFeed"
	PropEnableDeletionVectors              = "delta.enableDeletionVectors"
	PropEnableExpiredLogCleanup            = "delta.enableExpiredLogCleanup"
	PropEnableIcebergCompatV1              = "delta.enableIcebergCompatV1"
	PropEnableIcebergCompatV2              = "delta.enableIcebergCompatV2"
	PropEnableInCommitTimestamps           = "delta.enableInCommitTimestamps"
	PropEnableRowTracking                  = "delta.enableRowTracking"
	PropEnableTypeWidening                 = "delta.enableTypeWidening"
	PropEnableVariantShredding             = "delta.enableVariantShredding"
	PropIsolationLevel                     = "delta.isolationLevel"
	PropLogRetentionDuration               = "delta.logRetentionDuration"
	PropMinReaderVersion                   = "delta.minReaderVersion"
	PropMinWriterVersion                   = "delta.minWriterVersion"
	PropParquetCompressionCodec            = "delta.parquet.compression.codec"
	PropRandomizeFilePrefixes              = "delta.randomizeFilePrefixes"
	PropRandomPrefixLength                 = "delta.randomPrefixLength"
	PropSetTransactionRetentionDuration    = "delta.setTransactionRetentionDuration"
	PropTargetFileSize                     = "delta.targetFileSize"
	PropTuneFileSizesForRewrites           = "delta.tuneFileSizesForRewrites"
	PropUniversalFormatEnabledFormats      = "delta.universalFormat.enabledFormats"
	PropBloomFilterColumns                 = "skiplake.bloomFilter.columns"
	PropBloomFilterFPP                     = "skiplake.bloomFilter.fpp"
	PropAutoCompactMinNumFiles             = "skiplake.autoCompact.minNumFiles"
	PropAutoCompactSmallFileSize           = "skiplake.autoCompact.smallFileSize"
	PropMaxDeletedRowsRatio                = "skiplake.optimize.maxDeletedRowsRatio"
	PropRowTrackingSuspended               = "delta.rowTrackingSuspended"
	PropMaterializedRowIDColumn            = "delta.rowTracking.materializedRowIdColumnName"
	PropMaterializedRowCommitVersionColumn = "delta.rowTracking.materializedRowCommitVersionColumnName"
	PropCompatSymlinkManifestEnabled       = "delta.compatibility.symlinkFormatManifest.enabled"
	PropInCommitTimestampEnablementVer     = "delta.inCommitTimestampEnablementVersion"
	PropInCommitTimestampEnablementTime    = "delta.inCommitTimestampEnablementTimestamp"
	PropCheckpointProtectionBeforeVersion  = "delta.requireCheckpointProtectionBeforeVersion"

	// PrefixConstraints starts the keys of CHECK constraints ("delta.constraints.<name>").
	PrefixConstraints = "delta.constraints."
	// PrefixFeature starts the pseudo-properties "delta.feature.<name>=supported"
	// that add a table feature to the protocol; they are never stored.
	PrefixFeature = "delta.feature."
)

// Defaults of the typed table properties (Delta's, unless noted).
const (
	// DefaultCheckpointInterval is delta.checkpointInterval's default: a checkpoint every 10 commits.
	DefaultCheckpointInterval = 10
	// DefaultDeletedFileRetention is delta.deletedFileRetentionDuration's default: 1 week.
	DefaultDeletedFileRetention = 7 * 24 * time.Hour
	// DefaultLogRetention is delta.logRetentionDuration's default: 30 days.
	DefaultLogRetention = 30 * 24 * time.Hour
	// DefaultCheckpointRetention is delta.checkpointRetentionDuration's default: 2 days.
	DefaultCheckpointRetention = 2 * 24 * time.Hour
	// DefaultTargetFileSize is the data file size writers aim for when
	// delta.targetFileSize is not set: 128 MiB (skiplake's choice, as delta-rs and
	// Databricks use for tables without size tuning).
	DefaultTargetFileSize = 128 << 20
	// DefaultRandomPrefixLength is delta.randomPrefixLength's default.
	DefaultRandomPrefixLength = 2
	// DefaultAutoCompactMinNumFiles is skiplake.autoCompact.minNumFiles's default:
	// auto-compaction runs on a partition once it has this many small files (Delta
	// Spark's spark.databricks.delta.autoCompact.minNumFiles default, there a
	// session setting).
	DefaultAutoCompactMinNumFiles = 50
	// DefaultMaxDeletedRowsRatio is skiplake.optimize.maxDeletedRowsRatio's default:
	// a file whose deletion vector covers more than 5% of its rows is purged (Delta
	// Spark's spark.databricks.delta.optimize.maxDeletedRowsRatio default, there a
	// session setting).
	DefaultMaxDeletedRowsRatio = 0.05
)

// CheckpointPolicy is delta.checkpointPolicy.
type CheckpointPolicy string

// Checkpoint policies.
const (
	// CheckpointClassic writes classic checkpoints (the default).
	CheckpointClassic CheckpointPolicy = "classic"
	// CheckpointV2 writes v2 checkpoints; it needs the v2Checkpoint table feature.
	CheckpointV2 CheckpointPolicy = "v2"
)

// TableProperties is a table's configuration (metaData.configuration) parsed into
// typed values: invariant P1 — properties are validated and normalised when set
// (NormalizeProperties, ApplyPropertyChange), parsed once per snapshot
// (Snapshot.Properties), and read from this value everywhere. Every field holds the
// effective value: the stored one, or the default when the key is absent or its
// stored value cannot be parsed (such keys are listed in Invalid; operations that
// depend on one refuse to run, see Err).
//
// Only canonical keys are read: a differently cased spelling of a known key (say
// "delta.TargetFileSize", which older skiplake versions stored as given) is not
// interpreted and lands in Unknown, as Delta Spark ignores it too.
//
// A TableProperties returned by Snapshot.Properties is shared and must not be modified.
type TableProperties struct {
	// AppendOnly is delta.appendOnly (default false): no data may be removed or changed.
	AppendOnly bool
	// AutoOptimize is the legacy delta.autoOptimize flag (default false).
	AutoOptimize bool
	// AutoCompact is delta.autoOptimize.autoCompact ("true", "auto" or "legacy";
	// default false): after a write commits, the small files of the partitions it
	// touched are compacted (clustered on a clustered table) in a separate commit
	// once a partition has AutoCompactMinNumFiles of them.
	AutoCompact bool
	// AutoCompactMinNumFiles is skiplake.autoCompact.minNumFiles (default
	// DefaultAutoCompactMinNumFiles = 50, at least 2): how many small files a
	// partition needs before auto-compaction rewrites them.
	AutoCompactMinNumFiles int
	// AutoCompactSmallFileSize is skiplake.autoCompact.smallFileSize in bytes: files
	// smaller than this count as small for auto-compaction (0 when unset: three
	// quarters of TargetFileSize, OPTIMIZE's own threshold).
	AutoCompactSmallFileSize int64
	// MaxDeletedRowsRatio is skiplake.optimize.maxDeletedRowsRatio, in [0, 1]
	// (default DefaultMaxDeletedRowsRatio): OPTIMIZE and maintain rewrite a file
	// whose deletion vector marks more than this share of its rows deleted, without
	// those rows ("purge", as Delta's REORG TABLE ... APPLY (PURGE) does by hand).
	MaxDeletedRowsRatio float64
	// OptimizeWrite is delta.autoOptimize.optimizeWrite (default false): a write
	// buffers each partition's rows across all its inputs into files of about
	// TargetFileSize (few, full files instead of one per input and partition), and
	// on a clustered table sorts each file by the clustering columns.
	OptimizeWrite bool
	// CheckpointInterval is delta.checkpointInterval (default 10): a checkpoint is
	// written after every commit whose version is a multiple of it.
	CheckpointInterval int64
	// CheckpointPolicy is delta.checkpointPolicy (default classic).
	CheckpointPolicy CheckpointPolicy
	// CheckpointRetention is delta.checkpointRetentionDuration (default 2 days).
	CheckpointRetention time.Duration
	// CheckpointWriteStatsAsJSON is delta.checkpoint.writeStatsAsJson (default true).
	CheckpointWriteStatsAsJSON bool
	// CheckpointWriteStatsAsStruct is delta.checkpoint.writeStatsAsStruct (default
	// false, as PROTOCOL.md "Checkpoint Schema" says).
	CheckpointWriteStatsAsStruct bool
	// ColumnMappingMode is delta.columnMapping.mode (default none).
	ColumnMappingMode ColumnMapping
	// ColumnMappingMaxColumnID is delta.columnMapping.maxColumnId, the largest
	// column id assigned so far (internal; default 0).
	ColumnMappingMaxColumnID int64
	// DataSkippingNumIndexedCols is delta.dataSkippingNumIndexedCols: how many leaf
	// columns get statistics (default 32; -1 all; 0 none).
	DataSkippingNumIndexedCols int
	// DataSkippingStatsColumns is delta.dataSkippingStatsColumns split into its
	// column references (nil when unset); it takes precedence over
	// DataSkippingNumIndexedCols.
	DataSkippingStatsColumns []string
	// DataSkippingStringPrefixLength is delta.dataSkippingStringPrefixLength: how
	// many code points of string bounds are kept (default 32; 0 none).
	DataSkippingStringPrefixLength int
	// DeletedFileRetention is delta.deletedFileRetentionDuration (default 1 week):
	// how long removed files stay for VACUUM and tombstones stay in checkpoints.
	DeletedFileRetention time.Duration
	// EnableChangeDataFeed is delta.enableChangeDataFeed (or the legacy
	// delta.enableChangeDataCapture; default false).
	EnableChangeDataFeed bool
	// EnableDeletionVectors is delta.enableDeletionVectors (default false): whether
	// writers may create deletion vectors.
	EnableDeletionVectors bool
	// EnableExpiredLogCleanup is delta.enableExpiredLogCleanup (default true).
	EnableExpiredLogCleanup bool
	// EnableIcebergCompatV1 and EnableIcebergCompatV2 are delta.enableIcebergCompatV1/V2.
	EnableIcebergCompatV1, EnableIcebergCompatV2 bool
	// EnableInCommitTimestamps is delta.enableInCommitTimestamps (default false).
	EnableInCommitTimestamps bool
	// EnableRowTracking is delta.enableRowTracking (default false): every live file
	// has row IDs (writers assign them whenever the protocol supports rowTracking).
	EnableRowTracking bool
	// RowTrackingSuspended is delta.rowTrackingSuspended (default false): writers do
	// not assign row IDs although the protocol supports rowTracking.
	RowTrackingSuspended bool
	// MaterializedRowIDColumn and MaterializedRowCommitVersionColumn are
	// delta.rowTracking.materializedRowIdColumnName and
	// delta.rowTracking.materializedRowCommitVersionColumnName: the hidden columns of
	// materialized row IDs and row commit versions (internal; assigned when row
	// tracking is enabled).
	MaterializedRowIDColumn, MaterializedRowCommitVersionColumn string
	// EnableTypeWidening is delta.enableTypeWidening (default false).
	EnableTypeWidening bool
	// EnableVariantShredding is delta.enableVariantShredding (default false).
	EnableVariantShredding bool
	// IsolationLevel is delta.isolationLevel ("Serializable", the only value Delta allows).
	IsolationLevel string
	// LogRetention is delta.logRetentionDuration (default 30 days).
	LogRetention time.Duration
	// ParquetCompressionCodec is delta.parquet.compression.codec in lower case
	// ("" when unset; writers then use their default).
	ParquetCompressionCodec string
	// RandomizeFilePrefixes and RandomPrefixLength are delta.randomizeFilePrefixes
	// (default false) and delta.randomPrefixLength (default 2).
	RandomizeFilePrefixes bool
	RandomPrefixLength    int
	// SetTransactionRetention is delta.setTransactionRetentionDuration (0 when unset:
	// txn identifiers never expire).
	SetTransactionRetention time.Duration
	// TargetFileSize is delta.targetFileSize in bytes (default DefaultTargetFileSize).
	TargetFileSize int64
	// TuneFileSizesForRewrites is delta.tuneFileSizesForRewrites (default false).
	TuneFileSizesForRewrites bool
	// UniversalFormats is delta.universalFormat.enabledFormats (nil when unset).
	UniversalFormats []string

	// BloomFilterColumns is skiplake.bloomFilter.columns split at commas (names as
	// stored, nil when unset); writers resolve them against the data schema.
	BloomFilterColumns []string
	// BloomFilterFPP is skiplake.bloomFilter.fpp (default bloom.DefaultFPP).
	BloomFilterFPP float64

	// Constraints maps CHECK constraint names to their expressions
	// (delta.constraints.<name>).
	Constraints map[string]string
	// Unknown holds the keys that are not interpreted: keys of other engines,
	// Delta keys this package does not know, and non-canonical spellings.
	Unknown map[string]string
	// Invalid lists the known keys whose stored value does not parse, sorted by key.
	// The matching fields hold their defaults.
	Invalid []*PropertyError

	set  map[string]bool   // canonical keys present in the configuration
	conf map[string]string // the configuration parsed (shared, not modified)
}

// IsSet reports whether the canonical key is present in the configuration (with a
// valid or an invalid value).
func (p *TableProperties) IsSet(key string) bool { return p.set[key] }

// DMLIsolationLevel is the isolation level data-changing commands (DELETE, UPDATE,
// MERGE) commit at unless the caller chooses one: Serializable when the table sets
// delta.isolationLevel, else WriteSerializable (blind appends committed meanwhile do
// not conflict). A stored value that does not parse (listed in Invalid) still
// selects Serializable: the stricter level is the safe reading of an intent to
// serialize. Only the canonical key counts.
func (p *TableProperties) DMLIsolationLevel() string {
	if p.IsSet(PropIsolationLevel) {
		return Serializable
	}
	return WriteSerializable
}

// Err returns an error for every key among keys whose stored value is invalid
// (errors.Join of *PropertyError, matching ErrInvalidProperty), or nil. An
// operation calls it with the keys it depends on, so that an unparseable value
// stops it instead of silently meaning the default.
func (p *TableProperties) Err(keys ...string) error {
	var errs []error
	for _, e := range p.Invalid {
		for _, k := range keys {
			if e.Key == k {
				errs = append(errs, e)
			}
		}
	}
	return errors.Join(errs...)
}

// DataFileKeys are the keys that shape the data files writers produce (size,
// statistics, Bloom filters, compression codec) or guard writes (append-only, column
// mapping). Writers
// refuse to run while one of them holds an invalid value: p.Err(DataFileKeys...).
var DataFileKeys = []string{
	PropTargetFileSize, PropDataSkippingNumIndexedCols, PropDataSkippingStatsColumns,
	PropDataSkippingStringPrefixLength, PropBloomFilterColumns, PropBloomFilterFPP,
	PropAppendOnly, PropColumnMappingMode, PropParquetCompressionCodec,
}

// StatsConfig returns the statistics configuration for writers (stats.Config)
// from the data-skipping properties. Column references are logical names as
// stored; under column mapping the caller translates them.
func (p *TableProperties) StatsConfig() stats.Config {
	cfg := stats.Config{StatsColumns: p.DataSkippingStatsColumns, StringPrefixLength: p.DataSkippingStringPrefixLength}
	if cfg.StringPrefixLength == 0 {
		cfg.StringPrefixLength = stats.NoStringBounds
	}
	switch n := p.DataSkippingNumIndexedCols; {
	case n < 0:
		cfg.NumIndexedCols = stats.IndexAllColumns
	case n == 0:
		cfg.NumIndexedCols = stats.IndexNoColumns
	default:
		cfg.NumIndexedCols = n
	}
	return cfg
}

// SmallFileSize is the size below which auto-compaction counts a file as small:
// skiplake.autoCompact.smallFileSize, else SmallFileSizeFor(TargetFileSize).
func (p *TableProperties) SmallFileSize() int64 {
	if p.AutoCompactSmallFileSize > 0 {
		return p.AutoCompactSmallFileSize
	}
	return SmallFileSizeFor(p.TargetFileSize)
}

// SmallFileSizeFor is the one small-file rule: a data file below three quarters of
// the target size is small. OPTIMIZE compacts such files (its MinFileSize default),
// auto-compaction counts them, and maintenance and the layout report report them; a
// file of at least three quarters of the target is left alone, so that compaction
// never rewrites a nearly full file to gain a few percent.
func SmallFileSizeFor(target int64) int64 { return target * 3 / 4 }

// StringPrefixForReading is the string prefix length readers assume when they
// decide whether a string maximum may be a cut prefix: the stored value, or 1 when
// the stored value is invalid or 0 (then every maximum may be cut, which keeps
// skipping safe: S1).
func (p *TableProperties) StringPrefixForReading() int {
	if p.Err(PropDataSkippingStringPrefixLength) != nil || p.DataSkippingStringPrefixLength < 1 {
		return 1
	}
	return p.DataSkippingStringPrefixLength
}

// Configuration returns a copy of the raw configuration the properties were parsed from.
func (p *TableProperties) Configuration() map[string]string {
	out := make(map[string]string, len(p.conf))
	for k, v := range p.conf {
		out[k] = v
	}
	return out
}

// PropertyError is one rejected table property (at set time) or one stored value
// that does not parse (TableProperties.Invalid). It matches Err with errors.Is:
// ErrInvalidProperty, ErrUnknownProperty or ErrUnsupportedFeature.
type PropertyError struct {
	// Key and Value are the property as given (or as stored).
	Key, Value string
	// Reason says what is wrong.
	Reason string
	// Err is the sentinel the error matches.
	Err error
}

// Error names the property, its value and the problem.
func (e *PropertyError) Error() string {
	return fmt.Sprintf("log: table property %s=%q: %s", e.Key, e.Value, e.Reason)
}

// Unwrap returns Err.
func (e *PropertyError) Unwrap() error { return e.Err }

// ErrInvalidProperty reports a table property value that is not valid for its key.
var ErrInvalidProperty = errors.New("log: invalid table property")

// ErrUnknownProperty reports a delta.* or skiplake.* key that is not known when
// properties are set.
var ErrUnknownProperty = errors.New("log: unknown table property")

// propDef describes one known key: how its value parses into TableProperties and
// how it is stored (canonical value).
type propDef struct {
	key string
	// internal keys are maintained by writers and cannot be set by users (Spark's
	// userConfigurable = false).
	internal bool
	// parse parses v into p and returns the canonical value to store. It assigns
	// to p only when v is valid.
	parse func(p *TableProperties, v string) (string, error)
}

var propDefs = map[string]*propDef{} // keyed by lower-case key

func register(defs ...*propDef) {
	for _, d := range defs {
		propDefs[strings.ToLower(d.key)] = d
	}
}

func boolDef(key string, field func(*TableProperties) *bool) *propDef {
	return &propDef{key: key, parse: func(p *TableProperties, v string) (string, error) {
		b, err := parseBoolProperty(v)
		if err != nil {
			return "", err
		}
		*field(p) = b
		return strconv.FormatBool(b), nil
	}}
}

// intDef is a property holding an integer of at least min and at most
// math.MaxInt32 (Delta's Int properties), stored in decimal.
func intDef(key string, min int64, want string, set func(p *TableProperties, n int64)) *propDef {
	return &propDef{key: key, parse: func(p *TableProperties, v string) (string, error) {
		n, err := parseIntProperty(v, min, want)
		if err != nil || n > math.MaxInt32 {
			return "", errors.New("want " + want)
		}
		set(p, n)
		return strconv.FormatInt(n, 10), nil
	}}
}

func intervalDef(key string, field func(*TableProperties) *time.Duration) *propDef {
	return &propDef{key: key, parse: func(p *TableProperties, v string) (string, error) {
		d, err := ParseInterval(v)
		if err != nil {
			return "", errors.New("want a calendar interval such as \"interval 7 days\" or \"2 weeks\" (months and years are not accepted; use e.g. 365 days): " + strings.TrimPrefix(err.Error(), ErrInvalidValue.Error()+": "))
		}
		*field(p) = d
		return canonicalInterval(v, d), nil
	}}
}

// canonicalInterval keeps interval text Delta readers parse as given and renders a
// Go duration ("168h", which only skiplake accepts) in interval syntax.
func canonicalInterval(v string, d time.Duration) string {
	if _, err := parseCalendarInterval(strings.ToLower(strings.TrimSpace(v))); err == nil {
		return strings.TrimSpace(v)
	}
	return FormatInterval(d)
}

func parseBoolProperty(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("want true or false")
}

func parseIntProperty(v string, min int64, what string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < min {
		return 0, errors.New("want " + what)
	}
	return n, nil
}

func init() {
	register(
		boolDef(PropAppendOnly, func(p *TableProperties) *bool { return &p.AppendOnly }),
		boolDef(PropAutoOptimize, func(p *TableProperties) *bool { return &p.AutoOptimize }),
		&propDef{key: PropAutoOptimizeAutoCompact, parse: func(p *TableProperties, v string) (string, error) {
			switch s := strings.ToLower(strings.TrimSpace(v)); s {
			case "true", "auto", "legacy":
				p.AutoCompact = true
				return s, nil
			case "false":
				p.AutoCompact = false
				return s, nil
			}
			return "", errors.New("want true, false, auto or legacy")
		}},
		boolDef(PropAutoOptimizeOptimizeWrite, func(p *TableProperties) *bool { return &p.OptimizeWrite }),
		intDef(PropCheckpointInterval, 1, "a positive integer", func(p *TableProperties, n int64) { p.CheckpointInterval = n }),
		&propDef{key: PropCheckpointPolicy, parse: func(p *TableProperties, v string) (string, error) {
			switch s := CheckpointPolicy(strings.ToLower(strings.TrimSpace(v))); s {
			case CheckpointClassic, CheckpointV2:
				p.CheckpointPolicy = s
				return string(s), nil
			}
			return "", errors.New("want classic or v2")
		}},
		intervalDef(PropCheckpointRetentionDuration, func(p *TableProperties) *time.Duration { return &p.CheckpointRetention }),
		boolDef(PropCheckpointWriteStatsAsJSON, func(p *TableProperties) *bool { return &p.CheckpointWriteStatsAsJSON }),
		boolDef(PropCheckpointWriteStatsAsStruct, func(p *TableProperties) *bool { return &p.CheckpointWriteStatsAsStruct }),
		&propDef{key: PropColumnMappingMode, parse: func(p *TableProperties, v string) (string, error) {
			switch m := ColumnMapping(strings.ToLower(strings.TrimSpace(v))); m {
			case ColumnMappingNone, ColumnMappingName, ColumnMappingID:
				p.ColumnMappingMode = m
				return string(m), nil
			}
			return "", errors.New("want none, name or id")
		}},
		&propDef{key: PropColumnMappingMaxColumnID, internal: true, parse: func(p *TableProperties, v string) (string, error) {
			n, err := parseIntProperty(v, 0, "a non-negative integer")
			if err != nil {
				return "", err
			}
			p.ColumnMappingMaxColumnID = n
			return strconv.FormatInt(n, 10), nil
		}},
		intDef(PropDataSkippingNumIndexedCols, -1, "an integer of at least -1 (-1: all columns)", func(p *TableProperties, n int64) { p.DataSkippingNumIndexedCols = int(n) }),
		&propDef{key: PropDataSkippingStatsColumns, parse: func(p *TableProperties, v string) (string, error) {
			cols, err := stats.SplitColumnList(v)
			if err != nil {
				return "", fmt.Errorf("want a comma-separated list of column names (backticks quote special characters): %v", err)
			}
			p.DataSkippingStatsColumns = cols
			if cols == nil {
				p.DataSkippingStatsColumns = nil
			}
			return strings.TrimSpace(v), nil
		}},
		// 0, as in Spark, means no string bounds at all.
		intDef(PropDataSkippingStringPrefixLength, 0, "a non-negative integer (0: no string bounds)", func(p *TableProperties, n int64) { p.DataSkippingStringPrefixLength = int(n) }),
		intervalDef(PropDeletedFileRetentionDuration, func(p *TableProperties) *time.Duration { return &p.DeletedFileRetention }),
		boolDef(PropEnableChangeDataFeed, func(p *TableProperties) *bool { return &p.EnableChangeDataFeed }),
		&propDef{key: "delta.enableChangeDataCapture", parse: func(p *TableProperties, v string) (string, error) {
			b, err := parseBoolProperty(v)
			if err != nil {
				return "", err
			}
			if _, canonical := p.conf[PropEnableChangeDataFeed]; !canonical {
				p.EnableChangeDataFeed = b
			}
			return strconv.FormatBool(b), nil
		}},
		boolDef(PropEnableDeletionVectors, func(p *TableProperties) *bool { return &p.EnableDeletionVectors }),
		boolDef(PropEnableExpiredLogCleanup, func(p *TableProperties) *bool { return &p.EnableExpiredLogCleanup }),
		boolDef(PropEnableIcebergCompatV1, func(p *TableProperties) *bool { return &p.EnableIcebergCompatV1 }),
		boolDef(PropEnableIcebergCompatV2, func(p *TableProperties) *bool { return &p.EnableIcebergCompatV2 }),
		boolDef(PropEnableInCommitTimestamps, func(p *TableProperties) *bool { return &p.EnableInCommitTimestamps }),
		boolDef(PropEnableRowTracking, func(p *TableProperties) *bool { return &p.EnableRowTracking }),
		boolDef(PropRowTrackingSuspended, func(p *TableProperties) *bool { return &p.RowTrackingSuspended }),
		&propDef{key: PropMaterializedRowIDColumn, internal: true, parse: func(p *TableProperties, v string) (string, error) {
			p.MaterializedRowIDColumn = v
			return v, nil
		}},
		&propDef{key: PropMaterializedRowCommitVersionColumn, internal: true, parse: func(p *TableProperties, v string) (string, error) {
			p.MaterializedRowCommitVersionColumn = v
			return v, nil
		}},
		boolDef(PropEnableTypeWidening, func(p *TableProperties) *bool { return &p.EnableTypeWidening }),
		boolDef(PropEnableVariantShredding, func(p *TableProperties) *bool { return &p.EnableVariantShredding }),
		&propDef{key: PropIsolationLevel, parse: func(p *TableProperties, v string) (string, error) {
			if strings.TrimSpace(v) != Serializable {
				return "", errors.New("must be Serializable")
			}
			p.IsolationLevel = Serializable
			return Serializable, nil
		}},
		intervalDef(PropLogRetentionDuration, func(p *TableProperties) *time.Duration { return &p.LogRetention }),
		&propDef{key: PropParquetCompressionCodec, parse: func(p *TableProperties, v string) (string, error) {
			switch s := strings.ToLower(strings.TrimSpace(v)); s {
			case "uncompressed", "none", "snappy", "gzip", "lz4", "lz4_raw", "zstd", "brotli":
				p.ParquetCompressionCodec = s
				return s, nil
			}
			return "", errors.New("want uncompressed, none, snappy, gzip, lz4, lz4_raw, zstd or brotli")
		}},
		boolDef(PropRandomizeFilePrefixes, func(p *TableProperties) *bool { return &p.RandomizeFilePrefixes }),
		intDef(PropRandomPrefixLength, 1, "a positive integer", func(p *TableProperties, n int64) { p.RandomPrefixLength = int(n) }),
		intervalDef(PropSetTransactionRetentionDuration, func(p *TableProperties) *time.Duration { return &p.SetTransactionRetention }),
		&propDef{key: PropTargetFileSize, parse: func(p *TableProperties, v string) (string, error) {
			n, err := ParseSize(v)
			if err != nil {
				return "", errors.New("want a positive size in bytes, optionally with a unit (\"134217728\", \"128mb\")")
			}
			p.TargetFileSize = n
			// Stored as plain bytes: Delta Spark, delta-rs and the kernels all read that.
			return strconv.FormatInt(n, 10), nil
		}},
		boolDef(PropTuneFileSizesForRewrites, func(p *TableProperties) *bool { return &p.TuneFileSizesForRewrites }),
		&propDef{key: PropUniversalFormatEnabledFormats, parse: func(p *TableProperties, v string) (string, error) {
			var fs []string
			seen := map[string]bool{}
			for _, f := range strings.Split(v, ",") {
				f = strings.ToLower(strings.TrimSpace(f))
				if f == "" {
					continue
				}
				if (f != "iceberg" && f != "hudi") || seen[f] {
					return "", errors.New("want a comma-separated list of distinct formats from iceberg, hudi")
				}
				seen[f] = true
				fs = append(fs, f)
			}
			p.UniversalFormats = fs
			return strings.Join(fs, ","), nil
		}},
		&propDef{key: PropCompatSymlinkManifestEnabled, parse: boolOnly},
		&propDef{key: PropInCommitTimestampEnablementVer, parse: int64Def},
		&propDef{key: PropInCommitTimestampEnablementTime, parse: int64Def},
		&propDef{key: PropCheckpointProtectionBeforeVersion, internal: true, parse: int64Def},
		&propDef{key: "delta.enableFullRetentionRollback", parse: boolOnly},
		&propDef{key: "delta.sampleRetentionDuration", parse: intervalOnly},
		&propDef{key: "delta.dropFeatureTruncateHistory.retentionDuration", parse: intervalOnly},
		&propDef{key: "delta.ignoreProtocolDefaults", parse: boolOnly},
		&propDef{key: PropBloomFilterColumns, parse: func(p *TableProperties, v string) (string, error) {
			var cols []string
			for _, c := range strings.Split(v, ",") {
				if c = strings.TrimSpace(c); c != "" {
					cols = append(cols, c)
				}
			}
			p.BloomFilterColumns = cols
			return strings.Join(cols, ","), nil
		}},
		intDef(PropAutoCompactMinNumFiles, 2, "an integer of at least 2", func(p *TableProperties, n int64) { p.AutoCompactMinNumFiles = int(n) }),
		&propDef{key: PropAutoCompactSmallFileSize, parse: func(p *TableProperties, v string) (string, error) {
			n, err := ParseSize(v)
			if err != nil {
				return "", errors.New("want a positive size in bytes, optionally with a unit (\"8mb\")")
			}
			p.AutoCompactSmallFileSize = n
			return strconv.FormatInt(n, 10), nil
		}},
		&propDef{key: PropMaxDeletedRowsRatio, parse: func(p *TableProperties, v string) (string, error) {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !(f >= 0 && f <= 1) {
				return "", errors.New("want a ratio in [0, 1] (0.05: purge files with more than 5% of their rows deleted)")
			}
			p.MaxDeletedRowsRatio = f
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		}},
		&propDef{key: PropBloomFilterFPP, parse: func(p *TableProperties, v string) (string, error) {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !(f >= bloom.MinFPP && f <= bloom.MaxFPP) {
				return "", fmt.Errorf("want a false-positive rate in [%g, %g]", bloom.MinFPP, bloom.MaxFPP)
			}
			p.BloomFilterFPP = f
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		}},
	)
}

func int64Def(_ *TableProperties, v string) (string, error) {
	n, err := parseIntProperty(v, math.MinInt64, "an integer")
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(n, 10), nil
}

func boolOnly(_ *TableProperties, v string) (string, error) {
	b, err := parseBoolProperty(v)
	if err != nil {
		return "", err
	}
	return strconv.FormatBool(b), nil
}

func intervalOnly(_ *TableProperties, v string) (string, error) {
	d, err := ParseInterval(v)
	if err != nil {
		return "", errors.New("want a calendar interval such as \"interval 7 days\"")
	}
	return canonicalInterval(v, d), nil
}

// CanonicalPropertyKey returns the canonical spelling of a known property key given
// in any letter case ("DELTA.APPENDONLY" → "delta.appendOnly") and true, or key and
// false when the key is not known.
func CanonicalPropertyKey(key string) (string, bool) {
	if d, ok := propDefs[strings.ToLower(key)]; ok {
		return d.key, true
	}
	return key, false
}

func defaultTableProperties() *TableProperties {
	return &TableProperties{
		CheckpointInterval:             DefaultCheckpointInterval,
		CheckpointPolicy:               CheckpointClassic,
		CheckpointRetention:            DefaultCheckpointRetention,
		CheckpointWriteStatsAsJSON:     true,
		ColumnMappingMode:              ColumnMappingNone,
		DataSkippingNumIndexedCols:     stats.DefaultNumIndexedCols,
		DataSkippingStringPrefixLength: stats.DefaultStringPrefixLength,
		DeletedFileRetention:           DefaultDeletedFileRetention,
		EnableExpiredLogCleanup:        true,
		IsolationLevel:                 Serializable,
		LogRetention:                   DefaultLogRetention,
		RandomPrefixLength:             DefaultRandomPrefixLength,
		TargetFileSize:                 DefaultTargetFileSize,
		BloomFilterFPP:                 bloom.DefaultFPP,
		AutoCompactMinNumFiles:         DefaultAutoCompactMinNumFiles,
		MaxDeletedRowsRatio:            DefaultMaxDeletedRowsRatio,
		Constraints:                    map[string]string{},
		Unknown:                        map[string]string{},
		set:                            map[string]bool{},
	}
}

// ParseTableProperties parses a configuration (metaData.configuration) into typed
// values. It never fails: a known key whose value does not parse is listed in
// Invalid and its field keeps the default; keys it does not interpret go to
// Unknown. Snapshot.Properties calls it once per snapshot.
func ParseTableProperties(conf map[string]string) *TableProperties {
	p := defaultTableProperties()
	p.conf = conf
	for _, k := range sortedKeys(conf) {
		v := conf[k]
		d, ok := propDefs[strings.ToLower(k)]
		switch {
		case ok && d.key == k:
			p.set[k] = true
			if _, err := d.parse(p, v); err != nil {
				p.Invalid = append(p.Invalid, &PropertyError{Key: k, Value: v, Reason: err.Error(), Err: ErrInvalidProperty})
			}
		case strings.HasPrefix(k, PrefixConstraints) && len(k) > len(PrefixConstraints):
			p.Constraints[k[len(PrefixConstraints):]] = v
		default:
			p.Unknown[k] = v
		}
	}
	return p
}

// checkAppendOnly refuses removes that change data when the properties props a
// commit results in make the table append-only (delta.appendOnly=true; PROTOCOL.md
// "Append-only Tables"). A stored value that does not parse refuses such removes
// too: the table may be append-only.
func checkAppendOnly(props *TableProperties, removes []*Remove) error {
	invalid := props.Err(PropAppendOnly)
	if !props.AppendOnly && invalid == nil {
		return nil
	}
	for _, r := range removes {
		if !r.DataChange {
			continue
		}
		if invalid != nil {
			return fmt.Errorf("log: cannot remove %s with dataChange=true: %w: %w", r.Path, invalid, ErrInvalidTransaction)
		}
		return fmt.Errorf("log: table is append-only (delta.appendOnly=true): cannot remove %s with dataChange=true: %w",
			r.Path, ErrInvalidTransaction)
	}
	return nil
}

// Setting is the effective value of one property skiplake interprets
// (TableProperties.Settings).
type Setting struct {
	// Key is the canonical property key.
	Key string `json:"key"`
	// Value is the effective value in the canonical form the key is stored in
	// (sizes in bytes, durations as intervals).
	Value string `json:"value"`
	// Default is true when the table does not set the key (or its stored value is
	// invalid) and Value is the default.
	Default bool `json:"default,omitempty"`
	// Invalid describes the stored value's problem when it does not parse.
	Invalid string `json:"invalid,omitempty"`
}

// Settings lists the effective values of the properties skiplake's readers and
// writers interpret, sorted by key: what describe shows next to the stored
// configuration. Optional lists (stats columns, Bloom columns) appear only when set.
func (p *TableProperties) Settings() []Setting {
	b := strconv.FormatBool
	vals := map[string]string{
		PropAppendOnly:                     b(p.AppendOnly),
		PropCheckpointInterval:             strconv.FormatInt(p.CheckpointInterval, 10),
		PropCheckpointPolicy:               string(p.CheckpointPolicy),
		PropColumnMappingMode:              string(p.ColumnMappingMode),
		PropDataSkippingNumIndexedCols:     strconv.Itoa(p.DataSkippingNumIndexedCols),
		PropDataSkippingStringPrefixLength: strconv.Itoa(p.DataSkippingStringPrefixLength),
		PropDeletedFileRetentionDuration:   FormatInterval(p.DeletedFileRetention),
		PropEnableDeletionVectors:          b(p.EnableDeletionVectors),
		PropLogRetentionDuration:           FormatInterval(p.LogRetention),
		PropTargetFileSize:                 strconv.FormatInt(p.TargetFileSize, 10),
		PropBloomFilterFPP:                 strconv.FormatFloat(p.BloomFilterFPP, 'g', -1, 64),
		PropAutoOptimizeAutoCompact:        b(p.AutoCompact),
		PropAutoOptimizeOptimizeWrite:      b(p.OptimizeWrite),
		PropAutoCompactMinNumFiles:         strconv.Itoa(p.AutoCompactMinNumFiles),
		PropAutoCompactSmallFileSize:       strconv.FormatInt(p.SmallFileSize(), 10),
		PropMaxDeletedRowsRatio:            strconv.FormatFloat(p.MaxDeletedRowsRatio, 'g', -1, 64),
		PropEnableRowTracking:              b(p.EnableRowTracking),
	}
	if p.set[PropDataSkippingStatsColumns] {
		vals[PropDataSkippingStatsColumns] = strings.Join(p.DataSkippingStatsColumns, ",")
	}
	if p.set[PropBloomFilterColumns] {
		vals[PropBloomFilterColumns] = strings.Join(p.BloomFilterColumns, ",")
	}
	invalid := map[string]string{}
	for _, e := range p.Invalid {
		invalid[e.Key] = fmt.Sprintf("stored value %q: %s", e.Value, e.Reason)
	}
	out := make([]Setting, 0, len(vals))
	for k, v := range vals {
		out = append(out, Setting{Key: k, Value: v, Default: !p.set[k] || invalid[k] != "", Invalid: invalid[k]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
