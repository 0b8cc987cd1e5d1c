package datafile

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"
)

// logActions returns the metaData.schemaString of the last metaData action and the add
// paths (decoded) of every commit file of the table, in version order.
func logActions(t *testing.T, table string) (schema string, adds []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(table, "_delta_log", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var a struct {
				MetaData *struct {
					SchemaString string `json:"schemaString"`
				} `json:"metaData"`
				Add *struct {
					Path string `json:"path"`
				} `json:"add"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &a))
			if a.MetaData != nil {
				schema = a.MetaData.SchemaString
			}
			if a.Add != nil {
				adds = append(adds, a.Add.Path)
			}
		}
		fh.Close()
	}
	return schema, adds
}

func TestGoldenINT96TimestampsReadAsMicros(t *testing.T) {
	g := goldenDir(t)
	table := filepath.Join(g, "delta-golden", "kernel-timestamp-int96")
	want := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	files, err := filepath.Glob(filepath.Join(table, "delta", "*", "*.parquet"))
	require.NoError(t, err)
	require.Len(t, files, 5)
	var got []string
	for _, f := range files {
		got = append(got, readFileRows(t, f, want)...)
	}
	expFiles, err := filepath.Glob(filepath.Join(table, "expected", "*.parquet"))
	require.NoError(t, err)
	var exp []string
	for _, f := range expFiles {
		exp = append(exp, readFileRows(t, f, want)...)
	}
	require.Len(t, got, 5)
	require.Equal(t, sorted(exp), sorted(got))
}

func TestGoldenINT96EdgeTimestampsBeyondNanosRange(t *testing.T) {
	g := goldenDir(t)
	table := filepath.Join(g, "delta-rs", "table_with_edge_timestamps", "delta")
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	want := arrow.NewSchema([]arrow.Field{
		{Name: "BIG_DATE", Type: ts, Nullable: true},
		{Name: "NORMAL_DATE", Type: ts, Nullable: true},
		{Name: "SOME_VALUE", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	_, adds := logActions(t, table)
	require.Len(t, adds, 2)
	got := map[int32][2]time.Time{}
	for _, p := range adds {
		data, err := os.ReadFile(filepath.Join(table, p))
		require.NoError(t, err)
		r, err := Open(bytesReader(data), int64(len(data)), ReadOptions{})
		require.NoError(t, err)
		require.NoError(t, r.Read(t.Context(), want, nil, func(rec arrow.RecordBatch, first int64) error {
			for i := 0; i < int(rec.NumRows()); i++ {
				big := rec.Column(0).(interface{ Value(int) arrow.Timestamp }).Value(i)
				norm := rec.Column(1).(interface{ Value(int) arrow.Timestamp }).Value(i)
				id := rec.Column(2).(interface{ Value(int) int32 }).Value(i)
				got[id] = [2]time.Time{time.UnixMicro(int64(big)).UTC(), time.UnixMicro(int64(norm)).UTC()}
			}
			return nil
		}))
		r.Close()
	}
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	require.Equal(t, map[int32][2]time.Time{
		1: {d(9999, 12, 31), d(2022, 1, 1)},
		2: {d(9999, 12, 30), d(2022, 2, 1)},
	}, got)
}

func TestGoldenColumnMappingNameMatchesPhysicalNamesAtEveryLevel(t *testing.T) {
	g := goldenDir(t)
	table := filepath.Join(g, "delta-golden", "table-with-columnmapping-mode-name")
	schemaString, adds := logActions(t, filepath.Join(table, "delta"))
	want := deltaSchemaToArrow(t, schemaString)
	var got []string
	for _, p := range adds {
		got = append(got, readFileRows(t, filepath.Join(table, "delta", p), want)...)
	}
	expFiles, err := filepath.Glob(filepath.Join(table, "expected", "*.parquet"))
	require.NoError(t, err)
	expWant := stripMetadata(want)
	var exp []string
	for _, f := range expFiles {
		exp = append(exp, readFileRows(t, f, expWant)...)
	}
	require.NotEmpty(t, got)
	require.Equal(t, sorted(exp), sorted(got))
	// Struct fields inside map values and list elements are matched by physical name too
	// (a failed match would read them as null).
	require.Contains(t, strings.Join(got, "\n"), `{"key":5,"value":{"ab":80}}`)
}

func TestGoldenTypeWideningReadsOldFilesInTheNewTypes(t *testing.T) {
	g := goldenDir(t)
	table := filepath.Join(g, "delta-kernel-rs", "type-widening", "delta")
	schemaString, adds := logActions(t, table)
	want := deltaSchemaToArrow(t, schemaString)
	var got []string
	for _, p := range adds {
		got = append(got, readFileRows(t, filepath.Join(table, p), want)...)
	}
	// Facts from the delta-kernel-rs type-widening tests (see EXPECTED_FROM_TESTS.txt).
	require.ElementsMatch(t, []string{
		"1 | 2 | 3.4000000953674316 | 5 | 6 | 7 | 123.45 | 67.89 | 1 | 2 | 3 | 4 | 2024-09-09T00:00:00",
		"9223372036854775807 | 9223372036854775807 | 1.234567890123 | 1.234567890123 | 1.234567890123 | 1.234567890123 | 12345678901234.56 | 12345678901.23456 | 123.4 | 12345.6 | 1234567890.1 | 123456789012345678.9 | 2024-09-09T12:34:56.123456",
	}, got)
}
