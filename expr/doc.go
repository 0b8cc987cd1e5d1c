// Package expr is skiplake's predicate language: an AST for SQL-style filters, a
// parser (`a >= 10 AND s LIKE 'ab%'`), binding to an Arrow schema with exact
// literal coercion, and exact vectorised evaluation over Arrow record batches (the
// recheck a scan applies where skipping only said "might match").
//
// Pipeline: Parse (or the builder API: Col, Lit, Eq, In, And, ...) produces an
// Expr; Bind resolves it against a schema and produces a *Bound whose tree (Pred)
// is in negation normal form; Bound.Evaluate selects rows of a batch; package
// skipping walks Bound.Root() to decide which files, row groups and pages may hold
// matching rows.
//
// Invariants:
//
//   - E1 (round trip) Parse(e.String()) is Equal to e for every expression Parse
//     returns; FuzzParse checks it.
//   - E2 (negation normal form) a bound tree has no NOT: negation is pushed to the
//     leaves by De Morgan and operator negation, which is exact under SQL
//     three-valued logic and Spark's total float order. Hence a row is selected
//     exactly when the leaves' TRUE sets say so, and each leaf can be rewritten to
//     any leaf with the same TRUE set (that is how out-of-range literals become
//     FALSE or IS NOT NULL).
//   - E3 (exact coercion) a literal is never rounded into a column's type in a way
//     that changes a comparison's result: `byte_col < 300` is every non-null row,
//     `d = 1.005` on decimal(5,2) is no row, `d < 1.005` is `d <= 1.00`.
//   - E4 (three-valued logic) comparisons with NULL are unknown, AND/OR follow
//     Kleene logic, x IN (..., NULL) is never FALSE-made-TRUE and x NOT IN (...,
//     NULL) is never TRUE; Evaluate selects a row only when the predicate is TRUE.
//   - E5 (Spark order) floats compare with NaN equal to NaN and greater than every
//     other value, -0.0 equal to 0.0; strings and binary compare byte-wise
//     (code-point order for UTF-8); LIKE's `_` matches one code point.
//
// What it deliberately does not do: arithmetic, casts and function calls over
// columns (they are not skippable and the scan's filter is a conjunction of
// column-literal predicates); collations; LIKE ESCAPE clauses (the escape character
// is always `\`); session time zones (timestamps without a zone mean UTC).
// Column-to-column comparisons are evaluated row by row (exact but not vectorised)
// and are never used for skipping.
package expr
