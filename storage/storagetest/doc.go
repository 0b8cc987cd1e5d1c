// Package storagetest is the conformance suite for storage.Storage implementations,
// in the spirit of testing/fstest.TestFS: every implementation (Local, Memory and the
// object-store backends) runs the same Run and so keeps the same semantics.
//
// What Run checks, by group:
//   - round trips of Get, Put, Stat, Open and ReadAt, including empty and multi-MiB
//     objects and the odd names real Delta tables use (spaces, '%', ':', '+', '=',
//     non-ASCII);
//   - overwrite, PutIfAbsent semantics and ErrNotExist / ErrExist through errors.Is;
//   - List order, prefixes (directory and partial-name), startAfter and nested
//     directories, against a brute-force oracle;
//   - path confinement: a table of bad paths for every method yields ErrInvalidPath and
//     creates nothing, in the store or (for stores with a Root() string method) next to
//     its root directory;
//   - atomicity under concurrency: 16 goroutines × 200 rounds racing PutIfAbsent on one
//     fresh name per round have exactly one winner whose bytes are stored (invariant L2),
//     and readers never observe a partially written Put;
//   - a cancelled context makes every method fail with the context's error;
//   - streaming writes (storage.Creator, invariant S1), twice: through the store's own
//     Create when it has one, and through storage.CreateObject's buffering fallback with
//     the capability hidden (WithoutCreator). Streamed bytes equal the object, including
//     8 MiB in ~2,000 small writes; nothing is visible to Get, Open, Stat or List before
//     Commit; Abort, a losing Commit and a cancelled context leave no object and, for
//     Rooted stores, no stray file under the root; Commit over an existing object is
//     ErrExist with the original bytes intact; repeated Commit/Abort are no-ops and Write
//     after the end is fs.ErrClosed; 8 goroutines × 50 rounds streaming to one fresh
//     name per round have exactly one committer.
//
// Not here: durability across crashes (cannot be observed from one process), and
// implementation-specific behaviour such as symbolic links or temporary files, which each
// implementation tests itself.
package storagetest
