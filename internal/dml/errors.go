package dml

import "errors"

// ErrMergeCardinality reports a MERGE in which several source rows match the same
// target row while a WHEN MATCHED clause other than a single unconditional DELETE
// would apply. Package table re-exports it (table.ErrMergeCardinality).
var ErrMergeCardinality = errors.New("table: several source rows match one target row")
