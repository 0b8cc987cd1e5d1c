package stats

import (
	"errors"
	"fmt"
)

// Sentinel errors. Functions wrap them with %w; test with errors.Is.
var (
	// ErrInvalidConfig reports a table property or Config field that cannot be used
	// (a negative prefix length, an unparseable column list, ...).
	ErrInvalidConfig = errors.New("stats: invalid statistics configuration")
	// ErrUnknownColumn reports a column named in delta.dataSkippingStatsColumns that
	// the schema does not have, or that points inside a list or map.
	ErrUnknownColumn = errors.New("stats: unknown column")
	// ErrSchemaMismatch reports a record batch whose columns do not match the schema
	// the Collector was built for.
	ErrSchemaMismatch = errors.New("stats: record does not match the collector schema")
	// ErrSyntax reports stats text that is not well-formed JSON. Values that are
	// well-formed JSON but do not fit the column type are not errors (see Parse).
	ErrSyntax = errors.New("stats: malformed stats JSON")
	// ErrArgument reports a call whose arguments do not fit together (buffers of the
	// wrong length).
	ErrArgument = errors.New("stats: invalid argument")
)

// SyntaxError describes where stats JSON is malformed. It wraps ErrSyntax.
type SyntaxError struct {
	// Offset is the byte offset in the input at which the problem was found.
	Offset int
	// Msg says what was expected.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("stats: malformed stats JSON at byte %d: %s", e.Offset, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }
