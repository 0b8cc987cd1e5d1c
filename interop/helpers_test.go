package interop

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"
)

// rowsKnob returns the number of rows per generated commit: SKIPLAKE_INTEROP_ROWS
// when set, otherwise def (divided by four under -short).
func rowsKnob(t testing.TB, def int) int {
	if s := os.Getenv("SKIPLAKE_INTEROP_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("interop: SKIPLAKE_INTEROP_ROWS=%q: want a positive integer", s)
		}
		return n
	}
	if testing.Short() {
		return max(def/4, 50)
	}
	return def
}

// seedKnob returns base, or base mixed with SKIPLAKE_INTEROP_SEED when that is set
// (to explore other random tables and predicates; the seed is logged for replay).
func seedKnob(t testing.TB, base uint64) uint64 {
	s := os.Getenv("SKIPLAKE_INTEROP_SEED")
	if s == "" {
		return base
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("interop: SKIPLAKE_INTEROP_SEED=%q: want an unsigned integer", s)
	}
	seed := base ^ (n * 0x9e3779b97f4a7c15)
	t.Logf("seed %d (SKIPLAKE_INTEROP_SEED=%d)", seed, n)
	return seed
}

// openDuck opens an in-memory DuckDB database pinned to one connection (so session
// settings stick) with the session time zone set to UTC; it is closed at cleanup.
func openDuck(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatalf("interop: open duckdb: %v", err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatalf("interop: duckdb: %v", err)
	}
	return db
}

// sqlString quotes s as an SQL string literal (both DuckDB and skiplake's grammar).
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlIdent quotes a column name for DuckDB.
func sqlIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// liveFile is one data file DuckDB's independent log replay found live.
type liveFile struct {
	Path            string             // decoded, relative to the table root
	PartitionValues map[string]*string // as the add action serialised them
	Stats           string             // add.stats
	Size            int64
}

