package rank_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/skiplake/skiplake/internal/rank"
)

func Example() {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1000, 5, 70, 5000000, 70}, nil)
	b.AppendNull()
	arr := b.NewArray()
	b.Release()
	defer arr.Release()

	s := rank.NewSampler(1024, 1)
	if err := s.Add(arr); err != nil {
		panic(err)
	}
	bounds, err := s.Boundaries(4)
	if err != nil {
		panic(err)
	}
	ranks := make([]uint32, arr.Len())
	if err := bounds.Ranks(arr, 0, ranks); err != nil {
		panic(err)
	}
	// Ranks follow the order of the values, not their magnitude; the null
	// ranks 0. 70 fills two of the five buckets, so each of its rows gets rank
	// 2 or 3, chosen by a hash of the row position.
	fmt.Println(bounds.NumBuckets(), ranks)
	// Output: 5 [4 1 2 5 2 0]
}
