package datafile

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Sharing Arrow data between goroutines (invariant R1).
//
// Arrow arrays are immutable but for two caches arrow-go fills lazily. One is the
// null count: a Data whose count is unknown (array.UnknownNullCount: a slice of an
// array with nulls, the output of Concatenate or of a kernel, data assembled with -1)
// counts its validity bitmap at the first Array.NullN and stores the count in the
// Data, which every array and slice made from it shares; slicing reads that field,
// and so do the kernels (take, filter, cast). The other is a dictionary array's
// values array, made at the first Dictionary call. A goroutine filling either while
// another reads it is a data race, even though both would store the same thing.
// Nested arrays share their children's Data between the parent and its slices, and
// a struct slice's field arrays have Data of their own that no Data node points to.
//
// So every batch or array handed to another goroutine while its owner (or a third
// goroutine) still reads it is settled first, on the goroutine that owns it: Settle
// fills both caches of every array in it and every Data node under it. From then on
// every goroutine only reads it. The places that hand data over: File.Write (the
// statistics goroutine), Writer.Write (the column encoders), OPTIMIZE's sorted input
// (files and columns gathered from it side by side), MERGE's source rows (taken by
// every target file's goroutine), and the DML row pipe (the file writer's
// goroutine). Batches that move to another goroutine with their only reference (a
// read-ahead queue) need nothing.

// Settle fills the lazily computed state of every array in rec (null counts,
// dictionary values arrays; children included) so that rec can be read from several
// goroutines at once: after Settle no read of rec writes to it. Call it before rec is
// shared, on the goroutine that owns it. It is cheap when nothing is left to fill (a
// walk over the columns' arrays and Data nodes).
func Settle(rec arrow.RecordBatch) {
	for _, c := range rec.Columns() {
		SettleArray(c)
	}
}

// SettleArray is Settle for one array.
func SettleArray(arr arrow.Array) {
	if arr == nil {
		return
	}
	arr.NullN()
	switch a := arr.(type) {
	case *array.Struct:
		for i := range a.NumField() {
			SettleArray(a.Field(i))
		}
	case *array.Map:
		SettleArray(a.ListValues())
		SettleArray(a.Keys())
		SettleArray(a.Items())
	case array.ListLike: // list, large list, list view, fixed-size list
		SettleArray(a.ListValues())
	case *array.Dictionary:
		SettleArray(a.Indices())
		SettleArray(a.Dictionary())
	case array.Union:
		for i := range a.NumFields() {
			SettleArray(a.Field(i))
		}
	case array.ExtensionArray:
		SettleArray(a.Storage())
	}
	// Data nodes no array wraps (a sliced struct's whole children).
	settleData(arr.Data())
}

// settleData stores the null count of d and every Data node under it.
func settleData(d arrow.ArrayData) {
	if d == nil {
		return
	}
	if p, ok := d.(*array.Data); ok && p == nil {
		return
	}
	if d.NullN() < 0 {
		// The count exactly as Array.NullN computes it for this type, stored in d.
		a := array.MakeFromData(d)
		a.NullN()
		a.Release()
	}
	for _, c := range d.Children() {
		settleData(c)
	}
	settleData(d.Dictionary()) // a nil *Data when there is none
}
