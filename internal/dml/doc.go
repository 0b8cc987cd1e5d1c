// Package dml holds parts of the DML engine (MERGE, UPDATE, DELETE) that run below
// package table: today the MERGE source (source.go). Package table plans and
// commits the commands and calls it.
//
// A Source is a MERGE source read once (ReadSource) and kept for the command's
// passes and its re-plans after a conflict: its key columns — and, when a clause
// takes source rows into the table, every source column the table has — converted
// to the table's types by the conversions a write applies (package
// internal/conform), held in memory up to a byte budget and partitioned by key hash
// into spill files (Arrow IPC, LZ4) beyond it. Passes groups the pieces (Units)
// into passes of at most the budget each; KeyEncoder gives a key's canonical bytes.
//
// # Invariants
//
//   - M1 Every key belongs to exactly one Unit of a Source's passes (Member), and
//     every source row is in the Unit its key belongs to, so a target row meets
//     every source row with its key in one pass, and a NOT MATCHED BY SOURCE clause
//     sees each target row in exactly one pass. Rows with a NULL key component
//     match nothing (Encode reports them) and are kept in some unit.
//   - M2 Keys compare as SQL equality after conversion to the table's key types,
//     with Spark's float normalisation (-0.0 = 0.0, every NaN one value): equal
//     keys encode to equal bytes, different keys to different bytes.
//   - M3 A source value that does not fit its table column is an error naming the
//     column and the value's row in the whole source before any table file is read;
//     a failed ReadSource keeps nothing, and Release deletes every spill file.
//   - M4 A pass holds at most the budget of source rows (Arrow bytes plus the join
//     table's estimate), except a unit still over it after maxSplitDepth re-splits
//     by new hash seeds (one hot key), which is merged in one pass.
//
// Errors users meet through package table carry its prefix, "table: ", as in
// package tableview.
package dml
