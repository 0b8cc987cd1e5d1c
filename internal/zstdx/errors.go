package zstdx

import "errors"

// ErrCorrupt is the error every malformed input wraps: a table description, a
// literal section or a bitstream that breaks RFC 8878's rules. The wrapping error
// names what was wrong and where.
var ErrCorrupt = errors.New("zstdx: corrupt input")

// ErrTooLarge is wrapped when a decoded size exceeds what the caller allows or the
// format permits.
var ErrTooLarge = errors.New("zstdx: decoded size too large")
