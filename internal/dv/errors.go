package dv

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped with %w.
var (
	// ErrCorrupt reports bytes that are not a valid deletion vector (bad version, size,
	// magic, checksum, bitmap or cardinality).
	ErrCorrupt = errors.New("dv: corrupt deletion vector")
	// ErrInvalidDescriptor reports a descriptor that cannot name a deletion vector.
	ErrInvalidDescriptor = errors.New("dv: invalid deletion vector descriptor")
	// ErrOutsideTable reports an absolute ('p') path outside the table root.
	ErrOutsideTable = errors.New("dv: deletion vector path is outside the table root")
	// ErrZ85 reports text that is not valid Z85.
	ErrZ85 = errors.New("dv: invalid z85")
)

// LoadError says which deletion vector failed to load.
type LoadError struct {
	// Path is the DV file relative to the table root, or "inline".
	Path string
	// Offset is the descriptor's offset within the file.
	Offset int32
	// Err wraps one of the sentinels or a storage error.
	Err error
}

// Error implements error.
func (e *LoadError) Error() string {
	return fmt.Sprintf("dv: deletion vector %s at offset %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *LoadError) Unwrap() error { return e.Err }

// More sentinel errors of the writing side.
var (
	// ErrInvalidRows reports row positions a deletion vector cannot hold: the top bit set
	// (Delta's RoaringBitmapArray holds positions as non-negative integers), at or beyond
	// the data file's row count, or too many to describe.
	ErrInvalidRows = errors.New("dv: invalid row positions")
	// ErrEmptyVector reports a request to store a deletion vector that deletes nothing.
	ErrEmptyVector = errors.New("dv: empty deletion vector")
)
