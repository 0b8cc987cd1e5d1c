package log

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// structCols indexes the children of a struct array by field name.
type structCols struct {
	arr  *array.Struct
	cols map[string]arrow.Array
}

func newStructCols(a arrow.Array) (*structCols, bool) {
	s, ok := a.(*array.Struct)
	if !ok {
		return nil, false
	}
	st := s.DataType().(*arrow.StructType)
	cols := make(map[string]arrow.Array, st.NumFields())
	for i, f := range st.Fields() {
		cols[f.Name] = s.Field(i)
	}
	return &structCols{arr: s, cols: cols}, true
}

func (s *structCols) str(name string, i int) (string, bool) { return arrStr(s.cols[name], i) }
func (s *structCols) i64(name string, i int) (int64, bool)  { return arrInt(s.cols[name], i) }
func (s *structCols) boolean(name string, i int) (bool, bool) {
	a, ok := s.cols[name].(*array.Boolean)
	if !ok || a.IsNull(i) {
		return false, false
	}
	return a.Value(i), true
}

func arrStr(a arrow.Array, i int) (string, bool) {
	if a == nil || a.IsNull(i) {
		return "", false
	}
	switch v := a.(type) {
	case *array.String:
		return v.Value(i), true
	case *array.LargeString:
		return v.Value(i), true
	case *array.StringView:
		return v.Value(i), true
	case *array.Binary:
		return string(v.Value(i)), true
	case *array.LargeBinary:
		return string(v.Value(i)), true
	}
	return "", false
}

func arrInt(a arrow.Array, i int) (int64, bool) {
	if a == nil || a.IsNull(i) {
		return 0, false
	}
	switch v := a.(type) {
	case *array.Int64:
		return v.Value(i), true
	case *array.Int32:
		return int64(v.Value(i)), true
	case *array.Int16:
		return int64(v.Value(i)), true
	case *array.Int8:
		return int64(v.Value(i)), true
	case *array.Uint64:
		return int64(v.Value(i)), true
	case *array.Uint32:
		return int64(v.Value(i)), true
	}
	return 0, false
}

// strMap reads a map<string,string> cell; null map → nil, null value → nil pointer.
func strPtrMap(a arrow.Array, i int) map[string]*string {
	m, ok := a.(*array.Map)
	if !ok || m.IsNull(i) {
		return nil
	}
	start, end := m.ValueOffsets(i)
	out := make(map[string]*string, end-start)
	keys, items := m.Keys(), m.Items()
	for j := int(start); j < int(end); j++ {
		k, ok := arrStr(keys, j)
		if !ok {
			continue
		}
		if v, ok := arrStr(items, j); ok {
			out[k] = &v
		} else {
			out[k] = nil
		}
	}
	return out
}

