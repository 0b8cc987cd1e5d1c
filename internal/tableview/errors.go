package tableview

import (
	"errors"
	"fmt"
)

// Sentinel errors of package tableview.
var (
	// ErrInvalidTable: the version cannot be resolved (a partition column missing
	// from the schema, column-mapping annotations missing or duplicated, ...).
	ErrInvalidTable = errors.New("tableview: invalid table")
	// ErrLayoutChanged: data files written for one layout were about to be committed
	// to a version of another (invariant T1; see LayoutError).
	ErrLayoutChanged = errors.New("tableview: the table's layout changed")
	// ErrWriteRules: a write rule of the version (a CHECK constraint, a column
	// invariant, a generated or identity column) cannot be enforced: its expression
	// does not parse or bind, or uses what skiplake does not evaluate as Spark would.
	// Writers of rows refuse the table (View.WriteRules).
	ErrWriteRules = errors.New("tableview: cannot enforce the table's write rules")
	// ErrConstraintViolation: a row breaks a write rule (see ViolationError).
	ErrConstraintViolation = errors.New("tableview: constraint violated")
	// ErrInvalidArgument: a bad option or argument. Package table re-exports it
	// (table.ErrInvalidArgument) and users meet it only through the facade, so its
	// message carries the facade's prefix, as every error of a table write does.
	ErrInvalidArgument = errors.New("table: invalid argument")
	// ErrIdentityColumn: an identity column misused (an explicit value for a
	// GENERATED ALWAYS AS IDENTITY column, an UPDATE of an identity column, values
	// that would overflow bigint). It matches ErrInvalidArgument; package table
	// re-exports it.
	ErrIdentityColumn = fmt.Errorf("%w: identity column", ErrInvalidArgument)
)
