package zorder_test

import (
	"fmt"

	"github.com/skiplake/skiplake/zorder"
)

func ExampleEncoder_EncodeBatch64() {
	e, err := zorder.NewEncoder(2, 2) // two columns, ranks 0..3
	if err != nil {
		panic(err)
	}
	x := []uint32{0, 1, 2, 3}
	y := []uint32{0, 1, 1, 3}
	keys := make([]uint64, 4)
	if err := e.EncodeBatch64([][]uint32{x, y}, keys); err != nil {
		panic(err)
	}
	for i, k := range keys {
		fmt.Printf("(%d,%d) -> %04b\n", x[i], y[i], k)
	}
	// Output:
	// (0,0) -> 0000
	// (1,1) -> 0011
	// (2,1) -> 1001
	// (3,3) -> 1111
}

func ExampleEncoder_Decode() {
	e, _ := zorder.NewEncoder(8, 16) // 128-bit keys
	k, _ := e.Encode([]uint32{1, 2, 3, 4, 5, 6, 7, 65535})
	out := make([]uint32, 8)
	_ = e.Decode(k, out)
	fmt.Println(k, out)
	// Output:
	// 010101010101010101010101011f67ab [1 2 3 4 5 6 7 65535]
}

func ExampleReferenceEncode() {
	// Unequal bits: column 0 has 3 bits, column 1 one bit, aligned at the MSB.
	k, _ := zorder.ReferenceEncode([]int{3, 1}, []uint32{0b101, 0b1})
	fmt.Printf("%04b\n", k[1])
	// Output: 1101
}
