package log

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Now returns the log's clock reading: the time it stamps commits with. DML commands
// take deletionTimestamp values from it so that tests with an injected clock see
// consistent times.
func (l *Log) Now() time.Time { return l.now() }

// RemoveAction returns the remove action that takes a's logical file out of the table,
// as Spark writes it: the same path and deletion vector (the reconciliation key, so the
// remove cancels exactly this add, invariant L3), deletionTimestamp, dataChange,
// extendedFileMetadata=true with partitionValues, size, tags and stats, and the
// row-tracking fields. a is not modified; maps are shared with it.
func (a *Add) RemoveAction(deletionTimestamp int64, dataChange bool) *Remove {
	size := a.Size
	ts := deletionTimestamp
	var dv *DeletionVectorDescriptor
	if a.DeletionVector != nil {
		c := *a.DeletionVector
		dv = &c
	}
	return &Remove{Path: a.Path, DeletionTimestamp: &ts, DataChange: dataChange, ExtendedFileMetadata: true,
		PartitionValues: a.PartitionValues, Size: &size, Stats: a.Stats, Tags: a.Tags, DeletionVector: dv,
		BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion}
}

// ReplaceDeletionVector returns the remove/add pair with which a DML commit gives the
// live file a new deletion vector dv (the old vector plus the rows the command deletes):
//
//   - remove: live's path with live's old deletion vector (none if it had none), so that
//     it cancels exactly the live (path, dv id) key; dataChange=true, deletionTimestamp,
//     extendedFileMetadata with partitionValues, size, tags and the old stats;
//   - add: live with dv as its deletion vector and dataChange=true, everything else kept
//     (modificationTime, tags, row-tracking fields), and stats marked "tightBounds":false
//     as PROTOCOL.md ("Per-file Statistics") allows once rows are deleted: min/max stay
//     valid bounds of the remaining rows but may no longer be attained.
//
// Reconciliation keys files by (path, deletion vector id), so the pair replaces the file
// in place: a snapshot after the commit holds the path once, with dv.
//
// Stats: PROTOCOL.md ("Writer Requirement for Deletion Vectors") requires a file with a
// deletion vector to carry numRecords, the
// physical row count; live.Stats must have it (a file without it needs its stats
// computed from the data file first). With wide bounds a nullCount is informative only
// when it is 0 or numRecords: when live's stats were tight and live already had a vector,
// a nullCount equal to the live row count (all remaining rows null) is rewritten to
// numRecords so that the fact survives, as Spark does; other counts are kept (0 stays 0,
// others become uninformative). Stats already wide are kept as they are. Keys keep their
// order; numbers are copied verbatim.
//
// Errors (wrapping ErrInvalidTransaction, nothing is returned): live or dv nil; dv with
// the same unique id as live's vector; dv deleting fewer rows than live's vector
// (invariant D1: a deletion vector only grows); dv deleting every row or more rows than
// numRecords (remove the file instead, see RemoveAction); stats missing or without
// numRecords.
func ReplaceDeletionVector(live *Add, dv *DeletionVectorDescriptor, deletionTimestamp int64) (*Remove, *Add, error) {
	if live == nil || dv == nil {
		return nil, nil, fmt.Errorf("log: replace deletion vector: nil file or vector: %w", ErrInvalidTransaction)
	}
	fail := func(format string, args ...any) (*Remove, *Add, error) {
		return nil, nil, fmt.Errorf("log: replace deletion vector of %s: %s: %w", live.Path, fmt.Sprintf(format, args...), ErrInvalidTransaction)
	}
	if dv.StorageType == "" || dv.Cardinality < 1 {
		return fail("new vector %q deletes %d rows", dv.UniqueID(), dv.Cardinality)
	}
	var oldCard int64
	if old := live.DeletionVector; old != nil {
		if old.UniqueID() == dv.UniqueID() {
			return fail("new vector has the file's current id %q", dv.UniqueID())
		}
		if dv.Cardinality < old.Cardinality {
			return fail("new vector deletes %d rows, the current one %d: a deletion vector only grows", dv.Cardinality, old.Cardinality)
		}
		oldCard = old.Cardinality
	}
	stats, numRecords, err := wideBoundsStats(live.Stats, oldCard)
	if err != nil {
		return fail("%v", err)
	}
	if dv.Cardinality >= numRecords {
		return fail("new vector deletes %d of %d rows; remove the file instead", dv.Cardinality, numRecords)
	}
	rm := live.RemoveAction(deletionTimestamp, true)
	add := *live
	ndv := *dv
	add.DeletionVector = &ndv
	add.DataChange = true
	add.Stats = stats
	return rm, &add, nil
}

