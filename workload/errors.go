package workload

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of them and start with
// "workload: ".
var (
	// ErrSyntax reports a line of a workload file that is not a weight and a filter
	// (a *SyntaxError carries where).
	ErrSyntax = errors.New("workload: syntax error")
	// ErrEmpty reports a workload without any filter.
	ErrEmpty = errors.New("workload: no filters")
	// ErrBind reports a filter that does not bind to a schema (unknown column, type
	// mismatch); the message names the filter and its line.
	ErrBind = errors.New("workload: filter does not fit the table")
)

// SyntaxError is a bad line of a workload file. It wraps ErrSyntax and, when the
// filter did not parse, the *expr.ParseError.
type SyntaxError struct {
	// Source names the file ("" when not from a file).
	Source string
	// Line and Column are 1-based; Column is a byte offset in the line.
	Line, Column int
	// Msg says what is wrong.
	Msg string
	// Err is the underlying parse error, if any.
	Err error
}

// Error renders "workload: FILE:LINE:COL: MESSAGE".
func (e *SyntaxError) Error() string {
	src := e.Source
	if src == "" {
		src = "workload"
	}
	return fmt.Sprintf("workload: %s:%d:%d: %s", src, e.Line, e.Column, e.Msg)
}

// Unwrap returns ErrSyntax and the parse error.
func (e *SyntaxError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrSyntax, e.Err}
	}
	return []error{ErrSyntax}
}
