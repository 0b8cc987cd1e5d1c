package tableview

import "errors"

// Sentinel errors of package tableview.
var (
	// ErrInvalidTable: the version cannot be resolved (a partition column missing
	// from the schema, column-mapping annotations missing or duplicated, ...).
	ErrInvalidTable = errors.New("tableview: invalid table")
	// ErrLayoutChanged: data files written for one layout were about to be committed
	// to a version of another (invariant T1; see LayoutError).
	ErrLayoutChanged = errors.New("tableview: the table's layout changed")
)
