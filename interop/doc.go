// Package interop holds skiplake's differential tests against DuckDB and its peer
// benchmark. It is a separate Go module because it needs cgo (DuckDB via
// github.com/duckdb/duckdb-go/v2); the library itself stays pure Go. The package has
// no API: everything is in _test.go files.
//
// DuckDB is used as an independent reader with only its built-in functions
// (read_json, read_parquet, parquet_metadata, parquet_bloom_probe) — no Delta
// extension — so every check compares skiplake with code it shares nothing with:
//
//   - I1 (log replay) rows skiplake reads at every version equal the rows DuckDB
//     finds by replaying the JSON commits itself (newest add/remove per path wins,
//     paths percent-decoded by net/url, partition values cast by DuckDB from the add
//     actions), as unordered multisets in a canonical rendering.
//   - I2 (checkpoints) DuckDB reads each classic checkpoint; its add rows equal the
//     snapshot's live files, _last_checkpoint names the newest checkpoint and its
//     size is the checkpoint's row count.
//   - I3 (stats) add.stats agree with DuckDB's exact aggregates per file: counts
//     exact, bounds equal (timestamps cut to ms, strings by the 32-character prefix
//     and tie-breaker rules), bounds absent exactly where Delta says.
//   - I4 (filters) Scan(WithFilter) selects the same rows as DuckDB's WHERE over the
//     same live files for seeded random predicates.
//   - I5 (Bloom filters) DuckDB reads the split-block Bloom filters skiplake's data
//     file writer produces: no false negatives, absent values excluded.
//   - I6 (change data feed) the rows DuckDB reads for a version of a table with
//     the change data feed — from the version's _change_data files when its commit
//     has cdc actions, else from its added and removed files minus deletion
//     vectors — equal Table.Changes of that version (less the commit version and
//     time); change data files hold the data columns and _change_type only.
//
// What it deliberately does not do: it does not test DuckDB, install DuckDB
// extensions (there is no network), or read the shared golden tables (the table
// package's conformance suite does that); wall-clock figures are only reported by
// BenchmarkSelectiveFilter, never asserted.
//
// PROTOCOL.md, cited in this package's comments with a section name in quotes, is the
// Delta transaction log protocol: https://github.com/delta-io/delta/blob/master/PROTOCOL.md
package interop