// wideBoundsStats returns stats with "tightBounds":false and numRecords. oldCard is the
// cardinality of the file's current deletion vector (0 without one); see
// ReplaceDeletionVector for the nullCount rule.
func wideBoundsStats(stats string, oldCard int64) (string, int64, error) {
	if stats == "" {
		return "", 0, fmt.Errorf("the file has no stats (numRecords is required with a deletion vector)")
	}
	fields, err := orderedObject([]byte(stats))
	if err != nil {
		return "", 0, fmt.Errorf("stats are not a JSON object: %v", err)
	}
	numRecords, tight := int64(-1), true
	for _, f := range fields {
		switch f.key {
		case "numRecords":
			n, err := strconv.ParseInt(string(bytes.TrimSpace(f.raw)), 10, 64)
			if err != nil || n < 0 {
				return "", 0, fmt.Errorf("numRecords %s is not a row count", f.raw)
			}
			numRecords = n
		case "tightBounds":
			var b bool
			if err := json.Unmarshal(f.raw, &b); err != nil {
				return "", 0, fmt.Errorf("tightBounds %s is not a boolean", f.raw)
			}
			tight = b
		}
	}
	if numRecords < 0 {
		return "", 0, fmt.Errorf("stats have no numRecords (required with a deletion vector)")
	}
	if oldCard > numRecords {
		return "", 0, fmt.Errorf("the current vector deletes %d of %d rows", oldCard, numRecords)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	wroteTight := false
	for i, f := range fields {
		if i > 0 {
			out.WriteByte(',')
		}
		writeKey(&out, f.key)
		switch {
		case f.key == "tightBounds":
			out.WriteString("false")
			wroteTight = true
		case f.key == "nullCount" && tight && oldCard > 0:
			v, err := widenNullCounts(f.raw, numRecords-oldCard, numRecords)
			if err != nil {
				return "", 0, fmt.Errorf("nullCount: %v", err)
			}
			out.Write(v)
		default:
			out.Write(f.raw)
		}
	}
	if !wroteTight {
		if len(fields) > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`"tightBounds":false`)
	}
	out.WriteByte('}')
	return out.String(), numRecords, nil
}

// widenNullCounts rewrites, in a (possibly nested) nullCount object, every count equal
// to live (the rows left by the old vector) to physical.
func widenNullCounts(raw json.RawMessage, live, physical int64) ([]byte, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil && n == live {
			return []byte(strconv.FormatInt(physical, 10)), nil
		}
		return raw, nil
	}
	fields, err := orderedObject(t)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			out.WriteByte(',')
		}
		writeKey(&out, f.key)
		v, err := widenNullCounts(f.raw, live, physical)
		if err != nil {
			return nil, err
		}
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

type jsonField struct {
	key string
	raw json.RawMessage
}

// orderedObject splits a JSON object into its members in document order.
func orderedObject(b []byte) ([]jsonField, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var out []jsonField
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, jsonField{key: key, raw: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return out, nil
}

func writeKey(out *bytes.Buffer, k string) {
	b, _ := json.Marshal(k)
	out.Write(b)
	out.WriteByte(':')
}