func strMap(a arrow.Array, i int) map[string]string {
	pm := strPtrMap(a, i)
	if pm == nil {
		return nil
	}
	out := make(map[string]string, len(pm))
	for k, v := range pm {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func dvAt(a arrow.Array, i int) *DeletionVectorDescriptor {
	if a == nil || a.IsNull(i) {
		return nil
	}
	s, ok := newStructCols(a)
	if !ok {
		return nil
	}
	d := &DeletionVectorDescriptor{}
	d.StorageType, _ = s.str("storageType", i)
	d.PathOrInlineDv, _ = s.str("pathOrInlineDv", i)
	if v, ok := s.i64("offset", i); ok {
		o := int32(v)
		d.Offset = &o
	}
	v, _ := s.i64("sizeInBytes", i)
	d.SizeInBytes = int32(v)
	d.Cardinality, _ = s.i64("cardinality", i)
	if v, ok := s.i64("maxRowIndex", i); ok {
		d.MaxRowIndex = &v
	}
	return d
}

func optI64(s *structCols, name string, i int) *int64 {
	if v, ok := s.i64(name, i); ok {
		return &v
	}
	return nil
}

// addCols are the children of a checkpoint "add" column, looked up once per record
// batch (a map lookup per field and row was a measurable part of reading a
// checkpoint of a million files). A missing child is nil and reads as null.
type addCols struct {
	arr                                    *array.Struct
	path, partitionValues, partitionParsed arrow.Array
	size, modificationTime, dataChange     arrow.Array
	stats, statsParsed, tags, dv           arrow.Array
	baseRowID, defaultRowCommitVersion     arrow.Array
	clusteringProvider                     arrow.Array
	// statsJSON renders statsParsed cells as JSON stats (nil: the generic path).
	statsJSON *statsRenderer
}

func newAddCols(s *structCols) *addCols {
	c := &addCols{
		arr: s.arr, path: s.cols["path"], partitionValues: s.cols["partitionValues"],
		partitionParsed: s.cols["partitionValues_parsed"], size: s.cols["size"],
		modificationTime: s.cols["modificationTime"], dataChange: s.cols["dataChange"],
		stats: s.cols["stats"], statsParsed: s.cols["stats_parsed"], tags: s.cols["tags"],
		dv: s.cols["deletionVector"], baseRowID: s.cols["baseRowId"],
		defaultRowCommitVersion: s.cols["defaultRowCommitVersion"], clusteringProvider: s.cols["clusteringProvider"],
	}
	if c.statsParsed != nil {
		c.statsJSON = newStatsRenderer(c.statsParsed)
	}
	return c
}

// addAt fills a with the add action in row i of the checkpoint "add" column;
// partition value maps come from pv (shared between files with equal values).
func addAt(c *addCols, i int, pv *partitionInterner, a *Add) error {
	a.Path, _ = arrStr(c.path, i)
	a.PartitionValues = pv.mapAt(c.partitionValues, i)
	if a.PartitionValues == nil {
		if c.partitionParsed != nil && !c.partitionParsed.IsNull(i) {
			a.PartitionValues = renderParsedPartitions(c.partitionParsed, i)
		}
	}
	a.Size, _ = arrInt(c.size, i)
	a.ModificationTime, _ = arrInt(c.modificationTime, i)
	a.DataChange, _ = arrBool(c.dataChange, i)
	a.Stats, _ = arrStr(c.stats, i)
	if a.Stats == "" {
		if sp := c.statsParsed; sp != nil && !sp.IsNull(i) {
			s, err := renderStats(c.statsJSON, sp, i)
			if err != nil {
				return err
			}
			a.Stats = s
		}
	}
	a.Tags = strMap(c.tags, i)
	a.DeletionVector = dvAt(c.dv, i)
	a.BaseRowID = optInt(c.baseRowID, i)
	a.DefaultRowCommitVersion = optInt(c.defaultRowCommitVersion, i)
	a.ClusteringProvider, _ = arrStr(c.clusteringProvider, i)
	return nil
}

func arrBool(a arrow.Array, i int) (bool, bool) {
	b, ok := a.(*array.Boolean)
	if !ok || b.IsNull(i) {
		return false, false
	}
	return b.Value(i), true
}

func optInt(a arrow.Array, i int) *int64 {
	if v, ok := arrInt(a, i); ok {
		return &v
	}
	return nil
}

// maxInternedPartitions bounds the distinct partition value sets one checkpoint read
// shares; beyond it each file gets its own map, as before.
const maxInternedPartitions = 1 << 16

// partitionInterner hands out one map per distinct set of partition values read
// from a checkpoint: a table has far fewer partitions than files, and the maps are
// read-only (a snapshot's actions must not be modified). Not safe for concurrent use.
type partitionInterner struct {
	maps map[string]map[string]*string
	key  []byte
}

// mapAt reads the map<string,string> cell i of a as strPtrMap does (null map → nil,
// null value → nil pointer), returning a shared map for values seen before.
func (p *partitionInterner) mapAt(a arrow.Array, i int) map[string]*string {
	m, ok := a.(*array.Map)
	if !ok || m.IsNull(i) {
		return nil
	}
	start, end := m.ValueOffsets(i)
	keys, items := m.Keys(), m.Items()
	// The key lists each entry as key, NUL, then 'v' and the value or 'n' for null,
	// NUL: unambiguous, since a NUL cannot occur in a column name.
	p.key = p.key[:0]
	for j := int(start); j < int(end); j++ {
		k, ok := arrStr(keys, j)
		if !ok {
			continue
		}
		p.key = append(append(p.key, k...), 0)
		if v, ok := arrStr(items, j); ok {
			p.key = append(append(append(p.key, 'v'), v...), 0)
		} else {
			p.key = append(p.key, 'n', 0)
		}
	}
	if shared, ok := p.maps[string(p.key)]; ok {
		return shared
	}
	out := strPtrMap(a, i)
	if p.maps == nil {
		p.maps = map[string]map[string]*string{}
	}
	if len(p.maps) < maxInternedPartitions {
		p.maps[string(p.key)] = out
	}
	return out
}

// removeAt extracts a remove action from row i of the checkpoint "remove" column.
func removeAt(s *structCols, i int) *Remove {
	r := &Remove{}
	r.Path, _ = s.str("path", i)
	r.DeletionTimestamp = optI64(s, "deletionTimestamp", i)
	r.DataChange, _ = s.boolean("dataChange", i)
	r.ExtendedFileMetadata, _ = s.boolean("extendedFileMetadata", i)
	r.PartitionValues = strPtrMap(s.cols["partitionValues"], i)
	r.Size = optI64(s, "size", i)
	r.Stats, _ = s.str("stats", i)
	r.Tags = strMap(s.cols["tags"], i)
	r.DeletionVector = dvAt(s.cols["deletionVector"], i)
	r.BaseRowID = optI64(s, "baseRowId", i)
	r.DefaultRowCommitVersion = optI64(s, "defaultRowCommitVersion", i)
	return r
}

// renderParsedPartitions turns a partitionValues_parsed struct cell into the
// serialized string form (PROTOCOL.md "Partition Value Serialization").
func renderParsedPartitions(a arrow.Array, i int) map[string]*string {
	s, ok := newStructCols(a)
	if !ok {
		return nil
	}
	out := map[string]*string{}
	for name, col := range s.cols {
		if col.IsNull(i) {
			out[name] = nil
			continue
		}
		var v string
		switch c := col.(type) {
		case *array.Timestamp:
			t := tsToTime(int64(c.Value(i)), c.DataType().(*arrow.TimestampType).Unit)
			v = t.UTC().Format("2006-01-02 15:04:05.999999")
		case *array.Date32:
			v = time.Unix(int64(c.Value(i))*86400, 0).UTC().Format("2006-01-02")
		default:
			switch x := arrowToAny(col, i, false).(type) {
			case string:
				v = x
			case bool:
				v = strconv.FormatBool(x)
			case json.Number:
				v = x.String()
			default:
				b, _ := json.Marshal(x)
				v = string(b)
			}
		}
		out[name] = &v
	}
	return out
}

func tsToTime(v int64, unit arrow.TimeUnit) time.Time {
	switch unit {
	case arrow.Second:
		return time.Unix(v, 0)
	case arrow.Millisecond:
		return time.UnixMilli(v)
	case arrow.Nanosecond:
		return time.Unix(0, v)
	}
	return time.UnixMicro(v)
}

// arrowToAny converts one cell to a JSON-compatible Go value. With
// omitNulls, null struct fields are left out (the JSON stats form).
// Timestamps render as ISO-8601 with milliseconds ("Z" for UTC-adjusted,
// no zone for timestamp_ntz), dates as YYYY-MM-DD, decimals as JSON numbers,
// non-finite floats as the strings "NaN", "Infinity", "-Infinity".
func arrowToAny(a arrow.Array, i int, omitNulls bool) any {
	if a == nil || a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return int64(c.Value(i))
	case *array.Int16:
		return int64(c.Value(i))
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Int64:
		return c.Value(i)
	case *array.Float32:
		return floatAny(float64(c.Value(i)))
	case *array.Float64:
		return floatAny(c.Value(i))
	case *array.String, *array.LargeString, *array.StringView:
		s, _ := arrStr(a, i)
		return s
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(c.Value(i))
	case *array.Date32:
		return time.Unix(int64(c.Value(i))*86400, 0).UTC().Format("2006-01-02")
	case *array.Timestamp:
		tt := c.DataType().(*arrow.TimestampType)
		t := tsToTime(int64(c.Value(i)), tt.Unit).UTC()
		if tt.TimeZone == "" {
			return t.Format("2006-01-02T15:04:05.000")
		}
		return t.Format("2006-01-02T15:04:05.000Z07:00")
	case *array.Decimal128:
		dt := c.DataType().(*arrow.Decimal128Type)
		return json.Number(c.Value(i).ToString(dt.Scale))
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		m := make(map[string]any, st.NumFields())
		for j, f := range st.Fields() {
			v := arrowToAny(c.Field(j), i, omitNulls)
			if v == nil && omitNulls {
				continue
			}
			m[f.Name] = v
		}
		return m
	case *array.Map:
		start, end := c.ValueOffsets(i)
		m := make(map[string]any, end-start)
		for j := int(start); j < int(end); j++ {
			k := arrowToAny(c.Keys(), j, omitNulls)
			ks, ok := k.(string)
			if !ok {
				b, _ := json.Marshal(k)
				ks = string(b)
			}
			m[ks] = arrowToAny(c.Items(), j, omitNulls)
		}
		return m
	case array.ListLike:
		start, end := c.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			out = append(out, arrowToAny(c.ListValues(), j, omitNulls))
		}
		return out
	}
	return a.ValueStr(i)
}

func floatAny(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// decodeGeneric converts a struct cell to the typed action v via JSON.
func decodeGeneric(a arrow.Array, i int, v any) error {
	b, err := json.Marshal(arrowToAny(a, i, true))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

type (
	arrowField = arrow.Field
	arrowArray = arrow.Array
)
