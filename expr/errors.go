package expr

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by this package wrap one of them (or are a
// *ParseError), so callers can test with errors.Is / errors.As.
var (
	// ErrUnknownColumn: a column reference names no field of the schema.
	ErrUnknownColumn = errors.New("expr: unknown column")
	// ErrAmbiguousColumn: a column reference matches several fields case-insensitively
	// and none exactly.
	ErrAmbiguousColumn = errors.New("expr: ambiguous column")
	// ErrType: operands cannot be compared (or a literal cannot be coerced).
	ErrType = errors.New("expr: type mismatch")
	// ErrUnsupportedType: the schema holds a column type the predicate language
	// cannot evaluate (lists, maps, timestamps in a unit other than microseconds, ...).
	ErrUnsupportedType = errors.New("expr: unsupported column type")
	// ErrSchemaMismatch: a record batch given to Evaluate does not have the shape of
	// the schema the predicate was bound to.
	ErrSchemaMismatch = errors.New("expr: record does not match the bound schema")
	// ErrInvalidExpr: an expression built with the Go API is malformed (nil operand,
	// comparison without a column, ...).
	ErrInvalidExpr = errors.New("expr: invalid expression")
	// ErrUnsupportedFunction: a function call skiplake does not evaluate (or not with
	// these arguments) exactly as Spark SQL would (see Functions).
	ErrUnsupportedFunction = errors.New("expr: unsupported function")
)

// ParseError is returned by Parse. Pos is the 1-based byte offset in the input where
// the problem was found; Expected lists what the parser would have accepted there
// (may be empty).
type ParseError struct {
	Pos      int
	Msg      string
	Expected []string
}

// Error renders the error as `expr: at 14: expected ')' but found 'AND'`.
func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "expr: at %d: ", e.Pos)
	if len(e.Expected) > 0 {
		b.WriteString("expected ")
		for i, x := range e.Expected {
			if i > 0 {
				if i == len(e.Expected)-1 {
					b.WriteString(" or ")
				} else {
					b.WriteString(", ")
				}
			}
			b.WriteString(x)
		}
		b.WriteString(" but ")
	}
	b.WriteString(e.Msg)
	return b.String()
}
