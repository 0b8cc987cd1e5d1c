package interop

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/table"
)

// statLeaf is one column the stats JSON may describe: a primitive leaf (possibly
// inside structs) or a list/map column, which gets a nullCount only.
type statLeaf struct {
	path []string
	typ  arrow.DataType
}

func (l statLeaf) duckExpr() string {
	parts := make([]string, len(l.path))
	for i, p := range l.path {
		parts[i] = sqlIdent(p)
	}
	return strings.Join(parts, ".")
}

func (l statLeaf) name() string { return strings.Join(l.path, ".") }

// boundsKind says how a leaf's min/max are compared; "" means Delta collects none.
func (l statLeaf) boundsKind() string {
	switch l.typ.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return "int"
	case arrow.FLOAT32, arrow.FLOAT64:
		return "float"
	case arrow.DECIMAL128:
		return "decimal"
	case arrow.STRING:
		return "string"
	case arrow.DATE32:
		return "date"
	case arrow.TIMESTAMP:
		return "timestamp"
	}
	return "" // boolean, binary, list, map
}

func statLeaves(fields []arrow.Field, prefix []string, skip map[string]bool) []statLeaf {
	var out []statLeaf
	for _, f := range fields {
		if len(prefix) == 0 && skip[f.Name] {
			continue
		}
		p := append(append([]string(nil), prefix...), f.Name)
		if st, ok := f.Type.(*arrow.StructType); ok {
			out = append(out, statLeaves(st.Fields(), p, nil)...)
			continue
		}
		out = append(out, statLeaf{path: p, typ: f.Type})
	}
	return out
}

// lookup walks a stats section (minValues, maxValues, nullCount) along path.
func lookup(section any, path []string) (any, bool) {
	cur := section
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[p]
		if !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

// prefixRunes returns the first n code points of s.
func prefixRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}

func floorMillis(us int64) int64 {
	ms := us / 1000
	if us%1000 < 0 {
		ms--
	}
	return ms * 1000
}

// parseStatTime parses a Delta stats timestamp: ISO-8601 with an offset (timestamp)
// or without one (timestamp_ntz, read as UTC).
func parseStatTime(s string) (time.Time, error) {
	if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return tm, nil
	}
	return time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.UTC)
}

// checkBound compares one of our bounds (from the stats JSON) with DuckDB's exact
// aggregate over the file. isMax selects the max rules.
func checkBound(kind string, typ arrow.DataType, ours any, duck any, isMax bool) error {
	switch kind {
	case "int":
		n, ok := ours.(json.Number)
		if !ok {
			return fmt.Errorf("bound %v is %T, want a JSON number", ours, ours)
		}
		x, err := n.Int64()
		if err != nil {
			return fmt.Errorf("bound %s: %v", n, err)
		}
		if d := reflect.ValueOf(duck).Int(); d != x {
			return fmt.Errorf("bound %d, duckdb %d", x, d)
		}
	case "float":
		n, ok := ours.(json.Number)
		if !ok {
			return fmt.Errorf("bound %v is %T, want a JSON number", ours, ours)
		}
		bits := 64
		var d float64
		if f32, ok := duck.(float32); ok {
			bits, d = 32, float64(f32)
		} else {
			d = duck.(float64)
		}
		x, err := parseFloatBits(string(n), bits)
		if err != nil {
			return fmt.Errorf("bound %s: %v", n, err)
		}
		if x != d { // -0 == 0
			return fmt.Errorf("bound %v, duckdb %v", x, d)
		}
	case "decimal":
		n, ok := ours.(json.Number)
		if !ok {
			return fmt.Errorf("bound %v is %T, want a JSON number", ours, ours)
		}
		x, ok := new(big.Rat).SetString(string(n))
		if !ok {
			return fmt.Errorf("bound %s is not a decimal", n)
		}
		dd := duck.(duckdb.Decimal)
		d := new(big.Rat).SetFrac(dd.Value, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dd.Scale)), nil))
		if x.Cmp(d) != 0 {
			return fmt.Errorf("bound %s, duckdb %s", n, d.FloatString(int(dd.Scale)))
		}
	case "date":
		s, ok := ours.(string)
		if !ok {
			return fmt.Errorf("bound %v is %T, want a string", ours, ours)
		}
		if d := duck.(time.Time).Format("2006-01-02"); s != d {
			return fmt.Errorf("bound %q, duckdb %q", s, d)
		}
	case "timestamp":
		s, ok := ours.(string)
		if !ok {
			return fmt.Errorf("bound %v is %T, want a string", ours, ours)
		}
		tm, err := parseStatTime(s)
		if err != nil {
			return fmt.Errorf("bound %q: %v", s, err)
		}
		if tz := typ.(*arrow.TimestampType).TimeZone; tz == "" && strings.ContainsAny(s[10:], "Z+") {
			return fmt.Errorf("timestamp_ntz bound %q carries a zone", s)
		}
		// Delta stats are millisecond-precise: min and max are the true values cut
		// down to the millisecond (readers widen the max by 1 ms).
		want := floorMillis(duck.(time.Time).UnixMicro())
		if got := tm.UnixMicro(); got != want {
			return fmt.Errorf("bound %q (%d us), duckdb %v truncated to ms (%d us)", s, got, duck, want)
		}
	case "string":
		s, ok := ours.(string)
		if !ok {
			return fmt.Errorf("bound %v is %T, want a string", ours, ours)
		}
		d := duck.(string)
		p := prefixRunes(d, 32)
		if !isMax {
			if s != p {
				return fmt.Errorf("min %q, want the 32-character prefix %q of duckdb's min", s, p)
			}
			return nil
		}
		if !strings.HasPrefix(s, p) {
			return fmt.Errorf("max %q does not start with duckdb's max prefix %q", s, p)
		}
		if s < d {
			return fmt.Errorf("max %q is below duckdb's max %q: not an upper bound", s, d)
		}
	default:
		return fmt.Errorf("unexpected kind %q", kind)
	}
	return nil
}

