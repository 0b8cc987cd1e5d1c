// Package conform turns source Arrow data into rows of a table's logical schema: the
// one place a write (append, overwrite, the rows MERGE inserts and updates, the MERGE
// source columns it converts, the rows DML rewrites) converts data to the table's
// columns and types.
//
// A Conformer matches columns and struct fields by name (exactly, else
// case-insensitively), puts them in table order and converts types by Spark's ANSI
// store assignment (Cast.canANSIStoreAssign with its runtime checks); Converter and
// Apply give the same conversion for one column.
//
// # Invariants
//
//   - A conversion store assignment refuses (string to number, boolean to number,
//     binary to anything but string, a column the table lacks) fails before any row
//     is converted, with ErrSchemaMismatch naming the column and both types.
//   - A value that does not fit its column is never truncated or wrapped: it is a
//     *CastError (ErrValueDoesNotFit) naming the column, the value, both types and
//     the value's row in the whole input (a Conformer counts the rows it converted).
//   - A NULL in a NOT NULL column or struct field, or a NOT NULL column the data
//     lacks (unless marked Optional), is ErrNullInNonNullable; no batch with such a
//     NULL is returned.
//   - Equal types are passed through without copying; every array returned is a new
//     reference the caller releases, and the input batch is not changed.
package conform
