package optimize

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/skiplake/skiplake/internal/dv"
	"github.com/skiplake/skiplake/internal/tableview"
	"github.com/skiplake/skiplake/log"
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
// they get no statistics. The table's view supplies them (RowTrackingFields) and the
// file settings that carry them (FileSpec with RowTracking).

// stableRowFiller fills the hidden row tracking columns of the batches read from
// the file a: a materialized value where the file has one, else baseRowId plus the
// row's position (deleted rows skipped: positions are those of the file) and the
// file's defaultRowCommitVersion. It returns nil when want has no hidden columns.
func stableRowFiller(want *arrow.Schema, a *log.Add, deleted *dv.Deleted, mem memory.Allocator) func(rec arrow.RecordBatch, firstRow int64) (arrow.RecordBatch, error) {
	idCol, verCol := -1, -1
	for i, f := range want.Fields() {
		switch v, _ := f.Metadata.GetValue(tableview.RowTrackingKey); v {
		case tableview.RowTrackingRowID:
			idCol = i
		case tableview.RowTrackingCommitVersion:
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
