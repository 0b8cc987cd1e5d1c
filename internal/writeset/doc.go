// Package writeset writes a set of data files for one resolved table version: the
// file-set writer every writer of rows in package table uses (Write, CreateWrite,
// replaceWhere overwrites, the rows DELETE, UPDATE and MERGE write, their change
// data files, and the rewrite of a create-race loser's files for the winner's
// layout). OPTIMIZE writes through internal/datafile directly (package optimize),
// since it bins and sorts whole files itself.
//
// A Writer takes Arrow batches of the table's logical schema (New) or of
// ChangeSchema (NewChanges), conforms them to the table's columns and types
// (internal/conform), applies the write rules of the version
// (tableview.WriteRules), splits the rows by partition and streams each
// partition's rows into files of about the target size (one datafile.Roller per
// partition). What the files look like — codec, statistics, Bloom filters,
// physical names and field ids, row tracking columns — is the view's
// (tableview.View.FileSpec); what the caller chooses is Settings. The files'
// add actions are returned, not committed: committing is the caller's.
//
// # Invariants
//
//   - WS1 Every row written passed the writer's funnel: conformed, then (unless
//     Settings.Unchanged, for rows the table already holds and change data files)
//     completed when Settings.Inserts and checked against the version's write
//     rules (W1 in package table). When the rules cannot be enforced no row is
//     written.
//   - WS2 Each file holds the rows of one partition, stored under that partition's
//     directory (change data files under _change_data/), with its partition values
//     keyed by physical names; every file is written for the layout of the view
//     the writer was made for (T1 is checked by the committer,
//     tableview.CheckCommit).
//   - WS3 Rows keep their input order within a partition, except when the writer
//     sorts (Settings.SortBy, or an optimized write on a clustered table): then
//     every file holds one sorted run of the clustering key, and the files of one
//     run have disjoint key ranges. A sorting writer holds at most
//     max(one file, min(8 files, 256 MiB)) of Arrow data per partition.
//   - WS4 After a failed run nothing is left open; Cleanup deletes every file the
//     writer stored (best effort), and a Writer's files are uniquely named and
//     written with put-if-absent (L2).
//
// Errors users meet through package table carry its prefix, "table: ", as in
// package tableview.
package writeset
