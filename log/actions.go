package log

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// Protocol is the "protocol" action: the reader and writer versions and, for
// reader 3 / writer 7, the explicit table features.
type Protocol struct {
	// MinReaderVersion is the minimum reader protocol version.
	MinReaderVersion int `json:"minReaderVersion"`
	// MinWriterVersion is the minimum writer protocol version.
	MinWriterVersion int `json:"minWriterVersion"`
	// ReaderFeatures lists reader features (reader version 3); omitted when nil.
	ReaderFeatures []string `json:"readerFeatures,omitempty"`
	// WriterFeatures lists writer features (writer version 7); omitted when nil.
	WriterFeatures []string `json:"writerFeatures,omitempty"`
}

// Format is the data file format of a table ("parquet").
type Format struct {
	// Provider is the format name, "parquet".
	Provider string `json:"provider"`
	// Options are format options (usually empty).
	Options map[string]string `json:"options"`
}

// Metadata is the "metaData" action.
type Metadata struct {
	// ID is the table's unique id (a UUID).
	ID string `json:"id"`
	// Name is the optional user-facing table name.
	Name string `json:"name,omitempty"`
	// Description is the optional table description.
	Description string `json:"description,omitempty"`
	// Format is the data file format.
	Format Format `json:"format"`
	// SchemaString is the table schema as Spark-JSON (see ParseSchema).
	SchemaString string `json:"schemaString"`
	// PartitionColumns are the partition column names, in order.
	PartitionColumns []string `json:"partitionColumns"`
	// Configuration holds the table properties (delta.*).
	Configuration map[string]string `json:"configuration"`
	// CreatedTime is the creation time in ms since the epoch, if known.
	CreatedTime *int64 `json:"createdTime,omitempty"`
}

// Schema parses SchemaString.
func (m *Metadata) Schema() (*StructType, error) { return ParseSchema(m.SchemaString) }

// MarshalJSON writes the action with non-nil partitionColumns, configuration
// and format options, as Delta readers expect.
func (m Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	if m.PartitionColumns == nil {
		m.PartitionColumns = []string{}
	}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	if m.Format.Options == nil {
		m.Format.Options = map[string]string{}
	}
	if m.Format.Provider == "" {
		m.Format.Provider = "parquet"
	}
	return json.Marshal(plain(m))
}

// DeletionVectorDescriptor locates a deletion vector.
type DeletionVectorDescriptor struct {
	// StorageType is 'u' (relative UUID path), 'i' (inline) or 'p' (absolute path).
	StorageType string `json:"storageType"`
	// PathOrInlineDv is the encoded UUID, the inline bitmap or the path.
	PathOrInlineDv string `json:"pathOrInlineDv"`
	// Offset is the byte offset of the vector in its file (not for 'i').
	Offset *int32 `json:"offset,omitempty"`
	// SizeInBytes is the serialized size of the vector.
	SizeInBytes int32 `json:"sizeInBytes"`
	// Cardinality is the number of deleted rows.
	Cardinality int64 `json:"cardinality"`
	// MaxRowIndex is the largest deleted row index, if known.
	MaxRowIndex *int64 `json:"maxRowIndex,omitempty"`
}

// UniqueID identifies the vector: storageType + pathOrInlineDv, followed by
// "@" + offset when an offset is present (PROTOCOL.md "Deletion Vector
// Descriptor Schema"). A nil descriptor has the empty id.
func (d *DeletionVectorDescriptor) UniqueID() string {
	if d == nil {
		return ""
	}
	id := d.StorageType + d.PathOrInlineDv
	if d.Offset != nil {
		id += "@" + strconv.FormatInt(int64(*d.Offset), 10)
	}
	return id
}

// Add is the "add" action: a logical file that becomes part of the table.
type Add struct {
	// Path is the file's relative URI, percent-encoded (see DecodedPath).
	Path string `json:"path"`
	// PartitionValues maps each partition column to its serialized value. A
	// nil pointer is a JSON null; an empty string also means null (see
	// PartitionValue).
	PartitionValues map[string]*string `json:"partitionValues"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// ModificationTime is the file's creation time in ms since the epoch.
	ModificationTime int64 `json:"modificationTime"`
	// DataChange is false when the file only rearranges existing data.
	DataChange bool `json:"dataChange"`
	// Stats is the per-file statistics JSON string ("" when absent).
	Stats string `json:"stats,omitempty"`
	// Tags are free-form file tags.
	Tags map[string]string `json:"tags,omitempty"`
	// DeletionVector describes rows of the file that are deleted, if any.
	DeletionVector *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	// BaseRowID is the row-tracking base row id.
	BaseRowID *int64 `json:"baseRowId,omitempty"`
	// DefaultRowCommitVersion is the row-tracking default commit version.
	DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion,omitempty"`
	// ClusteringProvider names the clustering implementation, if clustered.
	ClusteringProvider string `json:"clusteringProvider,omitempty"`
}

