package log

// ReadPredicate is a predicate a transaction read the table with: it depends on the
// rows the predicate selects, not on whole files. DELETE, UPDATE and MERGE record
// their conditions as read predicates (Spark's readPredicates), so that a concurrent
// commit conflicts with them only when it adds rows the predicate could select.
type ReadPredicate struct {
	// Text is the predicate as the user wrote it (for messages).
	Text string
	// MightMatch reports whether some row of a file added by a concurrent commit
	// could satisfy the predicate. It must never answer false for a file holding a
	// matching row (the skipping invariant S1); when in doubt it answers true. nil
	// means every added file might match (the whole table was read).
	MightMatch func(*Add) bool
}

// AddReadPredicate declares a predicate the transaction read the table with. A
// transaction with read predicates is not a blind append.
//
// At commit, the data-changing files (dataChange=true adds) of every concurrent
// winner are tested against the predicates, as Delta's ConflictChecker does:
//
//   - Serializable: every winner's added files; a file that might match is a
//     conflict (ErrConcurrentAppend): the transaction should have read it;
//   - WriteSerializable: only the added files of winners that are not blind appends
//     (a blind append is serialised after this transaction, so its rows need not
//     have been read), unless the transaction changes the metadata: then every
//     winner's added files, which were written for the metadata it replaces;
//   - SnapshotIsolation (transactions that only rearrange data): never.
//
// Delta Spark tests added files against read predicates using partition values
// only; MightMatch may use file statistics too, which decides more files
// exactly and never drops a conflict a matching row would cause.
func (t *Transaction) AddReadPredicate(p ReadPredicate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.readPreds = append(t.readPreds, p)
}

// predicateHits returns the canonical paths of the added files (dataChange adds of
// one winning commit) that some read predicate might match, under the isolation
// level rules of AddReadPredicate.
func (t *Transaction) predicateHits(level string, winnerBlind bool, added []*Add) []string {
	if len(t.readPreds) == 0 || len(added) == 0 {
		return nil
	}
	switch {
	case level == Serializable:
	case level == WriteSerializable && (!winnerBlind || t.metadata != nil):
		// Under WriteSerializable blind appends do not conflict, unless this
		// transaction changes the metadata (Spark's ConflictChecker: the appended
		// files were written for the metadata it replaces).
	default:
		return nil
	}
	var hits []string
	for _, a := range added {
		for _, p := range t.readPreds {
			if p.MightMatch == nil || p.MightMatch(a) {
				hits = append(hits, canonicalPath(a.Path))
				break
			}
		}
	}
	return hits
}
