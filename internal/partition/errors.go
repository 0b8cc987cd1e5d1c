package partition

import "errors"

// Sentinel errors, wrapped with %w.
var (
	// ErrUnsupportedType reports a type that cannot be a partition column here.
	ErrUnsupportedType = errors.New("partition: unsupported partition column type")
	// ErrInvalidValue reports a value or string that does not fit the column type.
	ErrInvalidValue = errors.New("partition: invalid partition value")
)