// MarshalJSON writes partitionValues as {} when nil (the field is required).
func (a Add) MarshalJSON() ([]byte, error) {
	type plain Add
	if a.PartitionValues == nil {
		a.PartitionValues = map[string]*string{}
	}
	return json.Marshal(plain(a))
}

// DecodedPath returns the file path with percent-encoding removed. Absolute
// URIs are reported with ErrUnsupportedPath.
func (a *Add) DecodedPath() (string, error) { return decodePath(a.Path) }

// PartitionValue returns the serialized value of a partition column and
// whether it is null (JSON null, empty string, or absent).
func (a *Add) PartitionValue(col string) (value string, isNull bool) {
	return partitionValue(a.PartitionValues, col)
}

// Key is the reconciliation key: decoded path plus deletion-vector unique id.
func (a *Add) Key() string { return fileKey(a.Path, a.DeletionVector) }

// NumRecords returns numRecords from Stats, and false when stats are absent
// or do not carry it.
func (a *Add) NumRecords() (int64, bool) {
	if a.Stats == "" {
		return 0, false
	}
	if n, ok := plainNumRecords(a.Stats); ok {
		return n, true
	}
	var s struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if err := json.Unmarshal([]byte(a.Stats), &s); err != nil || s.NumRecords == nil {
		return 0, false
	}
	return *s.NumRecords, true
}

// plainNumRecords is the fast path of Add.NumRecords for the common form, with the
// same answer as decoding the JSON: a valid JSON object without backslashes (so no
// escaped key can name the field) in which exactly one string equals numRecords
// ignoring case (encoding/json matches field names so, and the last one would win),
// a key of the top-level object, whose value is a plain unsigned integer of at most
// 18 digits. ok is false when the input is not of that form; the caller then decodes
// it.
func plainNumRecords(s string) (n int64, ok bool) {
	if strings.IndexByte(s, '\\') >= 0 {
		return 0, false
	}
	const key = "numRecords"
	at, depth := -1, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := i + 1 + len(key)
			if end < len(s) && s[end] == '"' && strings.EqualFold(s[i+1:end], key) {
				if at >= 0 || depth != 1 {
					return 0, false // a second candidate, or a nested one: let the decoder decide
				}
				at = end + 1
			}
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return 0, false
			}
			i += 1 + j // the closing quote
		}
	}
	if at < 0 {
		return 0, false
	}
	i := skipJSONSpace(s, at)
	if i >= len(s) || s[i] != ':' {
		return 0, false
	}
	i = skipJSONSpace(s, i+1)
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int64(s[i]-'0')
		i++
	}
	if digits := i - start; digits == 0 || digits > 18 || digits > 1 && s[start] == '0' {
		return 0, false
	}
	i = skipJSONSpace(s, i)
	if i >= len(s) || (s[i] != ',' && s[i] != '}') || !json.Valid([]byte(s)) {
		return 0, false
	}
	return n, true
}

func skipJSONSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// Remove is the "remove" action: a logical file that leaves the table. It
// survives reconciliation as a tombstone (for VACUUM).
type Remove struct {
	// Path is the file's relative URI, percent-encoded.
	Path string `json:"path"`
	// DeletionTimestamp is when the file was removed, ms since the epoch.
	DeletionTimestamp *int64 `json:"deletionTimestamp,omitempty"`
	// DataChange is false when the removal only rearranges data.
	DataChange bool `json:"dataChange"`
	// ExtendedFileMetadata is true when PartitionValues and Size are present
	// (MarshalJSON then writes partitionValues even when empty).
	ExtendedFileMetadata bool `json:"extendedFileMetadata,omitempty"`
	// PartitionValues are the removed file's partition values.
	PartitionValues map[string]*string `json:"partitionValues,omitempty"`
	// Size is the removed file's size in bytes.
	Size *int64 `json:"size,omitempty"`
	// Stats optionally carries the removed file's statistics.
	Stats string `json:"stats,omitempty"`
	// Tags are the removed file's tags.
	Tags map[string]string `json:"tags,omitempty"`
	// DeletionVector is the removed file's deletion vector, if any.
	DeletionVector *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	// BaseRowID is the row-tracking base row id.
	BaseRowID *int64 `json:"baseRowId,omitempty"`
	// DefaultRowCommitVersion is the row-tracking default commit version.
	DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion,omitempty"`
}