// duckReplay replays the JSON commits of the table in dir up to version maxVersion
// (-1: all) with DuckDB alone: every add and remove, newest action per path wins.
// Paths are percent-decoded with Go's net/url (not skiplake's decoder).
func duckReplay(t testing.TB, db *sql.DB, dir string, maxVersion int64) []liveFile {
	t.Helper()
	glob := filepath.Join(dir, "_delta_log", "*.json")
	q := `
WITH log AS (
  SELECT add, remove, CAST(regexp_extract(filename, '(\d+)\.json$', 1) AS BIGINT) AS v
  FROM read_json(` + sqlString(glob) + `, format = 'newline_delimited', union_by_name = true,
       filename = true,
       columns = {'add': 'STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, stats VARCHAR)',
                  'remove': 'STRUCT(path VARCHAR)'})
),
acts AS (
  SELECT v, add.path AS path, true AS is_add, CAST(to_json(add.partitionValues) AS VARCHAR) AS pv, add.stats AS stats, add.size AS size
  FROM log WHERE add IS NOT NULL
  UNION ALL
  SELECT v, remove.path, false, NULL, NULL, NULL FROM log WHERE remove IS NOT NULL
),
latest AS (
  SELECT * FROM acts WHERE ? < 0 OR v <= ?
  QUALIFY row_number() OVER (PARTITION BY path ORDER BY v DESC, is_add ASC) = 1
)
SELECT path, pv, stats, size FROM latest WHERE is_add ORDER BY path`
	rows, err := db.Query(q, maxVersion, maxVersion)
	if err != nil {
		t.Fatalf("interop: duckdb log replay of %s: %v", dir, err)
	}
	defer rows.Close()
	var out []liveFile
	for rows.Next() {
		var path, pv string
		var stats sql.NullString
		var size int64
		if err := rows.Scan(&path, &pv, &stats, &size); err != nil {
			t.Fatalf("interop: duckdb log replay: %v", err)
		}
		dec, err := url.PathUnescape(path)
		if err != nil {
			t.Fatalf("interop: add.path %q is not percent-encoded correctly: %v", path, err)
		}
		f := liveFile{Path: dec, Stats: stats.String, Size: size}
		if err := json.Unmarshal([]byte(pv), &f.PartitionValues); err != nil {
			t.Fatalf("interop: partitionValues %s of %s: %v", pv, path, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("interop: duckdb log replay: %v", err)
	}
	return out
}

// duckType names the DuckDB type a partition column of Arrow type dt is cast to.
func duckType(t testing.TB, dt arrow.DataType) string {
	switch dt.ID() {
	case arrow.STRING:
		return "VARCHAR"
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT16:
		return "SMALLINT"
	case arrow.INT32:
		return "INTEGER"
	case arrow.INT64:
		return "BIGINT"
	case arrow.DATE32:
		return "DATE"
	case arrow.BOOL:
		return "BOOLEAN"
	}
	t.Fatalf("interop: no DuckDB partition type for %s", dt)
	return ""
}

// duckTableSQL returns a DuckDB query producing the table's rows from the given live
// files: the Parquet files read with read_parquet (no hive partitioning) and the
// partition columns cast by DuckDB from the strings in the add actions. Columns
// come in schema order. An empty file list yields a query with no rows.
func duckTableSQL(t testing.TB, dir string, schema *arrow.Schema, partCols []string, files []liveFile) string {
	t.Helper()
	isPart := map[string]bool{}
	for _, p := range partCols {
		isPart[p] = true
	}
	var parts []string
	for _, f := range files {
		var cols []string
		for _, fld := range schema.Fields() {
			if !isPart[fld.Name] {
				cols = append(cols, sqlIdent(fld.Name))
				continue
			}
			lit := "NULL"
			if v := f.PartitionValues[fld.Name]; v != nil && *v != "" {
				lit = sqlString(*v)
			}
			cols = append(cols, fmt.Sprintf("CAST(%s AS %s) AS %s", lit, duckType(t, fld.Type), sqlIdent(fld.Name)))
		}
		parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet(%s, hive_partitioning = false)",
			strings.Join(cols, ", "), sqlString(filepath.Join(dir, filepath.FromSlash(f.Path)))))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// duckRows runs q and renders every row canonically, guided by the Arrow schema.
func duckRows(t testing.TB, db *sql.DB, q string, schema *arrow.Schema) []string {
	t.Helper()
	if q == "" {
		return nil
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("interop: duckdb: %v\nquery: %s", err, abbreviate(q))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != schema.NumFields() {
		t.Fatalf("interop: duckdb returned %d columns, schema has %d", len(cols), schema.NumFields())
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	var sb strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("interop: duckdb scan: %v", err)
		}
		sb.Reset()
		for i, v := range vals {
			if i > 0 {
				sb.WriteString(" | ")
			}
			s, err := canonDuck(v, schema.Field(i).Type)
			if err != nil {
				t.Fatalf("interop: duckdb column %s: %v", schema.Field(i).Name, err)
			}
			sb.WriteString(s)
		}
		out = append(out, sb.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("interop: duckdb rows: %v", err)
	}
	return out
}

func abbreviate(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// arrowRows renders every row of tbl canonically.
func arrowRows(t testing.TB, tbl arrow.Table) []string {
	t.Helper()
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	return scanRows(t, tr)
}

// scanRows renders every row a record reader (a skiplake scan, a table) returns.
func scanRows(t testing.TB, rdr array.RecordReader) []string {
	t.Helper()
	var out []string
	var sb strings.Builder
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			sb.Reset()
			for c := 0; c < int(rec.NumCols()); c++ {
				if c > 0 {
					sb.WriteString(" | ")
				}
				s, err := canonArrow(rec.Column(c), r)
				if err != nil {
					t.Fatalf("interop: column %s row %d: %v", rec.ColumnName(c), r, err)
				}
				sb.WriteString(s)
			}
			out = append(out, sb.String())
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("interop: reading rows: %v", err)
	}
	return out
}

// sameMultiset reports how two row multisets differ (nil when equal): up to limit
// rows only on each side.
func sameMultiset(ours, theirs []string, limit int) error {
	counts := map[string]int{}
	for _, r := range ours {
		counts[r]++
	}
	for _, r := range theirs {
		counts[r]--
	}
	var onlyOurs, onlyTheirs []string
	for r, n := range counts {
		for ; n > 0; n-- {
			onlyOurs = append(onlyOurs, r)
		}
		for ; n < 0; n++ {
			onlyTheirs = append(onlyTheirs, r)
		}
	}
	if len(onlyOurs) == 0 && len(onlyTheirs) == 0 {
		return nil
	}
	sort.Strings(onlyOurs)
	sort.Strings(onlyTheirs)
	var b strings.Builder
	fmt.Fprintf(&b, "skiplake %d rows, duckdb %d rows; %d only in skiplake, %d only in duckdb",
		len(ours), len(theirs), len(onlyOurs), len(onlyTheirs))
	for i, r := range onlyOurs {
		if i == limit {
			break
		}
		fmt.Fprintf(&b, "\n  skiplake only: %s", r)
	}
	for i, r := range onlyTheirs {
		if i == limit {
			break
		}
		fmt.Fprintf(&b, "\n  duckdb only:   %s", r)
	}
	return errors.New(b.String())
}

// Canonical rendering. Both sides render the same logical value to the same text:
//   integers in decimal; floats as the shortest text for their width (so equal text
//   means equal bits), NaN/+Inf/-Inf by name, and -0 as -0: rows are compared on bit
//   patterns, so neither engine may turn -0.0 into 0.0; decimals as unscaled "e-" scale;
//   strings quoted; binary in hex; dates as days since the epoch; timestamps as
//   microseconds since the epoch; structs, lists and maps recursively (map entries
//   sorted, so key order does not matter).

func canonFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case f == 0 && math.Signbit(f):
		return "-0" // bit patterns: a reader that turns -0.0 into 0.0 changed the data
	case f == 0:
		return "0"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func canonDecimal(unscaled *big.Int, scale int) string {
	return unscaled.String() + "e-" + strconv.Itoa(scale)
}

const nullText = "NULL"

func canonArrow(arr arrow.Array, i int) (string, error) {
	if arr.IsNull(i) {
		return nullText, nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10), nil
	case *array.Float32:
		return canonFloat(float64(a.Value(i)), 32), nil
	case *array.Float64:
		return canonFloat(a.Value(i), 64), nil
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return canonDecimal(a.Value(i).BigInt(), int(dt.Scale)), nil
	case *array.String:
		return strconv.Quote(a.Value(i)), nil
	case *array.LargeString:
		return strconv.Quote(a.Value(i)), nil
	case *array.Binary:
		return "x" + hex.EncodeToString(a.Value(i)), nil
	case *array.LargeBinary:
		return "x" + hex.EncodeToString(a.Value(i)), nil
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i)), nil
	case *array.Date32:
		return "d" + strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		if dt.Unit != arrow.Microsecond {
			return "", fmt.Errorf("timestamp unit %s, want us", dt.Unit)
		}
		return "t" + strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Struct:
		parts := make([]string, a.NumField())
		for f := range parts {
			s, err := canonArrow(a.Field(f), i)
			if err != nil {
				return "", err
			}
			parts[f] = s
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		var parts []string
		for j := start; j < end; j++ {
			k, err := canonArrow(keys, int(j))
			if err != nil {
				return "", err
			}
			v, err := canonArrow(items, int(j))
			if err != nil {
				return "", err
			}
			parts = append(parts, k+": "+v)
		}
		sort.Strings(parts)
		return "map{" + strings.Join(parts, ", ") + "}", nil
	case *array.List:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		var parts []string
		for j := start; j < end; j++ {
			s, err := canonArrow(vals, int(j))
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		var parts []string
		for j := start; j < end; j++ {
			s, err := canonArrow(vals, int(j))
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	}
	return "", fmt.Errorf("no canonical form for Arrow type %s", arr.DataType())
}

const microsPerDay = 86400 * 1000000

func canonDuck(v any, dt arrow.DataType) (string, error) {
	if v == nil {
		return nullText, nil
	}
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		rv := reflect.ValueOf(v)
		if !rv.CanInt() {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return strconv.FormatInt(rv.Int(), 10), nil
	case arrow.FLOAT32:
		f, ok := v.(float32)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return canonFloat(float64(f), 32), nil
	case arrow.FLOAT64:
		f, ok := v.(float64)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return canonFloat(f, 64), nil
	case arrow.DECIMAL128:
		d, ok := v.(duckdb.Decimal)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		want := dt.(*arrow.Decimal128Type).Scale
		if int32(d.Scale) != want {
			return "", fmt.Errorf("duckdb decimal scale %d, schema scale %d", d.Scale, want)
		}
		return canonDecimal(d.Value, int(d.Scale)), nil
	case arrow.STRING, arrow.LARGE_STRING:
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return strconv.Quote(s), nil
	case arrow.BINARY, arrow.LARGE_BINARY:
		b, ok := v.([]byte)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return "x" + hex.EncodeToString(b), nil
	case arrow.BOOL:
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return strconv.FormatBool(b), nil
	case arrow.DATE32:
		tm, ok := v.(time.Time)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		us := tm.UnixMicro()
		days := us / microsPerDay
		if us%microsPerDay != 0 {
			return "", fmt.Errorf("date %v is not midnight UTC", tm)
		}
		return "d" + strconv.FormatInt(days, 10), nil
	case arrow.TIMESTAMP:
		tm, ok := v.(time.Time)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		return "t" + strconv.FormatInt(tm.UnixMicro(), 10), nil
	case arrow.STRUCT:
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		st := dt.(*arrow.StructType)
		parts := make([]string, st.NumFields())
		for i, f := range st.Fields() {
			s, err := canonDuck(m[f.Name], f.Type)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case arrow.LIST, arrow.LARGE_LIST:
		l, ok := v.([]any)
		if !ok {
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		et := dt.(arrow.ListLikeType).Elem()
		parts := make([]string, len(l))
		for i, e := range l {
			s, err := canonDuck(e, et)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case arrow.MAP:
		mt := dt.(*arrow.MapType)
		var keys, vals []any
		switch m := v.(type) {
		case duckdb.OrderedMap:
			keys, vals = m.Keys(), m.Values()
		case *duckdb.OrderedMap:
			keys, vals = m.Keys(), m.Values()
		case duckdb.Map:
			for k, x := range m {
				keys = append(keys, k)
				vals = append(vals, x)
			}
		default:
			return "", fmt.Errorf("got %T for %s", v, dt)
		}
		parts := make([]string, len(keys))
		for i := range keys {
			k, err := canonDuck(keys[i], mt.KeyType())
			if err != nil {
				return "", err
			}
			x, err := canonDuck(vals[i], mt.ItemType())
			if err != nil {
				return "", err
			}
			parts[i] = k + ": " + x
		}
		sort.Strings(parts)
		return "map{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("no canonical form for %T as %s", v, dt)
}

// bg is the context of every call in these tests (none is cancelled).
var bg = context.Background()
