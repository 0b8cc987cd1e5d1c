package table

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/skiplake/skiplake/value"
)

// valueAt returns row i of a primitive Arrow array as a typed value (NULL for nulls):
// value.FromArray, the one Arrow-cell conversion, with its refusal of a type that has
// no value representation reported as ErrInvalidArgument.
func valueAt(arr arrow.Array, i int) (value.Value, error) {
	v, err := value.FromArray(arr, i)
	if err != nil {
		return value.Null(), fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return v, nil
}
