// Package dml is the DML engine (MERGE, UPDATE, DELETE) below package table: a
// command's attempts (attempt.go: Run, Attempt, the retry loop, the finish and the
// commit), the per-command bodies (ops.go: DeleteWhere, UpdateWhere, Merge), the
// copy-on-write rewrites and the rows change data files read back (rewrite.go),
// the MERGE source (source.go), the reading of the commands' target files
// (read.go), the sinks the commands' rows go to (sink.go), the change data files
// (changes.go), the keeper of the table's layout through a command (layout.go),
// MERGE's row engine (merge.go) and the bookkeeping of the files a command touches
// (touched.go). Package table validates the public options, and is the Host
// (host.go): it loads and checks each attempt's snapshot (with the schema change
// the commit carries), plans the reads (Snap.Plan: skipping, the scan report),
// gives the write settings (the table's clustering) and explains a lost commit;
// it copies the engine's Result into its DMLResult.
//
// Run runs a Command: per attempt, Host.Begin gives the snapshot, the Command's
// Body plans and reads through the Attempt (recording the deleted positions in
// the TouchedSet, writing updated and inserted rows to the Sink), finish decides
// each changed file's fate (removed, a grown deletion vector, or rewritten
// copy-on-write, clustered files on their own), writes the vectors and the change
// data files, and the attempt commits once, declaring what it read. A commit lost
// to a commit that only rearranged data (OPTIMIZE) is re-planned on the newest
// snapshot, up to Options.ConflictRetries times.
//
// A Source is a MERGE source read once (ReadSource) and kept for the command's
// passes and its re-plans after a conflict: its key columns — and, when a clause
// takes source rows into the table, every source column the table has — converted
// to the table's types by the conversions a write applies (package
// internal/conform), held in memory up to a byte budget and partitioned by key hash
// into spill files (Arrow IPC, LZ4) beyond it. Passes groups the pieces (Units)
// into passes of at most the budget each; KeyEncoder gives a key's canonical bytes.
//
// A Target reads a command's target files as the scan it planned reads them
// (internal/scanexec: the same footer cache, row-group and page decisions and
// partition columns): ReadLive hands over a planned file's live rows — those its
// current deletion vector does not hold — with their file positions, what a new
// deletion vector names; Matching keeps the rows the filter selects.
//
// A Sink takes the rows a command writes (updated, inserted and copied rows, in the
// table's logical schema) from any number of goroutines: a FileSink streams them
// through a pipe into the file-set writer (internal/writeset) running on a goroutine
// of its own, and returns the files' add actions; a CountSink counts them for a dry
// run and estimates the files a real run would write.
//
// A ChangeSink writes the change data files of a command on a table whose change
// data feed is on: inserted rows, deleted rows and update images with their
// _change_type, and the rows deleted by position (DeletedAt) once read again; it
// decides whether the commit needs them at all (Decide), following Delta Spark.
//
// A Merger is a MERGE's clauses (a MergeSpec: the clauses as written, the table's
// logical schema, write rules, row and change sinks) bound to one attempt's
// snapshot. NewMerger decides the target columns to read (ReadColumns) and binds
// every condition and SET list; per pass, LoadPass builds the join table of the
// pass's source rows and KeyPredicate the predicate that finds the target files
// holding their keys; Batch matches a target file's live rows against the pass and
// applies the WHEN MATCHED and WHEN NOT MATCHED BY SOURCE clauses, telling the
// caller's FileRows (the attempt's touched file) the rows it updates and the
// positions it deletes; Insert, after every file of the pass, applies the WHEN NOT
// MATCHED clauses to the source rows nothing matched.
//
// A TouchedSet is an attempt's touched files (Touched, by add key): the live rows
// a command deletes from each (Delete, or RemoveWhole when metadata alone proves
// every live row deleted), its current deletion vector and its physical row count
// once read (Opened, Counted). Fate decides what the commit does with a changed
// file: remove it, grow its deletion vector, or rewrite it copy-on-write; Vector
// is a growing file's new vector, and WriteVectors stores the vectors of one commit
// and returns the remove and add actions that name them.
//
// A Layout keeps OPTIMIZE's clustering through copy-on-write: which files are
// rewritten on their own (Keeps: clustered files), the columns an updated row must
// keep to return to its place (ColumnsOf), and the updated rows held, within a
// memory bound, until their file is rewritten (HoldHome, TakeHome, SortedHome);
// OwnFiles writes such a file's rewrite.
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
//   - M5 A batch handed to a FileSink is settled before it crosses to the writer's
//     goroutine (R1) and retained until the writer is done with it; the caller keeps
//     its reference. After the writer fails, every later Write and Finish report its
//     error, and Discard deletes every file it stored.
//   - M6 A held row goes back only to the file and position it replaces, in
//     position order (SortedHome), and only while the rows held stay within the
//     Layout's budget; a row that does not fit is reported not taken and is written
//     as a new row. A rewrite on its own keeps the file's directory, partition
//     values, clustering tags and clusteringProvider (LayoutTags).
//   - M7 ReadLive hands its callback every live row of every unit scanexec's
//     DecideFile keeps (S1: no unit that might match is dropped) exactly once, in
//     file order, with Pos[i] the file position of row i; no row the deletion
//     vector holds. A batch without values (Rec nil: values not asked for) comes
//     only from a unit proven to match entirely (Recheck false, S2); Matching
//     returns exactly the positions of the rows the filter selects. Batches are
//     released when the callback returns.
//   - M8 A ChangeSink's files are committed exactly when the command updated rows or
//     rewrote a file copy-on-write (Decide); otherwise Finish deletes what was
//     written and returns no cdc action. Finish before Decide is an error. A
//     rewritten file's pending deleted rows go out through Rewritten (Pending
//     reports it done), every other file's are the caller's to read again.
//   - M9 In a Merger, each target row takes at most one clause — the first of its
//     kind whose condition is TRUE — so FileRows.Deleted gets each file position
//     at most once per command (M1 makes the by-source clauses apply in one pass
//     only), FileRows.Updated comes before Deleted for the same positions, and the
//     counters count each row once. A target row several source rows match is
//     ErrMergeCardinality, naming the key and the file, unless the only WHEN
//     MATCHED clause is an unconditional delete. A source row is inserted only
//     after every target file of its pass was matched against it, and only when no
//     target row matched it.
//   - M10 A Touched file's Deleted positions are live rows the command deletes
//     (never a row its current vector holds), recorded under the set's lock from
//     any number of goroutines; RowsDeleted counts each once. Fate is FateRemove
//     exactly when every live row is deleted (Whole, or a known live count equal to
//     RowsDeleted) and no clustering home keeps the file; else FateDeletionVector
//     exactly when vectors are asked for, the physical row count is known and the
//     file's statistics can carry numRecords (DVCapable); else FateRewrite. Changed
//     and All list files in add key order, so the commit's actions do not depend on
//     the order the files were read in. WriteVectors returns one remove and one
//     add per file, in the files' order, each add keeping numRecords in its
//     statistics, and the vector files it wrote even when it fails after writing.
//   - M11 Run commits at most once per command, from one attempt, whose snapshot
//     is the one Host.Begin gave it: the commit removes and adds exactly the files
//     finish decided (plus Options.Pre), declares every file the attempt read and
//     its read predicates (the whole table when a MERGE pass had no key
//     predicate), and is refused unless every new file was written for the
//     layout of that snapshot (T1). An attempt re-planned after a rearranging
//     conflict, or one that failed (its body, finish, the commit, an ended
//     context), deletes every data, change data and deletion-vector file it
//     wrote before Run returns or retries, except after log.ErrCommitUnknown
//     (the commit may have landed). A dry run writes and commits nothing.
//
// Errors users meet through package table carry its prefix, "table: ", as in
// package tableview.
package dml
