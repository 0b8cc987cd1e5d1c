package rank

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these and are
// prefixed with "rank: ".
var (
	// ErrUnsupportedType reports an Arrow type (or value kind) that has no
	// total order this package knows, e.g. nested, dictionary or interval.
	ErrUnsupportedType = errors.New("rank: unsupported type")
	// ErrTypeMismatch reports an array or value whose type differs from the
	// one the Sampler or Boundaries were built for.
	ErrTypeMismatch = errors.New("rank: type mismatch")
	// ErrBits reports a bits argument outside 1..32.
	ErrBits = errors.New("rank: invalid bits")
	// ErrShape reports an output slice whose length differs from the input's.
	ErrShape = errors.New("rank: output length mismatch")
)
