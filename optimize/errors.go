package optimize

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by this package wrap one of these (or an error of
// package log or storage) with %w; test with errors.Is.
var (
	// ErrInvalidOptions reports an Options value that cannot be used
	// (see InvalidOptionsError for the list of problems).
	ErrInvalidOptions = errors.New("optimize: invalid options")
	// ErrClusterColumn reports a clustering column that does not exist, is a partition
	// column, has no statistics or has a type that cannot be ranked.
	ErrClusterColumn = errors.New("optimize: invalid clustering column")
	// ErrBloomColumn reports a Bloom filter column (Options.BloomColumns) that does
	// not exist, is a partition column or has a type that cannot be indexed.
	ErrBloomColumn = errors.New("optimize: invalid bloom filter column")
	// ErrUnsupportedTable reports a table this package cannot rewrite (unsupported
	// writer features, a clustering column that is nested).
	ErrUnsupportedTable = errors.New("optimize: unsupported table")
	// ErrConflict reports that concurrent commits removed files OPTIMIZE was rewriting
	// and the retries were used up. Nothing was committed by the failing attempt.
	ErrConflict = errors.New("optimize: conflicting concurrent commit")
	// ErrCorruptData reports an input data file that could not be read or that
	// disagrees with the log (row count, schema).
	ErrCorruptData = errors.New("optimize: unreadable data file")
	// ErrCorruptLayoutTree reports a workload layout tree file (a
	// _skiplake_layout/qdtree-<uuid>.json side file the skiplake.qdtree tags of
	// data files name) that is missing, does not decode, or whose cuts do not fit
	// the table. The error names the file.
	ErrCorruptLayoutTree = errors.New("optimize: unreadable workload layout tree file")
)

// InvalidOptionsError lists every problem found in an options value at once.
// It matches ErrInvalidOptions with errors.Is.
type InvalidOptionsError struct {
	// Problems describes each invalid field.
	Problems []string
}

// Error lists the problems.
func (e *InvalidOptionsError) Error() string {
	return "optimize: invalid options: " + strings.Join(e.Problems, "; ")
}

// Unwrap returns ErrInvalidOptions.
func (e *InvalidOptionsError) Unwrap() error { return ErrInvalidOptions }

// ClusterColumnError names a rejected clustering column and why.
// It matches ErrClusterColumn with errors.Is.
type ClusterColumnError struct {
	// Column is the column as the caller named it.
	Column string
	// Reason says why it was rejected.
	Reason string
}

// Error names the column and the reason.
func (e *ClusterColumnError) Error() string {
	return fmt.Sprintf("optimize: clustering column %q: %s", e.Column, e.Reason)
}

// Unwrap returns ErrClusterColumn.
func (e *ClusterColumnError) Unwrap() error { return ErrClusterColumn }

// BloomColumnError names a rejected Bloom filter column and why.
// It matches ErrBloomColumn with errors.Is.
type BloomColumnError struct {
	// Column is the column as the caller named it.
	Column string
	// Reason says why it was rejected.
	Reason string
}

// Error names the column and the reason.
func (e *BloomColumnError) Error() string {
	return fmt.Sprintf("optimize: bloom filter column %q: %s", e.Column, e.Reason)
}

// Unwrap returns ErrBloomColumn.
func (e *BloomColumnError) Unwrap() error { return ErrBloomColumn }
