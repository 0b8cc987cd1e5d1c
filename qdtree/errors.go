package qdtree

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them (or a
// context error, or workload.ErrBind) and start with "qdtree: ".
var (
	// ErrInvalidOptions reports Options or inputs Build cannot use (the message
	// says which).
	ErrInvalidOptions = errors.New("qdtree: invalid options")
	// ErrNoColumns reports a workload that filters on no column a tree can cut.
	ErrNoColumns = errors.New("qdtree: no cut columns")
	// ErrCorrupt reports an encoded tree that does not decode or whose structure
	// is inconsistent (the message names the node).
	ErrCorrupt = errors.New("qdtree: corrupt tree")
	// ErrSchema reports a schema or batch that lacks a cut column, or holds it
	// with a type its cut values do not fit.
	ErrSchema = errors.New("qdtree: schema does not fit the tree")
)