func parseFloatBits(s string, bits int) (float64, error) {
	var f float64
	_, err := fmt.Sscan(s, &f)
	if err != nil {
		return 0, err
	}
	if bits == 32 {
		return float64(float32(f)), nil
	}
	return f, nil
}

// isSpecialFloat reports whether v is a NaN or infinite float32/float64.
func isSpecialFloat(v any) (nan, inf bool) {
	var f float64
	switch x := v.(type) {
	case float32:
		f = float64(x)
	case float64:
		f = x
	default:
		return false, false
	}
	return math.IsNaN(f), math.IsInf(f, 0)
}

// checkFileStats compares the add.stats of one file with DuckDB's aggregates.
func checkFileStats(t *testing.T, db *sql.DB, dir string, a *log.Add, leaves []statLeaf, partCols []string, checked map[string]int) {
	t.Helper()
	rel, err := a.DecodedPath()
	require.NoError(t, err)
	require.NotEmpty(t, a.Stats, "file %s has no stats", rel)
	dec := json.NewDecoder(bytes.NewReader([]byte(a.Stats)))
	dec.UseNumber()
	var st map[string]any
	require.NoError(t, dec.Decode(&st), "file %s: stats %s", rel, a.Stats)

	sel := []string{"count(*)"}
	for _, l := range leaves {
		e := l.duckExpr()
		if l.boundsKind() != "" {
			sel = append(sel, "min("+e+")", "max("+e+")")
		}
		sel = append(sel, "count(*) - count("+e+")")
	}
	q := fmt.Sprintf("SELECT %s FROM read_parquet(%s)", strings.Join(sel, ", "), sqlString(filepath.Join(dir, rel)))
	vals := make([]any, len(sel))
	ptrs := make([]any, len(sel))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, db.QueryRow(q).Scan(ptrs...), "duckdb aggregates of %s", rel)

	num, ok := st["numRecords"].(json.Number)
	require.True(t, ok, "file %s: numRecords missing: %s", rel, a.Stats)
	require.Equal(t, fmt.Sprint(vals[0]), num.String(), "file %s: numRecords", rel)
	if tb, ok := st["tightBounds"]; ok {
		require.Equal(t, true, tb, "file %s: a fresh file must have tight bounds", rel)
	}

	for _, sec := range []string{"minValues", "maxValues", "nullCount"} {
		for _, p := range partCols {
			_, has := lookup(st[sec], []string{p})
			require.False(t, has, "file %s: partition column %s must have no stats (%s): %s", rel, p, sec, a.Stats)
		}
	}

	k := 1
	for _, l := range leaves {
		var dmin, dmax any
		if l.boundsKind() != "" {
			dmin, dmax = vals[k], vals[k+1]
			k += 2
		}
		dnull := vals[k]
		k++
		where := fmt.Sprintf("file %s column %s", rel, l.name())

		nc, ok := lookup(st["nullCount"], l.path)
		require.True(t, ok, "%s: nullCount missing: %s", where, a.Stats)
		require.Equal(t, fmt.Sprint(dnull), fmt.Sprint(nc), "%s: nullCount", where)

		omin, hasMin := lookup(st["minValues"], l.path)
		omax, hasMax := lookup(st["maxValues"], l.path)
		kind := l.boundsKind()
		if kind == "" {
			require.False(t, hasMin || hasMax, "%s: Delta collects no min/max for %s, got %v/%v", where, l.typ, omin, omax)
			continue
		}
		// Min: present exactly when DuckDB has a non-NULL min that JSON can hold.
		minNaN, minInf := isSpecialFloat(dmin)
		switch {
		case dmin == nil || minNaN || minInf:
			require.False(t, hasMin, "%s: min %v present but duckdb min is %v", where, omin, dmin)
		default:
			require.True(t, hasMin, "%s: min missing, duckdb min %v: %s", where, dmin, a.Stats)
			if err := checkBound(kind, l.typ, omin, dmin, false); err != nil {
				t.Fatalf("%s: min: %v", where, err)
			}
			checked["min "+kind]++
		}
		// Max: a NaN anywhere makes DuckDB's max NaN (NaN is greatest); our max must
		// then be absent (a finite max would hide the NaN rows from skipping).
		maxNaN, maxInf := isSpecialFloat(dmax)
		switch {
		case dmax == nil || maxNaN || maxInf:
			require.False(t, hasMax, "%s: max %v present but duckdb max is %v", where, omax, dmax)
		case kind == "string" && utf8.RuneCountInString(dmax.(string)) > 32 && !hasMax:
			// Allowed: no upper bound fits in the prefix budget (e.g. U+10FFFF runs).
		default:
			require.True(t, hasMax, "%s: max missing, duckdb max %v: %s", where, dmax, a.Stats)
			if err := checkBound(kind, l.typ, omax, dmax, true); err != nil {
				t.Fatalf("%s: max: %v", where, err)
			}
			checked["max "+kind]++
		}
	}
}

