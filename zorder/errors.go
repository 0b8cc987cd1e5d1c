package zorder

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these and are
// prefixed with "zorder: ".
var (
	// ErrLayout reports an unsupported number of columns or bits per column.
	ErrLayout = errors.New("zorder: invalid layout")
	// ErrRankRange reports a rank that does not fit in the column's bits.
	ErrRankRange = errors.New("zorder: rank out of range")
	// ErrShape reports input slices whose lengths disagree with the layout.
	ErrShape = errors.New("zorder: input shape mismatch")
	// ErrKeyTooWide reports use of the 64-bit API for a layout wider than 64 bits.
	ErrKeyTooWide = errors.New("zorder: key wider than 64 bits")
)
