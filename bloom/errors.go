package bloom

import "errors"

// Sentinel errors. Every error returned by this package wraps one of them (with %w),
// so callers classify failures with errors.Is.
var (
	// ErrInvalidArgument reports a bad argument to a constructor or encoder
	// (empty column name, false-positive rate outside (0, 0.5], ...).
	ErrInvalidArgument = errors.New("bloom: invalid argument")
	// ErrUnsupportedType reports an Arrow type or value kind the index cannot encode.
	ErrUnsupportedType = errors.New("bloom: unsupported type")
	// ErrKindMismatch reports values of different kinds (or decimal scales) added to
	// one Builder: a filter indexes exactly one column type.
	ErrKindMismatch = errors.New("bloom: value kind mismatch")
	// ErrBadMagic reports an index file that does not start with the magic "SKLBLOOM".
	ErrBadMagic = errors.New("bloom: bad index magic")
	// ErrUnsupportedVersion reports an index file or tag of a format version this
	// package does not read.
	ErrUnsupportedVersion = errors.New("bloom: unsupported index format version")
	// ErrChecksum reports an index file whose CRC32C does not match its contents.
	ErrChecksum = errors.New("bloom: index checksum mismatch")
	// ErrTruncated reports an index file shorter than its structure requires.
	ErrTruncated = errors.New("bloom: index truncated")
	// ErrCorrupt reports an index file whose checksum matched but whose structure is
	// invalid (impossible sizes, duplicate entries, trailing bytes, ...).
	ErrCorrupt = errors.New("bloom: index corrupt")
	// ErrBadTag reports an add.tags value under TagKey that cannot be decoded.
	ErrBadTag = errors.New("bloom: bad index tag")
	// ErrNotCovered reports that a data file has no usable filter for a column: the
	// file must be read (invariant B1).
	ErrNotCovered = errors.New("bloom: file not covered by a bloom index")
)