// removeExtended is Remove with partitionValues always written: the JSON form of a
// remove with extendedFileMetadata=true. Its fields are Remove's (the conversion
// in MarshalJSON fails to compile when they drift apart).
type removeExtended struct {
	Path                    string                    `json:"path"`
	DeletionTimestamp       *int64                    `json:"deletionTimestamp,omitempty"`
	DataChange              bool                      `json:"dataChange"`
	ExtendedFileMetadata    bool                      `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string        `json:"partitionValues"`
	Size                    *int64                    `json:"size,omitempty"`
	Stats                   string                    `json:"stats,omitempty"`
	Tags                    map[string]string         `json:"tags,omitempty"`
	DeletionVector          *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	BaseRowID               *int64                    `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64                    `json:"defaultRowCommitVersion,omitempty"`
}

// MarshalJSON writes the remove as PROTOCOL.md ("Add File and Remove File") asks:
// with extendedFileMetadata=true, partitionValues and size are present —
// partitionValues as {} on an unpartitioned table, as Spark writes it. A remove
// that claims extendedFileMetadata without a size (only another writer's, read
// back from its log) is written without the claim rather than with a false one.
func (r Remove) MarshalJSON() ([]byte, error) {
	type plain Remove
	if !r.ExtendedFileMetadata || r.Size == nil {
		r.ExtendedFileMetadata = false
		return json.Marshal(plain(r))
	}
	if r.PartitionValues == nil {
		r.PartitionValues = map[string]*string{}
	}
	return json.Marshal(removeExtended(r))
}

// DecodedPath returns the file path with percent-encoding removed.
func (r *Remove) DecodedPath() (string, error) { return decodePath(r.Path) }

// DecodedPath returns the change file's path relative to the table root, decoded.
func (c *CDC) DecodedPath() (string, error) { return decodePath(c.Path) }

// Key is the reconciliation key: decoded path plus deletion-vector unique id.
func (r *Remove) Key() string { return fileKey(r.Path, r.DeletionVector) }

// PartitionValue returns the serialized value of a partition column and whether it is null.
func (r *Remove) PartitionValue(col string) (value string, isNull bool) {
	return partitionValue(r.PartitionValues, col)
}

