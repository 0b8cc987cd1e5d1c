package optimize

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/log"
	"github.com/skiplake/skiplake/stats"
)

// Stable row IDs through OPTIMIZE (PROTOCOL.md "Row Tracking"). On a table with
// row tracking enabled, every row has a stable row ID and a stable row commit
// version: the values of the materialized columns named by
// delta.rowTracking.materializedRowIdColumnName and
// delta.rowTracking.materializedRowCommitVersionColumnName where a file has them
// and they are not null, else the file's baseRowId plus the row's position and the
// file's defaultRowCommitVersion. OPTIMIZE copies rows to new files, which get fresh
// row IDs; to keep the stable ones (as Delta Spark's OPTIMIZE does) it writes both
// hidden columns into every file it writes, filled with each row's stable values,
// and the commit says so (delta.rowTracking.preserved=true). The hidden columns are
// not in the table schema: readers that do not ask for them never see them, and
// they get no statistics.

// rowTrackingKey marks the hidden fields of the data schema (field metadata): the
// row ID and the row commit version columns.
const rowTrackingKey = "skiplake.rowTracking"

// rowTrackingFields returns the hidden fields an OPTIMIZE of snap writes, or nil
// when row tracking is not enabled (or suspended).
func rowTrackingFields(snap *log.Snapshot) []arrow.Field {
	props := snap.Properties()
	if !props.EnableRowTracking || !log.RowTrackingActive(snap.Protocol(), props) ||
		props.MaterializedRowIDColumn == "" || props.MaterializedRowCommitVersionColumn == "" {
		return nil
	}
	field := func(name, kind string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: arrow.NewMetadata([]string{rowTrackingKey}, []string{kind})}
	}
	return []arrow.Field{field(props.MaterializedRowIDColumn, "rowId"), field(props.MaterializedRowCommitVersionColumn, "rowCommitVersion")}
}

// statsConfig is the statistics configuration of the files the plan writes: the
// table's, without the hidden row tracking columns.
func (p *Plan) statsConfig() stats.Config {
	cfg := p.snap.StatsConfig()
	if p.hidden == 0 || len(cfg.StatsColumns) > 0 {
		return cfg
	}
	leaves := 0
	var count func(t arrow.DataType)
	count = func(t arrow.DataType) {
		if st, ok := t.(*arrow.StructType); ok {
			for _, f := range st.Fields() {
				count(f.Type)
			}
			return
		}
		leaves++
	}
	for _, f := range p.dataSch.Fields()[:p.dataSch.NumFields()-p.hidden] {
		count(f.Type)
	}
	switch n := cfg.NumIndexedCols; {
	case n == stats.IndexNoColumns:
	case n == 0:
		cfg.NumIndexedCols = min(stats.DefaultNumIndexedCols, leaves)
	case n < 0:
		cfg.NumIndexedCols = leaves
	default:
		cfg.NumIndexedCols = min(n, leaves)
	}
	if cfg.NumIndexedCols == 0 {
		cfg.NumIndexedCols = stats.IndexNoColumns
	}
	return cfg
}

// stableRowFiller fills the hidden row tracking columns of the batches read from
// the file a: a materialized value where the file has one, else baseRowId plus the
// row's position (deleted rows skipped: positions are those of the file) and the
// file's defaultRowCommitVersion. It returns nil when want has no hidden columns.
func stableRowFiller(want *arrow.Schema, a *log.Add, deleted *dv.Deleted, mem memory.Allocator) func(rec arrow.RecordBatch, firstRow int64) (arrow.RecordBatch, error) {
	idCol, verCol := -1, -1
	for i, f := range want.Fields() {
		switch v, _ := f.Metadata.GetValue(rowTrackingKey); v {
		case "rowId":
			idCol = i
		case "rowCommitVersion":
			verCol = i
		}
	}
	if idCol < 0 && verCol < 0 {
		return nil
	}
	return func(rec arrow.RecordBatch, firstRow int64) (arrow.RecordBatch, error) {
		n := int(rec.NumRows())
		cols := rec.Columns()
		out := make([]arrow.Array, len(cols))
		copy(out, cols)
		var made []arrow.Array
		defer func() {
			for _, a := range made {
				a.Release()
			}
		}()
		fill := func(col int, base *int64, byPosition bool) {
			if col < 0 {
				return
			}
			have := cols[col].(*array.Int64)
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.Reserve(n)
			pos := firstRow
			for i := 0; i < n; i++ {
				for deleted.Contains(uint64(pos)) {
					pos++
				}
				switch {
				case have.IsValid(i):
					b.UnsafeAppend(have.Value(i))
				case base == nil:
					b.UnsafeAppendBoolToBitmap(false)
				case byPosition:
					b.UnsafeAppend(*base + pos)
				default:
					b.UnsafeAppend(*base)
				}
				pos++
			}
			arr := b.NewArray()
			made = append(made, arr)
			out[col] = arr
		}
		fill(idCol, a.BaseRowID, true)
		fill(verCol, a.DefaultRowCommitVersion, false)
		return array.NewRecordBatch(rec.Schema(), out, rec.NumRows()), nil
	}
}
