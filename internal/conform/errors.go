package conform

import "errors"

// Sentinel errors of package conform. Package table re-exports them under the same
// names and they reach users only through it (a write, MERGE, UPDATE), so their
// messages, like CastError's, carry the facade's prefix "table: ": every error of
// table.Write starts with it, and the CLI's transcripts show it.
var (
	// ErrSchemaMismatch: the data has a column the table lacks, or a column whose
	// type store assignment cannot convert to the table column's.
	ErrSchemaMismatch = errors.New("table: schema mismatch")
	// ErrNullInNonNullable: a NULL in a column declared NOT NULL, or a NOT NULL
	// column the data lacks.
	ErrNullInNonNullable = errors.New("table: null value in non-nullable column")
	// ErrValueDoesNotFit: a source value its column's type cannot hold (see
	// CastError, which names the column, the value, its row and both types).
	ErrValueDoesNotFit = errors.New("table: value does not fit the column's type")
)
