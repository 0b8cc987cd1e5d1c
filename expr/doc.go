// Package expr is skiplake's expression language: an AST for SQL-style filters, a
// parser (`a >= 10 AND s LIKE 'ab%'`), binding to an Arrow schema with exact
// literal coercion, and exact vectorised evaluation over Arrow record batches (the
// recheck a scan applies where skipping only said "might match"); and typed scalar
// expressions for UPDATE assignments (`qty = qty + 1, total = price * qty`).
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
// Scalar expressions (the values of UPDATE ... SET): ParseScalar and ParseAssignments
// read arithmetic (+ - * / %), unary minus, string concatenation (|| and concat),
// CAST(x AS type) and CASE WHEN predicate THEN value ... END over columns and literals;
// BindScalar types them with Spark SQL's rules in ANSI mode (errors, not NULLs, on
// overflow, division by zero and invalid casts; see BindScalar); BoundScalar.Evaluate
// computes them column at a time over Arrow batches for the rows a selection names;
// BindAssignments and BoundAssignments.Apply turn a SET list into new column values.
//
//   - E6 (oracle) BoundScalar.Evaluate returns, for every selected row, exactly what the
//     row-at-a-time BoundScalar.EvaluateRow returns, and fails exactly when it fails for
//     a selected row (property-tested on random expressions and batches).
//   - E7 (selected rows only) values are computed and checked only for the selected
//     rows: an UPDATE never fails because of a row its WHERE does not select, and
//     CASE branches and right operands of NULL left operands are not evaluated, as in
//     Spark.
//   - E8 (assignments never change a value silently) a value reaches its column
//     exactly, through an explicit CAST, or, for decimal columns, rounded HALF_UP to the
//     column's scale; any other implicit conversion that would round, truncate or
//     overflow fails naming the row and column.
//   - E9 (bounded, linear) parsing refuses input nested deeper than 200 levels and
//     scalar expressions of more than MaxScalarOperators operators with a ParseError, so
//     no recursion over a tree can exhaust the stack; parsing and binding take time
//     and allocations linear in the input (text for messages is printed on error only).
//
// SQL expressions (the CHECK constraints, column invariants and generation expressions
// Delta tables store): ParseSQL reads predicates whose operands are scalar expressions,
// boolean operands used as predicates, and calls of the built-in functions (Functions:
// date parts, date_trunc, trunc, date_format, length, substring, trim, lower, upper, abs,
// coalesce, ...); BindCheck binds a boolean one as a predicate — the leaves Bind knows
// as Bind binds them, any other as a *ScalarPred evaluated exactly — and BindExpression
// any one as a value, with predicates as three-valued booleans.
//
//   - E10 (two paths, one meaning) a predicate Bind accepts selects the same rows
//     whether BindCheck binds it with Bind's leaves or it is evaluated as a boolean value
//     (BindExpression), and both agree with the three-valued oracle (property-tested).
//   - E11 (exact or refused) a function or conversion whose Spark semantics skiplake does
//     not reproduce is refused when bound (*UnsupportedFunctionError, ErrType), or fails
//     the row it cannot compute (lower/upper of non-ASCII text): never a wrong value.
//     Date parts of timestamps are computed in UTC (Spark with session time zone UTC).
//
// What it deliberately does not do: arithmetic, casts and function calls inside
// filters (Parse: they are not skippable and the scan's filter is a conjunction of
// column-literal predicates; SQL expressions use ParseSQL); date arithmetic and
// intervals; functions beyond Functions; assignments to nested fields; collations; LIKE
// ESCAPE clauses (the escape character is always `\`); session time zones (timestamps
// without a zone mean UTC). Column-to-column comparisons are evaluated row by row
// (exact but not vectorised) and are never used for skipping.
package expr
