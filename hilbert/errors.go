package hilbert

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these and are
// prefixed with "hilbert: ".
var (
	// ErrLayout reports an unsupported number of dimensions or bits.
	ErrLayout = errors.New("hilbert: invalid layout")
	// ErrCoordRange reports a coordinate that does not fit in the bits.
	ErrCoordRange = errors.New("hilbert: coordinate out of range")
	// ErrIndexRange reports an index with bits set above Dims()*Bits().
	ErrIndexRange = errors.New("hilbert: index out of range")
	// ErrShape reports input slices whose lengths disagree with the layout.
	ErrShape = errors.New("hilbert: input shape mismatch")
	// ErrKeyTooWide reports use of the 64-bit API for a layout wider than 64 bits.
	ErrKeyTooWide = errors.New("hilbert: key wider than 64 bits")
)
