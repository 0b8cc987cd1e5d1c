package hilbert_test

import (
	"fmt"

	"github.com/skiplake/skiplake/hilbert"
)

// The 4x4 Hilbert curve: each step moves to a neighbouring cell.
func ExampleCurve_Decode64() {
	c, err := hilbert.New(2, 2)
	if err != nil {
		panic(err)
	}
	p := make([]uint32, 2)
	for h := uint64(0); h < 16; h++ {
		if err := c.Decode64(h, p); err != nil {
			panic(err)
		}
		fmt.Print(p, " ")
	}
	fmt.Println()
	// Output:
	// [0 0] [1 0] [1 1] [0 1] [0 2] [0 3] [1 3] [1 2] [2 2] [2 3] [3 3] [3 2] [3 1] [2 1] [2 0] [3 0]
}

func ExampleCurve_EncodeBatch64() {
	c, _ := hilbert.New(3, 8)
	x := []uint32{0, 255, 10}
	y := []uint32{0, 255, 20}
	z := []uint32{0, 0, 30}
	idx := make([]uint64, 3)
	if err := c.EncodeBatch64([][]uint32{x, y, z}, idx); err != nil {
		panic(err)
	}
	fmt.Println(idx)
	// Output:
	// [0 8987794 11440]
}

func ExampleNew_oneDimension() {
	c, _ := hilbert.New(1, 16) // a 1-D curve is the identity
	k, _ := c.Encode64([]uint32{1234})
	fmt.Println(k)
	// Output: 1234
}
