package dv_test

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"
	"github.com/skiplake/skiplake/internal/dv"
)

func Example() {
	// Write a DV file deleting rows 0 and 9, as a DELETE would.
	file, d, err := dv.EncodeFile(roaring64.BitmapOf(0, 9), uuid.MustParse("61d16c75-6994-46b7-a15b-8b538852e50e"), "")
	if err != nil {
		panic(err)
	}
	rel, _ := d.RelativePath("")
	fmt.Println(rel, d.SizeInBytes, d.Cardinality)

	get := func(_ context.Context, path string) ([]byte, error) { return file, nil }
	del, err := dv.Load(context.Background(), get, "", d)
	if err != nil {
		panic(err)
	}
	fmt.Println(del.Contains(0), del.Contains(1), del.Contains(9))
	// Output:
	// deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin 36 2
	// true false true
}