// Txn is the "txn" action: the last version an idempotent writer committed.
type Txn struct {
	// AppID identifies the application.
	AppID string `json:"appId"`
	// Version is the application-defined version.
	Version int64 `json:"version"`
	// LastUpdated is the time of the transaction, ms since the epoch.
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DomainMetadata is the "domainMetadata" action (writer feature domainMetadata).
type DomainMetadata struct {
	// Domain names the domain.
	Domain string `json:"domain"`
	// Configuration is the domain's configuration, usually a JSON string.
	Configuration string `json:"configuration"`
	// Removed marks a tombstone for the domain.
	Removed bool `json:"removed"`
}

// CheckpointMetadata is the "checkpointMetadata" action of v2 checkpoints.
type CheckpointMetadata struct {
	// Version is the checkpoint's table version.
	Version int64 `json:"version"`
	// Tags are free-form tags.
	Tags map[string]string `json:"tags,omitempty"`
}

// Sidecar is the "sidecar" action of v2 checkpoints: a Parquet file under
// _delta_log/_sidecars/ holding file actions.
type Sidecar struct {
	// Path is the sidecar's path relative to _delta_log/_sidecars/ (or an absolute URI).
	Path string `json:"path"`
	// SizeInBytes is the sidecar file size.
	SizeInBytes int64 `json:"sizeInBytes"`
	// ModificationTime is the sidecar's modification time, ms since the epoch.
	ModificationTime int64 `json:"modificationTime"`
	// Tags are free-form tags.
	Tags map[string]string `json:"tags,omitempty"`
}

// CDC is the "cdc" action (PROTOCOL.md "Add CDC File"): a change data file under
// _change_data/ holding the rows a commit changed, with their _change_type.
// Snapshots do not keep them (checkpoints never hold them); change data readers read
// them from the commit files.
type CDC struct {
	// Path is the change file's relative URI.
	Path string `json:"path"`
	// PartitionValues are the change file's partition values.
	PartitionValues map[string]*string `json:"partitionValues"`
	// Size is the change file's size in bytes.
	Size int64 `json:"size"`
	// DataChange is always false for cdc actions.
	DataChange bool `json:"dataChange"`
	// Tags are free-form tags.
	Tags map[string]string `json:"tags,omitempty"`
}

// CommitInfo is the free-form "commitInfo" action. The typed fields are what
// this package writes (Spark's shape); Raw holds every field that was read.
type CommitInfo struct {
	// Timestamp is the commit time, ms since the epoch.
	Timestamp int64 `json:"timestamp,omitempty"`
	// InCommitTimestamp is set by writers using in-commit timestamps.
	InCommitTimestamp *int64 `json:"inCommitTimestamp,omitempty"`
	// Operation names the operation ("WRITE", "OPTIMIZE", ...).
	Operation string `json:"operation,omitempty"`
	// OperationParameters holds each parameter value's JSON text, as Delta Spark
	// holds them in memory: `"Append"` for the string Append, `1` for a number, `null`,
	// `"[\"a\"]"` for a list Spark records as a string of JSON. MarshalJSON writes each
	// text as the value itself (once: "mode":"Append", "version":1), a text that is
	// not JSON as a string; UnmarshalJSON gives every value back as its JSON text, so
	// a commitInfo survives a round trip. DisplayParameters is the form people read.
	OperationParameters map[string]string `json:"operationParameters,omitempty"`
	// OperationMetrics holds metric values as strings.
	OperationMetrics map[string]string `json:"operationMetrics,omitempty"`
	// ReadVersion is the snapshot version the transaction read, if any.
	ReadVersion *int64 `json:"readVersion,omitempty"`
	// IsolationLevel is "Serializable", "WriteSerializable" or "SnapshotIsolation".
	IsolationLevel string `json:"isolationLevel,omitempty"`
	// IsBlindAppend is true when the commit only added files without reading.
	IsBlindAppend *bool `json:"isBlindAppend,omitempty"`
	// EngineInfo names the writer ("skiplake/<version>").
	EngineInfo string `json:"engineInfo,omitempty"`
	// TxnID is the transaction's unique id.
	TxnID string `json:"txnId,omitempty"`
	// Tags are free-form commit tags (delta.rowTracking.preserved, ...).
	Tags map[string]string `json:"tags,omitempty"`
	// Raw is every field as read (nil for commit infos built in memory).
	Raw map[string]any `json:"-"`
}

// commitInfoJSON is CommitInfo's JSON form: OperationParameters' texts written as
// JSON values (see CommitInfo.OperationParameters).
type commitInfoJSON struct {
	Timestamp           int64                      `json:"timestamp,omitempty"`
	InCommitTimestamp   *int64                     `json:"inCommitTimestamp,omitempty"`
	Operation           string                     `json:"operation,omitempty"`
	OperationParameters map[string]json.RawMessage `json:"operationParameters,omitempty"`
	OperationMetrics    map[string]string          `json:"operationMetrics,omitempty"`
	ReadVersion         *int64                     `json:"readVersion,omitempty"`
	IsolationLevel      string                     `json:"isolationLevel,omitempty"`
	IsBlindAppend       *bool                      `json:"isBlindAppend,omitempty"`
	EngineInfo          string                     `json:"engineInfo,omitempty"`
	TxnID               string                     `json:"txnId,omitempty"`
	Tags                map[string]string          `json:"tags,omitempty"`
}

// MarshalJSON writes the commitInfo with each operation parameter's JSON text as
// its value (Delta Spark's JsonMapSerializer): "mode":"Append", "version":1,
// "timestamp":null. A parameter text that is not valid JSON is written as a string.
func (c CommitInfo) MarshalJSON() ([]byte, error) {
	out := commitInfoJSON{Timestamp: c.Timestamp, InCommitTimestamp: c.InCommitTimestamp, Operation: c.Operation,
		OperationMetrics: c.OperationMetrics, ReadVersion: c.ReadVersion, IsolationLevel: c.IsolationLevel,
		IsBlindAppend: c.IsBlindAppend, EngineInfo: c.EngineInfo, TxnID: c.TxnID, Tags: c.Tags}
	if c.OperationParameters != nil {
		out.OperationParameters = make(map[string]json.RawMessage, len(c.OperationParameters))
		for k, v := range c.OperationParameters {
			if json.Valid([]byte(v)) {
				out.OperationParameters[k] = json.RawMessage(v)
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			out.OperationParameters[k] = b
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON fills the typed fields leniently (Spark writes
// operationParameters values of any JSON type) and keeps the raw map.
// OperationParameters gets each value's JSON text, compacted.
func (c *CommitInfo) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	*c = CommitInfo{Raw: raw}
	var params struct {
		OperationParameters map[string]json.RawMessage `json:"operationParameters"`
	}
	if json.Unmarshal(b, &params) == nil && params.OperationParameters != nil {
		c.OperationParameters = make(map[string]string, len(params.OperationParameters))
		for k, v := range params.OperationParameters {
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				c.OperationParameters[k] = buf.String()
			}
		}
	}
	c.Timestamp, _ = numberField(raw, "timestamp")
	if v, ok := numberField(raw, "inCommitTimestamp"); ok {
		c.InCommitTimestamp = &v
	}
	if v, ok := numberField(raw, "readVersion"); ok {
		c.ReadVersion = &v
	}
	c.Operation, _ = raw["operation"].(string)
	c.IsolationLevel, _ = raw["isolationLevel"].(string)
	c.EngineInfo, _ = raw["engineInfo"].(string)
	c.TxnID, _ = raw["txnId"].(string)
	if v, ok := raw["isBlindAppend"].(bool); ok {
		c.IsBlindAppend = &v
	}
	c.Tags = stringMap(raw["tags"])
	c.OperationMetrics = stringMap(raw["operationMetrics"])
	return nil
}

// DisplayParameters returns the operation parameters as people read them (the form
// of Delta Spark's DESCRIBE HISTORY): a string value's text (Append, ["a"] for
// Spark's partitionBy), any other value's JSON text (1, null, true).
//
// Commits written by skiplake before it wrote each value once hold every value as a
// string of its JSON text ("mode":"\"Append\""); for a commit whose engineInfo is
// skiplake's, a string value that is itself a JSON string literal is read through
// once more, so those show Append too.
func (c *CommitInfo) DisplayParameters() map[string]string {
	if c.OperationParameters == nil {
		return nil
	}
	legacy := strings.HasPrefix(c.EngineInfo, engineInfoPrefix)
	out := make(map[string]string, len(c.OperationParameters))
	for k, text := range c.OperationParameters {
		out[k] = displayParameter(text, legacy)
	}
	return out
}

func displayParameter(text string, legacy bool) string {
	var s string
	if !strings.HasPrefix(text, `"`) || json.Unmarshal([]byte(text), &s) != nil {
		return text // a number, boolean, null, list or object: its JSON text
	}
	if legacy && len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		var inner string
		if json.Unmarshal([]byte(s), &inner) == nil {
			return inner
		}
	}
	return s
}

func numberField(m map[string]any, k string) (int64, bool) {
	n, ok := m[k].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil {
			return 0, false
		}
		v = int64(f)
	}
	return v, true
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		switch t := x.(type) {
		case string:
			out[k] = t
		case json.Number:
			out[k] = t.String()
		default:
			b, err := json.Marshal(t)
			if err == nil {
				out[k] = string(b)
			}
		}
	}
	return out
}

// Action is one line of a commit file: exactly one of its fields is set.
type Action struct {
	// Add is set for "add" lines.
	Add *Add `json:"add,omitempty"`
	// Remove is set for "remove" lines.
	Remove *Remove `json:"remove,omitempty"`
	// Metadata is set for "metaData" lines.
	Metadata *Metadata `json:"metaData,omitempty"`
	// Protocol is set for "protocol" lines.
	Protocol *Protocol `json:"protocol,omitempty"`
	// Txn is set for "txn" lines.
	Txn *Txn `json:"txn,omitempty"`
	// CommitInfo is set for "commitInfo" lines.
	CommitInfo *CommitInfo `json:"commitInfo,omitempty"`
	// DomainMetadata is set for "domainMetadata" lines.
	DomainMetadata *DomainMetadata `json:"domainMetadata,omitempty"`
	// CheckpointMetadata is set for "checkpointMetadata" lines (v2 checkpoints).
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
	// Sidecar is set for "sidecar" lines (v2 checkpoints).
	Sidecar *Sidecar `json:"sidecar,omitempty"`
	// CDC is set for "cdc" lines.
	CDC *CDC `json:"cdc,omitempty"`
}

// count returns how many fields are set.
func (a *Action) count() int {
	n := 0
	for _, set := range []bool{a.Add != nil, a.Remove != nil, a.Metadata != nil, a.Protocol != nil,
		a.Txn != nil, a.CommitInfo != nil, a.DomainMetadata != nil, a.CheckpointMetadata != nil,
		a.Sidecar != nil, a.CDC != nil} {
		if set {
			n++
		}
	}
	return n
}

// validate checks the required fields of the set action.
func (a *Action) validate() error {
	switch {
	case a.Add != nil && a.Add.Path == "":
		return fmt.Errorf("add without path")
	case a.Remove != nil && a.Remove.Path == "":
		return fmt.Errorf("remove without path")
	case a.Txn != nil && a.Txn.AppID == "":
		return fmt.Errorf("txn without appId")
	case a.DomainMetadata != nil && a.DomainMetadata.Domain == "":
		return fmt.Errorf("domainMetadata without domain")
	case a.Sidecar != nil && a.Sidecar.Path == "":
		return fmt.Errorf("sidecar without path")
	case a.CDC != nil && a.CDC.Path == "":
		return fmt.Errorf("cdc without path")
	}
	return nil
}

// MarshalActions renders actions as newline-delimited JSON, one action per
// line. Each action must have exactly one field set.
func MarshalActions(actions []Action) ([]byte, error) {
	var buf bytes.Buffer
	for i := range actions {
		if n := actions[i].count(); n != 1 {
			return nil, fmt.Errorf("log: action %d has %d fields set, want exactly 1: %w", i, n, ErrInvalidTransaction)
		}
		b, err := json.Marshal(&actions[i])
		if err != nil {
			return nil, fmt.Errorf("log: encoding action %d: %w", i, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// ParseCommit reads newline-delimited JSON actions from r. name is used in
// error messages ("log: _delta_log/00..05.json line 3: ..."). Blank lines,
// unknown fields and unknown action types are ignored; a line that is not a
// JSON object or sets several known actions is an error wrapping ErrCorruptLog.
func ParseCommit(name string, r io.Reader) ([]Action, error) {
	var out []Action
	err := scanCommit(name, r, func(a *Action) error {
		out = append(out, *a)
		return nil
	})
	return out, err
}

// scanCommit streams the actions of a commit to fn.
func scanCommit(name string, r io.Reader, fn func(*Action) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	for {
		b, readErr := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			b = bytes.TrimSpace(b)
			if len(b) > 0 {
				var a Action
				if err := json.Unmarshal(b, &a); err != nil {
					return fmt.Errorf("log: %s line %d: %w: %v", name, line, ErrCorruptLog, err)
				}
				switch a.count() {
				case 0:
					// unknown action type: ignored (PROTOCOL.md "Protocol Evolution").
				case 1:
					if err := a.validate(); err != nil {
						return fmt.Errorf("log: %s line %d: %w: %v", name, line, ErrCorruptLog, err)
					}
					if err := fn(&a); err != nil {
						return err
					}
				default:
					return fmt.Errorf("log: %s line %d: %w: several actions on one line", name, line, ErrCorruptLog)
				}
			}
		}
		if readErr == io.EOF {
			return nil
		}
		if readErr != nil {
			return fmt.Errorf("log: reading %s: %w", name, readErr)
		}
	}
}

// isAbsoluteURI reports whether p starts with a URI scheme ("s3:", "file:").
func isAbsoluteURI(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == ':':
			return i > 0
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return false
}

func decodePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("log: empty file path: %w", ErrUnsupportedPath)
	}
	if isAbsoluteURI(p) {
		return "", fmt.Errorf("log: file path %q is an absolute URI: %w", p, ErrUnsupportedPath)
	}
	if !strings.Contains(p, "%") {
		return p, nil
	}
	d, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("log: file path %q: %w: %v", p, ErrUnsupportedPath, err)
	}
	return d, nil
}

// canonicalPath decodes p for use as a key; an undecodable path is used as is.
func canonicalPath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	if d, err := url.PathUnescape(p); err == nil {
		return d
	}
	return p
}

func fileKey(path string, dv *DeletionVectorDescriptor) string {
	p := canonicalPath(path)
	if dv == nil {
		return p
	}
	return p + "\x00" + dv.UniqueID()
}

func partitionValue(m map[string]*string, col string) (string, bool) {
	v, ok := m[col]
	if !ok || v == nil || *v == "" {
		return "", true
	}
	return *v, false
}
