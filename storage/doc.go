// Package storage is where a table's bytes live: a small interface (Storage) with a
// local-filesystem implementation, an in-memory one for tests, and a conformance suite
// every implementation passes.
//
// Invariants:
//   - L2 (storage half): PutIfAbsent is atomic. Exactly one of any number of concurrent
//     creators of a path wins; the others get ErrExist. On the local filesystem this is a
//     fully written, fsynced temporary file hard-linked to the final name (link(2) fails
//     if the name exists), never check-then-write.
//   - Confinement: every path is validated before use. Absolute paths, "..", empty
//     elements, backslashes and NUL bytes are rejected with ErrInvalidPath, so nothing is
//     ever read or written outside the root.
//
// Not here: Delta semantics (see package log), object stores (later, behind the same interface).
package storage