// TestStatsMatchDuckDBAggregates checks every file skiplake wrote (at every version,
// overwritten ones included): numRecords and nullCount exact; min/max equal to
// DuckDB's exact aggregates for numbers, decimals and dates, equal after cutting to
// milliseconds for timestamps, prefix/upper-bound rules for strings; no bounds where
// Delta collects none (boolean, binary, list, map) or where a NaN or infinity makes
// JSON unable to carry one.
func TestStatsMatchDuckDBAggregates(t *testing.T) {
	rows := rowsKnob(t, 1200)
	for i, pc := range partitionings {
		t.Run(pc.name, func(t *testing.T) {
			mt := writeMixedTable(t, t.TempDir(), pc.parts, seedKnob(t, uint64(200+i)), rows, nil)
			db := openDuck(t)
			skip := map[string]bool{}
			for _, p := range pc.parts {
				skip[p] = true
			}
			leaves := statLeaves(mt.schema.Fields(), nil, skip)
			seen := map[string]bool{}
			checked := map[string]int{}
			for v := int64(1); v <= mt.latest; v++ {
				snap, err := mt.tbl.Snapshot(bg, table.AtVersion(v))
				require.NoError(t, err)
				for _, a := range snap.Log().Files() {
					if seen[a.Path] {
						continue
					}
					seen[a.Path] = true
					checkFileStats(t, db, mt.dir, a, leaves, pc.parts, checked)
				}
			}
			require.Greater(t, len(seen), 3, "too few files to mean anything")
			for _, k := range []string{"int", "float", "decimal", "string", "date", "timestamp"} {
				require.Positive(t, checked["min "+k], "no %s min was compared", k)
				require.Positive(t, checked["max "+k], "no %s max was compared", k)
			}
			t.Logf("%d files; bounds compared: %v", len(seen), checked)
		})
	}
}
