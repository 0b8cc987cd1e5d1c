// Package scanexec is the scan reader below package table's facade: it executes a
// planned scan. Package table plans (binds the filter, asks skipping's Planner for a
// verdict per live file) and hands over the files to read as [Task]s, in read order;
// this package opens them, decides their row groups and pages, reads the rows and
// streams them as Arrow record batches. DML commands read the files they touch with
// the same pieces ([Scan.OpenFile], [Scan.DecideFile], [Projection.WithPartitions]),
// so a row a scan returns is a row DML sees.
//
// The pieces:
//
//   - [Meta] is what planning knows of one snapshot's live files: typed partition
//     values and skipping's Planner over their statistics and Bloom index, built once
//     per snapshot from its resolved view (internal/tableview) and shared by its scans.
//     A large snapshot's files are converted over ranges on up to GOMAXPROCS
//     goroutines; the result and the error (the first file's in file order) do not
//     depend on the split.
//   - [Project] resolves the columns a scan returns and the filter into a
//     [Projection]: the output schema, the columns read (output plus filter columns)
//     and the data columns asked of the files; [Projection.WithPartitions] adds a
//     task's constant columns (partition values, a change read's change columns) to
//     a batch of file columns.
//   - [Scan] holds what reading needs besides the tasks: storage, version, the
//     table's footer cache, the bound filter and the column mapping.
//     [Scan.OpenFile] opens a file through the footer cache; [Scan.DecideFile]
//     decides its row groups (footer statistics, Parquet Bloom filters) and pages
//     (page index); [Scan.CountFromLog] answers a count from the log where it may;
//     [ListFiles] lists the tasks with what their statistics say of the filter.
//   - [Reader] streams the rows of tasks: files opened ahead, row groups decoded on
//     up to [Config].Parallelism goroutines, batches queued under a read-ahead budget
//     and handed out in plan order.
//
// What reading finds (footers read or reused, row-group and page levels, warnings,
// rows returned) goes to a [Recorder]; package table's ScanReport is one.
//
// Invariants:
//
//   - S1 No unit a level has not proven unable to match is dropped: DecideFile keeps
//     every row group and page it cannot rule out, and a page index it cannot use
//     makes it read the row group whole (with a warning).
//   - S2 The exact recheck is skipped only for units proven to match entirely (a task
//     without Recheck, a row group whose footer statistics prove a must-match); every
//     other row read is checked against the filter before it is returned.
//     CountFromLog answers from the log only tasks without Recheck whose add records
//     a row count, after checking their deletion vectors delete only rows their files
//     have (dv V5).
//   - SR1 (order) A Reader returns batches in plan order (tasks in order, row groups
//     and rows in file order) whatever its parallelism, every batch of exactly the
//     projection's schema, and never more rows than Config.Limit.
//   - SR2 (memory) Decoded batches waiting for the caller hold at most
//     Config.ReadAhead bytes (datafile.RecordBytes), except that the decoder of the
//     row group the caller is reading proceeds while none of its batches wait, and
//     a batch larger than the budget is admitted when nothing else is held. Files
//     are opened at most Config.Parallelism ahead (one with a limit), so open
//     footers are bounded too. Batches are sized from the budget ([BatchBytes]).
//   - SR3 (ownership) A batch the Reader returns is valid until the next Next or
//     Release; with Config.Pooled its buffers go back to the Reader's pool only when
//     the caller released it, so a retained batch is never reused. Release stops
//     every background goroutine and frees what they hold before it returns.
//   - C1 (footer cache) A cached footer is used only for an object of the size it
//     was read from, under a key of the add's path, size and modification time, and
//     a footer is cached only when the object's size is the logged one.
//
// Errors that users meet only through package table (ErrMissingDataFile,
// ErrUnknownColumn) carry that package's prefix, "table: ", and table re-exports
// them; so do the errors of reading, which name the file (and, for damaged data, the
// row group and column).
//
// What this package does not do: it does not plan (skipping's Planner decides the
// files; table builds the tasks), bind or parse filters, commit, or write anything.
package scanexec
